"""Env factories (host side, no JAX): every env the runtime runs is built by `make_env`.

`env` names:
- `atari:<Game>` (e.g. `atari:Breakout`): ale-py with the paper's protocol (`hts_jax.envs.atari`);
  `env_kwargs`: sticky, noop_max, frame_stack, max_num_frames_per_episode.
- `gfootball:<scenario>` (e.g. `gfootball:academy_3_vs_1_with_keeper`): Google Research Football
  (`hts_jax.envs.gfootball`); `env_kwargs`: representation, stacked, rewards, num_agents.
- `minatar:<Game>` (e.g. `minatar:Breakout`; Asterix, Breakout, Freeway, Seaquest, SpaceInvaders):
  MinAtar's 10x10 games, observations uint8 0/1 `[10, 10, C]` (`hts_jax.envs.minatar`);
  `env_kwargs`: sticky_action_prob, difficulty_ramping, use_minimal_action_set, max_episode_steps.
- `vstep`: the variable-step-time task (`hts_jax.envs.vstep`; also the gymnasium id
  `hts_jax/VStep-v0`); `env_kwargs`: dist, mean_s, var_s2, rate, unit_s, mode, obs_dim,
  num_actions, episode_length.
- `hts_jax/CartPoleNoVel-v1`: CartPole-v1 without its velocities, a task where memory matters
  (`hts_jax.envs.memory`; for `--core=lstm`);
- any registered gymnasium id with a discrete action space, e.g. `CartPole-v1`, or a 1-D `Box`
  one, e.g. MuJoCo's `HalfCheetah-v5` (`env_kwargs` go to `gymnasium.make`). A `Box` env clips
  the action it is given to the space's bounds (`wrappers.ClipAction`): the policy's
  unclipped sample is what the storage keeps and the learner scores.

Every env reports finished episodes through `info["episode_return"]` / `info["episode_length"]`
(raw scores: for Atari a whole game, not a life, before reward clipping).

Families, by the prefix of `name`: `FAMILIES`; any other name is a gymnasium id.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any, Dict, Tuple

import gymnasium as gym
import numpy as np

from hts_jax import choices
from hts_jax.choices import family_of
from hts_jax.config import ConfigError
# Importing them registers their family's `make` (atari, gfootball, minatar) or their gymnasium
# ids (memory, vstep).
from hts_jax.envs import atari, gfootball, memory, minatar, vstep  # pylint: disable=unused-import
from hts_jax.envs.wrappers import ClipAction, MujocoState, RecordRawEpisode, is_mujoco


MEMORY_ENV = memory.ENV_ID  # CartPole without velocities (`hts_jax.envs.memory`)
# The env families `make_env` knows besides gymnasium ids, as a user writes them (the one list
# that messages name).
FAMILIES = tuple(f.usage for f in choices.FAMILIES) + ("vstep",)  # for messages


@dataclasses.dataclass(frozen=True)
class EnvInfo:
  obs_shape: Tuple[int, ...]  # per agent
  obs_dtype: str  # "uint8" or "float32": what the storages hold
  num_actions: int  # Discrete: the number of actions; continuous: the action's size D
  # Agents per env replica (GFootball: controlled players). Each agent is one storage row
  # (row = env_id * num_agents + agent) and shares the policy; obs then carry a leading agent axis
  # and rewards are per agent.
  num_agents: int = 1
  continuous: bool = False  # a 1-D Box action space: float32 actions [D]

  @property
  def action_shape(self) -> Tuple[int, ...]:
    """One row's action: () for a discrete action, (D,) for a continuous one."""
    return (self.num_actions,) if self.continuous else ()

  @property
  def action_dtype(self) -> str:
    return "float32" if self.continuous else "int32"


def make_env(name: str, env_kwargs: Dict[str, Any], train: bool = True,
             render: bool = False) -> gym.Env:
  """`_make_env`, every exception of an env's constructor or of its env_kwargs as one
  ConfigError line naming the env, its env_kwargs and the exception (a user's env may raise
  anything; a traceback would hide which flag to change)."""
  try:
    return _make_env(name, env_kwargs, train, render)
  except ConfigError:
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise ConfigError(f"env {name!r} could not be built with {_kwargs_text(env_kwargs)}: "
                      f"{_error_line(e)}") from None


def _kwargs_text(env_kwargs: Dict[str, Any]) -> str:
  if not env_kwargs:
    return "no env_kwargs"
  return "env_kwargs " + ", ".join(f"{k}={v!r}" for k, v in env_kwargs.items())


