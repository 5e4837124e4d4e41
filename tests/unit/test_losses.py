"""Loss and return values against hand-computed numbers; the entropy bonus direction."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hts_jax import losses


def _close(actual, expected, tol=1e-6):
  np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def test_nstep_returns_by_hand():
  # T=3, B=2, gamma=0.5; env 1 ends after step 0.
  rewards = jnp.array([[1.0, 2.0], [0.0, 1.0], [2.0, 0.0]])
  dones = jnp.array([[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
  bootstrap = jnp.array([4.0, 8.0])
  r = losses.nstep_returns(rewards, dones, bootstrap, gamma=0.5)
  # env 0: R2 = 2 + .5*4 = 4, R1 = 0 + .5*4 = 2, R0 = 1 + .5*2 = 2
  # env 1: R2 = 0 + .5*8 = 4, R1 = 1 + .5*4 = 3, R0 = 2 (episode ended)
  _close(r, [[2.0, 2.0], [2.0, 3.0], [4.0, 4.0]])


def test_gae_by_hand():
  # T=2, B=1, gamma=0.9, lambda=0.5.
  rewards = jnp.array([[1.0], [2.0]])
  dones = jnp.array([[0.0], [0.0]])
  values = jnp.array([[0.5], [1.0], [3.0]])
  adv, ret = losses.gae(rewards, dones, values, gamma=0.9, lambda_=0.5)
  d1 = 2.0 + 0.9 * 3.0 - 1.0  # 3.7
  d0 = 1.0 + 0.9 * 1.0 - 0.5  # 1.4
  a0 = d0 + 0.9 * 0.5 * d1    # 3.065
  _close(adv, [[a0], [d1]])
  _close(ret, [[a0 + 0.5], [d1 + 1.0]])
  # A done cuts the bootstrap: delta_1 = r_1 - V_1.
  adv_d, _ = losses.gae(rewards, jnp.array([[0.0], [1.0]]), values, 0.9, 0.5)
  _close(adv_d[1], [2.0 - 1.0])


def _two_sample_batch():
  logits = jnp.array([[0.0, 0.0], [jnp.log(3.0), 0.0]])  # pi = [.5,.5], [.75,.25]
  values = jnp.array([1.0, 0.0])
  actions = jnp.array([0, 1])
  returns = jnp.array([3.0, -1.0])
  return logits, values, actions, returns


def test_a2c_loss_by_hand():
  logits, values, actions, returns = _two_sample_batch()
  loss, m = losses.a2c_loss(logits, values, actions, returns, value_coef=0.5, entropy_coef=0.1)
  adv = np.array([2.0, -1.0])
  logp = np.log([0.5, 0.25])
  pg = -np.mean(adv * logp)
  vl = np.mean(adv ** 2)
  ent = np.mean([np.log(2.0), -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))])
  _close(m["pg_loss"], pg)
  _close(m["value_loss"], vl)
  _close(m["entropy"], ent)
  _close(loss, pg + 0.5 * vl - 0.1 * ent)


def test_ppo_loss_by_hand():
  logits, values, actions, _ = _two_sample_batch()
  old_logp = jnp.log(jnp.array([0.25, 0.5]))  # ratios 2.0 and 0.5
  old_values = jnp.array([0.5, 0.5])
  adv = jnp.array([1.0, -2.0])
  ret = jnp.array([2.0, 1.0])
  loss, m = losses.ppo_loss(logits, values, actions, old_logp, old_values, adv, ret, clip_eps=0.2,
                            value_coef=0.5, entropy_coef=0.0)
  # sample 0: ratio 2, A=1: min(2, 1.2) = 1.2. sample 1: ratio .5, A=-2: min(-1, -1.6) = -1.6.
  pg = -np.mean([1.2, -1.6])
  # value: V=1, Vold=.5 -> Vclip=.7; max((1-2)^2, (.7-2)^2) = 1.69.
  #        V=0, Vold=.5 -> Vclip=.3; max((0-1)^2, (.3-1)^2) = 1.
  vl = 0.5 * np.mean([1.69, 1.0])
  _close(m["pg_loss"], pg)
  _close(m["value_loss"], vl)
  _close(loss, pg + 0.5 * vl)
  _close(m["clip_frac"], 1.0)


@pytest.mark.parametrize("which", ["a2c", "ppo", "vtrace"])
def test_positive_entropy_coef_raises_entropy(which):
  """Only the entropy term has gradient here; one descent step must raise entropy."""
  logits0 = jnp.array([[2.0, 0.0, -1.0]])
  zeros = jnp.zeros((1,))
  actions = jnp.zeros((1,), jnp.int32)

  def loss_of(logits):
    if which == "a2c":
      return losses.a2c_loss(logits, zeros, actions, zeros, 0.0, 0.5)[0]
    if which == "ppo":
      return losses.ppo_loss(logits, zeros, actions, zeros, zeros, zeros, zeros, 0.2, 0.0, 0.5)[0]
    return losses.vtrace_loss(logits[None], zeros[None], zeros, actions[None],
                              losses.log_prob(logits, actions)[None], zeros[None], zeros[None],
                              0.99, 0.0, 0.5)[0]

  g = jax.grad(loss_of)(logits0)
  before = float(losses.entropy(logits0)[0])
  after = float(losses.entropy(logits0 - 0.1 * g)[0])
  assert after > before


def test_vtrace_on_policy_equals_nstep_returns():
  """With π = μ (ρ = 1) and λ = 1, V-trace targets are the n-step returns."""
  rng = np.random.default_rng(0)
  t, b, a = 4, 3, 2
  logits = jnp.asarray(rng.normal(size=(t, b, a)), jnp.float32)
  values = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
  boot = jnp.asarray(rng.normal(size=(b,)), jnp.float32)
  actions = jnp.asarray(rng.integers(0, a, (t, b)), jnp.int32)
  rewards = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
  dones = jnp.asarray(rng.random((t, b)) < 0.3, jnp.float32)
  _, m = losses.vtrace_loss(logits, values, boot, actions, losses.log_prob(logits, actions),
                            rewards, dones, 0.9, 1.0, 0.0)
  returns = losses.nstep_returns(rewards, dones, boot, 0.9)
  _close(m["value_loss"], 0.5 * np.mean((np.asarray(returns - values)) ** 2),
                          tol=1e-5)
  _close(m["mean_rho"], 1.0)
