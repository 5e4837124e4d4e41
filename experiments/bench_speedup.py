r"""Speedup of HTS-RL over synchronous A2C (and IMPALA-style async for reference) on the
variable-step-time env (paper Fig. 4). Prints one JSON object and draws PNGs.

  python -m experiments.bench_speedup --quick          # reduced grid, about 1.5 minutes
  python -m experiments.bench_speedup --grids=variance --repeats=3   # one grid, medians of 3
  python -m experiments.bench_speedup --out=runs/speedup

Every setting runs the three modes side by side (same env, network, A2C losses, 5-step returns,
one executor process per env; sleeping envs use no CPU, so 32 executors fit on 2 cores):
  hts    alpha = --hts_alpha (default 160): alpha / 5 A2C updates per segment, learning overlapped,
         one actor thread (on 2 cores a second one only adds GIL contention)
  hts_lag0  the same at --policy_lag=0: the update between segments, nothing overlapped (batch
         synchronization alone: sync's learning with HTS's rollout)
  sync   alpha = 5: all envs step in lockstep, one update every 5 steps, learning in between
  async  IMPALA: 5-step unrolls, one actor per 4 envs, V-trace learner
Three grids, each row one setting:
  variance     16 envs, step times Gamma-distributed with a fixed mean (--mean_s) and variance
               var_ratio x mean^2; var_ratio 1 is exactly the exponential (paper Fig. 4 left)
  exponential  16 envs, exponential step times of growing mean (variance = mean^2)
  envs         1..32 envs at the highest variance (paper Fig. 4 right)
Row fields: grid, num_envs, dist, step_time_mean_s, step_time_var, sps_hts, sps_hts_lag0,
sps_sync, sps_async, speedup (= sps_hts / sps_sync), speedup_lag0 (= sps_hts_lag0 / sps_sync),
measured_over_predicted, and predicted_speedup: Eq. 7's ratio of lockstep (alpha = 1) to alpha-step collection time for that distribution (c = 0; no credit for
overlapping learning).
For exponential steps Eq. 7 bounds the rollout gain at 16 envs by H_16 = 3.38 (alpha -> inf);
overlapping a learner as slow as the rollout adds at most 1 more.
"""

import json
import os
import statistics
import sys

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.results import provenance
from hts_jax.runs import launch

flags.DEFINE_bool("quick", False, "Reduced grid (about 1.5 minutes).")
flags.DEFINE_string("out", "runs/bench_speedup", "Where the PNGs (and rows.json) go.")
flags.DEFINE_integer("hts_alpha", 160, "HTS synchronization interval (a multiple of 5).")
flags.DEFINE_float("seconds", 6.0, "Approximate duration of each run (HTS: at least 6 segments).")
flags.DEFINE_float("mean_s", 4e-3, "Mean step time of the variance and envs grids.")
flags.DEFINE_list("var_ratios", ["0.1", "0.25", "0.5", "1", "2", "4", "10"],
                  "Variance grid: step-time variance / mean^2 (1 = exponential).")
flags.DEFINE_list("exp_means", ["0.5e-3", "1e-3", "2e-3", "4e-3", "8e-3", "16e-3"],
                  "Exponential grid: mean step times (s).")
flags.DEFINE_list("envs", ["1", "2", "4", "8", "16", "32"], "Envs grid (at the highest variance).")
flags.DEFINE_list("grids", ["variance", "exponential", "envs"], "Which grids to run.")
flags.DEFINE_integer("repeats", 1, "Runs per mode and setting (interleaved); SPS is their median.")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance (date, machine, commit, "
                    "command) here: results/benchmarks/speedup.json is what README shows.")
FLAGS = flags.FLAGS

_SYNC_ALPHA = 5


def _kwargs(mean_s, var_ratio):
  if var_ratio == 1.0:
    return {"dist": "exponential", "mean_s": mean_s}
  return {"dist": "gamma", "mean_s": mean_s, "var_s2": var_ratio * mean_s ** 2}


def _predicted(num_envs, mean_s, var_ratio, alpha):
  from hts_jax.analysis import runtime_model  # pylint: disable=import-outside-toplevel
  k = 1.0 / var_ratio
  return runtime_model.predicted_speedup(num_envs, alpha, k / mean_s, step_shape=k)


