"""The data-parallel learner (2 forced CPU devices) equals the single-device step on the same
global batch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hts_jax import learner, networks
from hts_jax.runtime.policy import make_policy_step
from hts_jax.types import LearnerConfig, Segment


def _segment(t, b, obs_shape, seed=0, uint8=False, masked=False):
  """A random segment; `masked`: some transitions invalid, unevenly over the env columns (so the
  two devices' shards hold different numbers of valid samples)."""
  rng = np.random.default_rng(seed)
  valid = None
  if masked:
    valid = np.ones((t, b), np.float32)
    valid[:, :b // 2] = rng.random((t, b // 2)) < 0.5
    valid = jnp.asarray(valid)
  obs = (rng.integers(0, 255, (t + 1, b) + obs_shape).astype(np.uint8) if uint8
         else rng.normal(size=(t + 1, b) + obs_shape).astype(np.float32))
  return Segment(obs=jnp.asarray(obs), actions=jnp.asarray(rng.integers(0, 3, (t, b)), jnp.int32),
                 rewards=jnp.asarray(rng.normal(size=(t, b)), jnp.float32),
                 dones=jnp.asarray(rng.random((t, b)) < 0.2, jnp.float32), valid=valid)


def _max_diff(a, b):
  return max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


_SLOW = pytest.mark.slow  # PPO's and the CNN's compilations take 20-30 s each on 2 cores


# Every correction, both reductions, masks and both network kinds, each in some case (a case is
# two compilations of a learner step, the cost of this file).
@pytest.mark.parametrize("algo,correction,kind,reduction,masked", [
    ("a2c", "delayed", "mlp", "mean", False),
    ("a2c", "truncated_is", "mlp", "mean", True),
    pytest.param("ppo", "delayed", "mlp", "mean", True, marks=_SLOW),
    pytest.param("ppo", "none", "mlp", "sum", True, marks=_SLOW),
    pytest.param("ppo", "decoupled", "mlp", "mean", True, marks=_SLOW),
    pytest.param("a2c", "delayed", "cnn", "mean", False, marks=_SLOW)])
def test_sharded_learner_step_equals_single_device(algo, correction, kind, reduction, masked):
  """Also with invalid (masked) transitions spread unevenly over the shards and with IMPALA's
  summed loss: losses, metrics (clip_frac too) and params are the global batch's."""
  devices = jax.devices()
  assert len(devices) == 2, "conftest forces 2 host devices"
  obs_shape = (4,) if kind == "mlp" else (36, 36, 4)
  net = networks.make_network(kind, 3)
  cfg = LearnerConfig(algo=algo, correction=correction, unroll_length=2, ppo_epochs=2,
                      num_minibatches=2, optimizer="adam", learning_rate=1e-3,
                      loss_reduction=reduction,
                      clip_eps=0.01 if reduction == "sum" else 0.2)  # sum: clip_frac > 0 too
  opt = learner.make_optimizer(cfg)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + obs_shape, jnp.float32))
  state0 = learner.init_train_state(params, opt, jax.random.PRNGKey(1))
  single = learner.make_learner_step(cfg, net.apply, opt)
  sharded = learner.make_learner_step(cfg, net.apply, opt, devices=devices)
  s1, s2 = state0, state0
  for i in range(3):
    seg = _segment(4, 4, obs_shape, seed=i, uint8=(kind == "cnn"), masked=masked)
    s1, m1 = single(s1, seg)
    s2, m2 = sharded(s2, seg)
  assert _max_diff(s1.params, s2.params) <= 1e-5
  assert _max_diff(s1.behaviour_params, s2.behaviour_params) <= 1e-5
  for k in m1:
    np.testing.assert_allclose(m1[k], m2[k], rtol=1e-4, atol=1e-5)


def test_sharded_policy_step_matches_rows():
  """The data-parallel policy step returns per-row outputs in the original row order, greedy and
  sampled (each row's action keyed by its own seed, whichever device computed it)."""
  net = networks.make_network("mlp", 4)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 5)))
  rng = np.random.default_rng(0)
  obs = rng.normal(size=(8, 5)).astype(np.float32)
  seeds = np.stack([np.arange(8), np.arange(8) * 3], -1).astype(np.uint32)
  for greedy in (True, False):
    one = make_policy_step(net.apply, 8, greedy=greedy)
    two = make_policy_step(net.apply, 8, greedy=greedy, devices=jax.devices())
    a1, e1 = one(params, obs, seeds)
    a2, e2 = two(params, obs, seeds)
    np.testing.assert_array_equal(a1, a2)
    for k in e1:
      np.testing.assert_allclose(e1[k], e2[k], atol=1e-5)
    if not greedy:  # the rows reversed: each row's action follows its seed and its observation
      a3, _ = two(params, obs[::-1], seeds[::-1])
      np.testing.assert_array_equal(a3, a1[::-1])
