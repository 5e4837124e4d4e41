r"""The rollout hot path, HTS against its own synchronous baseline, side by side in one run.
Prints one JSON object (and each row to stderr as it finishes).

  python -m experiments.bench_sampler                      # CartPole 16 and 64 envs, Atari 16 envs
  python -m experiments.bench_sampler --cases=cartpole16 --repeats=3
  python -m experiments.bench_sampler --compare=core --cases=atari16   # LSTM's cost, in HTS

Cases (A2C, the same flags for both modes; only --mode differs):
  cartpole16  CartPole-v1, MLP, 16 envs, 2 executors, alpha = unroll = 128 (issue 11's table)
  cartpole64  CartPole-v1, MLP, 64 envs, 2 executors, alpha = unroll = 128
  atari16     Atari Breakout (ale-py executors), the paper's CNN, 16 envs, 4 executors,
              actor batch 4 envs, alpha = unroll = 5 (Table A3)
Each row: SPS of each mode (median over --repeats, runs interleaved hts/sync), their ratio, and
the hot-path figures from summary.json: policy rows per env step, ready envs per actor call, actor
calls, main-process CPU seconds per 1k env steps, idle seconds of executors/actors/learner.
`--compare=core` runs each case in HTS mode with a feed-forward policy (`ff`) and with
`--core=lstm --core_size=<--core_size>` (`lstm`) instead: the recurrent core's cost.
"""

import json
import os
import statistics
import sys

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.results import launch, provenance

flags.DEFINE_list("cases", ["cartpole16", "cartpole64", "atari16"], "Which cases to run.")
flags.DEFINE_integer("repeats", 2, "Runs per mode and case (interleaved); SPS is their median.")
flags.DEFINE_float("steps_scale", 1.0, "Scales every run's env steps.")
flags.DEFINE_enum("compare", "mode", ["mode", "core"], "mode: HTS against sync; core: HTS with a "
                  "feed-forward policy against HTS with an LSTM core.")
flags.DEFINE_integer("core_size", 256, "LSTM units with --compare=core.")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance (date, machine, commit, "
                    "command) here: results/benchmarks/sampler.json is what README shows.")
FLAGS = flags.FLAGS

CASES = {
    "cartpole16": dict(env="CartPole-v1", network="mlp", num_envs=16, num_executors=2,
                       alpha=128, total_steps=200_000, learner=dict(algo="a2c", unroll_length=128)),
    "cartpole64": dict(env="CartPole-v1", network="mlp", num_envs=64, num_executors=2,
                       alpha=128, total_steps=400_000, learner=dict(algo="a2c", unroll_length=128)),
    "atari16": dict(env="atari:Breakout", network="cnn", num_envs=16, num_executors=4,
                    actor_batch=4, alpha=5, total_steps=8_000,
                    learner=dict(algo="a2c", unroll_length=5)),
}


def _row(s):
  return {"sps": round(s["sps"], 1), "env_steps": s["env_steps"],
          "wall_time_s": round(s["wall_time_s"], 2),
          "efficiency": {k: round(v, 4) if isinstance(v, float) else v
                         for k, v in s["efficiency"].items()},
          "idle_s": {k: round(v, 2) for k, v in s["idle"].items()},
          "learn_s": round(s["timing"]["learn_s"], 2)}


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  unknown = sorted(set(FLAGS.cases) - set(CASES))
  if unknown:
    cli.fail(f"--cases: unknown case(s) {unknown}; choose from {sorted(CASES)}")
  variants = ({"hts": dict(mode="hts"), "sync": dict(mode="sync")} if FLAGS.compare == "mode"
              else {"lstm": dict(mode="hts", core="lstm", core_size=FLAGS.core_size),
                    "ff": dict(mode="hts", core="none")})
  first, second = variants
  rows = []
  for name in FLAGS.cases:
    case = dict(CASES[name])
    case["total_steps"] = int(case["total_steps"] * FLAGS.steps_scale)
    runs = {v: [] for v in variants}
    for _ in range(FLAGS.repeats):
      for v, overrides in variants.items():
        runs[v].append(launch.in_process(**dict(case, **overrides, learner=dict(case["learner"]))))
    row = {"case": name, "num_envs": case["num_envs"], "num_executors": case["num_executors"],
           "alpha": case["alpha"]}
    for v in variants:
      row[f"sps_{v}"] = round(statistics.median(s["sps"] for s in runs[v]), 1)
      row[f"sps_{v}_runs"] = [round(s["sps"], 1) for s in runs[v]]
      row[v] = _row(runs[v][-1])
    row[f"{first}_over_{second}"] = round(row[f"sps_{first}"] / row[f"sps_{second}"], 3)
    rows.append(row)
    print(json.dumps(row), file=sys.stderr, flush=True)
  out = {"cpu_count": os.cpu_count(), "repeats": FLAGS.repeats, "compare": FLAGS.compare,
         "variants": variants, "rows": rows}
  if FLAGS.save:
    provenance.save(FLAGS.save, dict(out, benchmark="sampler" if FLAGS.compare == "mode" else
                                     "recurrent",
                                     cases={name: CASES[name] for name in FLAGS.cases}))
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
