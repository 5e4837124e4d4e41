"""A mode (`--mode`): one object holding its rules (the JAX-free `mode_options.ModeRules`: its
options, checks and corrections), the shapes of its policy and learner steps, and its loop.

A new mode is one module that defines a `Mode` and a loop `loop(parts, ctl) -> summary` composed
of the parts (`assembly.Parts`, what the runner built) and the `Controller`'s verbs (the barrier's
`go` / `wait_done`, the learner's `submit` / `result`, `boundary`, `finish`), plus its rules in `mode_options.RULES`; `hts_jax.runtime.modes` registers the `Mode`
by importing its module (see CONTRIBUTING.md). Its shape questions are answered from
`assembly.Shape` (config and env spec) before anything is built.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from hts_jax.config import ConfigError, RunConfig
from hts_jax.mode_options import ModeRules
from hts_jax.runtime.assembly import Parts, Shape

if TYPE_CHECKING:
  from hts_jax.runtime.controller import Controller


@dataclasses.dataclass(frozen=True)
class Mode:
  """`rules` what the JAX-free config knows of it (`hts_jax/mode_options.py`: its options and their
  checks, the correction it forces or reports, its update size); `policy_rows(shape)` the actors'
  fixed call shape; `learner_step(shape, model, lcfg)` the
  compiled update (default: the delayed-gradient A2C/PPO step); `learner_input(shape, segment)` an
  example input to compile it with; `acts_with_extras` whether actors need log-probs;
  `no_checkpoints` why it cannot checkpoint, if it cannot; `loop(parts, controller)` the run
  itself."""
  rules: ModeRules
  policy_rows: Callable[[Shape], int]
  loop: Callable[[Parts, "Controller"], Dict[str, Any]]
  learner_step: Optional[Callable] = None
  learner_input: Optional[Callable] = None
  acts_with_extras: bool = False
  no_checkpoints: Optional[str] = None

  @property
  def name(self) -> str:
    return self.rules.name

  @property
  def checkpoints(self) -> bool:
    return self.no_checkpoints is None

  def check(self, config: RunConfig, resume: bool) -> None:
    """Refuses what this mode cannot do with `config` (one line)."""
    if not self.checkpoints and (resume or config.outputs.checkpoint_every):
      raise ConfigError(f"--mode={self.name} does not checkpoint ({self.no_checkpoints}); "
                        "use --mode=hts or sync")

  def total_steps(self, config: RunConfig) -> int:
    """The env steps the run takes (whole updates)."""
    return config.learner_updates * config.steps_per_update
