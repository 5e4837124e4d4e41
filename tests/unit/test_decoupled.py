"""--correction=decoupled (Hilton, Cobbe & Schulman 2022) by golden values, the loss seam, and the
lag diagnostics every PPO update reports (its identity with synchronous PPO at lag 0 is in
test_learner.py, beside `behaviour`'s)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from hts_jax import algorithms, learner, losses, networks, ppo
from hts_jax.choices import CORRECTIONS
from hts_jax.config import ConfigError, LearnerConfig, RunConfig
from tests.support.learner_cases import (LR, THETA, THETA_PREV, bias_model, one_step_segment,
                                         ppo_config, random_segment, state_at)

PI_J = np.exp([1.0, -1.0]) / np.exp([1.0, -1.0]).sum()   # π_{θ_j}: softmax([1, -1])
MU = np.array([0.5, 0.5])                                  # π_{θ_{j-1}}: softmax([0, 0])


def _step(cfg, state=None, action=1):
  opt = optax.sgd(LR)
  return learner.make_learner_step(cfg, bias_model, opt)(state or state_at(opt),
                                                         one_step_segment(action=action))


@pytest.mark.parametrize("action,is_cap", [(1, 100.0), (0, 100.0), (0, 1.5)])
def test_decoupled_golden_ppo_step_at_lag_one(action, is_cap):
  """One PPO step at θ_j, derived by hand. The clip is centred on p = π_j, so the first step's
  ratio is 1 (unclipped); GAE, the old value and the value clip are θ_j's: A = 1.5 − V_j = −0.5,
  R = 1.5; the weight is w = min(c̄, p(a)/μ(a)). The policy gradient is −w·A·(onehot(a) − p); the
  value terms are unweighted, so b moves by −lr·c_v·(V − R) = −0.1·0.5·0.5 as under `none`."""
  new, m = _step(ppo_config(correction="decoupled", is_cap=is_cap), action=action)
  rho = PI_J[action] / MU[action]
  w = min(is_cap, rho)
  grad_l = -w * -0.5 * (np.eye(2)[action] - PI_J)
  np.testing.assert_allclose(new.params["l"], np.asarray(THETA["l"]) - LR * grad_l, atol=1e-6)
  np.testing.assert_allclose(new.params["b"], 2.0 - LR * 0.5 * 0.5, atol=1e-6)
  np.testing.assert_allclose(m["ratio_mean"], 1.0)
  np.testing.assert_allclose(m["clip_frac"], 0.0)
  np.testing.assert_allclose(m["approx_kl"], 0.0, atol=1e-7)
  np.testing.assert_allclose(m["is_weight"], w, rtol=1e-6)
  np.testing.assert_allclose(m["is_ess"], 1.0, rtol=1e-6)   # one sample: E[w]² = E[w²]
  np.testing.assert_allclose(m["is_above_2"], 0.0)
  np.testing.assert_allclose(m["is_capped"], float(rho > is_cap))
  np.testing.assert_allclose(m["kl_lag"], np.sum(MU * np.log(MU / PI_J)), rtol=1e-5)
  # With the weight forced to 1 (c̄ = 1 on action 0, where p/μ > 1) it is the `none` step.
  if is_cap == 1.5:
    none, _ = _step(ppo_config(correction="none"), action=action)
    capped, _ = _step(ppo_config(correction="decoupled", is_cap=1.0), action=action)
    for k in ("l", "b"):
      np.testing.assert_array_equal(capped.params[k], none.params[k])


def test_decoupled_weights_only_the_policy_term():
  """With θ_{j-1} = θ_j but a weight forced through the seam, only the policy term scales: the
  value and entropy terms are unweighted."""
  logits = jnp.array([[0.3, -0.2], [0.1, 0.4]])
  common = dict(values=jnp.array([0.5, -0.1]), actions=jnp.array([0, 1]),
                old_values=jnp.array([0.4, 0.0]), advantages=jnp.array([1.0, -2.0]),
                returns=jnp.array([1.0, 0.5]), clip_eps=0.2, value_coef=0.5, entropy_coef=0.01)
  old = losses.log_prob(logits, common["actions"])
  _, m1 = losses.ppo_loss(logits, old_log_probs=old, **common)
  _, m3 = losses.ppo_loss(logits, old_log_probs=old, weights=jnp.full((2,), 3.0), **common)
  np.testing.assert_allclose(m3["pg_loss"], 3.0 * m1["pg_loss"], rtol=1e-6)
  for k in ("value_loss", "entropy"):
    np.testing.assert_array_equal(m3[k], m1[k])


def test_lag_diagnostics_against_numpy():
  """On an MLP with masked-out samples: KL(μ || p), the weights' mean, ESS/N, the shares above 2
  and capped, over the real samples only, for `decoupled` with c̄ = 2.5; and the clip fraction
  of the first step is against p (0 at the first minibatch of one epoch)."""
  net = networks.make_network("mlp", 2)
  # Large weights make both policies far from uniform, so that p/μ exceeds 2 and the cap.
  theta_prev, theta = (jax.tree.map(lambda x: 100 * x,
                                    net.init(jax.random.PRNGKey(k), jnp.zeros((1, 4))))
                       for k in (1, 2))
  seg = random_segment(t=6, b=3)
  valid = np.ones((6, 3), np.float32)
  valid[2, 1] = valid[4, 0] = 0.0
  seg = seg.replace(valid=jnp.asarray(valid))
  opt = optax.sgd(LR)
  _, m = learner.make_learner_step(ppo_config(correction="decoupled", is_cap=2.5), net.apply, opt)(
      state_at(opt, theta_prev, theta), seg)
  obs = np.asarray(seg.obs[:-1]).reshape(-1, 4)
  logp = [np.asarray(jax.nn.log_softmax(net.apply(p, obs)[0]), np.float64)
          for p in (theta, theta_prev)]
  acts = np.asarray(seg.actions).reshape(-1)
  rho = np.exp(logp[0][np.arange(len(acts)), acts] - logp[1][np.arange(len(acts)), acts])
  real = valid.reshape(-1) > 0
  w = np.minimum(2.5, rho)[real]
  kl = np.sum(np.exp(logp[1]) * (logp[1] - logp[0]), axis=-1)[real]
  assert 0 < (rho[real] > 2.5).mean() < (w > 2).mean() < 1
  np.testing.assert_allclose(m["kl_lag"], kl.mean(), rtol=1e-4)
  np.testing.assert_allclose(m["is_weight"], w.mean(), rtol=1e-5)
  np.testing.assert_allclose(m["is_ess"], w.mean() ** 2 / np.mean(w ** 2), rtol=1e-5)
  np.testing.assert_allclose(m["is_capped"], (rho[real] > 2.5).mean(), rtol=1e-6)
  np.testing.assert_allclose(m["is_above_2"], (w > 2).mean(), rtol=1e-6)
  np.testing.assert_allclose(m["clip_frac"], 0.0)


def test_under_sync_kl_lag_is_the_previous_updates_move():
  """Sync PPO (`none` at lag 0, as --mode=sync runs it): the state rolls θ_j into
  `behaviour_params`, so the second update's `kl_lag` is KL(π_{θ_0} || π_{θ_1}), the move of the
  first update, and the first's is 0."""
  opt = optax.sgd(LR)
  step = learner.make_learner_step(ppo_config(correction="none"), bias_model, opt)
  s1, m1 = step(state_at(opt, THETA, THETA), one_step_segment(action=1))
  _, m2 = step(s1, one_step_segment(action=1))
  softmax = lambda l: np.exp(l) / np.exp(l).sum()
  p0, p1 = softmax(np.asarray(THETA["l"])), softmax(np.asarray(s1.params["l"], np.float64))
  assert float(m1["kl_lag"]) == 0.0 and np.sum(p0 * np.log(p0 / p1)) > 1e-4
  np.testing.assert_allclose(m2["kl_lag"], np.sum(p0 * np.log(p0 / p1)), rtol=1e-3)


