"""The program of a grid over games at one budget per run (`minatar`, `atari`): its flags and its
run, from the grid's spec (protocol, methods, one run's flags) and its report. Each (game, seed)
is a paired block of its methods (`grid.paired_blocks`); `--benchmark` runs the protocol's
interleaved throughput benchmark instead; the report is written from the finished runs."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from absl import flags

from hts_jax.results import grid, publish

FLAGS = flags.FLAGS
# report(results, resamples, deviations, readme, docs) -> the saved report: README's and
# docs/results.md's paths, or None without --readme.
Report = Callable[[str, int, Dict[str, Any], Optional[str], Optional[str]], Dict[str, Any]]


def define_flags(protocol: Mapping[str, Any], methods: Sequence[str], results: str,
                 family: str, games_help: str, benchmark_help: str) -> None:
  """`protocol`: its `games` (game -> seeds), `budget` and `benchmark` (repeats, steps)."""
  flags.DEFINE_list("games", list(protocol["games"]), games_help)
  flags.DEFINE_list("methods", list(methods), f"Methods to run, of {list(methods)}.")
  flags.DEFINE_list("seeds", [], "Seeds (default: the protocol's, 0, 1, 2).")
  flags.DEFINE_integer("steps", protocol["budget"], "Env steps per run (the protocol's budget; "
                       "another is a deviation, recorded in results.json).")
  flags.DEFINE_string("results", results, "Results folder (runs, JSON, tables, PNGs).")
  flags.DEFINE_bool("report_only", False, "Write the report from the finished runs; run nothing.")
  flags.DEFINE_bool("dry_run", False, "Print the commands of the runs still to do and the hours "
                    "they would take (from the finished runs on this host kind); run nothing.")
  flags.DEFINE_bool("readme", True, f"Rewrite README.md's and docs/results.md's {family} blocks.")
  flags.DEFINE_bool("benchmark", False, benchmark_help)
  flags.DEFINE_integer("resamples", 10_000, "Bootstrap resamples.")


def run(argv: Sequence[str], protocol: Mapping[str, Any], games: Sequence[str], games_what: str,
        methods: Sequence[str], methods_of: Callable[[str], List[str]],
        benchmarked: Sequence[str], run_flags: Callable[[str, str, int, int], Dict[str, Any]],
        report: Report, render: Callable[[Dict[str, Any]], str]) -> List[str]:
  """The grid under the flags: `games` the known ones (`games_what` names them in the error),
  `methods_of(game)` a block's methods, `benchmarked` the methods the benchmark runs,
  `run_flags(method, game, seed, steps)` one run's flags. Returns the failed runs' logdirs."""
  if len(argv) > 1:
    raise grid.GridError(f"unexpected arguments: {' '.join(argv[1:])}")
  grid.check_methods(FLAGS.methods, methods)
  grid.check_tasks("--games", FLAGS.games, games, games_what)
  seeds = grid.parse_seeds(FLAGS.seeds)
  runs = []
  for game in FLAGS.games:
    runs += grid.paired_blocks([game], methods_of(game),
                               seeds or protocol["games"].get(game, [0, 1, 2]),
                               lambda g, m, s: run_flags(m, g, s, FLAGS.steps))
  if FLAGS.benchmark:
    grid.throughput_benchmark(FLAGS.results, FLAGS.games,
                              [m for m in benchmarked if m in FLAGS.methods],
                              lambda g, m, n: run_flags(m, g, 0, n),
                              protocol["benchmark"]["repeats"], protocol["benchmark"]["steps"])
  failed = []
  if not FLAGS.report_only and not FLAGS.benchmark:
    failed = grid.run_all(runs, FLAGS.results, dry_run=FLAGS.dry_run)
  if FLAGS.dry_run:
    return []
  deviations = {} if FLAGS.steps == protocol["budget"] else {"budget": FLAGS.steps}
  protocol_seeds = {s for game_seeds in protocol["games"].values() for s in game_seeds}
  out = report(FLAGS.results, FLAGS.resamples, deviations, *publish.doc_paths(
      publish.off_protocol(same=("steps",), within={"seeds": protocol_seeds or [0, 1, 2],
                                                    "methods": methods})))
  print(render(out), end="")
  return failed
