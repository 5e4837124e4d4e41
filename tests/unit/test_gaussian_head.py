"""Continuous control alone: the Gaussian head (keyed per-row sampling, log-probabilities and
entropies against closed forms), the observation and reward normalisers, MuJoCo envs (action
clipping, pickled simulator state), the PPO presets and the modes that refuse the normalisers."""

import pickle

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from hts_jax import envs, heads, losses, networks, normalization
from hts_jax.acting import build_policy_core
from hts_jax.config import ConfigError, LearnerConfig
from hts_jax.presets import HTS_PPO_CORRECTION, PRESETS
from tests.support.runs import small_config


GAUSS = heads.DiagGaussian(3)


def _out(n, seed=0):
  rng = np.random.default_rng(seed)
  mean = rng.normal(size=(n, 3)).astype(np.float32)
  log_std = rng.normal(scale=0.5, size=(n, 3)).astype(np.float32)
  return jnp.asarray(np.concatenate([mean, log_std], -1)), mean, np.exp(log_std)


def test_gaussian_log_prob_and_entropy_match_the_closed_forms():
  out, mean, std = _out(5)
  actions = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
  want = stats.norm.logpdf(actions, mean, std).sum(-1)
  np.testing.assert_allclose(GAUSS.log_prob(out, jnp.asarray(actions)), want, rtol=1e-5)
  np.testing.assert_allclose(GAUSS.entropy(out), stats.norm.entropy(mean, std).sum(-1), rtol=1e-5)
  np.testing.assert_array_equal(GAUSS.mode(out), mean)
  # Policy-gradient and entropy terms are the references' means over samples.
  adv, w = jnp.arange(5.0), jnp.ones(5)
  np.testing.assert_allclose(GAUSS.pg_loss(out, jnp.asarray(actions), adv, w),
                             -np.mean(want * np.arange(5.0)), rtol=1e-5)


def test_gaussian_samples_are_keyed_per_row_and_batch_invariant():
  """A row's action depends on its own seed and outputs only: the same in any batch position."""
  net = networks.make_network("mlp", GAUSS)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))
  core = jax.jit(build_policy_core(net.apply, head=GAUSS))
  obs = np.random.default_rng(2).normal(size=(8, 4)).astype(np.float32)
  seeds = np.stack([np.arange(8) + 100, np.full(8, 7)], -1).astype(np.uint32)
  actions, extras = core(params, obs, seeds)
  assert actions.shape == (8, 3) and actions.dtype == jnp.float32
  perm = np.random.default_rng(3).permutation(8)
  actions_p, _ = core(params, obs[perm], seeds[perm])
  np.testing.assert_array_equal(np.asarray(actions_p), np.asarray(actions)[perm])
  # Another step of the same streams samples another action; log-probs are the head's.
  other, _ = core(params, obs, seeds + np.array([0, 1], np.uint32))
  assert not np.array_equal(np.asarray(other), np.asarray(actions))
  out, _ = net.apply(params, obs)
  np.testing.assert_array_equal(extras["log_prob"], GAUSS.log_prob(out, actions))
  # The initial policy: mean near 0 (policy init 0.01), std exp(0) = 1.
  np.testing.assert_allclose(np.std(np.asarray(actions)), 1.0, atol=0.4)


def test_losses_take_the_gaussian_head():
  out, _, _ = _out(12)
  out = out.reshape(3, 4, 6)
  actions = jnp.asarray(np.random.default_rng(4).normal(size=(3, 4, 3)), jnp.float32)
  values, returns = jnp.zeros((3, 4)), jnp.ones((3, 4))
  logp = GAUSS.log_prob(out, actions)
  loss, m = losses.ppo_loss(out, values, actions, logp, values, returns, returns, 0.2, 0.5, 0.0,
                            head=GAUSS)
  assert float(m["clip_frac"]) == 0.0 and np.isfinite(float(loss))
  np.testing.assert_allclose(m["pg_loss"], -1.0, rtol=1e-6)  # ratio 1, advantage 1
  with pytest.raises(AssertionError):  # a categorical loss on Gaussian actions is refused
    losses.a2c_loss(out, values, actions, returns, 0.5, 0.0)


def test_normaliser_keeps_the_exact_moments_of_every_masked_in_sample():
  rng = np.random.default_rng(5)
  s = normalization.init((2,))
  seen = []
  for _ in range(4):
    x = rng.normal(3.0, 2.0, size=(6, 5, 2)).astype(np.float32)
    mask = (rng.random((6, 5)) > 0.2).astype(np.float32)
    s = normalization.update(s, jnp.asarray(x), jnp.asarray(mask))
    seen.append(x[mask > 0])
  allx = np.concatenate(seen)
  assert float(s["count"]) == len(allx)
  np.testing.assert_allclose(s["mean"], allx.mean(0), rtol=1e-5)
  np.testing.assert_allclose(normalization.variance(s), allx.var(0), rtol=1e-4)
  z = normalization.normalize(s, jnp.asarray(allx), clip=10.0)
  np.testing.assert_allclose(np.mean(np.asarray(z), 0), 0.0, atol=1e-4)
  # Before any data the network sees its input unchanged; large values clip at ±clip.
  fresh = normalization.normalize(normalization.init((2,)), jnp.array([[0.5, 40.0]]), clip=10.0)
  np.testing.assert_allclose(fresh, [[0.5, 10.0]], rtol=1e-6)
  # uint8 frames: the statistics are of what the network sees, the frames scaled to [0, 1].
  net = networks.make_network("mlp", 2, normalize_obs=True)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 3), jnp.uint8))
  frames = jnp.full((2, 2, 3), 255, jnp.uint8)
  stats = normalization.update_params(params, frames, jnp.ones((2, 2)))["obs_norm"]
  np.testing.assert_allclose(stats["_Input_0"]["mean"], 1.0)


