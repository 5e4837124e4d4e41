"""Recurrent policies (`--core=lstm`) through the runtime: the same bits for any actor and
executor count, sync and PPO, a bit-exact resume, data-parallel and the async, GALA and all-reduce
modes, envpool's Atari, the memory report. The core's unroll and resets, the actors' per-row
state against the learner's unroll and PPO's whole-sequence minibatches are unit-tested in
tests/unit/test_lstm_core.py."""

import functools
import os
import shutil

import numpy as np
import pytest

from hts_jax.config import LearnerConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint
from tests.support.runs import small_config


RUN = dict(env="hts_jax/CartPoleNoVel-v1", core="lstm", core_size=16, alpha=16, num_envs=8,
           num_executors=2, num_actors=1, total_steps=8 * 16 * 5, seed=5, eval_episodes=2,
           eval_every=8 * 16 * 2, learner=LearnerConfig(algo="a2c", unroll_length=8))
_cfg = functools.partial(small_config, base=RUN)


PPO = LearnerConfig(algo="ppo", minibatch="envs", num_minibatches=2, ppo_epochs=2,
                    optimizer="adam", learning_rate=1e-3, bootstrap_truncation=True)


def test_lstm_hts_is_bitwise_identical_for_any_actor_and_executor_count(tmp_path):
  a = modes.run(_cfg(tmp_path, "a"))
  b = modes.run(_cfg(tmp_path, "b", num_actors=2, num_executors=4, executor_jitter_s=0.002))
  c = modes.run(_cfg(tmp_path, "c", num_actors=3, num_executors=1))
  assert a["param_sha256"] == b["param_sha256"] == c["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert [e["returns"] for e in a["eval"]] == [e["returns"] for e in c["eval"]]
  assert a["policy_lag"]["per_update"] == [0] + [1] * 4


def test_lstm_ppo_and_sync_are_bitwise_identical_for_any_executor_count(tmp_path):
  ppo = [modes.run(_cfg(tmp_path, f"p{k}", learner=PPO, num_executors=k)) for k in (1, 4)]
  assert ppo[0]["param_sha256"] == ppo[1]["param_sha256"]
  sync = [modes.run(_cfg(tmp_path, f"s{k}", mode="sync", num_executors=k)) for k in (2, 4)]
  assert sync[0]["param_sha256"] == sync[1]["param_sha256"]


def test_lstm_resume_is_bit_exact(tmp_path):
  """The rows' core states travel in the checkpoint's storage: a run stopped at a checkpoint
  and resumed ends with the straight run's bits."""
  straight = modes.run(_cfg(tmp_path, "straight", learner=PPO, total_steps=8 * 16 * 6))
  modes.run(_cfg(tmp_path, "split", learner=PPO, total_steps=8 * 16 * 4, checkpoint_every=2))
  # A finished run checkpoints its last update too; it is set aside: this resumes mid-way.
  assert checkpoint.steps(str(tmp_path / "split"))[:2] == [4, 2]
  shutil.rmtree(os.path.join(checkpoint.directory(str(tmp_path / "split")), "4"))
  resumed = modes.run(_cfg(tmp_path, "split", learner=PPO, total_steps=8 * 16 * 6), resume=True)
  assert resumed["param_sha256"] == straight["param_sha256"]
  assert resumed["episode_returns"] == straight["episode_returns"]


def test_lstm_runs_data_parallel_on_two_devices(tmp_path):
  """The core state splits over the devices with its rows: a data-parallel learner (each device
  unrolls its env columns; whole-sequence minibatches of its own columns) and a data-parallel
  actor step, deterministic for any executor count."""
  kw = dict(learner=PPO, learner_devices=(0, 1), actor_devices=(0, 1))
  a = modes.run(_cfg(tmp_path, "d2", num_executors=2, **kw))
  b = modes.run(_cfg(tmp_path, "d4", num_executors=4, num_actors=2, **kw))
  assert a["param_sha256"] == b["param_sha256"] and a["updates"] == 5


def test_lstm_runs_in_the_async_gala_and_allreduce_modes(tmp_path):
  impala = modes.run(_cfg(tmp_path, "async", mode="async", num_actors=2))
  assert impala["updates"] > 0 and np.isfinite(impala["eval"][-1]["mean_return"])
  gala = [modes.run(_cfg(tmp_path, f"g{k}", mode="gala", gala_agents=2, gala_gossip="fixed",
                         num_executors=k)) for k in (2, 4)]
  assert gala[0]["param_sha256"] == gala[1]["param_sha256"]
  allreduce = modes.run(_cfg(tmp_path, "ar", mode="allreduce", gala_agents=2))
  assert allreduce["updates"] > 0


def test_lstm_envpool_atari_is_deterministic_across_actor_groups(tmp_path):
  """The CNN torso + LSTM on envpool's Atari (its reset steps, `valid` 0, restart the state)."""
  pytest.importorskip("envpool", reason="installed by .ci/setup.sh")
  kw = dict(env="atari:Pong", envpool=True, num_envs=4, num_executors=2, alpha=8,
            total_steps=4 * 8 * 3, eval_every=0, eval_episodes=1, eval_max_steps=50)
  a = modes.run(_cfg(tmp_path, "e1", num_actors=1, **kw))
  b = modes.run(_cfg(tmp_path, "e2", num_actors=2, **kw))
  assert a["param_sha256"] == b["param_sha256"]


def test_the_memory_report_renders_runs_into_json_table_plot_and_readme(tmp_path):
  from hts_jax.results import driver, grid, spec  # pylint: disable=import-outside-toplevel
  g = spec.load("memory")
  results = tmp_path / "results"
  for method, mode, core in (("hts_lstm", "hts", "lstm"), ("hts_ff", "hts", "none")):
    modes.run(_cfg(tmp_path, "x", mode=mode, core=core,
                   logdir=grid.run_dir(str(results), None, method, 5)))
  block = g.tables[0].block
  readme = tmp_path / "docs" / "results.md"  # the grids' blocks' page
  readme.parent.mkdir()
  readme.write_text(f"# x\n{block.begin}\nold\n{block.end}\ntail\n")
  out = driver.report(g, str(results), str(tmp_path))
  assert {r["method"] for r in out["runs"]} == {"hts_lstm", "hts_ff"}
  assert out["tasks"][g.tasks[0].env]["methods"]["hts_lstm"]["final_eval"]["n"] == 1
  assert out["runs"][0]["evals"] and out["command"] and out["commit"]
  table = (results / "table.md").read_text()
  assert "| hts_lstm " in table
  assert readme.read_text() == f"# x\n{block.wrap(table)}\ntail\n"
  assert (results / "curves.png").stat().st_size > 0
