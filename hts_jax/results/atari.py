r"""HTS-A2C against A2C on one full Atari game (Pong through envpool, the paper's preprocessing and
network) at the budget a 2-core CPU allows, under a written protocol (results/atari/PROTOCOL.md:
budget, seeds, targets and schedule fixed before the runs). The paper's Atari tables at CPU scale
are MinAtar's grid (`hts-reproduce minatar`); this is the full-Atari check beside them.

  hts-reproduce atari                          # the protocol's grid, then the report
  hts-reproduce atari --seeds=0
  hts-reproduce atari --benchmark              # the interleaved throughput benchmark
  hts-reproduce atari --report_only            # tables, plots, JSON from the runs

(from a clone: `python -m experiments.reproduce atari ...`). Each (game, seed) is a paired block
of its methods (`hts_jax.results.grid`), each run one training process into
`<results>/runs/<game>/<method>/seed<k>/`; a finished run is never run again, so a block may span
sittings (each run keeps its own host record; the paired ratios count a block only where both
runs share a host kind). The report (`atari_report`) writes results.json, tables.md (also
docs/results.md's block), the curves and README's summary block, from the runs' summary.json
files only.
"""

from __future__ import annotations

from absl import flags

from hts_jax.results import atari_report, games
from hts_jax.results.atari_spec import METHODS, PROTOCOL, run_flags


def define_flags() -> None:
  games.define_flags(PROTOCOL, METHODS, "results/atari", "Atari",
                     "Atari games to run (the protocol's).", "Run the interleaved throughput "
                     "benchmark of --methods on each of --games into <results>/throughput.json.")


def main(argv):
  return games.run(argv, PROTOCOL, list(PROTOCOL["games"]), "the protocol's games", METHODS,
                   lambda game: [m for m in METHODS if m in flags.FLAGS.methods], METHODS,
                   run_flags, atari_report.write_report, atari_report.render_markdown)
