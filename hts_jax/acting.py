"""The pure keyed policy core used by actors: `core(params, obs, seeds) -> (actions, extras)`.

Each row's action is sampled with the key `fold_in(PRNGKey(seed[0]), seed[1])` derived from that
row's seed only (`hts_jax.seeding`: seed = (the env's action stream, the env's global step)), so a
row's action depends only on (params, obs row, seed). The host wrapper that runs this core on a
fixed padded shape, for bitwise batch invariance, is `hts_jax.runtime.policy`.
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp

from hts_jax import losses
from hts_jax.heads import Head
from hts_jax.types import ApplyFn


def row_keys(seeds: chex.Array) -> chex.Array:
  """`[N, 2]` uint32 (stream, step) -> `[N]` PRNG keys, each from its own row only."""
  return jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(s[0]), s[1]))(seeds)


def build_policy_core(apply_fn: ApplyFn, greedy: bool = False,
                      head: Head = losses.CATEGORICAL, recurrent: bool = False) -> Callable:
  """Pure `core(params, obs [P, ...], seeds [P, 2], state=None) -> (actions [P, *action_shape],
  extras)`; `greedy`: the head's mode (argmax, the Gaussian's mean) instead of a sample.
  `recurrent`: `apply_fn` is a `networks.Recurrent`'s; `state [P, S]` is each row's core state
  (already zeroed where an episode began) and `extras["core"]` the state after this step."""

  def core(params, obs, seeds, state=None):
    chex.assert_rank(seeds, 2)
    chex.assert_equal(obs.shape[0], seeds.shape[0])
    extras = {}
    if recurrent:
      logits, value, states = apply_fn(params, obs[None], state, jnp.zeros((1, obs.shape[0])))
      logits, value, extras["core"] = logits[0], value[0], states[0]
    else:
      logits, value = apply_fn(params, obs)
    if greedy:
      actions = head.mode(logits)
    else:
      actions = jax.vmap(head.sample)(row_keys(seeds), logits)
    return actions, dict(extras, log_prob=losses.log_prob(logits, actions, head), value=value)

  return core
