"""GFootball through the HTS runtime: HTS-PPO on extracted maps, several controlled players sharing
the policy, and the LSTM on them (the env's raw pixels and configs are in
tests/unit/test_gfootball_envs.py)."""


import pytest

from hts_jax import envs
from hts_jax.config import LearnerConfig, RunConfig
from hts_jax.runtime import modes

pytest.importorskip("gfootball", reason="built by .ci/setup.sh")


def ppo_run(tmp_path, name, scenario, env_kwargs, actors=1, executors=2, num_envs=2, **kw):
  cfg = RunConfig.make(env=f"gfootball:{scenario}", env_kwargs=env_kwargs, alpha=8,
                  num_envs=num_envs, num_executors=executors, num_actors=actors,
                  total_steps=num_envs * 8 * 3, seed=2, eval_episodes=1,
                  logdir=str(tmp_path / name), log_every_s=1e9,
                  learner=LearnerConfig(algo="ppo", ppo_epochs=1, num_minibatches=2,
                                        optimizer="adam", learning_rate=3e-4,
                                        minibatch="envs" if kw.get("core") else "transitions"),
                  **kw)
  return modes.run(cfg)


def test_hts_ppo_on_empty_goal_close_extracted(tmp_path):
  info = envs.env_info("gfootball:academy_empty_goal_close", {})
  assert info.obs_shape == (72, 96, 16) and info.obs_dtype == "uint8" and info.num_actions == 19
  s = ppo_run(tmp_path, "egc", "academy_empty_goal_close", {})
  assert s["network"] == "cnn" and s["updates"] == 3
  assert s["policy_lag"]["histogram"] == {"0": 1, "1": 2}


def test_three_agents_share_the_policy_deterministically(tmp_path):
  info = envs.env_info("gfootball:academy_3_vs_1_with_keeper", {"num_agents": 3})
  assert info.num_agents == 3 and info.obs_shape == (72, 96, 16)
  a = ppo_run(tmp_path, "a", "academy_3_vs_1_with_keeper", {"num_agents": 3}, 1, 1)
  b = ppo_run(tmp_path, "b", "academy_3_vs_1_with_keeper", {"num_agents": 3}, 2, 2)
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]


def test_lstm_on_three_agents_is_deterministic_and_runs_async(tmp_path):
  """--core=lstm on GFootball's extracted maps (the CNN torso, then the LSTM), every controlled
  player a row with its own state: the same bits for 1 and 2 actors/executors; IMPALA runs."""
  kw = dict(core="lstm", core_size=32)
  a = ppo_run(tmp_path, "a", "academy_3_vs_1_with_keeper", {"num_agents": 3}, 1, 1, **kw)
  b = ppo_run(tmp_path, "b", "academy_3_vs_1_with_keeper", {"num_agents": 3}, 2, 2, **kw)
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  impala = modes.run(RunConfig.make(
      env="gfootball:academy_empty_goal_close", mode="async", alpha=8, num_envs=2,
      num_executors=2, num_actors=2, total_steps=2 * 8 * 3, eval_episodes=1,
      logdir=str(tmp_path / "impala"), log_every_s=1e9, learner=LearnerConfig(
          algo="a2c", unroll_length=8), **kw))
  assert impala["updates"] > 0
