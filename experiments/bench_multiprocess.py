r"""One process against two (`jax.distributed`) on this machine, and the cost of one cross-process
gradient all-reduce for the paper's CNN. Prints JSON.

  python -m experiments.bench_multiprocess --repeats=2

- SPS of HTS-A2C on CartPole with 16 envs: one process (2 executors, all cores) against two
  processes (8 envs and 1 executor each, each process pinned to its own core), interleaved
  `--repeats` times; medians and their ratio.
- The all-reduce: two processes (one CPU device each, gloo) `psum` a pytree shaped like the
  Nature-CNN's parameters (Atari, 6 actions); median seconds over 20 calls after a warm-up.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import app
from absl import flags

from hts_jax.runs import launch

flags.DEFINE_integer("repeats", 2, "Interleaved repetitions of each SPS configuration.")
flags.DEFINE_integer("total_steps", 200_000, "Env steps per SPS run.")
flags.DEFINE_bool("worker", False, "Internal: one process of the all-reduce measurement.")
flags.DEFINE_integer("num_processes", 1, "Internal (worker).")
flags.DEFINE_integer("process_id", 0, "Internal (worker).")
flags.DEFINE_string("coordinator_address", "", "Internal (worker).")
FLAGS = flags.FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = ["--env=CartPole-v1", "--num_envs=16", "--alpha=5", "--seed=0", "--log_every_s=1000"]


def _launched_sps(cmd, logdir):
  """SPS of an `hts-launch` run (several processes; one-process runs go through
  `hts_jax.runs.launch`)."""
  proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
  if proc.returncode != 0:
    raise RuntimeError(proc.stderr.strip().splitlines()[-1])
  with open(os.path.join(logdir, "summary.json")) as f:
    return json.load(f)["sps"]


def _allreduce_worker():
  from hts_jax.config import RunConfig  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime import distributed  # pylint: disable=import-outside-toplevel
  distributed.initialize(RunConfig.make(num_processes=FLAGS.num_processes, num_envs=2,
                                   num_executors=1, process_id=FLAGS.process_id,
                                   coordinator_address=FLAGS.coordinator_address))
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # pylint: disable=import-outside-toplevel
  from hts_jax import networks  # pylint: disable=import-outside-toplevel
  net = networks.make_network("cnn", 6)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 84, 84, 4), jnp.uint8))
  mesh = Mesh(np.asarray(jax.devices()), ("data",))
  sharding = NamedSharding(mesh, P("data"))
  # One gradient per process, stacked on a leading axis split over the processes.
  grads = jax.tree.map(lambda x: jax.make_array_from_process_local_data(
      sharding, np.asarray(x)[None]), params)
  mean = jax.jit(lambda g: jax.tree.map(lambda x: x.mean(axis=0), g),
                 out_shardings=NamedSharding(mesh, P()))
  jax.block_until_ready(mean(grads))
  times = []
  for _ in range(20):
    t0 = time.perf_counter()
    jax.block_until_ready(mean(grads))
    times.append(time.perf_counter() - t0)
  if FLAGS.process_id == 0:
    size = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))
    print(json.dumps({"cnn_params": size, "allreduce_s_median": float(np.median(times)),
                      "allreduce_s_min": float(np.min(times))}))


def main(_):
  if FLAGS.worker:
    _allreduce_worker()
    return
  tmp = tempfile.mkdtemp(prefix="bench_mp_")
  rows = {"one_process": [], "two_processes": []}
  steps = f"--total_steps={FLAGS.total_steps}"
  for r in range(FLAGS.repeats):
    d = os.path.join(tmp, f"one{r}")
    rows["one_process"].append(
        launch.run_process([*RUN, steps, "--num_executors=2"], d)["sps"])
    d = os.path.join(tmp, f"two{r}")
    rows["two_processes"].append(_launched_sps(
        [sys.executable, "-m", "experiments.launch", "--num_processes=2", "--pin_cores", "--",
         *RUN, steps, "--num_executors=1", f"--logdir={d}"], d))
  out = {k: {"sps": v, "median": float(np.median(v))} for k, v in rows.items()}
  out["two_over_one"] = out["two_processes"]["median"] / out["one_process"]["median"]
  proc = subprocess.run(
      [sys.executable, "-m", "experiments.launch", "--num_processes=2", "--pin_cores",
       "--module=experiments.bench_multiprocess", "--", "--worker"], cwd=ROOT,
      capture_output=True, text=True, check=False)
  lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
  out["allreduce"] = json.loads(lines[-1]) if lines else {"error": proc.stderr[-500:]}
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  app.run(main)
