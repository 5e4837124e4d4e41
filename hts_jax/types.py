"""Typed containers shared by the pure core and the runtime.

- `Segment`: what the learner consumes, one storage worth of experience, `[T(+1), B, ...]`.
- `TrainState`: the learner state with θ_j (`params`) and θ_{j-1} (`behaviour_params`), paper Eq. 6.
- `LearnerConfig`: hyperparameters of the learner, validated on construction.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import chex
import flax.struct
import optax

ALGOS = ("a2c", "ppo")
CORRECTIONS = ("delayed", "truncated_is", "none")
OPTIMIZERS = ("rmsprop", "adam")

# The one named data-parallel axis (STYLE.md convention 6).
DATA_AXIS = "data"


@flax.struct.dataclass
class Segment:
  """One storage of experience, in fixed `[t, env_id]` order.

  Attributes:
    obs: `[T+1, B, ...]` observations; `obs[T]` is the bootstrap observation. uint8 frames stay uint8.
    actions: `[T, B]` int32 actions taken at `obs[t]`.
    rewards: `[T, B]` float32 rewards received after `actions[t]`.
    dones: `[T, B]` float32, 1 where the episode ended after `actions[t]` (terminated or truncated);
      `obs[t+1]` is then the first observation of the next episode.
  """
  obs: chex.Array
  actions: chex.Array
  rewards: chex.Array
  dones: chex.Array


@flax.struct.dataclass
class TrainState:
  """Learner state for the one-step delayed gradient (paper Eq. 6).

  Attributes:
    params: θ_j, the newest parameters (the ones actors use for the segment being collected).
    behaviour_params: θ_{j-1}, the parameters that produced the segment being learned.
    opt_state: optimizer state (optax).
    update_count: number of learner iterations applied so far (j).
    key: PRNG key; per-update keys are `fold_in(key, update_count)`, never reused.
  """
  params: Any
  behaviour_params: Any
  opt_state: optax.OptState
  update_count: chex.Array
  key: chex.PRNGKey


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
  """Learner hyperparameters. Defaults follow the paper's A2C (Table A3) where it gives them."""
  algo: str = "a2c"
  correction: str = "delayed"
  optimizer: str = "rmsprop"
  learning_rate: float = 7e-4
  rmsprop_decay: float = 0.99
  rmsprop_eps: float = 1e-5
  adam_eps: float = 1e-5
  max_grad_norm: float = 0.5
  # Linear decay of the learning rate to 0 over `lr_decay_updates` optimizer steps (0 = constant).
  lr_decay_updates: int = 0
  gamma: float = 0.99
  gae_lambda: float = 0.95
  value_coef: float = 0.5
  entropy_coef: float = 0.01
  # A2C: n-step horizon; the learner takes T // unroll_length A2C steps per segment.
  unroll_length: int = 5
  # PPO.
  ppo_epochs: int = 4
  num_minibatches: int = 4
  clip_eps: float = 0.2
  clip_value_loss: bool = True
  normalize_advantages: bool = True

  def __post_init__(self):
    _check(self.algo in ALGOS, f"algo must be one of {ALGOS}, got {self.algo!r}")
    _check(self.correction in CORRECTIONS,
           f"correction must be one of {CORRECTIONS}, got {self.correction!r}")
    _check(self.optimizer in OPTIMIZERS,
           f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
    _check(self.learning_rate > 0, f"learning_rate must be > 0, got {self.learning_rate}")
    _check(0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
    _check(0 <= self.gae_lambda <= 1, f"gae_lambda must be in [0, 1], got {self.gae_lambda}")
    _check(self.max_grad_norm > 0, f"max_grad_norm must be > 0, got {self.max_grad_norm}")
    _check(self.lr_decay_updates >= 0,
           f"lr_decay_updates must be >= 0, got {self.lr_decay_updates}")
    _check(self.unroll_length >= 1, f"unroll_length must be >= 1, got {self.unroll_length}")
    _check(self.ppo_epochs >= 1, f"ppo_epochs must be >= 1, got {self.ppo_epochs}")
    _check(self.num_minibatches >= 1,
           f"num_minibatches must be >= 1, got {self.num_minibatches}")
    _check(self.clip_eps > 0, f"clip_eps must be > 0, got {self.clip_eps}")

  def num_sgd_steps(self, segment_length: int) -> int:
    """Optimizer steps one learner iteration takes on a segment of `segment_length` steps."""
    self.check_segment_length(segment_length)
    if self.algo == "a2c":
      return segment_length // self.unroll_length
    return self.ppo_epochs * self.num_minibatches

  def check_segment_length(self, segment_length: int) -> None:
    if self.algo == "a2c":
      _check(segment_length % self.unroll_length == 0,
             f"alpha (segment length {segment_length}) must be a multiple of "
             f"unroll_length ({self.unroll_length})")
    else:
      _check(segment_length % self.num_minibatches == 0,
             f"alpha (segment length {segment_length}) must be a multiple of "
             f"num_minibatches ({self.num_minibatches}): PPO minibatches are sets of time steps")


class ConfigError(ValueError):
  """A user-facing configuration error; its message is one line."""


def _check(cond: bool, message: str) -> None:
  if not cond:
    raise ConfigError(message)
