"""Continuous control through the HTS runtime on MuJoCo: the same bits for any actor and executor
count (gymnasium's and envpool's ports), a bit-exact resume with the normalisers, the sync and
async modes, the MuJoCo report and videos. The Gaussian head, the normalisers' moments and the
env's action clipping are unit-tested in tests/unit/test_gaussian_head.py."""

import functools
import os
import shutil

import numpy as np
import pytest

from hts_jax.config import ConfigError, LearnerConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint
from tests.support.runs import small_config


RUN = dict(env="InvertedPendulum-v5", alpha=16, num_envs=4, num_executors=2, num_actors=1,
           total_steps=4 * 16 * 5, seed=11,
           eval_episodes=2, eval_every=4 * 16 * 2, eval_max_steps=50,
           learner=LearnerConfig(algo="ppo", num_minibatches=4, ppo_epochs=2,
                                 optimizer="adam", learning_rate=3e-4, entropy_coef=0.0,
                                 normalize_obs=True, normalize_rewards=True,
                                 bootstrap_truncation=True))
_cfg = functools.partial(small_config, base=RUN)


def test_mujoco_hts_is_bitwise_identical_for_any_actor_and_executor_count(tmp_path):
  a = modes.run(_cfg(tmp_path, "a"))
  b = modes.run(_cfg(tmp_path, "b", num_actors=2, num_executors=4))
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert [e["returns"] for e in a["eval"]] == [e["returns"] for e in b["eval"]]
  assert a["policy_lag"]["per_update"] == [0] + [1] * 4  # the first segment is θ_0's
  # The normalisers act: without them the params differ.
  plain = modes.run(_cfg(tmp_path, "c", learner=LearnerConfig(
      algo="ppo", num_minibatches=4, ppo_epochs=2, optimizer="adam", learning_rate=3e-4,
      entropy_coef=0.0, bootstrap_truncation=True)))
  assert plain["param_sha256"] != a["param_sha256"]


def test_mujoco_behaviour_correction_is_bitwise_identical_for_any_actor_and_executor_count(
    tmp_path):
  ppo = LearnerConfig(algo="ppo", num_minibatches=4, ppo_epochs=2, optimizer="adam",
                      learning_rate=3e-4, entropy_coef=0.0, normalize_obs=True,
                      normalize_rewards=True, bootstrap_truncation=True, correction="behaviour")
  a = modes.run(_cfg(tmp_path, "a", learner=ppo))
  b = modes.run(_cfg(tmp_path, "b", num_actors=3, num_executors=4, learner=ppo))
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert [e["returns"] for e in a["eval"]] == [e["returns"] for e in b["eval"]]


def test_mujoco_resume_is_bit_exact_with_the_normalisers(tmp_path):
  straight = modes.run(_cfg(tmp_path, "straight", total_steps=4 * 16 * 6))
  modes.run(_cfg(tmp_path, "split", total_steps=4 * 16 * 4, checkpoint_every=2))
  # A finished run checkpoints its last update too; it is set aside: this resumes mid-way.
  assert checkpoint.steps(str(tmp_path / "split"))[:2] == [4, 2]
  shutil.rmtree(os.path.join(checkpoint.directory(str(tmp_path / "split")), "4"))
  with pytest.raises(ConfigError, match="^--resume: normalize_obs differs from the checkpoint"):
    modes.make_runner(_cfg(tmp_path, "split", total_steps=4 * 16 * 6, learner=LearnerConfig(
        algo="ppo", num_minibatches=4, ppo_epochs=2, optimizer="adam", learning_rate=3e-4,
        entropy_coef=0.0, normalize_rewards=True, bootstrap_truncation=True)), resume=True)
  resumed = modes.run(_cfg(tmp_path, "split", total_steps=4 * 16 * 6), resume=True)
  assert resumed["param_sha256"] == straight["param_sha256"]
  assert resumed["episode_returns"] == straight["episode_returns"]


def test_mujoco_runs_in_sync_and_async_modes(tmp_path):
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync"))
  assert sync["policy_lag"]["per_update"][-1] == 0
  lcfg = LearnerConfig(algo="a2c", unroll_length=16, normalize_obs=True)  # no reward scaling
  impala = modes.run(_cfg(tmp_path, "async", mode="async", num_actors=2, learner=lcfg))
  assert impala["updates"] > 0 and np.isfinite(impala["eval"][-1]["mean_return"])


