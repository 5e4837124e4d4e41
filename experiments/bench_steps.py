r"""Times the pure hot steps and prints JSON: the learner step (A2C, RMSProp, delayed gradient) and
the keyed policy step, for the paper's Atari CNN and the CartPole MLP.

  python -m experiments.bench_steps [--repeats=20]
"""

import json
import time

from absl import app
from absl import flags

flags.DEFINE_integer("repeats", 20, "Timed calls per case (after one compiling call).")
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
  print(json.dumps({"device": str(jax.devices()[0]), "rows": rows}, indent=1))


if __name__ == "__main__":
  app.run(main)
