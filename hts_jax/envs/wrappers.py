"""Generic env wrappers (host side)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class RecordRawEpisode(gym.Wrapper):
  """Sets `info["episode_return"]` (raw score) and `info["episode_length"]` when a game ends.

  Counts every step taken through it: the caller's and, for the Atari chain, those the wrappers
  above take themselves (the post-life-loss no-op, FIRE on reset); a game ending on such an inner
  step has its record handed to the caller by those wrappers (`atari._HandsOnGameRecords`)."""

  def reset(self, **kwargs):
    self._return, self._length = 0.0, 0
    return self.env.reset(**kwargs)

  @property
  def return_so_far(self) -> float:
    """The raw return of the game being played (an evaluation cut short reports it)."""
    return self._return

  def step(self, action):
    obs, reward, terminated, truncated, info = self.env.step(action)
    self._return += float(reward)
    self._length += 1
    if terminated or truncated:
      info = dict(info, episode_return=self._return, episode_length=self._length)
    return obs, reward, terminated, truncated, info


class ClipAction(gym.ActionWrapper):
  """Clips a continuous action to the `Box` space's bounds before the env sees it (the policy's
  unclipped sample stays in the storage). gymnasium's `ClipAction` does the same through a
  lambda, which cannot be pickled: checkpoints pickle the env replicas."""

  def __init__(self, env: gym.Env):
    super().__init__(env)
    space = env.action_space
    self._low, self._high = space.low, space.high

  def action(self, action):
    return np.clip(np.asarray(action, self._low.dtype), self._low, self._high)


class MujocoState(gym.Wrapper):
  """Makes a gymnasium MuJoCo env pickle with its state. gymnasium's `MujocoEnv` pickles through
  `EzPickle`, which rebuilds a fresh env from its constructor arguments; checkpoints pickle the
  replicas, so a resumed run would restart every episode. This wrapper carries the simulator's
  whole integration state (`mujoco.mj_getState(..., mjSTATE_INTEGRATION)`: time, qpos, qvel,
  act, warm-start accelerations, controls, ...) and the env's generator (reset noise) through
  the pickle and writes them into the rebuilt env, so its next steps are bit-for-bit the
  original's (tests/unit/test_gaussian_head.py)."""

  def __getstate__(self):
    import mujoco  # pylint: disable=import-outside-toplevel  (only MuJoCo envs get here)
    raw = self.env.unwrapped
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    physics = np.empty(mujoco.mj_stateSize(raw.model, spec), np.float64)
    mujoco.mj_getState(raw.model, raw.data, physics, spec)
    return dict(self.__dict__, _physics=physics,
                _rng=raw.np_random.bit_generator.state)

  def __setstate__(self, state):
    import mujoco  # pylint: disable=import-outside-toplevel
    state = dict(state)
    physics, rng = state.pop("_physics"), state.pop("_rng")
    self.__dict__.update(state)
    raw = self.env.unwrapped
    mujoco.mj_setState(raw.model, raw.data, physics, mujoco.mjtState.mjSTATE_INTEGRATION)
    mujoco.mj_forward(raw.model, raw.data)
    raw.np_random.bit_generator.state = rng


def is_mujoco(env: gym.Env) -> bool:
  return type(env.unwrapped).__module__.startswith("gymnasium.envs.mujoco")
