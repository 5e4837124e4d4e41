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

from hts_jax import losses
from hts_jax.heads import Head
from hts_jax.types import ApplyFn


def row_keys(seeds: chex.Array) -> chex.Array:
  """`[N, 2]` uint32 (stream, step) -> `[N]` PRNG keys, each from its own row only."""
  return jax.vmap(lambda s: jax.random.fold_in(jax.random.PRNGKey(s[0]), s[1]))(seeds)


def build_policy_core(apply_fn: ApplyFn, greedy: bool = False,
                      head: Head = losses.CATEGORICAL) -> Callable:
  """Pure `core(params, obs [P, ...], seeds [P, 2]) -> (actions [P, *action_shape], extras)`;
  `greedy`: the head's mode (argmax, the Gaussian's mean) instead of a sample."""

  def core(params, obs, seeds):
    chex.assert_rank(seeds, 2)
    chex.assert_equal(obs.shape[0], seeds.shape[0])
    logits, value = apply_fn(params, obs)
    if greedy:
      actions = head.mode(logits)
    else:
      actions = jax.vmap(head.sample)(row_keys(seeds), logits)
    return actions, dict(log_prob=losses.log_prob(logits, actions, head), value=value)

  return core
