r"""Times the pure hot steps and prints JSON: the learner step (A2C, RMSProp, delayed gradient) and
the keyed policy step, for the paper's Atari CNN and the CartPole MLP; with `--ppo`, also PPO's
learner step (Adam, `--correction`) at the presets' shapes: GFootball's MLP (`gfootball_ppo`: 8
envs x 128 steps, 2 epochs x 8 minibatches), MuJoCo's Gaussian MLP (`mujoco_hts_ppo`: 8 x 256,
10 x 32) and the Atari CNN (8 x 128, 4 x 4).

  python -m experiments.bench_steps [--repeats=20] [--ppo --correction=behaviour]
"""

import json
import time

from absl import app
from absl import flags

flags.DEFINE_integer("repeats", 20, "Timed calls per case (after one compiling call).")
flags.DEFINE_bool("ppo", False, "Also time PPO's learner step at the presets' shapes.")
flags.DEFINE_bool("a2c", True, "Time the A2C learner step and the policy step.")
flags.DEFINE_string("correction", "behaviour", "PPO's --correction (with --ppo).")
FLAGS = flags.FLAGS


def _time(fn, repeats):
  import jax  # pylint: disable=import-outside-toplevel
  jax.block_until_ready(fn())  # compile
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - t0)
  times.sort()
  return {"median_ms": 1e3 * times[len(times) // 2], "min_ms": 1e3 * times[0]}


def main(argv):
  del argv
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp
  import numpy as np
  from hts_jax import learner, networks
  from hts_jax.config import LearnerConfig
  from hts_jax.runtime.policy import make_policy_step
  from hts_jax.types import Segment

  rows = []
  cases = [("cnn", (84, 84, 4), np.uint8, 6, 16, 5), ("mlp", (4,), np.float32, 2, 16, 5)]
  if not FLAGS.a2c:
    cases = []
  for kind, shape, dtype, num_actions, num_envs, alpha in cases:
    net = networks.make_network(kind, num_actions)
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + shape, dtype))
    cfg = LearnerConfig(algo="a2c", unroll_length=alpha)
    opt = learner.make_optimizer(cfg)
    state = learner.init_train_state(params, opt, jax.random.PRNGKey(1))
    step = learner.make_learner_step(cfg, net.apply, opt, unroll=learner.unroll_for(kind))
    rng = np.random.default_rng(0)
    obs = (rng.integers(0, 256, (alpha + 1, num_envs) + shape) if dtype == np.uint8
           else rng.normal(size=(alpha + 1, num_envs) + shape)).astype(dtype)
    seg = Segment(obs=jnp.asarray(obs), actions=jnp.zeros((alpha, num_envs), jnp.int32),
                  rewards=jnp.ones((alpha, num_envs)), dones=jnp.zeros((alpha, num_envs)))
    rows.append({"step": "learner_a2c_rmsprop", "network": kind, "batch": alpha * num_envs,
                 **_time(lambda: step(state, seg)[0].params, FLAGS.repeats)})
    policy = make_policy_step(net.apply, num_envs)
    seeds = np.zeros((num_envs, 2), np.uint32)
    rows.append({"step": "policy", "network": kind, "batch": num_envs,
                 **_time(lambda: policy.run_fixed(params, obs[0], seeds)[0], FLAGS.repeats)})
  if FLAGS.ppo:
    rows += _ppo_rows(FLAGS.correction, FLAGS.repeats)
  print(json.dumps({"device": str(jax.devices()[0]), "rows": rows}, indent=1))


def _ppo_rows(correction, repeats):
  """PPO's learner step (Adam) at three presets' shapes, with a lag (θ_{j-1} != θ_j)."""
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp
  import numpy as np
  from hts_jax import heads, learner, networks
  from hts_jax.config import LearnerConfig
  from hts_jax.types import Segment

  rows = []
  for name, kind, shape, head, envs, alpha, epochs, minibatches in [
      ("gfootball_mlp", "mlp", (115,), heads.Categorical(19), 8, 128, 2, 8),
      ("mujoco_gaussian_mlp", "mlp", (11,), heads.DiagGaussian(3), 8, 256, 10, 32),
      ("atari_cnn", "cnn", (84, 84, 4), heads.Categorical(6), 8, 128, 4, 4)]:
    net = networks.make_network(kind, head)
    dtype = np.uint8 if kind == "cnn" else np.float32
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + shape, dtype))
    cfg = LearnerConfig(algo="ppo", correction=correction, optimizer="adam", learning_rate=3e-4,
                        ppo_epochs=epochs, num_minibatches=minibatches)
    opt = learner.make_optimizer(cfg)
    state = learner.init_train_state(params, opt, jax.random.PRNGKey(1))
    state = state.replace(params=jax.tree.map(lambda x: x * 1.01, params))
    step = learner.make_learner_step(cfg, net.apply, opt, unroll=learner.unroll_for(kind),
                                     head=head)
    rng = np.random.default_rng(0)
    obs = (rng.integers(0, 256, (alpha + 1, envs) + shape) if dtype == np.uint8
           else rng.normal(size=(alpha + 1, envs) + shape)).astype(dtype)
    actions = (rng.normal(size=(alpha, envs) + head.action_shape).astype(np.float32)
               if head.action_shape else rng.integers(0, 6, (alpha, envs)).astype(np.int32))
    seg = Segment(obs=jnp.asarray(obs), actions=jnp.asarray(actions),
                  rewards=jnp.asarray(rng.normal(size=(alpha, envs)), jnp.float32),
                  dones=jnp.asarray(rng.random((alpha, envs)) < 0.02, jnp.float32))
    rows.append({"step": f"learner_ppo_{correction}", "case": name, "batch": alpha * envs,
                 "sgd_steps": epochs * minibatches,
                 **_time(lambda: step(state, seg)[0].params, repeats)})
  return rows


if __name__ == "__main__":
  app.run(main)
