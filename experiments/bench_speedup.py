r"""Speedup of HTS-RL over synchronous A2C (and IMPALA-style async for reference) on the
variable-step-time env with exponential step times (paper Fig. 4). Prints one JSON object and
draws PNGs.

  python -m experiments.bench_speedup --quick          # reduced grid, about a minute
  python -m experiments.bench_speedup --out=runs/speedup

Every setting runs the three modes side by side (same env, network, A2C losses, 5-step returns,
one executor process per env; sleeping envs use no CPU, so 32 executors fit on 2 cores):
  hts    alpha = --hts_alpha (default 40): alpha / 5 A2C updates per segment, learning overlapped
  sync   alpha = 5: all envs step in lockstep, one update every 5 steps, learning in between
  async  IMPALA: 5-step unrolls, one actor per 4 envs, V-trace learner
Rows: num_envs, step_time_mean_s, step_time_var, sps_hts, sps_sync, sps_async, speedup
(= sps_hts / sps_sync). (a) a grid of step-time variances at 16 envs (exponential: var = mean^2);
(b) 1..32 envs at the highest variance.
"""

import json
import os
import sys

from absl import app
from absl import flags

from experiments import cli

flags.DEFINE_bool("quick", False, "Reduced grid (about a minute).")
flags.DEFINE_string("out", "runs/bench_speedup", "Where the PNGs (and rows.json) go.")
flags.DEFINE_integer("hts_alpha", 40, "HTS synchronization interval.")
flags.DEFINE_float("seconds", 4.0, "Approximate rollout time per run.")
FLAGS = flags.FLAGS

MEANS_S = [0.25e-3, 0.5e-3, 1e-3, 2e-3, 4e-3, 8e-3, 16e-3]
ENVS = [1, 2, 4, 8, 16, 32]


def _run(mode, num_envs, mean_s, steps):
  alpha = FLAGS.hts_alpha if mode == "hts" else 5
  actors = 2 if mode == "hts" else (1 if mode == "sync" else max(1, num_envs // 4))
  return cli.run_quiet(env="vstep", env_kwargs={"dist": "exponential", "mean_s": mean_s},
                       mode=mode, alpha=alpha, num_envs=num_envs, num_executors=num_envs,
                       num_actors=actors, total_steps=max(steps, alpha * num_envs), seed=0,
                       learner={"algo": "a2c", "unroll_length": 5})["sps"]


def _row(num_envs, mean_s):
  # Enough steps for about FLAGS.seconds of HTS rollout (HTS runs near num_envs / mean).
  steps = int(FLAGS.seconds * num_envs / mean_s)
  sps = {m: _run(m, num_envs, mean_s, steps // (1 if m == "hts" else 3))
         for m in ("hts", "sync", "async")}
  row = {"num_envs": num_envs, "step_time_mean_s": mean_s, "step_time_var": mean_s ** 2,
         "sps_hts": round(sps["hts"], 1), "sps_sync": round(sps["sync"], 1),
         "sps_async": round(sps["async"], 1), "speedup": round(sps["hts"] / sps["sync"], 2)}
  print(json.dumps(row), file=sys.stderr, flush=True)
  return row


def _plot(rows, out):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  os.makedirs(out, exist_ok=True)
  paths = []
  for name, key, sel in [("speedup_vs_variance", "step_time_var",
                          [r for r in rows if r["grid"] == "variance"]),
                         ("speedup_vs_envs", "num_envs", [r for r in rows if r["grid"] == "envs"])]:
    if not sel:
      continue
    sel = sorted(sel, key=lambda r: r[key])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    xs = [r[key] for r in sel]
    for m, style in [("hts", "o-"), ("sync", "s-"), ("async", "^-")]:
      ax1.plot(xs, [r[f"sps_{m}"] for r in sel], style, label=m)
    ax2.plot(xs, [r["speedup"] for r in sel], "o-", color="k")
    for ax in (ax1, ax2):
      ax.set_xscale("log")
      ax.set_xlabel("step-time variance (s$^2$)" if key == "step_time_var" else "envs")
    ax1.set_ylabel("env steps / s")
    ax1.legend()
    ax2.set_ylabel("speedup HTS / sync")
    fig.tight_layout()
    path = os.path.join(out, f"{name}.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)
  return paths


def main(argv):
  del argv
  means = [0.5e-3, 4e-3] if FLAGS.quick else MEANS_S
  envs = [4, 16] if FLAGS.quick else ENVS
  if FLAGS.quick:
    FLAGS.seconds = min(FLAGS.seconds, 1.5)
  rows = [dict(_row(16, m), grid="variance") for m in means]
  rows += [dict(_row(n, max(means)), grid="envs") for n in envs if n != 16]
  rows.append(dict(next(r for r in rows if r["step_time_mean_s"] == max(means)), grid="envs"))
  os.makedirs(FLAGS.out, exist_ok=True)
  with open(os.path.join(FLAGS.out, "rows.json"), "w") as f:
    json.dump(rows, f, indent=1)
  print(json.dumps({"rows": rows, "plots": _plot(rows, FLAGS.out)}, indent=1))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
