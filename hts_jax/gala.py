"""GALA's gossip algebra (Assran, Romoff, Ballas, Pineau, Rabbat, NeurIPS 2019), pure and jittable.

n agents in a directed 1-peer ring: agent i sends to i + 1 and receives from i - 1 (mod n). With
the paper's uniform weights p_ij = 1 / (1 + |N_in(i)|) = 1/2 (appendix C.2), an agent that gossips
at iteration k takes (its Eq. 6)

    x_i <- 1/2 (x_i + alpha g_i + x_{i-1}^(tau)),

its own locally updated params averaged with the (possibly stale) params its in-peer last sent;
an agent that received nothing keeps its local update (Eq. 5). Only the params mix: each agent
keeps its own optimizer state. Host-side scheduling (who sends what when) is in
`hts_jax.runtime.loops.gala`.
"""

from __future__ import annotations

from typing import Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np


def in_peer(i: int, n: int) -> int:
  """The agent whose messages agent `i` receives in the directed ring."""
  return (i - 1) % n


def out_peer(i: int, n: int) -> int:
  """The agent agent `i` sends to."""
  return (i + 1) % n


def ring_mixing_matrix(n: int) -> np.ndarray:
  """P with P[i, i] = P[i, in_peer(i)] = 1/2: row-stochastic (and, for a ring, doubly
  stochastic: the agents' average is preserved by synchronous gossip)."""
  p = np.zeros((n, n))
  for i in range(n):
    p[i, i] += 0.5
    p[i, in_peer(i, n)] += 0.5
  return p


@jax.jit
def mix(own, received):
  """Eq. 6 with one in-peer: the average of the agent's params and the message's."""
  return jax.tree.map(lambda a, b: (0.5 * (a + b)).astype(a.dtype), own, received)


@jax.jit
def consensus(params: Sequence) -> Tuple[object, jnp.ndarray]:
  """(the agents' average params, `[n]` Euclidean distance of each agent's params to it): the
  epsilon-ball of the paper's Proposition 2, over every parameter of the network."""
  n = len(params)
  mean = jax.tree.map(lambda *xs: sum(xs[1:], xs[0]) / n, *params)
  dists = jnp.stack([
      jnp.sqrt(sum(jnp.sum(jnp.square(a - m)) for a, m in
                   zip(jax.tree.leaves(p), jax.tree.leaves(mean))))
      for p in params])
  return mean, dists


def norm(params) -> jnp.ndarray:
  """Euclidean norm over every parameter (the scale the distances are read against)."""
  return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(params)))
