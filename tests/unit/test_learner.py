"""The one-step delayed gradient (paper Eq. 6) by golden values, and the learner's corrections."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from hts_jax import learner, networks
from hts_jax.types import LearnerConfig
from tests.support.learner_cases import (LR, THETA, THETA_PREV, bias_model, config, hand_grad,
                                         one_step_segment, ppo_config, random_segment, state_at)


def test_delayed_gradient_golden_sgd():
  """θ_{j+1} = θ_j − lr·∇L(θ_{j−1}), with ∇L(θ_{j−1}) derived by hand."""
  opt = optax.sgd(LR)
  step = learner.make_learner_step(config(), bias_model, opt)
  new, _ = step(state_at(opt), one_step_segment(action=0))
  # At θ_{j-1}: adv = 1.5 - 0.5 = 1, π = [.5, .5]: ∂L/∂l = -(1)([1,0]-[.5,.5]) = [-.5, .5],
  # ∂L/∂b = -2·0.5·1 = -1.  So l = [1, -1] - 0.1·[-.5, .5] = [1.05, -1.05], b = 2 + 0.1 = 2.1.
  np.testing.assert_allclose(new.params["l"], [1.05, -1.05], rtol=0, atol=1e-6)
  np.testing.assert_allclose(new.params["b"], 2.1, rtol=0, atol=1e-6)
  # The state rolls: θ_j becomes the behaviour params, the counter advances.
  np.testing.assert_array_equal(new.behaviour_params["l"], THETA["l"])
  assert int(new.update_count) == 1


@pytest.mark.parametrize("correction", ["none", "truncated_is"])
def test_non_delayed_corrections_evaluate_at_theta_j(correction):
  opt = optax.sgd(LR)
  step = learner.make_learner_step(config(correction=correction), bias_model, opt)
  new, metrics = step(state_at(opt), one_step_segment(action=1))
  weight = 1.0
  if correction == "truncated_is":
    # min(1, π_j(a=1) / π_{j-1}(a=1)) = min(1, σ(-2) / 0.5)
    weight = min(1.0, (np.exp(-1) / (np.exp(1) + np.exp(-1))) / 0.5)
    assert weight < 1.0
    np.testing.assert_allclose(metrics["is_weight"], weight, rtol=1e-6)
  g = hand_grad(THETA, action=1, weight=weight)
  np.testing.assert_allclose(new.params["l"], np.asarray(THETA["l"]) - LR * g["l"], atol=1e-6)
  np.testing.assert_allclose(new.params["b"], float(THETA["b"]) - LR * g["b"], atol=1e-6)
  # ... and not at θ_{j-1}:
  g_prev = hand_grad(THETA_PREV, action=1)
  assert abs(float(new.params["b"]) - (float(THETA["b"]) - LR * g_prev["b"])) > 0.1


@pytest.mark.parametrize("name", ["rmsprop", "adam"])
def test_delayed_gradient_optax_updates(name):
  """Two learner iterations equal applying optax's updates for ∇L(θ_{j-1}) to θ_j by hand."""
  cfg = config(optimizer=name, learning_rate=0.01, max_grad_norm=1e6)
  opt = learner.make_optimizer(cfg)
  step = learner.make_learner_step(cfg, bias_model, opt)
  seg = one_step_segment(action=0)
  state = state_at(opt)
  s1, _ = step(state, seg)
  s2, _ = step(s1, seg)

  opt_state = opt.init(THETA_PREV)
  u1, opt_state = opt.update(jax.tree.map(jnp.asarray, hand_grad(THETA_PREV, 0)), opt_state)
  theta_1 = optax.apply_updates(THETA, u1)                   # θ_{j+1}
  u2, opt_state = opt.update(jax.tree.map(jnp.asarray, hand_grad(THETA, 0)), opt_state)
  theta_2 = optax.apply_updates(theta_1, u2)                 # θ_{j+2} = θ_{j+1} + u(∇L(θ_j))
  for got, want in [(s1.params, theta_1), (s2.params, theta_2)]:
    for k in want:
      np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-7)
  if name == "rmsprop":
    # PyTorch RMSProp (as the paper): ν = 0.01·g², step = -lr·g/(√ν + 1e-5) on the first step.
    g = hand_grad(THETA_PREV, 0)["b"]
    want_b = 2.0 - 0.01 * g / (np.sqrt(0.01 * g * g) + 1e-5)
    np.testing.assert_allclose(s1.params["b"], want_b, rtol=1e-6)


