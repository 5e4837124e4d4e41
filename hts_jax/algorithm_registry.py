"""The learning algorithms: one record per algorithm (`Algorithm`), in `ALGORITHMS`, with what the
config, the launcher and the learner ask of it, so that adding one touches its update builder's
module and one entry here. JAX-free (the config validates with it); the builder is imported only
when a learner is built.

An algorithm's update builder (`hts_jax.algorithms.build_a2c_update`'s signature) returns
`update(start, opt_state, segment, weights, key, reference=None) -> (end, opt_state, summed
updates, metrics)`: its optimizer steps on one segment from `start`; the learner wraps it in the
policy-lag correction (`hts_jax.learner`).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Dict, Tuple

from hts_jax.validation import check

CORRECTIONS = ("delayed", "behaviour", "truncated_is", "none")  # --correction (docs/modes.md)


@dataclasses.dataclass(frozen=True)
class Algorithm:
  name: str
  builder: str  # "module:function", the update builder
  # (LearnerConfig, segment length T) -> optimizer steps per learner update (what --lr_decay
  # spans); raises ConfigError (one line) when T does not fit the algorithm's batches.
  sgd_steps: Callable[[Any, int], int]
  corrections: Tuple[str, ...]  # the --correction values it supports
  defaults: Dict[str, Any] = dataclasses.field(default_factory=dict)  # launcher defaults
  why_not: str = ""  # said when a correction it lacks is asked for

  def build(self) -> Callable:
    module, function = self.builder.split(":")
    return getattr(importlib.import_module(module), function)


def _a2c_steps(config, segment_length: int) -> int:
  check(segment_length % config.unroll_length == 0,
        f"alpha (segment length {segment_length}) must be a multiple of unroll_length "
        f"({config.unroll_length})")
  return segment_length // config.unroll_length


def _ppo_steps(config, segment_length: int) -> int:
  check(config.minibatch == "envs" or segment_length % config.num_minibatches == 0,
        f"alpha (segment length {segment_length}) must be a multiple of num_minibatches "
        f"({config.num_minibatches}): every PPO minibatch takes alpha / num_minibatches steps of "
        "each env")
  return config.ppo_epochs * config.num_minibatches


ALGORITHMS: Dict[str, Algorithm] = {a.name: a for a in (
    # The paper's A2C (Eq. 3/4): T / unroll_length n-step steps per segment.
    Algorithm("a2c", "hts_jax.algorithms:build_a2c_update", _a2c_steps,
              corrections=("delayed", "truncated_is", "none"),
              why_not="A2C fixes nothing at the behaviour policy; its delayed gradient is Eq. 6 "
                      "exactly"),
    # PPO: epochs x minibatches clipped-surrogate steps; 128 steps per update as in Kostrikov's
    # PPO (which the paper uses) and the released HTS-RL PPO scripts.
    Algorithm("ppo", "hts_jax.algorithms:build_ppo_update", _ppo_steps,
              corrections=CORRECTIONS, defaults={"alpha": 128}),
)}
