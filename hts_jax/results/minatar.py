r"""The paper's Atari tables (Table 1/A7 final time metric, Table A8 required time, Table A1 the
delayed gradient against truncated importance sampling and no correction) at CPU scale on MinAtar,
under a written protocol (results/minatar/PROTOCOL.md: games, seeds, budget, schedules and the
reference score fixed before the runs).

  hts-reproduce minatar                        # the protocol's grid, then the report
  hts-reproduce minatar --games=Breakout --seeds=0
  hts-reproduce minatar --noa1                 # without Table A1's two extra corrections
  hts-reproduce minatar --benchmark            # the interleaved throughput benchmark per game
  hts-reproduce minatar --report_only          # tables, plots, JSON from the runs

(from a clone: `python -m experiments.reproduce minatar ...`). Each (game, seed) is a paired
block of its methods (`hts_jax.results.grid`), each run one training process into
`<results>/runs/<game>/<method>/seed<k>/`; a finished run is never run again. The report
(`minatar_report`) writes results.json, tables.md (also docs/results.md's block), the curves and
README's summary block, from the runs' summary.json files only.
"""

from __future__ import annotations

from absl import flags

from hts_jax.results import grid, minatar_report, publish
from hts_jax.results.minatar_spec import MAIN, METHODS, PROTOCOL, methods_for, run_flags

def define_flags() -> None:
  flags.DEFINE_list("games", list(PROTOCOL["games"]), "MinAtar games to run "
                    f"(the protocol's; more where time allows: {PROTOCOL['more_games']}).")
  flags.DEFINE_list("methods", list(METHODS), f"Methods to run, of {list(METHODS)}.")
  flags.DEFINE_bool("a1", True, "Run Table A1's extra corrections on its games "
                    f"({PROTOCOL['a1_games']}).")
  flags.DEFINE_list("seeds", [], "Seeds (default: the protocol's, 0, 1, 2).")
  flags.DEFINE_integer("steps", PROTOCOL["budget"], "Env steps per run (the protocol's budget; "
                       "another is a deviation, recorded in results.json).")
  flags.DEFINE_string("results", "results/minatar", "Results folder (runs, JSON, tables, PNGs).")
  flags.DEFINE_bool("report_only", False, "Write the report from the finished runs; run nothing.")
  flags.DEFINE_bool("dry_run", False, "Print the commands of the runs still to do; run nothing.")
  flags.DEFINE_bool("readme", True, "Rewrite README.md's and docs/results.md's MinAtar blocks.")
  flags.DEFINE_bool("benchmark", False, "Run the interleaved throughput benchmark of Table "
                    "1/A8's methods on each of --games into <results>/throughput.json.")
  flags.DEFINE_integer("resamples", 10_000, "Bootstrap resamples.")


FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise grid.GridError(f"unexpected arguments: {' '.join(argv[1:])}")
  grid.check_methods(FLAGS.methods, METHODS)
  unknown = sorted(set(FLAGS.games) - set(PROTOCOL["games"]) - set(PROTOCOL["more_games"]))
  if unknown:
    raise grid.GridError(f"--games: unknown {unknown}; MinAtar's games are "
                         f"{list(PROTOCOL['games']) + PROTOCOL['more_games']}")
  try:
    seeds = [int(s) for s in FLAGS.seeds]
  except ValueError as e:
    raise grid.GridError(f"--seeds: {e}") from None
  runs = []
  for game in FLAGS.games:
    runs += grid.paired_blocks([game], methods_for(game, FLAGS.methods, FLAGS.a1),
                               seeds or PROTOCOL["games"].get(game, [0, 1, 2]),
                               lambda g, m, s: run_flags(m, g, s, FLAGS.steps))
  if FLAGS.benchmark:
    grid.throughput_benchmark(FLAGS.results, FLAGS.games, [m for m in MAIN if m in FLAGS.methods],
                              lambda g, m, n: run_flags(m, g, 0, n),
                              PROTOCOL["benchmark"]["repeats"], PROTOCOL["benchmark"]["steps"])
  failed = []
  if not FLAGS.report_only and not FLAGS.benchmark:
    failed = grid.run_all(runs, FLAGS.results, dry_run=FLAGS.dry_run)
  if FLAGS.dry_run:
    return []
  deviations = {} if FLAGS.steps == PROTOCOL["budget"] else {"budget": FLAGS.steps}
  out = minatar_report.write_report(FLAGS.results, FLAGS.resamples, deviations,
                                    publish.readme_path() if FLAGS.readme else None,
                                    publish.docs_path() if FLAGS.readme else None)
  print(minatar_report.render_markdown(out), end="")
  return failed
