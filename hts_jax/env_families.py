"""The env families: one record per family (`EnvFamily`), in `FAMILIES`, with everything the rest of
the code asks of a family, so that adding one touches its module and one line here.

A family is a name prefix (`atari:`) whose module (`hts_jax.envs.atari`) builds a replica with
`make(rest, env_kwargs, train, render) -> gymnasium.Env` (`rest`: the name after the prefix; a bad
name or kwarg raises ConfigError with one line). Any other env name is a gymnasium id or `vstep`
(`hts_jax.envs.make_env`). Imports nothing (it sits outside `hts_jax.envs`, whose package
imports gymnasium and the config): the config's validation reads it.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Optional, Tuple


@dataclasses.dataclass(frozen=True)
class EnvFamily:
  prefix: str  # "atari:"
  placeholder: str  # what follows the prefix, in messages: "<Game>"
  module: str  # its `make(rest, env_kwargs, train, render)`
  # Evaluations sample from the policy unless --eval_greedy: the family's published protocol
  # (`config_sections.Evaluation.greedy`).
  sampled_evaluation: bool
  # Frames per second of game time in its videos; None: the env's `metadata["render_fps"]`.
  video_fps: Optional[float] = None
  needs_display: bool = False  # its renderer needs an X display (videos start Xvfb)
  envpool: bool = False  # --envpool runs it through envpool (`runtime.envpool_group`)
  # What --network=auto runs; None: by the observation's shape (`networks.default_network_for`).
  network: Optional[str] = None

  @property
  def usage(self) -> str:
    return self.prefix + self.placeholder

  def make(self, name: str, env_kwargs, train: bool, render: bool):
    return importlib.import_module(self.module).make(name[len(self.prefix):], env_kwargs, train,
                                                     render)


FAMILIES: Tuple[EnvFamily, ...] = (
    # The emulator's 60 Hz over the frame skip of 4; sampled evaluation (a greedy untrained
    # policy may never press FIRE after a lost life).
    EnvFamily("atari:", "<Game>", "hts_jax.envs.atari", sampled_evaluation=True, video_fps=15.0,
              envpool=True),
    # A step is 10 physics frames of 10 ms; the released evaluation samples.
    EnvFamily("gfootball:", "<scenario>", "hts_jax.envs.gfootball", sampled_evaluation=True,
              video_fps=10.0, needs_display=True),
    # MinAtar stands in for Atari: Atari's protocol. Its 10x10 grid takes MinAtar's own network
    # (Young & Tian 2019), not the Nature CNN's.
    EnvFamily("minatar:", "<Game>", "hts_jax.envs.minatar", sampled_evaluation=True,
              network="minatar"),
)


def family_of(env: str) -> Optional[EnvFamily]:
  """The family whose prefix `env` starts with; None for a gymnasium id or `vstep`."""
  return next((f for f in FAMILIES if env.startswith(f.prefix)), None)
