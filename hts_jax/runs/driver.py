"""`hts-reproduce <grid>`: a grid's flags from its grid.toml, checked, and its run: the paired
blocks still to do, one at a time (`--shared_machine` marks), or its throughput benchmark, then
its report (`hts_jax.results.driver.report`)."""

import os
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from absl import flags

from hts_jax.results import driver, grid, headline, provenance
from hts_jax.results.render import render_markdown
from hts_jax.results.spec import Grid
from hts_jax.runs import blocks, launch

FLAGS = flags.FLAGS


def define_flags(g: Grid) -> None:
  """`hts-reproduce <grid>`'s flags, from its grid.toml."""
  names = [t.name for t in g.tasks if t.name]
  if names:
    flags.DEFINE_list(g.task_flag, [t.name for t in g.tasks if t.name and t.seeds],
                      f"Tasks, of {names}" + (" or others with their --steps." if g.make_task
                                              else "."))
  flags.DEFINE_list("methods", [m.name for m in g.methods if m.default],
                    f"Methods, of {[m.name for m in g.methods]}.")
  flags.DEFINE_list("seeds", [], "Seeds (default: each task's, PROTOCOL.md).")
  flags.DEFINE_list("steps", [], "Env steps per run: N for every task, or TASK=N each (default: "
                    "each task's budget; another makes a grid off its protocol, which does not "
                    "write README).")
  flags.DEFINE_string("results", g.results, "Where runs and the report go.")
  flags.DEFINE_bool("report_only", False, "Only rewrite the report from the runs there are.")
  flags.DEFINE_bool("dry_run", False, "Print the runs still to do and the hours they would take.")
  flags.DEFINE_bool("readme", True, "Write README's block (the protocol's grid only, unless given "
                    "on the command line).")
  flags.DEFINE_float("host_probe_s", 10.0, "Seconds of load before the runs (also with "
                     "--dry_run) to measure the host's CPU steal share, then one calibration "
                     "against this host kind's finished runs; a warning where its runs would "
                     "count as shared (0: neither).")
  flags.DEFINE_string("shared_machine", "", "What else ran on the machine during the runs made "
                      "now (recorded beside each: their times are left out of ratios).")
  for o in g.options:
    define = {int: flags.DEFINE_integer, str: flags.DEFINE_string,
              list: flags.DEFINE_list}[type(o.default)]
    define(o.name, o.default, o.help)
  if g.paper:
    flags.DEFINE_bool("benchmark", False, "Run the interleaved throughput benchmark of "
                      f"{list(g.paper.benchmarked)} on each task into <results>/throughput.json "
                      "instead of the grid.")
    flags.DEFINE_integer("resamples", 10_000, "Bootstrap resamples (6 seeds or more).")
  if g.identity:
    i = g.identity
    flags.DEFINE_list("actor_counts", [], f"Also run {i.method} with each of these actor counts "
                      f"(Tables 4/5; the protocol's: {list(i.counts)}).")
    flags.DEFINE_string("identity_task", i.task, "--actor_counts: the task.")
    flags.DEFINE_integer("identity_seed", i.seed, "--actor_counts: the seed.")
    flags.DEFINE_integer("identity_steps", i.steps, "--actor_counts: env steps.")


def check_methods(methods: Iterable[str], known: Iterable[str]) -> None:
  """One line naming the unknown methods of `--methods` and the known ones."""
  unknown = sorted(set(methods) - set(known))
  if unknown:
    raise grid.GridError(f"--methods: unknown {unknown}; expected some of {sorted(known)}")


def check_tasks(flag: str, tasks: Iterable[str], known: Sequence[str], what: str) -> None:
  """One line naming the unknown tasks (games, scenarios) of `flag` and the known ones."""
  unknown = sorted(set(tasks) - set(known))
  if unknown:
    raise grid.GridError(f"{flag}: unknown {unknown}; {what} are {list(known)}")


def parse_seeds(values: Iterable[str]) -> List[int]:
  """`--seeds` as integers (a bad one: one line)."""
  try:
    return [int(s) for s in values]
  except ValueError as e:
    raise grid.GridError(f"--seeds: {e}") from None


def _budgets(values: Sequence[str], g: Optional[Grid] = None,
             tasks: Sequence[Optional[str]] = ()) -> Dict[Optional[str], int]:
  """`--steps`: N (every task: key None) or TASK=N items (N's range is the launcher's check), each
  TASK one of `tasks`; with `g`, less the ones that equal the protocol's budgets (on protocol)."""
  out: Dict[Optional[str], int] = {}
  for v in values:
    name, _, n = v.rpartition("=")
    if not n.isdigit():
      raise grid.GridError(f"--steps: expected STEPS or TASK=STEPS, got {v!r}")
    if g is not None and name and name not in tasks:
      raise grid.GridError(f"--steps: {name!r} is not a task this run has ({list(tasks)})")
    out[name or None] = int(n)
  if g is not None:
    same = {k: v for k, v in out.items() if all(
        g.task(t).budget == v for t in (tasks if k is None else [k]))}
    out = {k: v for k, v in out.items() if k not in same}
  return out


def _counts(values: Sequence[str]) -> List[int]:
  """`--actor_counts` as integers >= 1 (a bad one: one line)."""
  if not all(v.isdigit() and int(v) >= 1 for v in values):
    raise grid.GridError(f"--actor_counts: expected integers >= 1, got {list(values)}")
  return [int(v) for v in values]