def _error_line(e: BaseException) -> str:
  lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
  return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def _make_env(name: str, env_kwargs: Dict[str, Any], train: bool = True,
              render: bool = False) -> gym.Env:
  """Builds one env replica. `train=False` gives the evaluation variant (same for gymnasium ids).
  `render=True`: `render()` returns RGB frames `[H, W, 3]` uint8 (gymnasium's `rgb_array`, the
  Atari emulator's screen, GFootball's renderer, which needs an X display); the dynamics do not
  change.

  Raises ConfigError (one line) for unknown names or unsupported spaces.
  """
  render_mode = {"render_mode": "rgb_array"} if render else {}
  family = family_of(name)
  if family is not None:
    return family.make(name, env_kwargs, train, render)
  if name == "vstep":
    if render:
      raise ConfigError("vstep renders no frames: videos need a gymnasium env with rgb_array "
                        f"rendering or one of {', '.join(FAMILIES[:-1])}")
    try:
      return RecordRawEpisode(gym.wrappers.PassiveEnvChecker(vstep.VStepEnv(**env_kwargs)))
    except TypeError as e:
      raise ConfigError(f"bad env_kwargs for 'vstep': {e}") from None
  # ALE's and gym's Atari ids: gymnasium knows them once ale_py is imported (raw frames, without
  # the paper's preprocessing), and otherwise misleads ("install ALE"): atari:<Game> is the way.
  game = atari_game_of(name, look_up=False)
  try:
    env = None if game else gym.make(name, **env_kwargs, **render_mode)
  except gym.error.Error as e:
    game = atari_game_of(name)
    if game is None:
      raise ConfigError(f"unknown env {name!r}: {e} Other envs: {', '.join(FAMILIES)}") from None
  except TypeError as e:
    raise ConfigError(f"bad env_kwargs for {name!r}: {e}") from None
  if game is not None:
    raise ConfigError(f"{name!r} is an ALE id: Atari games run here as --env=atari:{game} (the "
                      "paper's preprocessing: docs/environments.md; --envpool for envpool's)")
  space = env.action_space
  if _is_box(space):
    return RecordRawEpisode(ClipAction(MujocoState(env) if is_mujoco(env) else env))
  if not isinstance(space, gym.spaces.Discrete):
    env.close()
    raise ConfigError(f"env {name!r} has action space {space}; Discrete and 1-D Box are "
                      "supported")
  return RecordRawEpisode(env)


def atari_game_of(name: str, look_up: bool = True):
  """The game of an ALE / gym Atari id (`ALE/Breakout-v5`, `Breakout-v5`,
  `BreakoutNoFrameskip-v4`), which runs here as `atari:<Game>`; None for other ids. A plain
  `<Game>-v5` is checked against ale-py's ROMs where it is imported already, or with `look_up`."""
  m = re.fullmatch(r"(ALE/)?([A-Z][A-Za-z]*?)(NoFrameskip|Deterministic)?-v\d+", name)
  if m is None:
    return None
  if m.group(1) or m.group(3):
    return m.group(2)
  if not (look_up or "ale_py" in sys.modules):
    return None
  try:
    from ale_py import roms  # pylint: disable=import-outside-toplevel
  except ImportError:
    return None
  rom = re.sub(r"(?<!^)(?=[A-Z])", "_", m.group(2)).lower()
  return m.group(2) if rom in roms.get_all_rom_ids() else None


def _is_box(space) -> bool:
  return (isinstance(space, gym.spaces.Box) and len(space.shape) == 1
          and bool(np.all(np.isfinite(space.low))) and bool(np.all(np.isfinite(space.high))))


def _num_actions(space) -> int:
  if isinstance(space, gym.spaces.Box):
    return int(space.shape[0])
  if isinstance(space, gym.spaces.MultiDiscrete):  # one Discrete per agent, all the same
    return int(space.nvec.flat[0])
  return int(space.n)


def env_info(name: str, env_kwargs: Dict[str, Any]) -> EnvInfo:
  env = make_env(name, env_kwargs)
  try:
    space = env.observation_space
    if space.shape is None or space.dtype is None:  # Dict, Tuple, Text, Graph: no one array
      raise ConfigError(f"env {name!r} has observation space {type(space).__name__}; "
                        "the storages hold one array per step: Box observations are supported")
    dtype = "uint8" if space.dtype == np.uint8 else "float32"
    agents = int(getattr(env.unwrapped, "num_agents", 1))
    shape = tuple(space.shape)[1:] if agents > 1 else tuple(space.shape)
    return EnvInfo(shape, dtype, _num_actions(env.action_space), agents,
                   continuous=isinstance(env.action_space, gym.spaces.Box))
  finally:
    env.close()
