"""GALA-A2C, its all-reduce A2C baseline and Stooke & Abbeel's alternating env groups.

The gossip algebra by golden values (learning off: the ring's mixing alone), the deterministic
GALA variant's bits across executor counts and step-time jitter, the alternating groups' bits
against plain sync, and (slow) learning: GALA-A2C and sync with alternating groups solve CartPole.
"""

import threading

import numpy as np
import pytest

from hts_jax import gala
from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime import modes
from hts_jax.runtime.loops.gossip import Ring
from tests.test_learning import train

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


def run(tmp_path, name, **kw):
  cfg = dict(env="CartPole-v1", num_envs=8, num_executors=2, alpha=10, total_steps=2400,
             log_every_s=1000, logdir=str(tmp_path / name))
  cfg.update(kw)
  return modes.run(RunConfig.make(**cfg))


def test_fixed_gossip_gala_is_deterministic(tmp_path):
  """One param_sha256 (the agents' average, and every agent's) whatever the executor count and
  the step-time jitter; the epsilon-ball and staleness are reported."""
  base = dict(mode="gala", gala_agents=2, gala_gossip="fixed", eval_every=1200)
  a = run(tmp_path, "a", **base)
  b = run(tmp_path, "b", num_executors=4, executor_jitter_s=0.0005, **base)
  c = run(tmp_path, "c", num_executors=8, actor_batch=1, **base)
  for other in (b, c):
    assert other["param_sha256"] == a["param_sha256"]
    assert other["gala"]["agent_param_sha256"] == a["gala"]["agent_param_sha256"]
    assert [e["mean_return"] for e in other["eval"]] == [e["mean_return"] for e in a["eval"]]
  g = a["gala"]
  assert g["agent_updates"] == [30, 30] and a["updates"] == 30
  assert g["gossip_staleness"]["histogram"] == {"1": 58}  # every update but the first mixes
  assert g["iterations_without_gossip"] == 2
  assert 0 < g["epsilon_ball"]["mean"] <= g["epsilon_ball"]["max"]
  assert len(g["agent_eval"]) == 2 and a["compiled_during_run"] == []
  assert a["gala"]["agent_param_sha256"][0] != a["gala"]["agent_param_sha256"][1]
  d = run(tmp_path, "d", **dict(base, gala_staleness=0))  # a synchronous ring: other bits
  assert d["param_sha256"] != a["param_sha256"]


def test_async_gala_and_allreduce_run(tmp_path):
  a = run(tmp_path, "gala", mode="gala", gala_agents=2, num_executors=4)
  g = a["gala"]
  assert g["gossip"] == "async" and g["messages_sent"] == 60
  assert sum(g["gossip_staleness"]["histogram"].values()) + g["iterations_without_gossip"] == 60
  assert a["env_steps"] == 2400 and a["compiled_during_run"] == []
  r1 = run(tmp_path, "ar1", mode="allreduce", gala_agents=2)
  r2 = run(tmp_path, "ar2", mode="allreduce", gala_agents=2, num_executors=4,
           executor_jitter_s=0.0005)
  assert r1["param_sha256"] == r2["param_sha256"]
  assert r1["updates"] == 30 and r1["policy_lag"]["max"] == 0


def test_alternating_groups_give_plain_syncs_bits(tmp_path):
  a = run(tmp_path, "sync", mode="sync")
  b = run(tmp_path, "alt", mode="sync", alternating_groups=True, executor_jitter_s=0.0005)
  c = run(tmp_path, "alt4", mode="sync", alternating_groups=True, num_executors=4)
  assert a["param_sha256"] == b["param_sha256"] == c["param_sha256"]
  assert b["efficiency"]["actor_calls"] == 2 * a["efficiency"]["actor_calls"]


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


def test_gala_does_not_checkpoint(tmp_path):
  with pytest.raises(ConfigError, match="does not checkpoint"):
    modes.make_runner(RunConfig.make(mode="gala", num_envs=8, checkpoint_every=5,
                                logdir=str(tmp_path)))


@pytest.mark.slow
def test_gala_a2c_solves_cartpole(tmp_path):
  """GALA-A2C (2 agents x 8 envs, deterministic gossip) reaches 475 within 300k env steps
  (measured: 500 from 250k steps on, ~60 s here)."""
  summary, _ = train(str(tmp_path), "--preset=cartpole_gala", "--total_steps=300000",
                     "--eval_every=25000")
  returns = [e["mean_return"] for e in summary["eval"]]
  assert max(returns) >= 475, returns
  assert summary["gala"]["epsilon_ball"]["max_relative"] < 0.1


@pytest.mark.slow
def test_alternating_groups_learn_as_plain_sync(tmp_path):
  """The same learning run with and without alternation: the same bits, and it solves CartPole
  (measured: 489 at 100k steps)."""
  common = ["--preset=cartpole_a2c", "--mode=sync", "--total_steps=150000", "--eval_every=25000"]
  plain, _ = train(str(tmp_path / "plain"), *common)
  alt, _ = train(str(tmp_path / "alt"), *common, "--alternating_groups")
  assert alt["param_sha256"] == plain["param_sha256"]
  assert max(e["mean_return"] for e in alt["eval"]) >= 475
