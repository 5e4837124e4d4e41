"""`--mode=hts --policy_lag=0` is `--mode=sync`'s run bit for bit: the same param_sha256,
evaluations and episode returns for the same flags, whatever the actor and executor counts, across
a resume and across two processes; A2C and PPO on CartPole, PPO on MuJoCo, the LSTM core, envpool
Breakout and GFootball close. HTS keeps its rollout (asynchronous executors, actors on ready blocks,
the alpha barrier); only the learner's overlap (and so the lag) goes."""

import dataclasses
import functools
import os
import shutil
import subprocess
import sys

import pytest

from hts_jax.config import ConfigError, LearnerConfig, RunConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint
from tests.support import ROOT
from tests.support import processes as mp
from tests.support.cli import summary
from tests.support.runs import small_config

RUN = dict(env="CartPole-v1", alpha=8, num_envs=8, num_executors=2, num_actors=1,
           total_steps=8 * 8 * 6, seed=4, eval_episodes=2, eval_every=8 * 8 * 2,
           learner=LearnerConfig(algo="a2c", unroll_length=8))
PPO = LearnerConfig(algo="ppo", num_minibatches=2, ppo_epochs=2, optimizer="adam",
                    learning_rate=1e-3)
_cfg = functools.partial(small_config, base=RUN)


def scored(s):
  """A run's evaluations without their timings."""
  return [(e["env_steps"], e["returns"]) for e in s["eval"]]


def assert_same_run(lag_0, sync):
  assert lag_0["param_sha256"] == sync["param_sha256"]
  assert lag_0["episode_returns"] == sync["episode_returns"]
  assert scored(lag_0) == scored(sync) and len(sync["eval"]) >= 1
  assert lag_0["policy_lag"]["per_update"] == sync["policy_lag"]["per_update"]
  assert set(lag_0["policy_lag"]["histogram"]) == {"0"}
  assert lag_0["mode"] == "hts" and lag_0["correction"] == sync["correction"] == "none"
  assert lag_0["policy_lag_setting"] == sync["policy_lag_setting"] == 0


@pytest.mark.smoke
@pytest.mark.parametrize("learner", [RUN["learner"], PPO], ids=["a2c", "ppo"])
def test_lag_0_is_sync_bit_for_bit_for_any_actor_and_executor_count(tmp_path, learner):
  """Sync's lockstep loop with 2 executors against HTS's actors on ready blocks with 4 executors
  and 3 actors under step-time jitter; the lag-1 run (the paper's) differs."""
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync", learner=learner))
  lag_0 = modes.run(_cfg(tmp_path, "lag0", policy_lag=0, num_executors=4, num_actors=3,
                         executor_jitter_s=0.002, learner=learner))
  assert_same_run(lag_0, sync)
  lag_1 = modes.run(_cfg(tmp_path, "lag1", learner=learner))
  assert lag_1["param_sha256"] != sync["param_sha256"]
  assert lag_1["policy_lag_setting"] == 1 and lag_1["policy_lag"]["histogram"] == {"0": 1, "1": 5}
  # The loop books its learner's time: busy while the executors waited, never beside them.
  assert 0 < lag_0["learner_busy_share"] < 1 and lag_0["idle"]["learner"] > 0


@pytest.mark.smoke
def test_an_actor_waiting_for_a_fuller_call_moves_no_bits(tmp_path):
  """One actor over 4 executors' 2-env blocks in 4-row calls waits (--actor_wait, at most one
  mean call) for a second block before it calls: it merges blocks, and the runs keep their bits
  (lag 0: sync's, waiting or not; lag 1: the 3-actor run's, where no actor waits)."""
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync"))
  layout = dict(num_executors=4, actor_batch=4, executor_jitter_s=0.001)
  waits = modes.run(_cfg(tmp_path, "lag0", policy_lag=0, num_actors=1, actor_wait=1.0, **layout))
  at_once = modes.run(_cfg(tmp_path, "lag0_at_once", policy_lag=0, num_actors=1, actor_wait=0,
                           **layout))
  assert_same_run(waits, sync)
  assert_same_run(at_once, sync)
  ready = lambda s: s["efficiency"]["mean_ready_envs_per_actor_call"]
  # 3.66 ready envs per call against 2.36 at once (the 2-core Intel, 2026-12-05).
  assert ready(waits) > ready(at_once) + 0.3, (ready(waits), ready(at_once))
  lag_1 = [modes.run(_cfg(tmp_path, f"lag1_{n}", num_actors=n, actor_wait=1.0, **layout))
           for n in (1, 3)]
  assert lag_1[0]["param_sha256"] == lag_1[1]["param_sha256"]
  assert lag_1[0]["episode_returns"] == lag_1[1]["episode_returns"]


@pytest.mark.smoke
def test_lag_0_resumes_bit_exactly_into_syncs_run(tmp_path):
  """A lag-0 run stopped at a checkpoint and resumed ends with the uninterrupted sync run's bits;
  a resume may not change the lag (it changes what the run computes)."""
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync", learner=PPO))
  modes.run(_cfg(tmp_path, "split", policy_lag=0, learner=PPO, total_steps=8 * 8 * 3,
                 checkpoint_every=2))
  with pytest.raises(ConfigError, match="policy_lag differs"):
    modes.run(_cfg(tmp_path, "split", learner=PPO), resume=True)
  # A finished run checkpoints its last update too; it is set aside: this resumes mid-way.
  assert checkpoint.steps(str(tmp_path / "split"))[:2] == [3, 2]
  shutil.rmtree(os.path.join(checkpoint.directory(str(tmp_path / "split")), "3"))
  resumed = modes.run(_cfg(tmp_path, "split", policy_lag=0, learner=PPO), resume=True)
  assert resumed["resumed_from_update"] == 2
  assert resumed["param_sha256"] == sync["param_sha256"]
  assert resumed["episode_returns"] == sync["episode_returns"]
  assert scored(resumed) == scored(sync)