@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_multi_step_algorithms_transfer_summed_updates(algo):
  """A2C with several n-step updates and PPO (epochs x minibatches) run on a shadow started at
  θ_{j-1}; θ_{j+1} = θ_j + (shadow_end − θ_{j-1}). The shadow's end is what a plain (non-delayed)
  learner reaches from θ_{j-1}."""
  net = networks.make_network("mlp", 2)
  theta_prev = net.init(jax.random.PRNGKey(1), jnp.zeros((1, 4)))
  theta = net.init(jax.random.PRNGKey(2), jnp.zeros((1, 4)))
  opt = optax.sgd(LR)
  seg = random_segment()
  kw = dict(algo=algo, unroll_length=2, ppo_epochs=2, num_minibatches=2)
  delayed = learner.make_learner_step(LearnerConfig(**kw), net.apply, opt)
  plain = learner.make_learner_step(LearnerConfig(correction="none", **kw), net.apply, opt)
  new, _ = delayed(state_at(opt, theta_prev, theta), seg)
  shadow_end, _ = plain(state_at(opt, theta_prev, theta_prev), seg)
  want = jax.tree.map(lambda tj, end, tp: tj + (end - tp), theta, shadow_end.params, theta_prev)
  for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(want)):
    np.testing.assert_allclose(a, b, atol=1e-6)
  moved = sum(float(jnp.abs(a - b).sum()) for a, b in
              zip(jax.tree.leaves(shadow_end.params), jax.tree.leaves(theta_prev)))
  assert moved > 1e-3  # the algorithm really took steps


def test_first_update_from_theta_0_is_synchronous():
  """init_train_state sets θ_{-1} = θ_0, so the first iteration is a plain synchronous update."""
  opt = optax.sgd(LR)
  st = learner.init_train_state(THETA_PREV, opt, jax.random.PRNGKey(0))
  new, _ = learner.make_learner_step(config(), bias_model, opt)(st, one_step_segment(0))
  g = hand_grad(THETA_PREV, 0)
  np.testing.assert_allclose(new.params["b"], 0.5 - LR * g["b"], atol=1e-6)


def test_bad_segment_length_is_a_config_error():
  opt = optax.sgd(LR)
  step = learner.make_learner_step(config(unroll_length=3), bias_model, opt)
  with pytest.raises(ValueError, match="multiple of unroll_length"):
    step(state_at(opt), one_step_segment(0))


def test_behaviour_correction_golden_ppo_step():
  """--correction=behaviour: one PPO step at θ_j whose ratio, old value and GAE are θ_{j-1}'s,
  derived by hand. Action 1, reward 1.5, then the episode ends: A = 1.5 − V_{j-1} = 1,
  R = A + V_{j-1} = 1.5; ρ = π_j(1)/π_{j-1}(1) = σ(−2)/0.5 ≈ 0.238 < 1 − ε, so with A > 0 the
  surrogate min(ρA, clip(ρ)A) is ρA and its gradient is −A·ρ·(onehot(1) − π_j). The value is
  clipped around V_old = 0.5 to 0.7, whose error (0.7 − 1.5)² beats (2 − 1.5)²: no value
  gradient, b stays 2."""
  opt = optax.sgd(LR)
  step = learner.make_learner_step(ppo_config(correction="behaviour"), bias_model, opt)
  new, metrics = step(state_at(opt), one_step_segment(action=1))
  pi_j = np.exp([1.0, -1.0]) / np.exp([1.0, -1.0]).sum()
  rho = pi_j[1] / 0.5
  assert rho < 0.8
  np.testing.assert_allclose(metrics["ratio_mean"], rho, rtol=1e-6)
  np.testing.assert_allclose(metrics["approx_kl"], (rho - 1) - np.log(rho), rtol=1e-5)
  np.testing.assert_allclose(metrics["clip_frac"], 1.0)
  grad_l = -1.0 * rho * (np.eye(2)[1] - pi_j)
  np.testing.assert_allclose(new.params["l"], np.asarray(THETA["l"]) - LR * grad_l, atol=1e-6)
  np.testing.assert_allclose(new.params["b"], 2.0, atol=1e-6)
  # `none` takes the same step with everything at θ_j: ρ = 1, A = 1.5 − 2 = −0.5, V_old = 2.
  none, m_none = learner.make_learner_step(ppo_config(correction="none"), bias_model, opt)(
      state_at(opt), one_step_segment(action=1))
  np.testing.assert_allclose(m_none["ratio_mean"], 1.0)
  np.testing.assert_allclose(m_none["approx_kl"], 0.0, atol=1e-7)
  np.testing.assert_allclose(none.params["l"],
                             np.asarray(THETA["l"]) + LR * -0.5 * (np.eye(2)[1] - pi_j), atol=1e-6)
  # The state rolls as for every correction.
  np.testing.assert_array_equal(new.behaviour_params["l"], THETA["l"])


