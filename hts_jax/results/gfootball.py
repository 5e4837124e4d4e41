r"""The paper's GFootball learning results (Table 2 / A10, Table A9, Figs. A5/A6) under a written
protocol (results/gfootball/PROTOCOL.md: budgets, seeds and every method's schedule fixed before
the runs).

  hts-reproduce gfootball                     # the protocol's grid, then the report
  hts-reproduce gfootball --scenarios=academy_empty_goal_close --seeds=0
  hts-reproduce gfootball --methods=hts_ppo_delayed    # the fourth column
  hts-reproduce gfootball --benchmark         # the interleaved throughput benchmark per scenario
  hts-reproduce gfootball --report_only       # tables, plots, JSON from the runs
  hts-reproduce gfootball --actor_counts=1,2,4 --methods= --scenarios=   # Tables 4/5

(from a clone: `python -m experiments.reproduce gfootball ...`). Runs the grid as paired blocks
(`hts_jax.results.grid`: each (scenario, seed)'s methods back to back in an order seeded by the
block), each run one fresh training process, into `<results>/runs/<scenario>/<method>/seed<k>/`.
A run with a `summary.json` is finished and never run again, so the grid fills over several
sittings; a run directory without one (an interrupted run) is deleted and run again from the
start: a run's wall time must come from one uninterrupted sitting. Runs go one at a time (the
wall-time metrics need a machine nothing else loads).

Methods, each from its preset (`hts_jax/presets.py`, every value cited there):
  hts_ppo          `gfootball_ppo`                 HTS-PPO as the released code runs it
  sync_ppo         `gfootball_ppo --mode=sync`     synchronous PPO: the same hyperparameters
  impala           `gfootball_impala`              IMPALA (Table A6's column)
  hts_ppo_delayed  `gfootball_ppo --correction=delayed`   the paper's Eq. 6 (a fourth column)
Scale (the same for every method, flags below): 8 envs, simple115v2 observations and the MLP on
a 2-core CPU, against the paper's 16 envs, extracted maps and CNN on a 4-GPU desktop.

The report (`gfootball_report`) writes, from the runs' `summary.json` only, into `<results>/`:
results.json (every number, the protocol, the hosts), tables.md (every table; also
docs/results.md's block), score_vs_env_steps.png / score_vs_wall_time.png (Figs. A6 / A5: mean
score over seeds and its band: [min, max] below 6 seeds), and README's summary block.
"""

from __future__ import annotations

import os
import sys

from absl import flags

from hts_jax.results import grid, launch, publish
from hts_jax.results import gfootball_report as report
from hts_jax.results.gfootball_spec import (DEFAULT_METHODS, METHODS, PROTOCOL, budget_of,
                                            parse_steps, run_flags)


def define_flags() -> None:
  """This grid's flags, defined only when it runs (`hts-reproduce gfootball`)."""
  flags.DEFINE_list("scenarios", list(PROTOCOL["budgets"]),
                    f"Scenarios to run (the protocol's budgets: {PROTOCOL['budgets']}).")
  flags.DEFINE_list("methods", list(DEFAULT_METHODS), f"Methods to run, of {list(METHODS)}.")
  flags.DEFINE_list("seeds", [], "Seeds to run (default: the protocol's, per scenario).")
  flags.DEFINE_list("steps", [], "SCENARIO=STEPS budget overrides (the same for every method; a "
                    "deviation from the protocol, recorded in results.json).")
  flags.DEFINE_string("results", "results/gfootball", "Results folder (runs, JSON, tables, PNGs).")
  flags.DEFINE_integer("num_envs", 8, "Envs of every method.")
  flags.DEFINE_integer("num_executors", 4, "Executor processes of every method.")
  flags.DEFINE_integer("ppo_actors", 1, "Actor threads of HTS-PPO and sync PPO.")
  flags.DEFINE_integer("impala_actors", 4, "IMPALA's actors (each owns whole executors).")
  flags.DEFINE_string("representation", "simple115v2",
                      "GFootball observations: simple115v2 (MLP) or extracted (the paper's CNN).")
  flags.DEFINE_list("extra", [], "More launcher flags for every run, e.g. learner_devices=0,1.")
  flags.DEFINE_bool("report_only", False, "Write the report from the finished runs; run nothing.")
  flags.DEFINE_bool("dry_run", False, "Print the commands of the runs still to do and the hours "
                    "they would take (from the finished runs on this host kind); run nothing.")
  flags.DEFINE_bool("readme", True, "Rewrite README.md's and docs/results.md's GFootball blocks.")
  flags.DEFINE_bool("benchmark", False, "Run the interleaved throughput benchmark of --methods on "
                    "each of --scenarios into <results>/throughput.json, instead of the grid.")
  identity = PROTOCOL["identity"]
  flags.DEFINE_list("actor_counts", [], "Also run HTS-PPO with each of these actor counts "
                    f"(the protocol's: {identity['actor_counts']}).")
  flags.DEFINE_string("identity_scenario", identity["scenario"], "--actor_counts: the scenario.")
  flags.DEFINE_integer("identity_seed", identity["seed"], "--actor_counts: the seed.")
  flags.DEFINE_integer("identity_steps", identity["steps"], "--actor_counts: env steps.")
  flags.DEFINE_integer("resamples", 10_000, "Bootstrap resamples.")


FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise grid.GridError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    overrides = parse_steps(FLAGS.steps)
    seeds = [int(s) for s in FLAGS.seeds]
    scale = dict(num_envs=FLAGS.num_envs, num_executors=FLAGS.num_executors,
                 ppo_actors=FLAGS.ppo_actors, impala_actors=FLAGS.impala_actors,
                 representation=FLAGS.representation, extra=FLAGS.extra)
    runs = []
    for scenario in FLAGS.scenarios:
      here = seeds or PROTOCOL["seeds"].get(scenario, [0, 1, 2])
      runs += grid.paired_blocks([scenario], FLAGS.methods, here, lambda sc, m, seed: run_flags(
          m, sc, seed, budget_of(sc, overrides), **scale))
    identity = [(int(n), run_flags("hts_ppo", FLAGS.identity_scenario, FLAGS.identity_seed,
                                   FLAGS.identity_steps, num_actors=int(n), **scale))
                for n in FLAGS.actor_counts]
  except ValueError as e:  # GridError, int()
    raise grid.GridError(str(e)) from None
  results = FLAGS.results
  if FLAGS.benchmark:
    spec = PROTOCOL["benchmark"]
    saved = grid.throughput_benchmark(
        results, FLAGS.scenarios, FLAGS.methods,
        lambda sc, m, n: run_flags(m, sc, 0, n, **scale), spec["repeats"], spec["steps"])
    print({sc: {m: v["median_sps"] for m, v in ms.items()}
           for sc, ms in saved["scenarios"].items()}, file=sys.stderr)
  failed = []
  if not FLAGS.report_only and not FLAGS.benchmark:
    failed = grid.run_all(runs, results, dry_run=FLAGS.dry_run)
    for n, values in identity:
      logdir = os.path.join(results, "actor_counts", f"actors{n}")
      if not launch.launch(values, logdir, dry_run=FLAGS.dry_run) and not FLAGS.dry_run:
        failed.append(logdir)
  if FLAGS.dry_run:
    return []
  settings = {**{k: v for k, v in scale.items() if k != "extra"}, "extra": list(FLAGS.extra),
              "budgets": {**PROTOCOL["budgets"], **overrides}, "deviations": overrides,
              "evals_per_run": PROTOCOL["evals_per_run"],
              "eval_episodes": PROTOCOL["eval_episodes"],
              "methods": {m: {"preset": p, **f} for m, (p, f) in METHODS.items()}}
  out = report.write_report(results, FLAGS.resamples, settings, *publish.doc_paths(
      publish.off_protocol(same=("steps", "num_envs", "num_executors", "ppo_actors",
                                 "impala_actors", "representation", "extra"),
                           within={"seeds": {s for seeds in PROTOCOL["seeds"].values() for s in seeds},
                                   "methods": METHODS})))
  print(report.render_markdown(out), end="")
  for p in out["plots"]:
    print(f"wrote {p}")
  return failed
