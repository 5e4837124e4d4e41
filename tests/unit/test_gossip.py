"""GALA's gossip algebra by golden values (learning off: the ring's mixing alone), consensus
distances, and its configs' one-line errors."""

import threading

import numpy as np
import pytest

from hts_jax import gala
from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime.loops.gossip import Ring


X0 = [0.0, 3.0, 6.0]  # three agents' (scalar) params; their average is 3


def gossip_only(ring: Ring, x0, iterations: int):
  """Every agent runs `iterations` of GALA's loop with learning switched off (its local update is
  the identity) in a thread of its own, through the runtime's `Ring`; returns each agent's
  params after every iteration, `[iterations, n]`."""
  n = len(x0)
  out = np.zeros((iterations, n))

  def agent(i):
    x = {"w": np.float32(x0[i]) * np.ones(2, np.float32)}
    for k in range(iterations):
      ring.send(i, k, x)
      msg = ring.receive(i, k)
      if msg is not None:
        x = gala.mix(x, msg[1])
      out[k, i] = float(x["w"][0])

  threads = [threading.Thread(target=agent, args=(i,)) for i in range(n)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(timeout=60)
  return out


def test_ring_mixing_matrix_is_doubly_stochastic():
  p = gala.ring_mixing_matrix(3)
  np.testing.assert_array_equal(p, [[0.5, 0, 0.5], [0.5, 0.5, 0], [0, 0.5, 0.5]])
  np.testing.assert_array_equal(p.sum(0), 1)
  np.testing.assert_array_equal(p.sum(1), 1)


def test_synchronous_ring_gossip_golden_values_and_average():
  """Staleness 0: X^(k+1) = P X^(k); golden values, and every agent converges to the average."""
  x = gossip_only(Ring(3, "fixed", staleness=0), X0, 60)
  np.testing.assert_array_equal(x[0], [3.0, 1.5, 4.5])
  np.testing.assert_array_equal(x[1], [3.75, 2.25, 3.0])
  np.testing.assert_array_equal(x[2], [3.375, 3.0, 2.625])
  np.testing.assert_allclose(x[-1], 3.0, atol=1e-6)
  p = gala.ring_mixing_matrix(3)
  np.testing.assert_allclose(x[9], np.linalg.matrix_power(p, 10) @ X0, rtol=1e-6)


def test_stale_ring_gossip_golden_values():
  """Staleness 1 (GALA's delayed messages): iteration k sends x_i(k-1) and mixes the in-peer's
  message of iteration k-1, so x_i(k) = (x_i(k-1) + x_{i-1}(k-2)) / 2 with x(-1) = x(0) = X0
  (nothing to mix at k = 0); the agents still reach the average (the recursion preserves
  sum_i x_i(k) + x_i(k-1))."""
  x = gossip_only(Ring(3, "fixed", staleness=1), X0, 120)
  np.testing.assert_array_equal(x[0], X0)               # nothing received yet
  np.testing.assert_array_equal(x[1], [3.0, 1.5, 4.5])     # (x_i(0) + x_{i-1}(-1)) / 2
  np.testing.assert_array_equal(x[2], [4.5, 0.75, 3.75])   # (x_i(1) + x_{i-1}(0)) / 2
  np.testing.assert_array_equal(x[3], [4.5, 1.875, 2.625])  # (x_i(2) + x_{i-1}(1)) / 2
  assert np.ptp(x[-1]) < 1e-5
  np.testing.assert_allclose(x[-1], 3.0, atol=1e-4)


def test_async_ring_gossip_reaches_consensus():
  """The paper's non-blocking gossip: agents iterate in a random interleaving (seeded, in one
  thread), mixing whatever message is waiting (newer ones overwrite unread ones); they still
  reach a consensus inside the initial range."""
  n, ring = 3, Ring(3, "async")
  x = [{"w": np.full(2, v, np.float32)} for v in X0]
  k = [0] * n
  rng = np.random.default_rng(0)
  for _ in range(600):
    i = int(rng.integers(n))
    ring.send(i, k[i], x[i])
    msg = ring.receive(i, k[i])
    if msg is not None:
      x[i] = gala.mix(x[i], msg[1])
    k[i] += 1
  final = [float(p["w"][0]) for p in x]
  assert np.ptp(final) < 1e-4 and 0.0 < final[0] < 6.0
  assert ring.sent == 600 and ring.overwritten > 0


def test_consensus_distances():
  params = [{"a": np.array([0.0, 0.0]), "b": np.array(1.0)},
            {"a": np.array([2.0, 0.0]), "b": np.array(1.0)},
            {"a": np.array([4.0, 3.0]), "b": np.array(4.0)}]
  mean, dists = gala.consensus(params)
  np.testing.assert_allclose(mean["a"], [2.0, 1.0])
  np.testing.assert_allclose(mean["b"], 2.0)
  np.testing.assert_allclose(dists, [np.sqrt(4 + 1 + 1), np.sqrt(0 + 1 + 1),
                                     np.sqrt(4 + 4 + 4)], rtol=1e-6)


@pytest.mark.parametrize("kw,match", [
    (dict(mode="gala", gala_agents=1), "gala_agents must be >= 2"),
    (dict(mode="gala", gala_agents=3), "divisible by gala_agents"),
    (dict(mode="gala", num_actors=2), "--num_actors must be 1"),
    (dict(mode="allreduce", envpool=True, env="atari:Pong"), "no --envpool"),
    (dict(mode="hts", alternating_groups=True), "option of --mode=sync"),
    (dict(mode="sync", alternating_groups=True, num_executors=8), "must be even"),
    (dict(mode="gala", gala_gossip="sometimes"), "gala_gossip must be one of"),
])
def test_bad_configs_are_one_line_errors(kw, match):
  with pytest.raises(ConfigError, match=match):
    RunConfig.make(num_envs=8, num_executors=kw.pop("num_executors", 4), **kw)
