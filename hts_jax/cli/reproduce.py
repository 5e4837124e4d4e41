"""Runs a grid of experiments and renders its report (results.json, tables, curves, README's
block), resumable across sittings: a finished run is never run again.

  hts-reproduce gfootball [flags]    the paper's GFootball tables (Table 2 / A9 / A10)
  hts-reproduce minatar [flags]      the paper's Atari tables (1/A7, A8, A1) on MinAtar
  hts-reproduce atari [flags]        HTS-A2C against A2C on full Atari Pong (envpool)
  hts-reproduce mujoco [flags]       HTS-PPO against synchronous PPO on MuJoCo
  hts-reproduce memory [flags]       recurrent HTS-PPO on CartPole without velocities
  hts-reproduce corrections [flags]  the policy-lag corrections study (results/corrections)
  hts-reproduce benchmarks [--check] docs/benchmarks.md's blocks from results/benchmarks/*.json
  hts-reproduce <grid> --report_only   only the report, from the runs there are
  hts-reproduce <grid> --help          the grid's flags

From a clone: `python -m experiments.reproduce <grid> ...`. A grid is data,
results/<grid>/grid.toml (its `about` says what it runs); a run that fails is named at the end
(exit 1) and the others still run.
"""

import importlib
import os
import sys
from typing import List, Optional

from absl import app
from absl import flags

from hts_jax.cli import common as cli



def grids() -> List[str]:
  """Every grid of data beside this hts_jax (a folder of results/ with a grid.toml:
  `hts_jax.results.spec`; none outside a clone), then `benchmarks`, a module of its own
  (docs/benchmarks.md's blocks from the benchmark scripts' JSON)."""
  from hts_jax.results import spec  # pylint: disable=import-outside-toplevel
  return (spec.names() if os.path.isdir(spec.RESULTS) else []) + ["benchmarks"]


def run(argv: Optional[List[str]] = None) -> None:
  """The `hts-reproduce` console command: `argv[1]` names the grid, the rest are its flags. Ctrl-C
  ends it with one line (the training process it was waiting for is stopped by
  `subprocess.run`), also where the handler's KeyboardInterrupt did not reach here
  (`launch.SIGINTS`)."""
  from hts_jax.runs import launch  # pylint: disable=import-outside-toplevel
  launch.catch_sigint()
  try:
    _run(argv)
  except KeyboardInterrupt:
    cli.fail("interrupted by SIGINT: the finished runs are kept; the same command goes on from "
             "there (the interrupted run starts over)", 130)


def _run(argv: Optional[List[str]]) -> None:
  argv = list(sys.argv if argv is None else argv)
  if len(argv) > 1 and argv[1] in ("-h", "--help", "--helpshort", "--helpfull"):
    print(__doc__)
    return
  names = grids()
  from hts_jax.results import spec  # pylint: disable=import-outside-toplevel
  from hts_jax.runs import driver  # pylint: disable=import-outside-toplevel
  if len(argv) > 1 and argv[1] not in names and names == ["benchmarks"]:
    cli.fail(f"{argv[1]}: no results/{argv[1]}/grid.toml beside this hts_jax ({spec.RESULTS}): "
             "a grid is its clone's data; run it from a clone (`python -m experiments.reproduce "
             f"{argv[1]}` there)")
  if len(argv) < 2 or argv[1] not in names:
    got = repr(argv[1]) if len(argv) > 1 else "none"
    cli.fail(f"expected a grid, one of {', '.join(names)}; got {got} (`<grid> --help` lists a "
             "grid's flags)")
  data = argv[1] != "benchmarks"
  module = driver if data else importlib.import_module("hts_jax.results." + argv[1])
  g = spec.load(argv[1]) if data else None
  doc = g.about if data else module.__doc__
  define, main_of = ((lambda: driver.define_flags(g), lambda rest: driver.main(g, rest))
                     if data else (module.define_flags, module.main))
  define()
  sys.modules["__main__"].__doc__ = doc  # what --help prints
  for flag in flags.FLAGS.get_key_flags_for_module(module.__name__):  # the flags it defined
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)

  def main(rest):
    from hts_jax.results import grid, guard  # pylint: disable=import-outside-toplevel
    from hts_jax.runs import launch  # pylint: disable=import-outside-toplevel
    try:
      # Held for the whole call: a second call on the same folder would take the first's
      # unfinished run for an interrupted one and delete it under its live training process.
      if "results" in flags.FLAGS and not getattr(flags.FLAGS, "dry_run", False):
        guard.lock_results(flags.FLAGS.results)
      failed = main_of(rest)
    except (grid.GridError, guard.Refused) as e:
      cli.fail(str(e))
    except OSError as e:  # an output that cannot be written (a read-only or full folder), an
      # input that is not a regular file (`guard.read_regular`)
      cli.fail(f"{e.filename or 'a file of the grid'}: {e.strerror or e}")
    if launch.SIGINTS:  # a SIGINT whose KeyboardInterrupt did not get here: its run failed by it
      raise KeyboardInterrupt
    if failed:
      cli.fail(f"{len(failed)} run(s) failed (their stderr.txt says why): {', '.join(failed)}", 1)

  asked = {a.split("=")[0] for a in argv[2:]}
  if asked & {"-h", "-?", "--help", "--helpshort", "--helpfull"}:  # exit code 0, as every command
    print(flags.FLAGS.get_help() if "--helpfull" in asked else
          f"{(doc or '').strip()}\n\n{flags.FLAGS.main_module_help()}")
    return
  app.run(main, argv=[argv[0], *argv[2:]], flags_parser=cli.parse_flags)


if __name__ == "__main__":
  run()
