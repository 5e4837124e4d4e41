"""Google Research Football (`--env=gfootball:<scenario>`) behind the gymnasium interface.

`env_kwargs`:
  representation  'extracted' (default: the 72x96 super-mini-map, 4 planes, 16 channels stacked,
                  the paper's default), 'pixels' (raw 72x96 RGB, rendered; 12 channels stacked),
                  'pixels_gray', 'simple115v2' / 'simple115' (115 floats)
  stacked         stack the last 4 frames on the channel axis (default True)
  rewards         'scoring,checkpoints' (default) or 'scoring'
  num_agents      left players controlled (default 1). Each is an agent slot sharing the policy:
                  observations `[num_agents, ...]`, rewards `[num_agents]`, actions a list.
`render=True` (evaluation videos, not an env_kwarg): `render()` returns the game's 640x360 RGB
frame (OpenGL: needs an X display, e.g. Xvfb).
The reported episode return (`info["episode_return"]`) is the score (sum of `score_reward`, goals
for minus against), without checkpoint rewards. The engine is seeded with the reset seed
(`game_engine_random_seed`). Env states cannot be checkpointed: a resumed run restarts GFootball
envs from fresh resets.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
import warnings
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from hts_jax.choices import registers

SCENARIOS = (
    "academy_empty_goal_close", "academy_empty_goal", "academy_run_to_score",
    "academy_run_to_score_with_keeper", "academy_pass_and_shoot_with_keeper",
    "academy_run_pass_and_shoot_with_keeper", "academy_3_vs_1_with_keeper", "academy_corner",
    "academy_counterattack_easy", "academy_counterattack_hard",
    "academy_single_goal_versus_lazy", "11_vs_11_easy_stochastic")
REPRESENTATIONS = ("extracted", "pixels", "pixels_gray", "simple115", "simple115v2")


def _config_error(message: str):
  from hts_jax.config import ConfigError  # pylint: disable=import-outside-toplevel
  return ConfigError(message)


class GFootballEnv(gym.Env):
  metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

  def __init__(self, scenario: str, representation: str = "extracted", stacked: bool = True,
               rewards: str = "scoring,checkpoints", num_agents: int = 1, render: bool = False):
    if importlib.util.find_spec("gfootball") is None:
      raise _config_error("gfootball is not installed (bash .ci/setup.sh builds it)")
    if scenario not in SCENARIOS and importlib.util.find_spec(
        f"gfootball.scenarios.{scenario}") is None:
      raise _config_error(f"unknown GFootball scenario {scenario!r}; the paper's: {SCENARIOS}")
    if representation not in REPRESENTATIONS:
      raise _config_error(f"gfootball representation must be one of {REPRESENTATIONS}, got "
                          f"{representation!r}")
    if not set(rewards.split(",")) <= {"scoring", "checkpoints"}:
      raise _config_error(f"gfootball rewards must be 'scoring' or 'scoring,checkpoints', got "
                          f"{rewards!r}")
    if num_agents < 1:
      raise _config_error(f"gfootball num_agents must be >= 1, got {num_agents}")
    self.scenario, self.representation, self.stacked = scenario, representation, stacked
    self.rewards, self.num_agents = rewards, int(num_agents)
    self.render_mode = "rgb_array" if render else None
    self._env = None
    self._seed: Optional[int] = None
    self._make(0)
    space = self._env.observation_space
    dtype = np.float32 if representation.startswith("simple115") else np.uint8
    low, high = (-np.inf, np.inf) if dtype == np.float32 else (0, 255)
    self.observation_space = gym.spaces.Box(low, high, space.shape, dtype)
    n = int(getattr(self._env.action_space, "n", 0) or self._env.action_space.nvec[0])
    self.action_space = (gym.spaces.Discrete(n) if self.num_agents == 1
                         else gym.spaces.MultiDiscrete([n] * self.num_agents))
    self._score = 0.0
    self._length = 0

  def _make(self, seed: int) -> None:
    if self._env is not None:
      self._env.close()
    football = _import_football()
    from absl import logging  # pylint: disable=import-outside-toplevel
    logging.set_verbosity(logging.WARNING)  # GFootball logs every episode end at INFO
    pixels = self.representation.startswith("pixels")
    render = pixels or self.render_mode is not None
    # SDL's dummy driver (pygame's videos set it where there is no display) cannot give
    # GFootball an OpenGL context: its engine would exit(1) the whole process.
    if render and os.environ.get("SDL_VIDEODRIVER") == "dummy" and "DISPLAY" in os.environ:
      del os.environ["SDL_VIDEODRIVER"]
    if render and "DISPLAY" not in os.environ and \
        os.environ.get("SDL_VIDEODRIVER", "dummy") == "dummy":
      raise _config_error("gfootball pixel representations and videos render with OpenGL: run "
                          "under a display (e.g. xvfb-run -a python -m experiments.train ...)")
    options = {"game_engine_random_seed": int(seed) % 2_000_000_000}
    if render and not pixels:  # video frames only: a smaller render than the default 1280x720
      options.update(render_resolution_x=640, render_resolution_y=360)
    self._env = football.create_environment(
        env_name=self.scenario, representation=self.representation, stacked=self.stacked,
        rewards=self.rewards, render=render,
        number_of_left_players_agent_controls=self.num_agents, other_config_options=options)
    self._seed = seed

  def reset(self, *, seed: Optional[int] = None, options=None):
    super().reset(seed=seed)
    if seed is not None and seed != self._seed:
      self._make(seed)
    self._score, self._length = 0.0, 0
    return self._obs(self._env.reset()), {}

  def step(self, action):
    obs, reward, done, info = self._env.step(action)
    self._score += float(info.get("score_reward", 0.0))
    self._length += 1
    out = {}
    if done:
      out = {"episode_return": self._score, "episode_length": self._length}
    reward = (np.asarray(reward, np.float32) if self.num_agents > 1 else float(reward))
    return self._obs(obs), reward, bool(done), False, out

  @property
  def return_so_far(self) -> float:
    """The score of the episode being played (an evaluation cut short reports it)."""
    return self._score

  def _obs(self, obs):
    return np.asarray(obs, self.observation_space.dtype)

  def render(self):
    """The game's RGB frame `[H, W, 3]` uint8 (render=True), else None."""
    if self.render_mode is None or self._env is None:
      return None
    with warnings.catch_warnings():  # gym 0.25's deprecation of render(mode=...)
      warnings.simplefilter("ignore")
      return np.asarray(self._env.render(mode="rgb_array"), np.uint8)

  def close(self):
    if self._env is not None:
      self._env.close()
      self._env = None

  def __getstate__(self):
    raise TypeError("GFootball env states cannot be checkpointed (its engine is not picklable)")