@pytest.mark.smoke
def test_lag_0_refuses_what_needs_a_lag_in_one_line(tmp_path):
  """A correction of the lag, --acting_extrapolation, and --policy_lag outside --mode=hts; the
  default correction, `none` and the corrections that are the plain update at lag 0 are taken (a
  preset made for lag 1 runs at lag 0) and summary.json names what ran: `none`."""
  bad = {"--correction=truncated_is applies to --policy_lag=1 only":
         dict(learner=LearnerConfig(correction="truncated_is")),
         "--acting_extrapolation predicts": dict(learner=dataclasses.replace(
             PPO, correction="none", acting_extrapolation=0.5)),
         "--policy_lag is an option of --mode=hts": dict(mode="sync"),
         "policy_lag must be 0 or 1": dict(policy_lag=2)}
  for message, kw in bad.items():
    with pytest.raises(ConfigError, match=f"^{message}") as e:
      _cfg(tmp_path, **{"policy_lag": 0, **kw})
    assert "\n" not in str(e.value)
  for correction in ("delayed", "none", "behaviour", "decoupled"):
    _cfg(tmp_path, policy_lag=0, learner=dataclasses.replace(PPO, correction=correction))
  assert RunConfig.make(policy_lag=0).to_dict()["policy_lag"] == 0


def test_lag_0_is_sync_on_mujoco_with_normalisers(tmp_path):
  """Continuous actions (the Gaussian head), observation and reward normalisers."""
  mujoco = dict(env="InvertedPendulum-v5", alpha=16, num_envs=4, total_steps=4 * 16 * 4,
                eval_every=4 * 16 * 2, eval_max_steps=50,
                learner=LearnerConfig(algo="ppo", num_minibatches=4, ppo_epochs=2,
                                      optimizer="adam", learning_rate=3e-4, entropy_coef=0.0,
                                      normalize_obs=True, normalize_rewards=True,
                                      bootstrap_truncation=True))
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync", **mujoco))
  lag_0 = modes.run(_cfg(tmp_path, "lag0", policy_lag=0, num_executors=4, num_actors=2, **mujoco))
  assert_same_run(lag_0, sync)


def test_lag_0_is_sync_with_the_lstm_core(tmp_path):
  lstm = dict(env="hts_jax/CartPoleNoVel-v1", core="lstm", core_size=16, alpha=16,
              total_steps=8 * 16 * 4, eval_every=8 * 16 * 2,
              learner=LearnerConfig(algo="ppo", minibatch="envs", num_minibatches=2, ppo_epochs=2,
                                    optimizer="adam", learning_rate=1e-3,
                                    bootstrap_truncation=True))
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync", **lstm))
  lag_0 = modes.run(_cfg(tmp_path, "lag0", policy_lag=0, num_executors=4, num_actors=2, **lstm))
  assert_same_run(lag_0, sync)


def test_lag_0_is_sync_on_envpool_breakout(tmp_path):
  pytest.importorskip("envpool", reason="installed by .ci/setup.sh")
  breakout = dict(env="atari:Breakout", envpool=True, alpha=5, num_envs=4, total_steps=4 * 5 * 4,
                  seed=1, eval_episodes=1, eval_every=4 * 5 * 2,
                  env_kwargs={"max_num_frames_per_episode": 400},
                  learner=LearnerConfig(algo="a2c", unroll_length=5))
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync", num_executors=1, **breakout))
  lag_0 = modes.run(_cfg(tmp_path, "lag0", policy_lag=0, num_executors=2, num_actors=2,
                         **breakout))
  assert_same_run(lag_0, sync)


def test_lag_0_is_sync_on_gfootball_close(tmp_path):
  pytest.importorskip("gfootball", reason="built by .ci/setup.sh")
  close = dict(env="gfootball:academy_empty_goal_close", alpha=8, num_envs=4,
               total_steps=4 * 8 * 3, seed=2, eval_episodes=1, eval_every=4 * 8 * 2,
               learner=LearnerConfig(algo="ppo", ppo_epochs=1, num_minibatches=2,
                                     optimizer="adam", learning_rate=3e-4))
  sync = modes.run(_cfg(tmp_path, "sync", mode="sync", **close))
  lag_0 = modes.run(_cfg(tmp_path, "lag0", policy_lag=0, num_executors=4, num_actors=2, **close))
  assert_same_run(lag_0, sync)


def test_lag_0_is_sync_across_two_processes(tmp_path):
  """`hts-launch` over two processes (jax.distributed) at lag 0 against one sync process with two
  learner devices: the global batch is the same [T, 8] array, split the same way."""
  lag_0 = str(tmp_path / "lag0")
  proc = mp.launch(lag_0, "--total_steps=400", "--num_executors=2", "--policy_lag=0")
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-2000:]
  one = str(tmp_path / "sync")
  proc = subprocess.run([sys.executable, "-m", "experiments.train", *mp.RUN, f"--logdir={one}",
                         "--total_steps=400", "--num_executors=2", "--learner_devices=0,1",
                         "--mode=sync"], cwd=ROOT, env=mp.env(2), capture_output=True, text=True,
                        timeout=600, check=False)
  assert proc.returncode == 0, proc.stderr[-2000:]
  a, b = summary(lag_0), summary(one)
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert scored(a) == scored(b) and a["policy_lag"]["histogram"] == {"0": 10}