def _steps(mode, num_envs, mean_s, var_ratio):
  """Env steps for about FLAGS.seconds of this mode, from Eq. 7's collection rate."""
  from hts_jax.analysis import runtime_model  # pylint: disable=import-outside-toplevel
  k = 1.0 / var_ratio
  hts = mode.startswith("hts")
  alpha = FLAGS.hts_alpha if hts else {"sync": 1, "async": _SYNC_ALPHA}[mode]
  per_state = runtime_model.expected_runtime(1, num_envs, alpha, k / mean_s, step_shape=k)
  chunk = (FLAGS.hts_alpha if hts else _SYNC_ALPHA) * num_envs
  return max(6 * chunk, int(FLAGS.seconds / per_state) // chunk * chunk)


def _run(mode, num_envs, mean_s, var_ratio):
  hts = mode.startswith("hts")
  alpha = FLAGS.hts_alpha if hts else _SYNC_ALPHA
  actors = max(1, num_envs // 4) if mode == "async" else 1
  lag = {"policy_lag": 0} if mode == "hts_lag0" else {}
  return launch.in_process(env="vstep", env_kwargs=_kwargs(mean_s, var_ratio),
                           mode="hts" if hts else mode, alpha=alpha, **lag,
                       num_envs=num_envs, num_executors=num_envs, num_actors=actors,
                       total_steps=_steps(mode, num_envs, mean_s, var_ratio), seed=0,
                       learner={"algo": "a2c", "unroll_length": 5})["sps"]


def _row(grid, num_envs, mean_s, var_ratio):
  runs = {"hts": [], "hts_lag0": [], "sync": [], "async": []}
  for _ in range(FLAGS.repeats):  # interleaved, so that a noisy stretch hits every mode
    for m in runs:
      runs[m].append(_run(m, num_envs, mean_s, var_ratio))
  sps = {m: statistics.median(v) for m, v in runs.items()}
  row = {"grid": grid, "num_envs": num_envs, "dist": _kwargs(mean_s, var_ratio)["dist"],
         "step_time_mean_s": mean_s, "step_time_var": var_ratio * mean_s ** 2,
         "var_over_mean2": var_ratio, "hts_alpha": FLAGS.hts_alpha,
         "sps_hts": round(sps["hts"], 1), "sps_hts_lag0": round(sps["hts_lag0"], 1),
         "sps_sync": round(sps["sync"], 1), "sps_async": round(sps["async"], 1),
         "speedup": round(sps["hts"] / sps["sync"], 2),
         "speedup_lag0": round(sps["hts_lag0"] / sps["sync"], 2),
         "predicted_speedup": round(_predicted(num_envs, mean_s, var_ratio, FLAGS.hts_alpha), 2)}
  row["measured_over_predicted"] = round(row["speedup"] / row["predicted_speedup"], 3)
  if FLAGS.repeats > 1:
    row.update({f"sps_{m}_runs": [round(x, 1) for x in v] for m, v in runs.items()})
  print(json.dumps(row), file=sys.stderr, flush=True)
  return row


def _plot(rows, out):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  os.makedirs(out, exist_ok=True)
  paths = []
  for grid, key, xlabel in [
      ("variance", "step_time_var", f"step-time variance (s$^2$), mean {FLAGS.mean_s * 1e3:g} ms"),
      ("exponential", "step_time_var", "step-time variance (s$^2$), exponential (= mean$^2$)"),
      ("envs", "num_envs", "envs")]:
    sel = sorted((r for r in rows if r["grid"] == grid), key=lambda r: r[key])
    if not sel:
      continue
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    xs = [r[key] for r in sel]
    for m, style in [("hts", "o-"), ("hts_lag0", "d-"), ("sync", "s-"), ("async", "^-")]:
      ax1.plot(xs, [r[f"sps_{m}"] for r in sel], style, label=m)
    ax2.plot(xs, [r["speedup"] for r in sel], "o-", color="k", label="measured")
    ax2.plot(xs, [r["predicted_speedup"] for r in sel], "--", color="gray",
             label="Eq. 7 (rollout only)")
    for ax in (ax1, ax2):
      ax.set_xscale("log")
      ax.set_xlabel(xlabel)
    ax1.set_ylabel("env steps / s")
    ax1.legend()
    ax2.set_ylabel("speedup HTS / sync")
    ax2.legend()
    fig.suptitle(f"{grid} grid (HTS alpha {FLAGS.hts_alpha})", fontsize=9)
    fig.tight_layout()
    path = os.path.join(out, f"speedup_{grid}.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)
  return paths


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  if FLAGS.hts_alpha % _SYNC_ALPHA:
    cli.fail(f"--hts_alpha must be a multiple of {_SYNC_ALPHA}, got {FLAGS.hts_alpha}")
  try:
    ratios = sorted(float(x) for x in FLAGS.var_ratios)
    means = sorted(float(x) for x in FLAGS.exp_means)
    envs = sorted(int(x) for x in FLAGS.envs)
  except ValueError as e:
    cli.fail(f"bad grid value: {e}")
  unknown = set(FLAGS.grids) - {"variance", "exponential", "envs"}
  if unknown:
    cli.fail(f"--grids: unknown grid(s) {sorted(unknown)}; choose from variance, exponential, envs")
  if FLAGS.quick:
    ratios, means, envs = [0.1, 10.0], [], [4]
    FLAGS.seconds = min(FLAGS.seconds, 2.0)
  grids = set(FLAGS.grids)
  rows = [_row("variance", 16, FLAGS.mean_s, v) for v in ratios] if "variance" in grids else []
  if "exponential" in grids:
    rows += [_row("exponential", 16, m, 1.0) for m in means]
  if "envs" in grids:
    high = max(ratios)
    rows += [_row("envs", n, FLAGS.mean_s, high) for n in envs
             if n != 16 or "variance" not in grids]
    rows += [dict(r, grid="envs") for r in rows
             if r["grid"] == "variance" and r["var_over_mean2"] == high]
  os.makedirs(FLAGS.out, exist_ok=True)
  with open(os.path.join(FLAGS.out, "rows.json"), "w") as f:
    json.dump(rows, f, indent=1)
  out = {"rows": rows, "plots": _plot(rows, FLAGS.out)}
  if FLAGS.save:
    provenance.save(FLAGS.save, {
        "benchmark": "speedup", "rows": rows,
        "settings": {"env": "vstep", "algo": "a2c", "unroll_length": 5,
                     "hts_alpha": FLAGS.hts_alpha, "sync_alpha": _SYNC_ALPHA,
                     "seconds": FLAGS.seconds, "repeats": FLAGS.repeats,
                     "executors": "one per env", "hts_actors": 1}})
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
