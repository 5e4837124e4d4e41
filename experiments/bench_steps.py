r"""Times the pure hot steps and prints JSON: the learner step (A2C, RMSProp, delayed gradient) and
the keyed policy step, for the paper's Atari CNN and the CartPole MLP; with `--ppo`, also PPO's
learner step (Adam, `--correction`) at the presets' shapes: GFootball's MLP (`gfootball_ppo`: 8
envs x 128 steps, 2 epochs x 8 minibatches), MuJoCo's Gaussian MLP (`mujoco_hts_ppo`: 8 x 256,
10 x 32) and the Atari CNN (8 x 128, 4 x 4).

  python -m experiments.bench_steps [--repeats=20] [--ppo --correction=behaviour]
  python -m experiments.bench_steps --diagnostics_cost --correction=none --repeats=10 \
      --save=results/benchmarks/lag_diagnostics.json

`--diagnostics_cost` times PPO's step at those shapes with and without `--lag_diagnostics` (the
forward pass of θ_{j-1} the lag's diagnostics need), calls interleaved, and checks that both give
the same params bit for bit.
"""

import dataclasses
import json
import time

from absl import app
from absl import flags

flags.DEFINE_integer("repeats", 20, "Timed calls per case (after one compiling call).")
flags.DEFINE_bool("ppo", False, "Also time PPO's learner step at the presets' shapes.")
flags.DEFINE_bool("a2c", True, "Time the A2C learner step and the policy step.")
flags.DEFINE_string("correction", "behaviour", "PPO's --correction (with --ppo).")
flags.DEFINE_bool("diagnostics_cost", False, "Time PPO's step with and without the lag "
                  "diagnostics' forward pass, interleaved (implies --noa2c).")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance here.")
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
  if FLAGS.diagnostics_cost:
    rows = _ppo_rows(FLAGS.correction, FLAGS.repeats, compare_diagnostics=True)
    out = {"device": str(jax.devices()[0]), "correction": FLAGS.correction, "rows": rows}
    if FLAGS.save:
      from hts_jax.results import provenance  # pylint: disable=import-outside-toplevel
      provenance.save(FLAGS.save, dict(out, benchmark="lag_diagnostics"))
    print(json.dumps(out, indent=1))
    return
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


def _interleaved(fns, repeats):
  """Each of `fns` compiled, then timed `repeats` times, the calls interleaved."""
  import jax  # pylint: disable=import-outside-toplevel
  outs = {k: jax.block_until_ready(f()) for k, f in fns.items()}
  times = {k: [] for k in fns}
  for _ in range(repeats):
    for k, f in fns.items():
      t0 = time.perf_counter()
      jax.block_until_ready(f())
      times[k].append(time.perf_counter() - t0)
  return outs, {k: {"median_ms": 1e3 * sorted(v)[len(v) // 2], "min_ms": 1e3 * min(v)}
                for k, v in times.items()}


def _ppo_rows(correction, repeats, compare_diagnostics=False):
  """PPO's learner step (Adam) at three presets' shapes, with a lag (θ_{j-1} != θ_j); with
  `compare_diagnostics`, with and without the lag diagnostics, interleaved."""
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
    steps = {on: learner.make_learner_step(dataclasses.replace(cfg, lag_diagnostics=on),
                                           net.apply, opt, unroll=learner.unroll_for(kind),
                                           head=head) for on in (True, False)}
    step = steps[True]
    rng = np.random.default_rng(0)
    obs = (rng.integers(0, 256, (alpha + 1, envs) + shape) if dtype == np.uint8
           else rng.normal(size=(alpha + 1, envs) + shape)).astype(dtype)
    actions = (rng.normal(size=(alpha, envs) + head.action_shape).astype(np.float32)
               if head.action_shape else rng.integers(0, 6, (alpha, envs)).astype(np.int32))
    seg = Segment(obs=jnp.asarray(obs), actions=jnp.asarray(actions),
                  rewards=jnp.asarray(rng.normal(size=(alpha, envs)), jnp.float32),
                  dones=jnp.asarray(rng.random((alpha, envs)) < 0.02, jnp.float32))
    row = {"step": f"learner_ppo_{correction}", "case": name, "batch": alpha * envs,
           "sgd_steps": epochs * minibatches}
    if compare_diagnostics:
      outs, times = _interleaved({on: (lambda st=st: st(state, seg)[0].params)
                                  for on, st in steps.items()}, repeats)
      same = all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(outs[True]),
                                                       jax.tree.leaves(outs[False])))
      row.update(with_diagnostics=times[True], without=times[False], same_params=same,
                 without_over_with=times[False]["median_ms"] / times[True]["median_ms"])
    else:
      row.update(_time(lambda: step(state, seg)[0].params, repeats))
    rows.append(row)
  return rows


if __name__ == "__main__":
  app.run(main)
