"""Atari through the ale-py executors: the paper's frames and a deterministic HTS-A2C run."""

import gymnasium as gym
import numpy as np
import pytest

from hts_jax import envs
from hts_jax.config import LearnerConfig, RunConfig
from hts_jax.runtime import modes


def test_atari_frames_and_raw_scores():
  env = envs.make_env("atari:Breakout", {}, train=True)
  obs, _ = env.reset(seed=0)
  assert obs.shape == (84, 84, 4) and obs.dtype == np.uint8
  rng = np.random.default_rng(0)
  games, lives_lost = [], 0
  for _ in range(2000):
    obs, r, terminated, truncated, info = env.step(int(rng.integers(4)))
    assert r in (-1.0, 0.0, 1.0)  # clipped for training
    if "episode_return" in info:
      games.append(info["episode_return"])
    if terminated or truncated:
      lives_lost += 1
      env.reset()
  assert games and lives_lost >= 4 * len(games)  # episodic life: a learning episode per life
  eval_env = envs.make_env("atari:Breakout", {}, train=False)
  assert eval_env.reset(seed=0)[0].shape == (84, 84, 4)


@pytest.mark.parametrize("bad", [{"sticky": True, "bogus": 1}])
def test_atari_rejects_unknown_kwargs(bad):
  with pytest.raises(ValueError, match="unknown atari env_kwargs"):
    envs.make_env("atari:Breakout", bad)


def test_hts_a2c_on_breakout_is_deterministic_across_actor_counts(tmp_path):
  def run(actors, executors):
    cfg = RunConfig(env="atari:Breakout", alpha=5, num_envs=4, num_executors=executors,
                    num_actors=actors, total_steps=4 * 5 * 4, seed=1, eval_episodes=1,
                    logdir=str(tmp_path / f"{actors}_{executors}"), log_every_s=1e9,
                    env_kwargs={"max_num_frames_per_episode": 400},
                    learner=LearnerConfig(algo="a2c", unroll_length=5))
    return modes.run(cfg)
  a, b = run(1, 2), run(2, 4)
  assert a["network"] == "cnn" and a["updates"] == 4
  assert a["param_sha256"] == b["param_sha256"]
  assert a["policy_lag"]["histogram"] == {"0": 1, "1": 3}


@pytest.mark.parametrize("sticky", [False, True])
def test_atari_env_state_pickles_bit_exact(sticky):
  """Checkpoints pickle env replicas: an ALE env must continue bit for bit, across games."""
  import pickle
  env = envs.make_env("atari:Breakout", {"sticky": sticky})
  env.reset(seed=3)
  rng = np.random.default_rng(0)
  for _ in range(100):
    env.step(int(rng.integers(4)))
  copy = pickle.loads(pickle.dumps(env))
  games = 0
  for _ in range(1200):
    a = int(rng.integers(4))
    o1, r1, te1, tr1, info = env.step(a)
    o2, r2, te2, tr2, _ = copy.step(a)
    assert (o1 == o2).all() and (r1, te1, tr1) == (r2, te2, tr2)
    games += "episode_return" in info
    if te1 or tr1:
      assert (env.reset()[0] == copy.reset()[0]).all()
  assert games >= 2  # whole games ended and restarted (no-op starts drawn from the saved RNG)


def test_envpool_path_is_deterministic_across_actor_counts(tmp_path):
  pytest.importorskip("envpool")

  def run(actors, threads):
    cfg = RunConfig(env="atari:Breakout", envpool=True, alpha=5, num_envs=4,
                    num_executors=threads, num_actors=actors, total_steps=4 * 5 * 4, seed=1,
                    eval_episodes=1, logdir=str(tmp_path / f"ep{actors}"), log_every_s=1e9,
                    env_kwargs={"max_num_frames_per_episode": 400},
                    learner=LearnerConfig(algo="a2c", unroll_length=5))
    return modes.run(cfg)
  a, b, c = run(1, 1), run(2, 2), run(4, 4)
  assert a["param_sha256"] == b["param_sha256"] == c["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"] == c["episode_returns"]
  assert a["policy_lag"]["histogram"] == {"0": 1, "1": 3}


def test_envpool_only_for_atari():
  from hts_jax.config import ConfigError
  with pytest.raises(ConfigError, match="--envpool is for atari"):
    RunConfig(env="CartPole-v1", envpool=True)


def test_atari_evaluation_uses_up_to_30_noop_starts():
  """Evaluation replicas (train=False) start each episode with a random number (up to 30) of
  no-ops, drawn from the env's seeded RNG: different seeds give different start frames."""
  env = envs.make_env("atari:Pong", {}, train=False)
  pre = env
  while not isinstance(pre, gym.wrappers.AtariPreprocessing):
    pre = pre.env
  assert pre.noop_max == 30
  starts = {env.reset(seed=s)[0].tobytes() for s in range(6)}
  assert len(starts) > 1
  env.close()


def test_sync_baseline_runs_on_envpool_too(tmp_path):
  """HTS-with-envpool can be compared with sync on the same env engine (it used to be refused with
  '--envpool is for --mode=hts'). Lockstep A2C: lag 0 everywhere; actor groups change no bit."""
  pytest.importorskip("envpool")

  def run(actors):
    cfg = RunConfig(env="atari:Breakout", envpool=True, mode="sync", alpha=5, num_envs=4,
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