def test_every_ppo_correction_reports_the_diagnostics():
  """`behaviour` (ratio against θ_{j-1}) starts with ρ ≠ 1; its weights are 1 (ESS 1, none
  capped) while KL(μ || p) is the same lag's as `decoupled`'s."""
  got = {c: _step(ppo_config(correction=c))[1] for c in ("behaviour", "decoupled", "none",
                                                          "delayed", "truncated_is")}
  for c, m in got.items():
    assert {"kl_lag", "is_weight", "is_ess", "is_above_2", "is_capped", "clip_frac",
            "approx_kl"} <= set(m), c
    np.testing.assert_allclose(m["kl_lag"], got["decoupled"]["kl_lag"], rtol=1e-6)
  assert float(got["behaviour"]["clip_frac"]) == 1.0 and float(got["behaviour"]["is_ess"]) == 1.0
  np.testing.assert_allclose(got["truncated_is"]["is_weight"], PI_J[1] / MU[1], rtol=1e-6)


def test_the_policy_loss_is_a_seam():
  """A PPO variant passes its own policy loss to the update builder: here, the plain (unclipped)
  importance-weighted policy gradient gives a different step from the clipped one whenever the
  clip binds (behaviour's first ratio ≈ 0.24 is clipped)."""
  def unclipped(log_ratio, advantages, weights, clip_eps):
    del clip_eps
    return -jnp.mean(weights * jnp.exp(log_ratio) * advantages)

  cfg = ppo_config(correction="behaviour")
  opt = optax.sgd(LR)
  step = jax.jit(learner.build_learner_update(cfg, bias_model, opt))
  default, _ = step(state_at(opt), one_step_segment(action=1))
  update = ppo.build_ppo_update(cfg, bias_model, opt, policy_loss=unclipped)
  seg = algorithms.complete_segment(one_step_segment(action=1))
  end, *_ = update(THETA, opt.init(THETA), seg, jax.random.PRNGKey(0), THETA, THETA_PREV)
  np.testing.assert_allclose(end["l"], default.params["l"], atol=1e-6)  # A > 0, ρ < 1: same
  up_seg = one_step_segment(action=0)  # ρ = p(0)/μ(0) ≈ 1.76 > 1 + ε with A > 0: clipped
  default, _ = step(state_at(opt), up_seg)
  end, *_ = update(THETA, opt.init(THETA), algorithms.complete_segment(up_seg),
                   jax.random.PRNGKey(0), THETA, THETA_PREV)
  assert not np.allclose(end["l"], default.params["l"], atol=1e-4)


def test_which_modes_and_algorithms_take_decoupled():
  """Allowed wherever `behaviour` is (the record's `lag_free_at_lag_0`): PPO in every mode that
  takes a learner; A2C refuses it in one line naming truncated_is."""
  assert CORRECTIONS["decoupled"].lag_free_at_lag_0 and CORRECTIONS["behaviour"].lag_free_at_lag_0
  for mode in ("hts", "sync"):
    RunConfig.make(mode=mode, alpha=16, learner=dict(algo="ppo", correction="decoupled"))
  with pytest.raises(ConfigError, match="truncated_is"):
    LearnerConfig(algo="a2c", correction="decoupled")
  with pytest.raises(ConfigError, match="is_cap must be >= 1"):
    LearnerConfig(algo="ppo", correction="decoupled", is_cap=0.5)
  with pytest.raises(ConfigError, match="applies to --mode=hts only"):
    RunConfig.make(mode="sync", alpha=16, learner=dict(algo="ppo", correction="truncated_is"))
