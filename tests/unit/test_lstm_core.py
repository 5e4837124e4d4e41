"""The LSTM core alone: its unroll and resets, the actors' per-row state against the learner's
unroll from the stored initial state, the delayed gradient with a core, PPO's whole-sequence
minibatches, CartPole without velocities."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hts_jax import envs, heads, learner, losses, networks, sequences
from hts_jax.acting import build_policy_core
from hts_jax.algorithms import complete_segment
from hts_jax.choices import ALGORITHMS
from hts_jax.config import ConfigError, LearnerConfig, RunConfig
from hts_jax.runtime import storage
from hts_jax.runtime.learner_worker import segment_of
from hts_jax.runtime.policy import make_policy_step
from hts_jax.types import Segment


H = 8  # LSTM units in the small tests: state [c, h] of 2H floats per row


def _net(kind="mlp", head=heads.Categorical(3), obs_shape=(2,), dtype=jnp.float32):
  net = networks.make_network(kind, head, core="lstm", core_size=H)
  return net, networks.init_params(net, jax.random.PRNGKey(0), obs_shape, dtype)


def _segment(t_len=8, b=4, seed=0):
  rng = np.random.default_rng(seed)
  dones = (rng.random((t_len, b)) < 0.15).astype(np.float32)
  return Segment(
      obs=jnp.asarray(rng.normal(size=(t_len + 1, b, 2)), jnp.float32),
      actions=jnp.asarray(rng.integers(0, 3, (t_len, b)), jnp.int32),
      rewards=jnp.asarray(rng.normal(size=(t_len, b)), jnp.float32), dones=jnp.asarray(dones),
      core=jnp.asarray(rng.normal(size=(1, b, 2 * H)) * 0.1, jnp.float32))


def test_lstm_unrolls_as_its_steps_and_restarts_from_zeros_at_resets():
  net, params = _net()
  t_len, b = 7, 3
  obs = jax.random.normal(jax.random.PRNGKey(1), (t_len, b, 2))
  state = jax.random.normal(jax.random.PRNGKey(2), (b, 2 * H))
  resets = jnp.zeros((t_len, b)).at[4, 1].set(1.0)
  logits, values, states = net.apply(params, obs, state, resets)
  assert (logits.shape, values.shape, states.shape) == ((t_len, b, 3), (t_len, b), (t_len, b, 2 * H))
  cur = state
  for t in range(t_len):  # one step at a time (the actors' T = 1 calls)
    l1, v1, s1 = net.apply(params, obs[t:t + 1], cur, resets[t:t + 1])
    np.testing.assert_allclose(l1[0], logits[t], atol=1e-6)
    np.testing.assert_allclose(s1[0], states[t], atol=1e-6)
    cur = s1[0]
  # At a reset the row continues as if it started there from zeros; the other rows do not care.
  fresh = net.apply(params, obs[4:, 1:2], jnp.zeros((1, 2 * H)), jnp.zeros((3, 1)))
  np.testing.assert_allclose(fresh[0][:, 0], logits[4:, 1], atol=1e-6)
  assert not np.allclose(net.apply(params, obs, state, jnp.zeros((t_len, b)))[0][5:, 1],
                         logits[5:, 1])


def test_feed_forward_networks_keep_their_initial_params():
  """The refactor that shares the torsos with the recurrent network leaves every feed-forward
  network's variables as they were: the same names, and the same values (each layer's sum of
  |w| and |b| at seed 0, taken from the code before that refactor, d9a85df^; a golden sum rather
  than a sha256, which float rounding across CPU kinds could move)."""
  def l1(layer):
    return sum(np.abs(np.asarray(x, np.float64)).sum() for x in jax.tree_util.tree_leaves(layer))
  net = networks.make_network("cnn", 6)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 84, 84, 4), jnp.uint8))["params"]
  golden = {"Conv_0": 579.809, "Conv_1": 1636.0248, "Conv_2": 1732.0841, "Dense_0": 32348.0884,
            "Dense_1": 1.0889, "Dense_2": 18.2224}
  assert sorted(params) == sorted(golden)
  assert {k: l1(v) for k, v in params.items()} == pytest.approx(golden, rel=1e-5, abs=1e-4)
  mlp = networks.make_network("mlp", 2).init(jax.random.PRNGKey(0), jnp.zeros((1, 4)))["params"]
  golden = {"pi_0": 36.6299, "pi_1": 581.2638, "policy": 0.1274, "v_0": 35.4776,
            "v_1": 581.7754, "value": 6.8997}
  assert sorted(mlp) == sorted(golden)
  assert {k: l1(v) for k, v in mlp.items()} == pytest.approx(golden, rel=1e-5, abs=1e-4)
  assert networks.state_size(net) == 0 and networks.state_size(_net()[0]) == 2 * H


def test_recurrent_policy_rows_do_not_depend_on_their_neighbours():
  net, params = _net()
  step = make_policy_step(net.apply, 8, recurrent=True)
  rng = np.random.default_rng(0)
  obs = rng.normal(size=(8, 2)).astype(np.float32)
  state = rng.normal(size=(8, 2 * H)).astype(np.float32)
  seeds = np.stack([np.arange(8), np.full(8, 5)], 1).astype(np.uint32)
  actions, after = step.run_recurrent(params, obs, seeds, state)
  perm = rng.permutation(8)
  other = rng.normal(size=(8, 2)).astype(np.float32)
  other[perm[:3]] = obs[:3]  # rows 0..2 elsewhere, among other neighbours
  other_state = rng.normal(size=(8, 2 * H)).astype(np.float32)
  other_state[perm[:3]] = state[:3]
  other_seeds = np.stack([np.arange(8) + 100, np.full(8, 5)], 1).astype(np.uint32)
  other_seeds[perm[:3]] = seeds[:3]
  a2, s2 = step.run_recurrent(params, other, other_seeds, other_state)
  np.testing.assert_array_equal(a2[perm[:3]], actions[:3])
  np.testing.assert_array_equal(s2[perm[:3]], after[:3])
  # With extras (V-trace's actors) the same actions and states.
  a3, extras = step.run_fixed(params, obs, seeds, state)
  np.testing.assert_array_equal(a3, actions)
  np.testing.assert_array_equal(extras["core"], after)


def test_the_learner_unroll_retraces_the_actors_states_through_episode_ends():
  """Actors step each row from its stored state, the executors zero a row's state after its
  episode ends (and after envpool's reset step, `valid` 0): the learner's unroll from the
  segment's first state, with `core_resets`, gives the actors' log-probs and states."""
  net, params = _net()
  t_len, b = 9, 4
  spec = storage.StorageSpec(t_len, b, (2,), "float32", core_size=2 * H)
  st = storage.zeros(spec)
  rng = np.random.default_rng(3)
  st.obs[...] = rng.normal(size=st.obs.shape)
  st.valid[...] = 1.0
  st.dones[2, 0] = st.dones[5, 0] = st.dones[6, 2] = 1.0
  st.valid[7, 2] = 0.0  # envpool: the step after an episode end is the reset step
  st.core[0] = rng.normal(size=(b, 2 * H))
  core = jax.jit(build_policy_core(net.apply, recurrent=True))
  logp = np.zeros((t_len, b), np.float32)
  for t in range(t_len):
    seeds = np.stack([np.arange(b), np.full(b, t)], 1).astype(np.uint32)
    actions, extras = core(params, st.obs[t], seeds, st.core[t])
    st.actions[t], logp[t] = actions, extras["log_prob"]
    st.core[t + 1] = extras["core"]
    storage.reset_core(st, t, slice(0, b))
  assert np.all(st.core[3, 0] == 0) and np.all(st.core[8, 2] == 0) and np.any(st.core[8, 0] != 0)
  seg = complete_segment(jax.tree.map(jnp.asarray, segment_of(st)))
  assert seg.core.shape == (1, b, 2 * H)
  logits, _, states = sequences.apply_tb(net.apply, params, seg.obs,
                                         sequences.core_input(seg, t_len + 1))
  np.testing.assert_allclose(losses.log_prob(logits[:-1], seg.actions), logp, atol=1e-5)
  resets = np.asarray(sequences.core_resets(seg))
  np.testing.assert_allclose(np.where(resets[1:, :, None] > 0, 0.0, states[:-1]),
                             st.core[1:], atol=1e-5)


@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_delayed_gradient_with_a_core_is_the_update_at_the_behaviour_params(algo):
  """Eq. 6 with a recurrent core: the update computed at θ_{j-1} (from the segment's stored
  states) is added to θ_j."""
  net, params = _net()
  cfg = LearnerConfig(algo=algo, unroll_length=4, minibatch="envs", num_minibatches=2,
                      ppo_epochs=2, optimizer="adam", learning_rate=1e-3)
  opt = learner.make_optimizer(cfg)
  theta_j = jax.tree.map(lambda x: x + 0.01, params)
  state = learner.init_train_state(params, opt, jax.random.PRNGKey(4)).replace(params=theta_j)
  seg = _segment()
  new, metrics = jax.jit(learner.build_learner_update(cfg, net.apply, opt, unroll=False))(state,
                                                                                          seg)
  _, _, summed, _ = ALGORITHMS[algo].build()(cfg, net.apply, opt, unroll=False)(
      params, state.opt_state, complete_segment(seg), jax.random.fold_in(state.key, 0),
      theta_j, params)
  expected = jax.tree.map(jnp.add, theta_j, summed)
  jax.tree.map(lambda a, e: np.testing.assert_allclose(a, e, atol=1e-6), new.params, expected)
  assert bool(metrics["params_finite"])
  # The stored initial state matters: another one gives another update.
  other, _ = jax.jit(learner.build_learner_update(cfg, net.apply, opt, unroll=False))(
      state, seg.replace(core=seg.core + 1.0))
  assert not np.allclose(other.params["params"]["policy"]["kernel"],
                         new.params["params"]["policy"]["kernel"])


def test_env_minibatches_split_the_envs_into_whole_sequences_each_epoch():
  cfg = LearnerConfig(algo="ppo", minibatch="envs", num_minibatches=4, ppo_epochs=3)
  cols = np.asarray(sequences.env_minibatches(jax.random.PRNGKey(0), cfg, 8))
  assert cols.shape == (12, 2)
  for e in range(3):
    assert sorted(cols[4 * e:4 * e + 4].ravel()) == list(range(8))
  assert not np.array_equal(cols[:4], cols[4:8])  # reshuffled each epoch


def test_recurrent_ppo_needs_whole_sequence_minibatches_in_one_line():
  with pytest.raises(ConfigError, match="^--core=lstm with PPO needs --minibatch=envs"):
    RunConfig.make(core="lstm", alpha=16, learner=LearnerConfig(algo="ppo"))
  with pytest.raises(ConfigError, match=r"^--minibatch=envs: num_envs per learner device \(6\)"):
    RunConfig.make(num_envs=6, num_executors=2, alpha=16,
                   learner=LearnerConfig(algo="ppo", minibatch="envs"))
  with pytest.raises(ConfigError, match=r"^--minibatch=envs: num_envs per agent \(4\)"):
    RunConfig.make(mode="gala", gala_agents=2, num_envs=8, num_executors=2, alpha=8,
                   learner=LearnerConfig(algo="ppo", minibatch="envs", num_minibatches=8))
  with pytest.raises(ConfigError, match="^core must be one of"):
    RunConfig.make(core="gru")


def test_a_resume_whose_envs_restart_restarts_their_states_too():
  """A checkpoint's storage carries the rows' states; where the envs were not saved (envpool,
  unpicklable envs) they restart from a reset, and the next segment starts from zero states,
  while the stored segment keeps the states it was collected with (the learner still needs
  them)."""
  spec = storage.StorageSpec(4, 3, (2,), "float32", core_size=6)
  saved = {name: np.ones(shape, dtype) for name, shape, dtype in spec.fields()}
  for restart in (False, True):
    st = storage.Storages(spec, create=True)
    try:
      st.load(7, saved, envs_restart=restart)
      core = st.filling(7).core
      assert np.all(core[:-1] == 1) and np.all(core[-1] == (0 if restart else 1))
      storage.carry_core(st.filling(7), st.filling(8), slice(0, 3))
      assert np.all(st.filling(8).core[0] == (0 if restart else 1))
    finally:
      st.close()


def test_cartpole_without_velocities_shows_position_and_angle_only():
  env = envs.make_env("hts_jax/CartPoleNoVel-v1", {})
  full = gym.make("CartPole-v1")
  obs, _ = env.reset(seed=3)
  ref, _ = full.reset(seed=3)
  assert env.observation_space.shape == (2,)
  np.testing.assert_array_equal(obs, ref[[0, 2]])
  for _ in range(5):
    obs, r, term, trunc, _ = env.step(1)
    ref, r2, term2, trunc2, _ = full.step(1)
    np.testing.assert_array_equal(obs, ref[[0, 2]])
    assert (r, term, trunc) == (r2, term2, trunc2)
  assert envs.env_info("hts_jax/CartPoleNoVel-v1", {}).obs_shape == (2,)


class _Lives(gym.Env):
  """Two lives: the first is lost at step 3, the game ends at step 6 (an Atari-like info)."""
  observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
  action_space = gym.spaces.Discrete(3)

  def reset(self, seed=None, options=None):
    super().reset(seed=seed)
    self.t = 0
    return np.full(2, 0.5, np.float32), {"lives": 2}

  def step(self, action):
    self.t += 1
    return (np.full(2, 0.1 * self.t, np.float32), 1.0, self.t >= 6, False,
            {"lives": 1 if self.t >= 3 else 2})


gym.register("hts_test/Lives-v0", entry_point=_Lives)


def test_evaluation_restarts_the_state_at_a_lost_life_as_training_does():
  """Training ends an Atari episode at each lost life (the executors zero the row's state
  there); an evaluation plays the whole game and zeroes the state at the same points."""
  # pylint: disable-next=import-outside-toplevel
  from hts_jax.runtime.outputs.evaluation import Evaluator
  net, params = _net()
  ev = Evaluator("hts_test/Lives-v0", {}, net.apply, 2, seed=0, core_size=2 * H)
  seen = []
  step = ev.policy.run_recurrent
  ev.policy.run_recurrent = lambda p, o, s, c: (seen.append(np.array(c)), step(p, o, s, c))[1]
  try:
    assert ev.evaluate_now(params) == [6.0, 6.0]
  finally:
    ev.close()
  norms = [float(np.abs(c[:2]).sum()) for c in seen]  # the two episodes' rows, steps 0..5
  assert norms[0] == 0 and norms[1] > 0 and norms[2] > 0 and norms[3] == 0 and norms[4] > 0