def _import_football():
  """`gfootball.env`, imported without the banner its `gym` import prints to stderr once per
  process ("Gym has been unmaintained since 2022 ...": gym_notices' notice for gym's version,
  15 lines with 4 executors); anything else printed while importing is passed on. The warnings
  filters gym sets at import (`simplefilter("once", DeprecationWarning)`) do not outlive it."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if "gym" not in sys.modules:
      captured = io.StringIO()
      with contextlib.redirect_stderr(captured):
        import gym as legacy_gym  # pylint: disable=import-outside-toplevel
      rest = captured.getvalue()
      try:
        import gym_notices.notices as notices  # pylint: disable=import-outside-toplevel
        rest = rest.replace(f"{notices.notices.get(legacy_gym.__version__, '')}\n", "", 1)
      except ImportError:
        pass
      if rest:
        sys.stderr.write(rest)
    import gfootball.env as football  # pylint: disable=import-outside-toplevel
  return football


def make_gfootball(scenario: str, env_kwargs: Dict[str, Any], train: bool = True,
                   render: bool = False) -> gym.Env:
  del train  # same env for training and evaluation (rewards stay as configured)
  allowed = {"representation", "stacked", "rewards", "num_agents"}
  unknown = set(env_kwargs) - allowed
  if unknown:
    raise _config_error(f"unknown gfootball env_kwargs {sorted(unknown)}; allowed: "
                        f"{sorted(allowed)}")
  return GFootballEnv(scenario, **env_kwargs, render=render)


@registers("env", "gfootball:")
def make(scenario: str, env_kwargs: Dict[str, Any], train: bool, render: bool):
  """`gfootball:<scenario>`: the family's `make` (`choices.FAMILIES`)."""
  return make_gfootball(scenario, env_kwargs, train=train, render=render)
