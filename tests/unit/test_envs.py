"""Env factories: the variable-step-time env, generic gymnasium ids, decorrelation."""

import time

import gymnasium as gym
import numpy as np
import pytest

from hts_jax import envs
from hts_jax.config import ConfigError

N = 20_000


@pytest.mark.parametrize("kwargs", [
    dict(dist="exponential", rate=2.0, unit_s=2e-3),
    dict(dist="exponential", mean_s=5e-4),
    dict(dist="gamma", mean_s=1e-3, var_s2=4e-6),
    dict(dist="lognormal", mean_s=2e-3, var_s2=1e-6),
])
def test_vstep_step_time_mean_and_variance(kwargs):
  env = envs.make_env("vstep", kwargs)
  env.reset(seed=11)
  u = env.unwrapped
  x = np.array([u.sample_step_time() for _ in range(N)])
  mean, var = x.mean(), x.var()
  se_mean = np.sqrt(var / N)
  se_var = np.sqrt((np.mean((x - mean) ** 4) - var ** 2) / N)
  assert abs(mean - u.mean_s) < 4 * se_mean, (mean, u.mean_s)
  assert abs(var - u.var_s2) < 4 * se_var, (var, u.var_s2)
  if kwargs.get("rate"):
    assert u.mean_s == pytest.approx(1e-3) and u.var_s2 == pytest.approx(1e-6)


def test_vstep_same_seed_same_step_times_and_real_delays():
  def times(seed):
    env = envs.make_env("vstep", dict(dist="gamma", mean_s=1e-3, var_s2=1e-6))
    env.reset(seed=seed)
    return [env.unwrapped.sample_step_time() for _ in range(50)]
  assert times(3) == times(3) and times(3) != times(4)
  env = envs.make_env("vstep", dict(dist="constant", mean_s=2e-3, mode="busy"))
  env.reset(seed=0)
  t0 = time.perf_counter()
  for _ in range(50):
    env.step(0)
  assert time.perf_counter() - t0 >= 50 * 2e-3


def test_vstep_task_and_registration():
  env = gym.make("hts_jax/VStep-v0", dist="constant", mean_s=0.0, episode_length=5)
  obs, _ = env.reset(seed=0)
  total = 0.0
  for t in range(5):
    obs, r, terminated, truncated, _ = env.step(int(np.argmax(obs[:4])))
    total += r
  assert total == 5.0 and truncated and not terminated


@pytest.mark.parametrize("kwargs,message", [
    (dict(dist="weibull"), "dist must be one of"),
    (dict(dist="exponential", mean_s=1e-3, var_s2=5e-6), "has variance"),
    (dict(mode="nap"), "mode must be one of"),
    (dict(bogus=1), "bad env_kwargs for 'vstep'"),
])
def test_vstep_bad_kwargs(kwargs, message):
  with pytest.raises(ConfigError, match=message):
    envs.make_env("vstep", kwargs)


def test_ale_ids_name_the_atari_family():
  """`ALE/Breakout-v5`, `Breakout-v5` and `BreakoutNoFrameskip-v4` (CleanRL's and gym's ids) get
  one line naming `atari:Breakout`, not gymnasium's advice to install ALE (which is installed)."""
  pytest.importorskip("ale_py")
  for name, game in [("ALE/Breakout-v5", "Breakout"), ("Breakout-v5", "Breakout"),
                     ("BreakoutNoFrameskip-v4", "Breakout"),
                     ("SpaceInvaders-v5", "SpaceInvaders")]:
    with pytest.raises(ConfigError, match=f"ALE id: Atari games run here as --env=atari:{game} "):
      envs.make_env(name, {})
  assert envs.atari_game_of("CartPole-v1") is None and envs.atari_game_of("Walker2d-v5") is None