def test_reward_scaling_follows_the_discounted_return_of_each_env_across_segments():
  """Golden values from a plain numpy loop: acc_t = γ acc_{t-1} (1 - done_{t-1}) + r_t per env,
  carried from segment to segment; the variance of every acc seen so far scales the rewards."""
  rng = np.random.default_rng(6)
  gamma, stats, acc, seen = 0.9, normalization.init_returns(3), np.zeros(3), []
  for _ in range(3):
    r = rng.normal(2.0, 3.0, size=(5, 3)).astype(np.float32)
    d = (rng.random((5, 3)) < 0.25).astype(np.float32)
    m = np.ones((5, 3), np.float32)
    got, stats = normalization.scale_rewards(stats, jnp.asarray(r), jnp.asarray(d),
                                             jnp.asarray(m), gamma, clip=10.0)
    for t in range(5):
      acc = gamma * acc + r[t]
      seen.extend(acc.tolist())
      acc = acc * (1 - d[t])
    want = np.clip(r / np.sqrt(np.var(seen) + normalization.EPS), -10, 10)
    np.testing.assert_allclose(got, want, rtol=1e-4)
    np.testing.assert_allclose(stats["acc"], acc, rtol=1e-5)
  assert float(stats["count"]) == len(seen) == 45


def test_mujoco_envs_are_continuous_and_clip_their_actions_at_the_env():
  info = envs.env_info("InvertedPendulum-v5", {})
  assert info.continuous and info.action_shape == (1,) and info.action_dtype == "float32"
  assert isinstance(heads.for_env(info), heads.DiagGaussian)
  env = envs.make_env("InvertedPendulum-v5", {})
  env.reset(seed=0)
  env.step([100.0])  # beyond the bound of 3: clipped, not refused
  assert isinstance(env.unwrapped.action_space, gym.spaces.Box)
  np.testing.assert_allclose(env.unwrapped.data.ctrl, [3.0])
  env.close()
  with pytest.raises(ConfigError, match="Discrete and 1-D Box are supported"):
    envs.make_env("tests.support.fault_envs:MatrixActionCartPole-v0", {})


def test_mujoco_envs_pickle_with_their_simulator_state():
  """Checkpoints pickle env replicas: a MuJoCo env comes back mid-episode, bit for bit."""
  env = envs.make_env("HalfCheetah-v5", {})
  env.reset(seed=0)
  for _ in range(5):
    env.step(np.full(6, 0.3))
  copy = pickle.loads(pickle.dumps(env))
  for i in range(20):
    a, b = env.step(np.sin(np.arange(6.0) + i)), copy.step(np.sin(np.arange(6.0) + i))
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
  np.testing.assert_array_equal(env.reset()[0], copy.reset()[0])  # the same reset noise


def test_modes_without_a_fixed_env_order_refuse_the_normalisers_in_one_line(tmp_path):
  with pytest.raises(ConfigError, match="^--mode=gala: --normalize_obs and --normalize_rewards"):
    small_config(tmp_path, "g", env="InvertedPendulum-v5", num_envs=4, mode="gala",
                 gala_agents=2, learner=LearnerConfig(algo="ppo", normalize_obs=True,
                                                      normalize_rewards=True))
  with pytest.raises(ConfigError, match="^--mode=async: --normalize_rewards is not available"):
    small_config(tmp_path, "a", env="InvertedPendulum-v5", num_envs=4, mode="async",
                 num_actors=2, learner=LearnerConfig(algo="a2c", normalize_rewards=True))


def test_mujoco_presets_hold_the_ppo_reference_values():
  p = PRESETS["mujoco_ppo"]
  assert p["num_envs"] * p["alpha"] == 2048 and p["ppo_epochs"] == 10
  assert p["num_minibatches"] == 32 and p["lr"] == 3e-4 and p["clip_eps"] == 0.2
  h = PRESETS["mujoco_hts_ppo"]
  assert h["num_envs"] * h["alpha"] == 2048 and h["num_minibatches"] == 32
  assert h["correction"] == HTS_PPO_CORRECTION  # the corrections study's pick (presets.py)
  layout = ("num_envs", "num_executors", "alpha", "actor_batch", "actor_wait", "correction")
  assert {k: v for k, v in h.items() if k not in layout} == {
      k: v for k, v in p.items() if k not in layout}
