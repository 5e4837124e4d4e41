"""Generic env wrappers (host side)."""

from __future__ import annotations

import gymnasium as gym


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