def off_protocol(same: Sequence[str] = (),
                 within: Optional[Mapping[str, Iterable[Any]]] = None) -> List[str]:
  """What makes the grid the command line asks for not its protocol's, each named (empty: it is
  the protocol's): `--results` another folder than its default (from the repository's root), a
  flag of `same` (budgets, layouts, extra flags) off its default, a value of a list flag
  of `within` (name -> the protocol's values: seeds, methods) outside them. Runs of a subset of
  the protocol's seeds and methods in its folder are how it is filled, and count as its own."""
  values = flags.FLAGS
  why = []
  if os.path.realpath(values.results) != os.path.realpath(
      os.path.join(provenance.ROOT, values["results"].default)):
    why.append(f"--results={values.results}")
  why += [f"--{name}={values[name].serialize().split('=', 1)[-1]}" for name in same
          if values[name].value != values[name].default]
  for name, allowed in (within or {}).items():
    outside = [str(v) for v in values[name].value if str(v) not in {str(a) for a in allowed}]
    if outside:
      why.append(f"--{name} {','.join(outside)}")
  return why


def doc_root(why: Sequence[str]) -> Optional[str]:
  """The repository's root, whose README.md and docs/ hold a grid's blocks, or None (no block
  written). They are written for the protocol's grid under `--readme` (on by default). A grid off
  its protocol (`why`, from `off_protocol`) writes them only when `--readme` is on the command
  line, and says so in one line otherwise: README never shows a toy grid unasked."""
  asked = flags.FLAGS["readme"]
  if not asked.value or (why and not asked.present):
    if asked.value:
      print(f"note: not the protocol's grid ({'; '.join(why)}): README.md and docs/ are left as "
            "they are (--readme writes them, naming this grid's results.json)", file=sys.stderr)
    return None
  return provenance.ROOT


def main(g: Grid, argv: Sequence[str]) -> List[str]:
  """Runs what is missing of the grid the flags ask for, then the report; returns the failed
  runs' logdirs."""
  if len(argv) > 1:
    raise grid.GridError(f"unexpected arguments: {' '.join(argv[1:])}")
  check_methods(FLAGS.methods, [m.name for m in g.methods])
  tasks = [None] if not any(t.name for t in g.tasks) else getattr(FLAGS, g.task_flag)
  if any(t.name for t in g.tasks) and not g.make_task:
    check_tasks(f"--{g.task_flag}", tasks, [t.name for t in g.tasks], "the protocol's tasks")
  seeds, budgets = parse_seeds(FLAGS.seeds), _budgets(FLAGS.steps, g, tasks)
  options = {o.name: FLAGS[o.name].value for o in g.options}

  def make(task, method, seed, steps=None):
    return g.run_flags(task, method, seed, steps or budgets.get(task, budgets.get(None)),
                       options)
  runs = []
  for task in tasks:  # the grid's method order (a block's order is seeded by its methods)
    methods = [m.name for m in g.methods
               if m.name in FLAGS.methods and task in (m.tasks or (task,))]
    runs += [r for r in blocks.paired_blocks(
        [task], methods, seeds or list(g.task(task).seeds or (0, 1, 2)), make)
             if (r.task, r.method) not in g.borrowed]
  if g.seed_major:  # every task's block of a seed before the next seed's
    runs.sort(key=lambda r: r.seed)
  identity = []
  if g.identity:
    i, n = g.identity, _counts(FLAGS.actor_counts)
    identity = [(os.path.join(FLAGS.results, "actor_counts", f"actors{k}"), dict(make(
        FLAGS.identity_task, i.method, FLAGS.identity_seed, FLAGS.identity_steps), num_actors=k))
                for k in n]
  failed = []
  if g.paper and FLAGS.benchmark:
    repeats, steps = g.paper.benchmark
    blocks.throughput_benchmark(FLAGS.results, tasks, [m for m in g.paper.benchmarked
                                                       if m in FLAGS.methods],
                                lambda t, m, k: make(t, m, 0, k), repeats, steps)
  elif not FLAGS.report_only:
    for line in blocks.before_runs(runs, FLAGS.results,
                                   [m.name for m in g.methods if m.default], FLAGS.host_probe_s):
      print(line, flush=True)
    failed = blocks.run_all(runs, FLAGS.results, FLAGS.shared_machine, dry_run=FLAGS.dry_run)
    for logdir, values in identity:
      if not launch.launch(values, logdir, dry_run=FLAGS.dry_run) and not FLAGS.dry_run:
        failed.append(logdir)
  if FLAGS.dry_run:
    return []
  protocol_seeds = {s for t in g.tasks for s in t.seeds}
  why = off_protocol(same=tuple(options), within={
      "seeds": protocol_seeds, "methods": [m.name for m in g.methods]})
  root = doc_root(why + [f"--steps={','.join(FLAGS.steps)}"] * bool(budgets))
  if g.paper:
    deviations = {"budget" if k is None else k: v for k, v in budgets.items()}
    out = driver.report(g, FLAGS.results, root, FLAGS.resamples,
                        dict(deviations, **{k: v for k, v in options.items()
                                            if v != FLAGS[k].default}), options)
  else:
    out = driver.report(g, FLAGS.results, root)
  if root and g.name in headline.GRIDS:  # the repository's README: its headline too
    headline.refresh(root)
    print(f"wrote {headline.JSON}, README's headline and docs/results.md's details")
  print(render_markdown(g, out), end="")
  for p in out.get("plots") or []:
    print(f"wrote {p}")
  return failed
