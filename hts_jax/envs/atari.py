"""Atari through ale-py + gymnasium with the paper's protocol (OpenAI baselines / Kostrikov):

no sticky actions (option: `sticky=True`, ALE v5's 0.25), up to 30 no-op starts, frame skip 4
with max-pooling over the last two frames, 84x84 grayscale, FIRE on reset where the game needs it,
4 stacked frames as `[84, 84, 4]` uint8; for training only, episodic life (a lost life ends the
learning episode, not the game) and reward clipping to {-1, 0, 1}.

Raw game scores are what gets reported: `info["episode_return"]` / `["episode_length"]` are set on
the step where a whole game ends, with the unclipped sum over all lives (`RecordRawEpisode` sits
below the training wrappers). A game can also end on a step the wrappers take themselves (the
no-op that continues a game after a lost life, FIRE and the step after it on reset); its record is
then handed out on the info of the next step the caller takes (`_HandsOnGameRecords`), so every
game is reported exactly once, on a step info. `episode_length` counts the frame-skipped (agent-
level, 4-frame) steps of the game after its no-op start, the wrappers' own steps included; the
no-op starts themselves are taken inside `AtariPreprocessing.reset`, below the count.
"""

from __future__ import annotations

import collections
from typing import Any, Dict

import gymnasium as gym
import numpy as np

from hts_jax.choices import registers
from hts_jax.config import ConfigError
from hts_jax.envs.wrappers import RecordRawEpisode


def make_atari(game: str, train: bool = True, sticky: bool = False, noop_max: int = 30,
               frame_stack: int = 4, **ale_kwargs: Any) -> gym.Env:
  import ale_py  # pylint: disable=import-outside-toplevel
  gym.register_envs(ale_py)
  # ALE prints its version banner ("A.L.E: ... [Powered by Stella]") for every env it makes,
  # interleaved across executors; its errors still print.
  ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
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


class _HandsOnGameRecords(gym.Wrapper):
  """Base of the wrappers that take steps of their own (inside `reset`) on top of
  `RecordRawEpisode`: a whole game can end on such an inner step, and its record (the inner step's
  `info["episode_return"]` / `["episode_length"]`) would be lost with that step's info (the caller
  never sees it, and callers discard reset infos). So records from inner steps are queued here and
  handed out on the infos of this wrapper's own `step`s, oldest first, one per step (a step whose
  game also ends while an older record waits hands out the older one and queues its own). Every
  finished game thus reaches the caller exactly once, on a step info, possibly a step or a few
  late; a record still queued when the caller stops stepping is not reported. The queue is a plain
  list of `(return, length)` tuples, so it pickles with the env (checkpoints)."""

  def __init__(self, env):
    super().__init__(env)
    self._records = []  # [(raw return, length)] of games that ended on inner steps, oldest first

  def __setstate__(self, d):  # envs pickled before the queue existed have none waiting
    d.setdefault("_records", [])
    self.__dict__.update(d)

  def _take_record(self, info):
    if "episode_return" in info:
      self._records.append((info["episode_return"], info["episode_length"]))
      info = {k: v for k, v in info.items() if k not in ("episode_return", "episode_length")}
    return info

  def _inner_step(self, action):
    """A step this wrapper takes itself: any game record on it is queued, not passed up."""
    obs, reward, terminated, truncated, info = self.env.step(action)
    return obs, reward, terminated, truncated, self._take_record(info)

  def _hand_out(self, info):
    """The info of a step returned to the caller, with the oldest queued record on it."""
    info = self._take_record(info)
    if self._records:
      ret, length = self._records.pop(0)
      info = dict(info, episode_return=ret, episode_length=length)
    return info

  def step(self, action):
    obs, reward, terminated, truncated, info = self.env.step(action)
    return obs, reward, terminated, truncated, self._hand_out(info)


class EpisodicLife(_HandsOnGameRecords):
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
    return obs, reward, terminated, truncated, self._hand_out(info)

  def reset(self, **kwargs):
    if self._game_over:
      obs, info = self.env.reset(**kwargs)
    else:  # continue the game after a lost life with a no-op step (it may end the game)
      obs, _, terminated, truncated, info = self._inner_step(0)
      if terminated or truncated:
        obs, info = self.env.reset(**kwargs)
    self._lives = self.env.unwrapped.ale.lives()
    self._game_over = False
    return obs, info


class FireReset(_HandsOnGameRecords):
  """Presses FIRE after reset for games that wait for it (baselines' FireResetEnv). Either inner
  step may end the game; its record is handed out on a later `step` (`_HandsOnGameRecords`)."""

  def reset(self, **kwargs):
    self.env.reset(**kwargs)
    obs, _, terminated, truncated, info = self._inner_step(1)
    if terminated or truncated:
      obs, info = self.env.reset(**kwargs)
    obs2, _, terminated, truncated, info = self._inner_step(2)
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


@registers("env", "atari:")
def make(game: str, env_kwargs: Dict[str, Any], train: bool, render: bool) -> gym.Env:
  """`atari:<game>`: the family's `make` (`choices.FAMILIES`); one line for an unknown game or
  kwarg."""
  try:
    return make_atari(game, train=train, **parse_kwargs(env_kwargs),
                      **({"render_mode": "rgb_array"} if render else {}))
  except gym.error.Error as e:
    raise ConfigError(f"unknown env 'atari:{game}': {e}") from None
