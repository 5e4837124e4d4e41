"""Atari through ale-py + gymnasium with the paper's protocol (OpenAI baselines / Kostrikov):

no sticky actions (option: `sticky=True`, ALE v5's 0.25), up to 30 no-op starts, frame skip 4
with max-pooling over the last two frames, 84x84 grayscale, FIRE on reset where the game needs it,
4 stacked frames as `[84, 84, 4]` uint8; for training only, episodic life (a lost life ends the
learning episode, not the game) and reward clipping to {-1, 0, 1}.

Raw game scores are what gets reported: `info["episode_return"]` is set on the step where a whole
game ends, with the unclipped sum over all lives (`RecordRawEpisode` sits below the training
wrappers).
"""

from __future__ import annotations

import collections
from typing import Any, Dict

import gymnasium as gym
import numpy as np

from hts_jax.envs.wrappers import RecordRawEpisode


def make_atari(game: str, train: bool = True, sticky: bool = False, noop_max: int = 30,
               frame_stack: int = 4, **ale_kwargs: Any) -> gym.Env:
  import ale_py  # pylint: disable=import-outside-toplevel
  gym.register_envs(ale_py)
  env = gym.make(f"ALE/{game}-v5", frameskip=1, repeat_action_probability=0.25 if sticky else 0.0,
                 full_action_space=False, **ale_kwargs)
  env = gym.wrappers.AtariPreprocessing(env, noop_max=noop_max, frame_skip=4, screen_size=84,
                                        terminal_on_life_loss=False, grayscale_obs=True)
  env = RecordRawEpisode(env)
  if train:
    env = EpisodicLife(env)
  if "FIRE" in env.unwrapped.get_action_meanings():
    env = FireReset(env)
  if train:
    env = ClipReward(env)
  return SavableALE(FrameStack(env, frame_stack))


class SavableALE(gym.Wrapper):
  """Pickles with the emulator: ALE's clone/restore-state API (RNG included) on top of the
  wrappers' Python state, so a checkpointed env continues bit for bit."""

  def __getstate__(self):
    d = dict(self.__dict__)
    d["_ale_state"] = self.env.unwrapped.ale.cloneState(include_rng=True)
    d["_np_random"] = self.env.unwrapped.np_random  # no-op starts draw from it
    return d

  def __setstate__(self, d):
    ale_state, np_random = d.pop("_ale_state"), d.pop("_np_random")
    self.__dict__.update(d)
    self.env.unwrapped.ale.restoreState(ale_state)
    self.env.unwrapped.np_random = np_random


class EpisodicLife(gym.Wrapper):
  """A lost life ends the (learning) episode; reset then continues the same game (baselines)."""

  def __init__(self, env):
    super().__init__(env)
    self._lives = 0
    self._game_over = True

  def step(self, action):
    obs, reward, terminated, truncated, info = self.env.step(action)
    self._game_over = terminated or truncated
    lives = self.env.unwrapped.ale.lives()
    if 0 < lives < self._lives:
      terminated = True
    self._lives = lives
    return obs, reward, terminated, truncated, info

  def reset(self, **kwargs):
    if self._game_over:
      obs, info = self.env.reset(**kwargs)
    else:  # continue the game after a lost life with a no-op step
      obs, _, terminated, truncated, info = self.env.step(0)
      if terminated or truncated:
        obs, info = self.env.reset(**kwargs)
    self._lives = self.env.unwrapped.ale.lives()
    self._game_over = False
    return obs, info


class FireReset(gym.Wrapper):
  """Presses FIRE after reset for games that wait for it (baselines' FireResetEnv)."""

  def reset(self, **kwargs):
    self.env.reset(**kwargs)
    obs, _, terminated, truncated, info = self.env.step(1)
    if terminated or truncated:
      obs, info = self.env.reset(**kwargs)
    obs2, _, terminated, truncated, info = self.env.step(2)
    if terminated or truncated:
      obs2, info = self.env.reset(**kwargs)
    return obs2, info


class ClipReward(gym.RewardWrapper):
  def reward(self, reward):
    return float(np.sign(reward))


class FrameStack(gym.Wrapper):
  """Stacks the last `k` frames on the last axis: `[84, 84] -> [84, 84, k]` uint8."""

  def __init__(self, env, k: int):
    super().__init__(env)
    self._k = k
    self._frames = collections.deque(maxlen=k)
    h, w = env.observation_space.shape[:2]
    self.observation_space = gym.spaces.Box(0, 255, (h, w, k), np.uint8)

  def reset(self, **kwargs):
    obs, info = self.env.reset(**kwargs)
    for _ in range(self._k):
      self._frames.append(obs)
    return self._obs(), info

  def step(self, action):
    obs, reward, terminated, truncated, info = self.env.step(action)
    self._frames.append(obs)
    return self._obs(), reward, terminated, truncated, info

  def _obs(self):
    return np.stack(self._frames, axis=-1)


def parse_kwargs(env_kwargs: Dict[str, Any]) -> Dict[str, Any]:
  allowed = {"sticky", "noop_max", "frame_stack", "max_num_frames_per_episode"}
  unknown = set(env_kwargs) - allowed
  if unknown:
    from hts_jax.config import ConfigError  # pylint: disable=import-outside-toplevel
    raise ConfigError(f"unknown atari env_kwargs {sorted(unknown)}; allowed: {sorted(allowed)}")
  return dict(env_kwargs)
