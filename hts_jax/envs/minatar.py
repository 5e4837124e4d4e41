"""MinAtar (Young & Tian 2019, arXiv:1903.03176) behind the gymnasium interface: `minatar:<Game>`.

Five miniature Atari games on a 10x10 grid: `minatar:Asterix`, `minatar:Breakout`,
`minatar:Freeway`, `minatar:Seaquest`, `minatar:SpaceInvaders` (the names of MinAtar's own
gymnasium ids, `MinAtar/<Game>-v0`). An observation is the game's boolean channels, one per kind
of object (Breakout: paddle, ball, trail, brick), as uint8 0/1 `[10, 10, C]`: what the storages
hold; `--network=minatar` (what `auto` picks for these envs) reads them as float 0/1, not /255.
Rewards are the game's (+1 per brick, treasure, enemy, crossing; Seaquest's oxygen bonus),
unclipped; `info["episode_return"]` / `["episode_length"]` report each finished game
(`RecordRawEpisode`), training and evaluation alike (there are no lives and no training-only
wrappers).

MinAtar's defaults (its `Environment`): sticky actions with probability 0.1 (the previous action
is repeated), difficulty ramping on (Asterix, Seaquest and Space Invaders speed up), all 6 actions
(no-op, left, up, right, down, fire). `env_kwargs` change them: `sticky_action_prob`,
`difficulty_ramping`, `use_minimal_action_set` (the game's own subset, e.g. 3 for Breakout), and
`max_episode_steps` (gymnasium's `TimeLimit`; default none: a game ends only by its own rules,
Freeway after 2,500 steps; evaluations are cut at `--eval_max_steps`).

Determinism: one numpy `RandomState` drives a game's randomness and its sticky actions, as in
MinAtar's `Environment.seed`; `reset(seed=s)` replaces it with `RandomState(s)`, so a seeded
reset gives the same game as `Environment(game).seed(s)` then `reset()`. Every reset also clears
the previous action to no-op (as ALE does on a new game; MinAtar's `Environment` keeps the last
episode's action for the next episode's first sticky draw), so a seeded episode does not depend
on what the replica played before. The whole state (the game's fields, the generator, the
previous action) pickles: checkpoints resume a replica mid-game bit for bit.

The game modules are loaded from the installed `minatar` package directly: its `__init__` imports
matplotlib, seaborn and pandas for its display (1.1 s and 136 MB per process, measured here),
which no executor process needs. `MinAtarEnv.step` is `Environment.act`'s sticky action then the
game's `act`; tests/unit/test_minatar_env.py checks it against `minatar.Environment` step for step.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from hts_jax.choices import registers
from hts_jax.config import ConfigError
from hts_jax.envs.wrappers import RecordRawEpisode

# User-facing name -> MinAtar's module name.
GAMES = {"Asterix": "asterix", "Breakout": "breakout", "Freeway": "freeway",
         "Seaquest": "seaquest", "SpaceInvaders": "space_invaders"}
NUM_ACTIONS = 6  # MinAtar's Environment.num_actions(): n, l, u, r, d, f
SCALE = 10  # render(): pixels per grid cell (10x10 cells -> 100x100 frames)
# render(): a colour per channel (matplotlib's tab10), on black; where channels overlap the highest
# channel index wins, as in MinAtar's own display.
PALETTE = np.array([[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40],
                    [148, 103, 189], [140, 86, 75], [227, 119, 194], [127, 127, 127],
                    [188, 189, 34], [23, 190, 207]], np.uint8)
KWARGS = ("sticky_action_prob", "difficulty_ramping", "use_minimal_action_set",
          "max_episode_steps")


@functools.lru_cache(maxsize=None)
def _game_class(module: str):
  """The `Env` class of `minatar/environments/<module>.py`, loaded without `minatar/__init__`."""
  spec = importlib.util.find_spec("minatar")  # finds the package without importing it
  if spec is None or not spec.submodule_search_locations:
    raise ConfigError("minatar:<Game> needs the minatar package: pip install minatar==1.0.15 "
                      "(requirements.txt; the `minatar` extra)")
  path = os.path.join(spec.submodule_search_locations[0], "environments", f"{module}.py")
  game_spec = importlib.util.spec_from_file_location(f"_minatar_{module}", path)
  game = importlib.util.module_from_spec(game_spec)
  game_spec.loader.exec_module(game)
  return game.Env


class MinAtarEnv(gym.Env):
  """One MinAtar game (`GAMES`' values: its module name), observations uint8 `[10, 10, C]`."""

  # Videos play a step per frame at 20 fps: MinAtar's display shows a frame for 50 ms
  # (`Environment.display_state(time=50)`).
  metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

  def __init__(self, game: str, sticky_action_prob: float = 0.1,
               difficulty_ramping: bool = True, use_minimal_action_set: bool = False,
               render_mode: Optional[str] = None):
    self.game_name = game
    self.sticky_action_prob = float(sticky_action_prob)
    self.difficulty_ramping = bool(difficulty_ramping)
    self.render_mode = render_mode
    self._game = _game_class(game)(ramping=self.difficulty_ramping)
    self._random = self._game.random  # sticky actions and the game share it (Environment.seed)
    self._last_action = 0
    self._actions = (list(self._game.minimal_action_set()) if use_minimal_action_set
                     else list(range(NUM_ACTIONS)))
    self.action_space = gym.spaces.Discrete(len(self._actions))
    self.observation_space = gym.spaces.Box(0, 1, tuple(self._game.state_shape()), np.uint8)

  def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
    super().reset(seed=seed)
    if seed is not None:
      self._random = np.random.RandomState(seed)
      self._game.random = self._random
    self._last_action = 0
    self._game.reset()
    return self._obs(), {}

  def step(self, action):
    a = self._actions[int(action)]
    if self._random.rand() < self.sticky_action_prob:  # MinAtar's Environment.act
      a = self._last_action
    self._last_action = a
    reward, terminal = self._game.act(a)
    return self._obs(), float(reward), bool(terminal), False, {}

  def _obs(self) -> np.ndarray:
    return self._game.state().astype(np.uint8)

  def render(self):
    """An RGB frame `[10 * SCALE, 10 * SCALE, 3]` uint8 of the channels (`PALETTE`)."""
    state = self._game.state()
    index = np.max(state * np.arange(1, state.shape[-1] + 1), axis=-1)  # 0: empty
    colours = np.concatenate([np.zeros((1, 3), np.uint8), PALETTE[:state.shape[-1]]])
    return np.repeat(np.repeat(colours[index], SCALE, axis=0), SCALE, axis=1)

  def __getstate__(self):
    # The game's class comes from `_game_class`, not an importable module: pickle its fields.
    d = dict(self.__dict__)
    d["_game"] = dict(self._game.__dict__)
    return d

  def __setstate__(self, d):
    d = dict(d)
    fields = d.pop("_game")
    game = object.__new__(_game_class(d["game_name"]))
    game.__dict__.update(fields)
    self.__dict__.update(d, _game=game)
    self._random = game.random  # one generator, as before the pickle


def make_minatar(game: str, env_kwargs: Dict[str, Any], render: bool = False) -> gym.Env:
  """`minatar:<game>`; raises ConfigError (one line) for an unknown game or `env_kwargs` key."""
  if game not in GAMES:
    raise ConfigError(f"unknown env 'minatar:{game}': MinAtar's games are "
                      + ", ".join(f"minatar:{g}" for g in GAMES))
  unknown = set(env_kwargs) - set(KWARGS)
  if unknown:
    raise ConfigError(f"unknown minatar env_kwargs {sorted(unknown)}; allowed: {sorted(KWARGS)}")
  kwargs = dict(env_kwargs)
  max_steps = kwargs.pop("max_episode_steps", None)
  env: gym.Env = gym.wrappers.PassiveEnvChecker(MinAtarEnv(
      GAMES[game], render_mode="rgb_array" if render else None, **kwargs))
  if max_steps is not None:
    env = gym.wrappers.TimeLimit(env, int(max_steps))
  return RecordRawEpisode(env)


@registers("env", "minatar:")
def make(game: str, env_kwargs: Dict[str, Any], train: bool, render: bool) -> gym.Env:
  """`minatar:<game>`: the family's `make` (`choices.FAMILIES`); the same env for training and
  evaluation."""
  del train
  return make_minatar(game, env_kwargs, render=render)
