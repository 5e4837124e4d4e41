"""Typed containers shared by the pure core and the runtime.

- `Segment`: what the learner consumes, one storage worth of experience, `[T(+1), B, ...]`.
- `TrainState`: the learner state with θ_j (`params`) and θ_{j-1} (`behaviour_params`), paper Eq. 6.
- `LearnerConfig`, `RunConfig`: re-exported from `hts_jax.config`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import chex
import flax.struct
import optax

# Configs live in `hts_jax.config` (no JAX import, so spawned executors stay light); re-exported.
from hts_jax.config import ConfigError, LearnerConfig, RunConfig  # noqa: F401

# The one named data-parallel axis (STYLE.md convention 6).
DATA_AXIS = "data"

# A network's pure apply: `apply(params, obs [N, ...]) -> (logits [N, A], value [N])`.
ApplyFn = Callable[..., Tuple[chex.Array, chex.Array]]


@flax.struct.dataclass
class Segment:
  """One storage of experience, in fixed `[t, env_id]` order.

  Attributes:
    obs: `[T+1, B, ...]` observations; `obs[T]` is the bootstrap observation. uint8 frames stay uint8.
    actions: `[T, B]` int32 actions taken at `obs[t]`.
    rewards: `[T, B]` float32 rewards received after `actions[t]`.
    dones: `[T, B]` float32, 1 where the episode ended after `actions[t]` (terminated or truncated);
      `obs[t+1]` is then the first observation of the next episode (with envpool: the episode's
      last one, and the next step, its reset, has `valid` 0).
    valid: optional `[T, B]` float32, 1 for a real transition, 0 for a step every loss leaves out
      (envpool's auto-reset step after an episode ends: its action is ignored, its reward is 0).
      None: every transition is real.
    truncated: optional `[T, B]` float32, 1 where the episode was cut by a time limit (`dones` is 1
      there too). None: no truncation recorded.
    final_obs: optional `[T, B, ...]`, the observation a truncated episode ended on (rows where
      `truncated` is 0 are unused); needed with `LearnerConfig.bootstrap_truncation`.
    core: optional `[1, B, S]` float32, a recurrent core's state entering step 0 (a time axis of
      one, so that every field has B on axis 1); within the segment the core restarts from zeros
      after each episode end (`algorithms.core_resets`). None: a feed-forward network.
  """
  obs: chex.Array
  actions: chex.Array
  rewards: chex.Array
  dones: chex.Array
  valid: Optional[chex.Array] = None
  truncated: Optional[chex.Array] = None
  final_obs: Optional[chex.Array] = None
  core: Optional[chex.Array] = None


@flax.struct.dataclass
class TrainState:
  """Learner state for the one-step delayed gradient (paper Eq. 6).

  Attributes:
    params: θ_j, the newest parameters (the ones actors use for the segment being collected).
    behaviour_params: θ_{j-1}, the parameters that produced the segment being learned.
    opt_state: optimizer state (optax).
    update_count: number of learner iterations applied so far (j).
    key: PRNG key; per-update keys are `fold_in(key, update_count)`, never reused.
    reward_norm: with `LearnerConfig.normalize_rewards`, the per-env discounted-return
      accumulators and the running moments that scale rewards (`hts_jax.normalization`); None
      otherwise (a state without it has the same tree as before it existed).
  """
  params: Any
  behaviour_params: Any
  opt_state: optax.OptState
  update_count: chex.Array
  key: chex.PRNGKey
  reward_norm: Any = None


@flax.struct.dataclass
class Unroll:
  """A batch of actor unrolls for the asynchronous (IMPALA) baseline: a `Segment` plus the
  behaviour policy's log-probabilities, needed by V-trace because the behaviour policy is stale.

  Attributes: segment (`[T(+1), B, ...]`); behaviour_log_probs `[T, B]`.
  """
  segment: Segment
  behaviour_log_probs: chex.Array
