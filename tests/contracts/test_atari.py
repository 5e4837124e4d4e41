"""Atari through the ale-py executors: the paper's frames and a deterministic HTS-A2C run."""

import pytest

from hts_jax.config import LearnerConfig, RunConfig
from hts_jax.runtime import modes


def test_hts_a2c_on_breakout_is_deterministic_across_actor_counts(tmp_path):
  def run(actors, executors):
    cfg = RunConfig.make(env="atari:Breakout", alpha=5, num_envs=4, num_executors=executors,
                    num_actors=actors, total_steps=4 * 5 * 4, seed=1, eval_episodes=1,
                    logdir=str(tmp_path / f"{actors}_{executors}"), log_every_s=1e9,
                    env_kwargs={"max_num_frames_per_episode": 400},
                    learner=LearnerConfig(algo="a2c", unroll_length=5))
    return modes.run(cfg)
  a, b = run(1, 2), run(2, 4)
  assert a["network"] == "cnn" and a["updates"] == 4
  assert a["param_sha256"] == b["param_sha256"]
  assert a["policy_lag"]["histogram"] == {"0": 1, "1": 3}


def test_envpool_path_is_deterministic_across_actor_counts(tmp_path):
  pytest.importorskip("envpool", reason="installed by .ci/setup.sh")

  def run(actors, threads):
    cfg = RunConfig.make(env="atari:Breakout", envpool=True, alpha=5, num_envs=4,
                    num_executors=threads, num_actors=actors, total_steps=4 * 5 * 4, seed=1,
                    eval_episodes=1, logdir=str(tmp_path / f"ep{actors}"), log_every_s=1e9,
                    env_kwargs={"max_num_frames_per_episode": 400},
                    learner=LearnerConfig(algo="a2c", unroll_length=5))
    return modes.run(cfg)
  a, b, c = run(1, 1), run(2, 2), run(4, 4)
  assert a["param_sha256"] == b["param_sha256"] == c["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"] == c["episode_returns"]
  assert a["policy_lag"]["histogram"] == {"0": 1, "1": 3}
  # Bug 4: a group computes its own envs' rows only (it used to run the full [num_envs] policy,
  # num_actors times the needed inference); a 1-env group pads to the fixed actor batch of 2.
  rows = [r["efficiency"]["policy_rows_per_env_step"] for r in (a, b, c)]
  assert rows == [1.0, 1.0, 2.0]


def test_sync_baseline_runs_on_envpool_too(tmp_path):
  """HTS-with-envpool can be compared with sync on the same env engine (it used to be refused with
  '--envpool is for --mode=hts'). Lockstep A2C: lag 0 everywhere; actor groups change no bit."""
  pytest.importorskip("envpool", reason="installed by .ci/setup.sh")

  def run(actors):
    cfg = RunConfig.make(env="atari:Breakout", envpool=True, mode="sync", alpha=5, num_envs=4,
                    num_executors=actors, num_actors=actors, total_steps=4 * 5 * 3, seed=1,
                    eval_episodes=1, logdir=str(tmp_path / f"sync{actors}"), log_every_s=1e9,
                    env_kwargs={"max_num_frames_per_episode": 400},
                    learner=LearnerConfig(algo="a2c", unroll_length=5))
    return modes.run(cfg)
  a, b = run(1), run(2)
  assert a["mode"] == "sync" and a["updates"] == 3
  assert a["policy_lag"]["histogram"] == {"0": 3}
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
