"""GFootball through the HTS runtime: extracted maps, several controlled players, raw pixels."""

import os
import shutil

import numpy as np
import pytest

from hts_jax import envs
from hts_jax.config import ConfigError, LearnerConfig, RunConfig
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


@pytest.mark.slow
def test_hts_ppo_on_empty_goal_close_extracted(tmp_path):
  info = envs.env_info("gfootball:academy_empty_goal_close", {})
  assert info.obs_shape == (72, 96, 16) and info.obs_dtype == "uint8" and info.num_actions == 19
  s = ppo_run(tmp_path, "egc", "academy_empty_goal_close", {})
  assert s["network"] == "cnn" and s["updates"] == 3
  assert s["policy_lag"]["histogram"] == {"0": 1, "1": 2}


@pytest.mark.slow
def test_three_agents_share_the_policy_deterministically(tmp_path):
  info = envs.env_info("gfootball:academy_3_vs_1_with_keeper", {"num_agents": 3})
  assert info.num_agents == 3 and info.obs_shape == (72, 96, 16)
  a = ppo_run(tmp_path, "a", "academy_3_vs_1_with_keeper", {"num_agents": 3}, 1, 1)
  b = ppo_run(tmp_path, "b", "academy_3_vs_1_with_keeper", {"num_agents": 3}, 2, 2)
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]


@pytest.mark.slow
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


@pytest.fixture
def display():
  if not shutil.which("Xvfb"):
    pytest.skip("Xvfb is installed by .ci/setup.sh")
  from hts_jax.runtime.outputs import video
  old = os.environ.pop("DISPLAY", None)
  video.ensure_display()  # Xvfb picks a free display and says which once it is up (-displayfd)
  yield
  video.stop_displays()
  if old is None:
    del os.environ["DISPLAY"]
  else:
    os.environ["DISPLAY"] = old


@pytest.mark.slow
def test_raw_pixels_have_the_right_shapes(display):
  env = envs.make_env("gfootball:academy_empty_goal_close", {"representation": "pixels"})
  obs, _ = env.reset(seed=1)
  assert obs.shape == (72, 96, 12) and obs.dtype == np.uint8  # RGB x 4 stacked frames
  obs, *_ = env.step(0)
  assert obs.shape == (72, 96, 12) and obs.max() > 0
  env.close()
  two = envs.env_info("gfootball:academy_3_vs_1_with_keeper",
                      {"representation": "pixels", "num_agents": 2})
  assert two.obs_shape == (72, 96, 12) and two.num_agents == 2
  gray = envs.env_info("gfootball:academy_empty_goal_close", {"representation": "pixels_gray"})
  assert gray.obs_shape == (72, 96, 4)


def test_simple115_is_a_vector():
  info = envs.env_info("gfootball:academy_empty_goal_close",
                       {"representation": "simple115v2", "stacked": False})
  assert info.obs_shape == (115,) and info.obs_dtype == "float32"


@pytest.mark.parametrize("name,kwargs,message", [
    ("gfootball:academy_nonsense", {}, "unknown GFootball scenario"),
    ("gfootball:academy_corner", {"representation": "voxels"}, "representation must be"),
    ("gfootball:academy_corner", {"rewards": "goals"}, "rewards must be"),
    ("gfootball:academy_corner", {"players": 2}, "unknown gfootball env_kwargs"),
])
def test_bad_gfootball_config(name, kwargs, message):
  with pytest.raises(ConfigError, match=message):
    envs.make_env(name, kwargs)


def test_all_paper_scenarios_exist():
  import importlib.util
  from hts_jax.envs.gfootball import SCENARIOS
  assert len(SCENARIOS) == 12
  for s in SCENARIOS:
    assert importlib.util.find_spec(f"gfootball.scenarios.{s}") is not None, s
