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

from hts_jax.results import games, minatar_report
from hts_jax.results.minatar_spec import MAIN, METHODS, PROTOCOL, methods_for, run_flags


def define_flags() -> None:
  games.define_flags(
      PROTOCOL, METHODS, "results/minatar", "MinAtar", "MinAtar games to run (the protocol's; "
      f"more where time allows: {PROTOCOL['more_games']}).", "Run the interleaved throughput "
      "benchmark of Table 1/A8's methods on each of --games into <results>/throughput.json.")
  flags.DEFINE_bool("a1", True, "Run Table A1's extra corrections on its games "
                    f"({PROTOCOL['a1_games']}).")


def main(argv):
  return games.run(argv, PROTOCOL, list(PROTOCOL["games"]) + PROTOCOL["more_games"],
                   "MinAtar's games", METHODS,
                   lambda game: methods_for(game, flags.FLAGS.methods, flags.FLAGS.a1), MAIN,
                   run_flags, minatar_report.write_report, minatar_report.render_markdown)
