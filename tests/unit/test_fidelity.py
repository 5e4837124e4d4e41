"""The algorithms as published: masked (fake) transitions, time-limit bootstrapping, IMPALA's summed
loss and PPO's transition minibatches, checked by exact equivalences and known answers."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from hts_jax import envs, impala, learner, losses, networks, sequences
from hts_jax.envs import blocks
from hts_jax.types import LearnerConfig, Segment, Unroll

OBS = 3


def _net():
  net = networks.make_network("mlp", 2)
  return net, net.init(jax.random.PRNGKey(3), jnp.zeros((1, OBS)))


def _ale_and_envpool_layouts(seed=0):
  """The same 4 real transitions per env (both envs' episodes end after step 1), laid out as the
  ale-py executors store them (T=4, the reset's observation follows the done) and as envpool does
  (T=5: the done step returns the episode's last observation, then a fake step with an ignored
  action and reward 0 leads to the reset's observation; `valid` 0 there)."""
  rng = np.random.default_rng(seed)
  b = 2
  obs = rng.normal(size=(5, b, OBS)).astype(np.float32)
  final = rng.normal(size=(1, b, OBS)).astype(np.float32)
  actions = rng.integers(0, 2, (4, b)).astype(np.int32)
  rewards = rng.normal(size=(4, b)).astype(np.float32)
  dones = np.zeros((4, b), np.float32)
  dones[1] = 1.0
  ale = Segment(obs=obs, actions=actions, rewards=rewards, dones=dones,
                valid=np.ones((4, b), np.float32))
  ins = lambda x, v: np.concatenate([x[:2], v, x[2:]])
  pool = Segment(obs=ins(obs, final), actions=ins(actions, 1 - actions[1:2]),
                 rewards=ins(rewards, np.zeros((1, b), np.float32)),
                 dones=ins(dones, np.zeros((1, b), np.float32)),
                 valid=ins(np.ones((4, b), np.float32), np.zeros((1, b), np.float32)))
  return ale, pool


def _close_trees(a, b, atol=1e-6):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=atol)


@pytest.mark.parametrize("algo", ["a2c", "ppo", pytest.param("vtrace", marks=pytest.mark.slow)])
def test_masked_fake_step_learns_as_if_absent(algo):
  """envpool's layout with its fake step masked gives the update of the ale-py layout (bug 1);
  unmasked, the fake step changes it."""
  net, params = _net()
  ale, pool = _ale_and_envpool_layouts()
  opt = optax.sgd(0.5)

  def update(seg, masked=True):
    if not masked:
      seg = seg.replace(valid=None)
    t = seg.actions.shape[0]
    if algo == "vtrace":
      logp = losses.log_prob(net.apply(params, seg.obs[:-1].reshape(-1, OBS))[0],
                             seg.actions.reshape(-1)).reshape(seg.actions.shape)
      step = impala.build_vtrace_update(LearnerConfig(), net.apply, opt)
      state = learner.init_train_state(params, opt, jax.random.PRNGKey(0))
      return step(state, Unroll(segment=seg, behaviour_log_probs=logp))[0].params
    cfg = LearnerConfig(algo=algo, unroll_length=t, ppo_epochs=1, num_minibatches=1,
                        correction="none")
    state = learner.init_train_state(params, opt, jax.random.PRNGKey(0))
    return learner.make_learner_step(cfg, net.apply, opt)(state, seg)[0].params

  want = update(ale)
  _close_trees(update(pool), want, atol=2e-6)
  moved = max(float(jnp.abs(x - y).max()) for x, y in
              zip(jax.tree.leaves(update(pool, masked=False)), jax.tree.leaves(want)))
  assert moved > 1e-3


def _vstep_segments(num_segments, horizon, final_obs=True, seed=0):
  """Segments of `horizon` steps from 4 real vstep envs (episodes of `horizon` steps, cut by its
  time limit, so each segment is one whole episode) under a uniform random policy, recorded by
  the executors' env block (which writes `truncated` and `final_obs`)."""
  num_envs, kw = 4, {"dist": "constant", "mean_s": 0.0, "obs_dim": 4, "num_actions": 4,
                     "episode_length": horizon}
  replicas = [envs.make_env("vstep", kw) for _ in range(num_envs)]
  first = [env.reset(seed=seed * 100 + i)[0] for i, env in enumerate(replicas)]
  block = blocks.make_block(range(num_envs), replicas, first, 1, {"env_id": None})
  rng = np.random.default_rng(seed)
  out = []
  for _ in range(num_segments):
    obs = np.zeros((horizon + 1, num_envs, 4), np.float32)
    acts = rng.integers(0, 4, (horizon, num_envs)).astype(np.int32)
    rew, done, cut = (np.zeros((horizon, num_envs), np.float32) for _ in range(3))
    fin = np.zeros((horizon, num_envs, 4), np.float32)
    block.observations(obs[0])
    for t in range(horizon):
      block.step(acts[t], rew[t], done[t], cut[t], obs[t + 1], fin[t], [])
    out.append(Segment(obs=obs, actions=acts, rewards=rew, dones=done, truncated=cut,
                       final_obs=fin if final_obs else None))
  return out


@pytest.mark.parametrize("bootstrap", [False, True])
def test_truncation_is_terminal_or_bootstrapped_to_the_known_value(bootstrap):
  """vstep under a uniform policy pays 1/4 per step in expectation, whatever the observation
  (i.i.d.), and its time limit cuts episodes at H = 8 steps. With γ = 0.8, a learned V(s) is
  - the cut treated as terminal (the paper's behaviour): the mean over the episode's positions of
    (1/4)(1 - γ^(H-k)) / (1 - γ), k = 0..H-1;
  - bootstrapped from V(final obs) (`bootstrap_truncation`): the infinite-horizon (1/4) / (1 - γ)."""
  horizon, gamma = 8, 0.8
  segments = _vstep_segments(60, horizon)
  assert all(float(s.truncated[-1].min()) == 1.0 and float(s.truncated[:-1].max()) == 0.0
             for s in segments)
  net = networks.make_network("mlp", 4)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
  cfg = LearnerConfig(algo="a2c", unroll_length=horizon, gamma=gamma, entropy_coef=0.0,
                      value_coef=1.0, correction="none", bootstrap_truncation=bootstrap,
                      optimizer="adam", learning_rate=1e-3, max_grad_norm=10.0)
  opt = learner.make_optimizer(cfg)
  step = learner.make_learner_step(cfg, net.apply, opt)
  state = learner.init_train_state(params, opt, jax.random.PRNGKey(0))
  for _ in range(3):
    for seg in segments:
      state, _ = step(state, seg)
  probe = np.random.default_rng(5).normal(size=(2000, 4)).astype(np.float32)
  value = float(jnp.mean(net.apply(state.params, probe)[1]))
  k = np.arange(horizon)
  want = (0.25 / (1 - gamma) if bootstrap
          else float(np.mean(0.25 * (1 - gamma ** (horizon - k)) / (1 - gamma))))
  other = (float(np.mean(0.25 * (1 - gamma ** (horizon - k)) / (1 - gamma))) if bootstrap
           else 0.25 / (1 - gamma))
  print(f"bootstrap={bootstrap}: learned mean V {value:.4f}, known answer {want:.4f}, "
        f"the other treatment's {other:.4f}")
  assert abs(value - want) < 0.08 * want
  assert abs(value - other) > 0.25 * abs(want - other)


def test_bootstrap_truncation_needs_final_obs():
  seg = _vstep_segments(1, 4, final_obs=False)[0]
  net = networks.make_network("mlp", 4)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
  cfg = LearnerConfig(unroll_length=4, bootstrap_truncation=True)
  opt = learner.make_optimizer(cfg)
  with pytest.raises(ValueError, match="final_obs"):
    learner.make_learner_step(cfg, net.apply, opt)(
        learner.init_train_state(params, opt, jax.random.PRNGKey(0)), seg)


def test_sum_reduction_is_impalas_summed_loss():
  """`reduction="sum"` is the per-sample mean times the number of samples (IMPALA sums over
  time and batch), for every term; masked-out samples add nothing."""
  rng = np.random.default_rng(0)
  t, b = 5, 3
  args = (jnp.asarray(rng.normal(size=(t, b, 2)), jnp.float32),
          jnp.asarray(rng.normal(size=(t, b)), jnp.float32),
          jnp.asarray(rng.normal(size=(b,)), jnp.float32),
          jnp.asarray(rng.integers(0, 2, (t, b)), jnp.int32),
          jnp.asarray(rng.normal(size=(t, b)) - 1.0, jnp.float32),
          jnp.asarray(rng.normal(size=(t, b)), jnp.float32),
          jnp.zeros((t, b), jnp.float32), 0.99, 0.5, 0.01)
  _, mean = losses.vtrace_loss(*args)
  _, total = losses.vtrace_loss(*args, reduction="sum")
  for k in ("pg_loss", "value_loss", "entropy", "loss"):
    np.testing.assert_allclose(total[k], mean[k] * t * b, rtol=1e-5)
  mask = jnp.ones((t, b)).at[2].set(0.0)
  _, masked_sum = losses.vtrace_loss(*args, mask=mask, reduction="sum")
  _, masked_mean = losses.vtrace_loss(*args, mask=mask)
  np.testing.assert_allclose(masked_sum["value_loss"], masked_mean["value_loss"] * (t - 1) * b,
                             rtol=1e-5)


def test_ppo_transition_minibatches_draw_every_env_at_its_own_steps():
  t_len, b = 8, 6
  key = jax.random.PRNGKey(0)
  cfg = LearnerConfig(algo="ppo", ppo_epochs=2, num_minibatches=4)
  steps = np.asarray(sequences.minibatch_steps(key, cfg, t_len, b, 0))
  assert steps.shape == (8, 2, b)
  for epoch in range(2):  # every epoch covers each env's steps once
    block = steps[epoch * 4:(epoch + 1) * 4]
    for e in range(b):
      assert sorted(block[:, :, e].ravel().tolist()) == list(range(t_len))
  assert any(len(set(steps[0, :, e].tolist()) ^ set(steps[0, :, 0].tolist())) for e in range(b))
  # keyed by the global env id: a shard (offset 3) sees the same columns as the whole batch
  shard = np.asarray(sequences.minibatch_steps(key, cfg, t_len, 3, 3))
  np.testing.assert_array_equal(shard, steps[:, :, 3:])
  old = np.asarray(sequences.minibatch_steps(key, LearnerConfig(
      algo="ppo", ppo_epochs=2, num_minibatches=4, minibatch="time_steps"), t_len, b, 0))
  assert (old == old[:, :, :1]).all()  # all envs of the chosen steps
