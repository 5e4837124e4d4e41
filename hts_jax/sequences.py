"""Running the network over `[T, B]` sequences for the learner (pure).

A feed-forward network runs batched over the T·B observations. A recurrent one
(`networks.Recurrent`) is unrolled over T from each env's core state at the segment's start (the
`Segment.core` the actors left in the storage), restarting from zeros after each episode end:
`core_resets` marks the same steps at which the executors zeroed the actors' states
(`runtime.storage.reset_core`), so the learner's unroll at the behaviour params retraces what the
actors computed. What a PPO minibatch holds: some steps of every env (`minibatch_steps`), or whole
sequences of some envs (`env_minibatches`, what a recurrent core needs).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import chex
import jax
import jax.numpy as jnp

from hts_jax.config import LearnerConfig
from hts_jax.types import ApplyFn, Segment


class CoreInput(NamedTuple):
  """What a recurrent unroll over `[T, B]` starts from: `state [B, S]` entering step 0 and
  `resets [T, B]` (1: the step's state restarts from zeros)."""
  state: chex.Array
  resets: chex.Array


def core_resets(segment: Segment) -> chex.Array:
  """`[T + 1, B]`: 1 at step t + 1 where step t ended an episode (`dones`) or was envpool's
  reset step (`valid` 0); 0 at step 0, whose state (`segment.core`) already is the restarted one."""
  ended = jnp.maximum(segment.dones, 1.0 - segment.valid)
  return jnp.concatenate([jnp.zeros_like(ended[:1]), ended], axis=0)


def core_input(segment: Segment, steps: int) -> Optional[CoreInput]:
  """The unroll input for `segment.obs[:steps]`; None for a feed-forward segment."""
  if segment.core is None:
    return None
  return CoreInput(segment.core[0], core_resets(segment)[:steps])


def apply_tb(apply_fn: ApplyFn, params, obs: chex.Array,
             core: Optional[CoreInput] = None) -> Tuple[chex.Array, chex.Array, Optional[chex.Array]]:
  """The network on `[T, B, ...]` observations: `(policy_out [T, B, K], values [T, B], states)`;
  `states [T, B, S]` (each step's state after it) for a recurrent network given `core`, else None."""
  t, b = obs.shape[:2]
  if core is not None:
    return apply_fn(params, obs, core.state, core.resets)
  logits, values = apply_fn(params, obs.reshape((t * b,) + obs.shape[2:]))
  return logits.reshape((t, b, -1)), values.reshape((t, b)), None


def final_values(apply_fn: ApplyFn, params, final_obs: chex.Array,
                 states: Optional[chex.Array]) -> chex.Array:
  """`[T, B]` V(final_obs[t]): for a recurrent network, one step from `states[t]`, the state the
  env's step t ended with (the cut episode's own)."""
  if states is None:
    return apply_tb(apply_fn, params, final_obs)[1]
  t, b = final_obs.shape[:2]
  one = lambda x: x.reshape((1, t * b) + x.shape[2:])
  core = CoreInput(states.reshape((t * b, -1)), jnp.zeros((1, t * b)))
  return apply_tb(apply_fn, params, one(final_obs), core)[1].reshape((t, b))


def chunk_states(apply_fn: ApplyFn, params, segment: Segment, n: int) -> chex.Array:
  """`[T / n, 1, B, S]`: the core state entering each n-step chunk (A2C's optimizer steps), from
  one unroll of the whole segment at `params` (no gradient); chunk 0's is `segment.core`."""
  t_len = segment.rewards.shape[0]
  k = t_len // n
  if k == 1:
    return segment.core[None]
  _, _, states = apply_tb(apply_fn, jax.lax.stop_gradient(params), segment.obs[:-1],
                          core_input(segment, t_len))
  entering = jnp.concatenate([segment.core, states[n - 1:t_len - 1:n]], axis=0)  # [k, B, S]
  return jax.lax.stop_gradient(entering[:, None])


def env_minibatches(key: chex.PRNGKey, config: LearnerConfig, num_envs: int) -> chex.Array:
  """`[epochs * num_minibatches, num_envs / num_minibatches]` env columns: each epoch shuffles
  the envs (keyed by the epoch) and splits them into minibatches of whole sequences. Under data
  parallelism every device draws the same positions among its own columns."""
  m = config.num_minibatches
  return jnp.concatenate([
      jax.random.permutation(jax.random.fold_in(key, epoch), num_envs).reshape((m, -1))
      for epoch in range(config.ppo_epochs)])


def minibatch_steps(key: chex.PRNGKey, config: LearnerConfig, t_len: int, num_envs: int,
                    env_offset) -> chex.Array:
  """`[epochs * num_minibatches, T / num_minibatches, B]` time indices: minibatch i takes, for
  env column b, the steps `steps[i, :, b]`.

  - "time_steps": the same steps for every env (all envs of each chosen step).
  - "transitions": every env's steps shuffled on their own (keyed by the global env id
    `env_offset + b`), so a minibatch holds T / m transitions of every env at different steps.
    The references shuffle all T·B transitions; this keeps a device's minibatch its shard of the
    global minibatch (data-parallel exact) and draws every env equally (stratified by env).
  """
  m = config.num_minibatches
  out = []
  for epoch in range(config.ppo_epochs):
    k = jax.random.fold_in(key, epoch)
    if config.minibatch == "time_steps":
      perm = jnp.broadcast_to(jax.random.permutation(k, t_len)[:, None], (t_len, num_envs))
    else:
      envs = env_offset + jnp.arange(num_envs)
      perm = jax.vmap(lambda e: jax.random.permutation(jax.random.fold_in(k, e), t_len),
                      out_axes=1)(envs)
    out.append(perm.reshape((m, t_len // m, num_envs)))
  return jnp.concatenate(out)