def test_behaviour_targets_against_numpy():
  """`ppo_targets` at θ_{j-1} on an MLP: the old log-probabilities and values are θ_{j-1}'s
  forward pass, GAE a numpy recursion over them; the first minibatch's ratio at θ_j differs from 1
  wherever θ_j's policy differs from θ_{j-1}'s."""
  from hts_jax import algorithms, ppo
  net = networks.make_network("mlp", 2)
  theta_prev = net.init(jax.random.PRNGKey(1), jnp.zeros((1, 4)))
  theta = net.init(jax.random.PRNGKey(2), jnp.zeros((1, 4)))
  seg = random_segment(t=6, b=3)
  cfg = ppo_config(gamma=0.9, gae_lambda=0.8)
  targets = ppo.ppo_targets(cfg, net.apply, theta_prev,
                                   algorithms.complete_segment(seg))
  obs = np.asarray(seg.obs).reshape(-1, 4)
  logits, values = (np.asarray(x, np.float64) for x in net.apply(theta_prev, obs))
  logits, values = logits.reshape(7, 3, 2), values.reshape(7, 3)
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  acts = np.asarray(seg.actions)
  old = np.take_along_axis(logp[:-1], acts[..., None], -1)[..., 0]
  r, d = np.asarray(seg.rewards, np.float64), np.asarray(seg.dones, np.float64)
  adv, last = np.zeros((6, 3)), np.zeros(3)
  for t in reversed(range(6)):
    delta = r[t] + 0.9 * (1 - d[t]) * values[t + 1] - values[t]
    last = delta + 0.9 * 0.8 * (1 - d[t]) * last
    adv[t] = last
  np.testing.assert_allclose(targets.old_log_probs, old, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(targets.old_values, values[:-1], rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(targets.advantages, adv, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(targets.returns, adv + values[:-1], rtol=1e-4, atol=1e-5)
  # The first (only) step's ratio at θ_j, from the learner's metrics, against numpy.
  opt = optax.sgd(LR)
  _, metrics = learner.make_learner_step(ppo_config(correction="behaviour"), net.apply, opt)(
      state_at(opt, theta_prev, theta), seg)
  lj = np.asarray(net.apply(theta, obs)[0], np.float64).reshape(7, 3, 2)
  logp_j = np.take_along_axis((lj - np.log(np.exp(lj).sum(-1, keepdims=True)))[:-1],
                              acts[..., None], -1)[..., 0]
  ratio = np.exp(logp_j - old)
  assert np.abs(ratio - 1).min() > 1e-4
  np.testing.assert_allclose(metrics["ratio_mean"], ratio.mean(), rtol=1e-5)
  np.testing.assert_allclose(metrics["ratio_abs_dev"], np.abs(ratio - 1).mean(), rtol=1e-4)


@pytest.mark.parametrize("minibatch", ["transitions", "time_steps", "envs"])
@pytest.mark.parametrize("correction", ["behaviour", "decoupled"])
def test_lagged_corrections_at_lag_zero_are_synchronous_ppo_bitwise(correction, minibatch):
  """With θ_{j-1} = θ_j (lag 0: sync, or the first update) `behaviour` and `decoupled` (every
  weight exactly 1, the clip's centre sync's) are sync PPO (`none`) bit for bit, state and
  opt_state, over several epochs and minibatches with normalised advantages; at lag 1 they
  differ."""
  net = networks.make_network("mlp", 2)
  theta = net.init(jax.random.PRNGKey(2), jnp.zeros((1, 4)))
  cfg = dict(algo="ppo", ppo_epochs=3, num_minibatches=2, minibatch=minibatch)
  opt = optax.adam(1e-2)
  seg = random_segment()
  steps = [learner.make_learner_step(LearnerConfig(correction=c, **cfg), net.apply, opt,
                                     unroll=False) for c in (correction, "none")]
  runs = [step(state_at(opt, theta, theta), seg) for step in steps]
  for a, b in zip(jax.tree.leaves(runs[0][0]), jax.tree.leaves(runs[1][0])):
    np.testing.assert_array_equal(a, b)
  assert float(runs[0][1]["is_weight"]) == 1.0 and float(runs[0][1]["kl_lag"]) == 0.0
  # ... while at lag 1 the two differ.
  theta_prev = net.init(jax.random.PRNGKey(1), jnp.zeros((1, 4)))
  lagged = [step(state_at(opt, theta_prev, theta), seg)[0].params for step in steps]
  assert any(not np.array_equal(a, b) for a, b in
             zip(jax.tree.leaves(lagged[0]), jax.tree.leaves(lagged[1])))


def test_learning_rate_in_force_is_a_metric():
  cfg = config(learning_rate=0.5, lr_decay_updates=4)
  step = learner.make_learner_step(cfg, bias_model, learner.make_optimizer(cfg))
  state = learner.init_train_state(THETA_PREV, learner.make_optimizer(cfg), jax.random.PRNGKey(0))
  lrs = []
  for _ in range(3):
    state, metrics = step(state, one_step_segment(0))
    lrs.append(float(metrics["learning_rate"]))
  np.testing.assert_allclose(lrs, [0.5, 0.375, 0.25])