def test_the_mujoco_report_renders_runs_into_json_table_plot_and_readme(tmp_path):
  import dataclasses  # pylint: disable=import-outside-toplevel
  from hts_jax.results import driver, grid, render, spec  # pylint: disable=import-outside-toplevel
  task = "InvertedPendulum-v5"  # the grid's, on another task: a grid is data
  mujoco = spec.load("mujoco")
  g = dataclasses.replace(mujoco, tasks=(dataclasses.replace(mujoco.tasks[0], name=task,
                                                             env=task),))
  results = tmp_path / "results"
  for method, mode in (("hts_ppo", "hts"), ("sync_ppo", "sync")):
    modes.run(_cfg(tmp_path, "x", mode=mode, logdir=grid.run_dir(str(results), task, method, 11)))
  summary, docs = g.tables[1].block, g.tables[0].block
  results_md = tmp_path / "docs" / "results.md"  # both blocks: README shows the headline
  results_md.parent.mkdir()
  results_md.write_text(
      f"{docs.begin}\n{docs.end}\n# x\n{summary.begin}\nold\n{summary.end}\ntail\n")
  out = driver.report(g, str(results), str(tmp_path))
  assert {r["method"] for r in out["runs"]} == {"hts_ppo", "sync_ppo"}
  assert out["tasks"][task]["methods"]["hts_ppo"]["final_return"]["n"] == 1
  assert out["runs"][0]["curve"] and out["command"] and out["commit"]
  table = (results / "table.md").read_text()
  assert "| hts_ppo " in table and "963.09 ± 22.20" in table
  pivot = render.render_table(g, g.tables[1], out)
  assert results_md.read_text() == f"{docs.wrap(table)}\n# x\n{summary.wrap(pivot)}\ntail\n"
  assert f"| {task} " in pivot
  assert (results / "curves.png").stat().st_size > 0
  # A run without its metrics.csv still reports, with no curve.
  os.remove(os.path.join(grid.run_dir(str(results), task, "sync_ppo", 11), "metrics.csv"))
  assert {r["method"]: bool(r["curve"]) for r in driver.report(g, str(results))["runs"]} == {
      "hts_ppo": True, "sync_ppo": False}


def test_envpool_mujoco_is_deterministic_across_actor_counts_and_runs_sync_too(tmp_path):
  """envpool's MuJoCo port on the --envpool path: the same bits with 1 and 2 actor groups (each
  env's seed is base + env id whatever the grouping), sync runs on it, and its episodes score."""
  pytest.importorskip("envpool", reason="installed by .ci/setup.sh")
  a = modes.run(_cfg(tmp_path, "e1", envpool=True, num_actors=1))
  b = modes.run(_cfg(tmp_path, "e2", envpool=True, num_actors=2))
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert sum(len(r) for r in a["episode_returns"]) > 0
  assert a["param_sha256"] != modes.run(_cfg(tmp_path, "g"))["param_sha256"]  # another engine
  sync = modes.run(_cfg(tmp_path, "es", envpool=True, mode="sync", num_actors=2))
  assert sync["policy_lag"]["per_update"][-1] == 0
  with pytest.raises(ConfigError, match="^--envpool is for atari:<Game> envs and envpool's MuJoCo"):
    _cfg(tmp_path, "x", env="Pendulum-v1", envpool=True)


def test_mujoco_videos_record_without_a_display(tmp_path):
  """The final evaluation's episode is rendered by OSMesa (no display, no GPU) into an mp4."""
  s = modes.run(_cfg(tmp_path, "v", video_final=True, total_steps=4 * 16 * 2, eval_every=0))
  videos = [v for v in s.get("videos", []) if "error" not in v]
  assert videos, s.get("videos")
  path = os.path.join(str(tmp_path / "v"), "videos")
  files = [f for f in os.listdir(path) if f.endswith(".mp4")]
  assert files and os.path.getsize(os.path.join(path, files[0])) > 1000


def test_acting_extrapolation_is_bitwise_identical_for_any_count_and_on_resume(tmp_path):
  """HTS-PPO `none` acting with θ_j + (θ_j − θ_{j-1}) (the observation statistics θ_j's): one
  param_sha256 for any actor and executor count and across a resume (the prediction is computed
  from the learner state alone), another than acting with θ_j; metrics.csv reports the two KLs."""
  ppo = lambda beta: LearnerConfig(
      algo="ppo", num_minibatches=4, ppo_epochs=2, optimizer="adam", learning_rate=3e-4,
      entropy_coef=0.0, normalize_obs=True, normalize_rewards=True, bootstrap_truncation=True,
      correction="none", acting_extrapolation=beta)
  six = 4 * 16 * 6
  a = modes.run(_cfg(tmp_path, "a", learner=ppo(1.0), total_steps=six))
  b = modes.run(_cfg(tmp_path, "b", num_actors=2, num_executors=4, learner=ppo(1.0),
                     total_steps=six))
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert [e["returns"] for e in a["eval"]] == [e["returns"] for e in b["eval"]]
  plain = modes.run(_cfg(tmp_path, "plain", learner=ppo(0.0), total_steps=six))
  assert plain["param_sha256"] != a["param_sha256"]
  modes.run(_cfg(tmp_path, "split", learner=ppo(1.0), total_steps=4 * 16 * 4, checkpoint_every=2))
  # Mid-way: resumed from a finished run's last checkpoint, the first segment acts with θ_{j-1}
  # unextrapolated (θ_{j-2} is not kept; docs/training.md#failures).
  shutil.rmtree(os.path.join(checkpoint.directory(str(tmp_path / "split")), "4"))
  resumed = modes.run(_cfg(tmp_path, "split", learner=ppo(1.0), total_steps=six), resume=True)
  assert resumed["param_sha256"] == a["param_sha256"]
  assert resumed["episode_returns"] == a["episode_returns"]
  with open(os.path.join(str(tmp_path / "a"), "metrics.csv")) as f:
    header = f.readline().strip().split(",")
  assert {"kl_pred", "kl_next"} <= set(header), header
