"""Keyed policy step: a row's action depends only on (params, obs row, seed) — bitwise — whatever
the batch size and the row's position; and the hot steps do not recompile."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hts_jax import learner, networks
from hts_jax.runtime.policy import make_policy_step
from hts_jax.types import LearnerConfig, Segment

CASES = {"mlp": ((4,), np.float32, 2), "cnn": ((84, 84, 4), np.uint8, 6)}


def _rows(rng, n, shape, dtype):
  if dtype == np.uint8:
    return rng.integers(0, 256, (n,) + shape).astype(np.uint8)
  return rng.normal(size=(n,) + shape).astype(np.float32)


def _place(obs_row, seed_row, batch):
  """A fixed-shape batch with the probe at row 0 and other rows of its own."""
  rng = np.random.default_rng(99)
  obs = _rows(rng, batch, obs_row.shape, obs_row.dtype)
  seeds = rng.integers(0, 2**31, (batch, 2)).astype(np.uint32)
  obs[0], seeds[0] = obs_row, seed_row
  return obs, seeds


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_row_action_independent_of_batch_and_position(kind):
  shape, dtype, num_actions = CASES[kind]
  net = networks.make_network(kind, num_actions)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + shape, dtype))
  step = make_policy_step(net.apply, batch_size=16)
  rng = np.random.default_rng(1)
  probe = _rows(rng, 24, shape, dtype)          # 24 probe rows, each with its own seed
  probe_seeds = np.stack([rng.integers(0, 2**32, 24), rng.integers(0, 10**6, 24)],
                         -1).astype(np.uint32)
  ref_actions, ref_extras = step(params, probe[:1], probe_seeds[:1])  # batch of 1
  results = {}
  for i in range(24):
    results[i] = step(params, probe[i:i + 1], probe_seeds[i:i + 1])
  for batch in (1, 3, 16, 64):
    for pos in sorted({0, batch // 2, batch - 1}):
      for i in range(0, 24, 5):
        obs = _rows(rng, batch, shape, dtype)
        seeds = np.stack([rng.integers(0, 2**32, batch), rng.integers(0, 10**6, batch)],
                         -1).astype(np.uint32)
        obs[pos], seeds[pos] = probe[i], probe_seeds[i]
        actions, extras = step(params, obs, seeds)
        want_a, want_e = results[i]
        assert actions[pos] == want_a[0], (batch, pos, i)
        # Bitwise, not approximately: the same bits feed the same sampler.
        assert extras["log_prob"][pos].tobytes() == want_e["log_prob"][0].tobytes()
        assert extras["value"][pos].tobytes() == want_e["value"][0].tobytes()
        # The actions-only core (what the actors run) is batch- and position-invariant too.
        if batch == 16:
          assert step.run_actions(params, obs, seeds)[pos] == \
              step.run_actions(params, *_place(probe[i], probe_seeds[i], batch))[0]
  assert ref_actions.shape == (1,) and ref_extras["value"].shape == (1,)


def test_actions_follow_the_seed():
  net = networks.make_network("mlp", 4)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
  step = make_policy_step(net.apply, batch_size=64)
  obs = np.zeros((64, 4), np.float32)  # identical rows: the seed alone differs
  seeds = np.stack([np.full(64, 7), np.arange(64)], -1).astype(np.uint32)
  actions, _ = step(params, obs, seeds)
  assert len(set(actions.tolist())) > 1          # different steps, different draws
  again, _ = step(params, obs, seeds)
  np.testing.assert_array_equal(actions, again)  # same seeds, same draws


def test_sampling_follows_the_policy():
  """Sampled action frequencies match softmax(logits)."""
  net = networks.make_network("mlp", 3)
  params = net.init(jax.random.PRNGKey(3), jnp.zeros((1, 2)))
  params = jax.tree.map(lambda x: x * 30.0, params)  # a far-from-uniform policy
  step = make_policy_step(net.apply, batch_size=256)
  obs = np.ones((4096, 2), np.float32)
  seeds = np.stack([np.zeros(4096), np.arange(4096)], -1).astype(np.uint32)
  actions, extras = step(params, obs, seeds)
  logits, _ = net.apply(params, obs[:1])
  probs = np.asarray(jax.nn.softmax(logits[0]))
  freq = np.bincount(actions, minlength=3) / len(actions)
  np.testing.assert_allclose(freq, probs, atol=0.03)


def test_no_recompile_on_second_call():
  net = networks.make_network("mlp", 2)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
  policy = make_policy_step(net.apply, batch_size=8)
  for n in (3, 8, 13):  # padded chunks keep one shape
    policy(params, np.zeros((n, 4), np.float32), np.zeros((n, 2), np.uint32))
  assert policy.core._cache_size() == 1

  cfg = LearnerConfig(algo="ppo", num_minibatches=2, ppo_epochs=2)
  opt = learner.make_optimizer(cfg)
  step = learner.make_learner_step(cfg, net.apply, opt)
  state = learner.init_train_state(params, opt, jax.random.PRNGKey(0))
  rng = np.random.default_rng(0)
  for _ in range(3):
    seg = Segment(obs=rng.normal(size=(5, 3, 4)).astype(np.float32),
                  actions=rng.integers(0, 2, (4, 3)).astype(np.int32),
                  rewards=rng.normal(size=(4, 3)).astype(np.float32),
                  dones=np.zeros((4, 3), np.float32))
    state, _ = step(state, seg)
  assert step._cache_size() == 1
