"""A small learnable task whose `step()` takes a random amount of time (`--env=vstep`).

The task: observations are `obs_dim` standard-normal features; the rewarded action is the argmax
of the first `num_actions` features (reward 1, else 0); episodes last `episode_length` steps.
A linear policy solves it; the optimal return is `episode_length`, a uniform one gets
`episode_length / num_actions`.

The step time is drawn, per env replica, from its own seeded stream (seeded with the env's reset
seed, so the same seed gives the same step-time sequence; it never touches the task's RNG):
  exponential  rate β per `unit_s` (as in Claim 1's simulation: mean unit_s/β, variance
               (unit_s/β)²), or set by `mean_s` alone;
  gamma        `mean_s` and `var_s2` (shape mean²/var, scale var/mean);
  lognormal    `mean_s` and `var_s2`;
  constant     `mean_s`.
`mode="sleep"` waits without using the CPU (so 16+ executors fit on 2 cores); `mode="busy"` spins.
Registered as the gymnasium id `hts_jax/VStep-v0`.
"""

from __future__ import annotations

import time
from typing import Optional

import gymnasium as gym
import numpy as np

DISTS = ("exponential", "gamma", "lognormal", "constant")
MODES = ("sleep", "busy")


class VStepEnv(gym.Env):
  metadata = {"render_modes": []}

  def __init__(self, dist: str = "exponential", mean_s: Optional[float] = None,
               var_s2: Optional[float] = None, rate: Optional[float] = None,
               unit_s: float = 1e-3, mode: str = "sleep", obs_dim: int = 8, num_actions: int = 4,
               episode_length: int = 32):
    from hts_jax.config import ConfigError  # pylint: disable=import-outside-toplevel
    if dist not in DISTS:
      raise ConfigError(f"vstep dist must be one of {DISTS}, got {dist!r}")
    if mode not in MODES:
      raise ConfigError(f"vstep mode must be one of {MODES}, got {mode!r}")
    if rate is not None:
      if dist != "exponential" or mean_s is not None:
        raise ConfigError("vstep: rate is for dist='exponential' without mean_s")
      if rate <= 0:
        raise ConfigError(f"vstep: rate must be > 0, got {rate}")
      mean_s = unit_s / rate
    mean_s = 1e-3 if mean_s is None else float(mean_s)
    if mean_s < 0:
      raise ConfigError(f"vstep: mean_s must be >= 0, got {mean_s}")
    natural_var = {"exponential": mean_s ** 2, "constant": 0.0}
    if var_s2 is None:
      var_s2 = natural_var.get(dist, mean_s ** 2)
    elif dist in natural_var and not np.isclose(var_s2, natural_var[dist]):
      raise ConfigError(f"vstep: dist={dist!r} with mean_s={mean_s} has variance "
                        f"{natural_var[dist]}, not var_s2={var_s2}")
    if var_s2 < 0 or (dist in ("gamma", "lognormal") and (var_s2 <= 0 or mean_s <= 0)):
      raise ConfigError(f"vstep: {dist} needs mean_s > 0 and var_s2 > 0")
    if num_actions < 2 or obs_dim < num_actions or episode_length < 1:
      raise ConfigError("vstep: need num_actions >= 2, obs_dim >= num_actions, "
                        "episode_length >= 1")
    self.dist, self.mode = dist, mode
    self.mean_s, self.var_s2 = mean_s, float(var_s2)
    self.num_actions, self.episode_length = num_actions, episode_length
    self.observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    self.action_space = gym.spaces.Discrete(num_actions)
    self._time_rng: Optional[np.random.Generator] = None
    self._obs = np.zeros(obs_dim, np.float32)
    self._t = 0

  def sample_step_time(self) -> float:
    """Draws the next step time (seconds) from this replica's stream."""
    rng = self._time_rng
    m, v = self.mean_s, self.var_s2
    if self.dist == "constant" or m == 0:
      return m
    if self.dist == "exponential":
      return float(rng.exponential(m))
    if self.dist == "gamma":
      return float(rng.gamma(m * m / v, v / m))
    sigma2 = np.log1p(v / (m * m))  # lognormal with the requested mean and variance
    return float(rng.lognormal(np.log(m) - sigma2 / 2, np.sqrt(sigma2)))

  def reset(self, *, seed: Optional[int] = None, options=None):
    super().reset(seed=seed)
    if seed is not None or self._time_rng is None:
      self._time_rng = np.random.default_rng([0 if seed is None else seed, 7])
    self._t = 0
    self._obs = self.np_random.standard_normal(self._obs.shape).astype(np.float32)
    return self._obs.copy(), {}

  def step(self, action):
    delay = self.sample_step_time()
    if delay > 0:
      if self.mode == "sleep":
        time.sleep(delay)
      else:
        end = time.perf_counter() + delay
        while time.perf_counter() < end:
          pass
    reward = float(int(action) == int(np.argmax(self._obs[:self.num_actions])))
    self._t += 1
    self._obs = self.np_random.standard_normal(self._obs.shape).astype(np.float32)
    return self._obs.copy(), reward, False, self._t >= self.episode_length, {}


gym.register("hts_jax/VStep-v0", entry_point=VStepEnv)
