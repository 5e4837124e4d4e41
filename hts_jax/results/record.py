r"""Grids as records (issue 52): one `Grid` describes a grid of training runs (its methods, its
tasks with their seeds, budgets and targets, the reference method of its time ratios, its table's
columns and where the table goes, its protocol's text and "Changes" log), and this module runs
and reports every grid so described:

- the flags of `hts-reproduce <grid>` derive from the record (`define_flags`);
- one driver (`main`) runs the paired blocks one at a time (`grid.paired_blocks`, `grid.run_all`)
  and marks the runs made beside other work (`--shared_machine`);
- one report (`report`) reads every finished run into per-run records and per-(task, method)
  cells under the statistics rules (`hts_jax.analysis.stats`: per-seed values, [min, max] below 6
  seeds, censored misses, floors, shared runs left out of time ratios, geometric-mean ratios over
  blocks, the commit holding the runs), writes results.json, and renders the table (tabulate)
  into table.md and the record's README / docs blocks (`publish`);
- `protocol_markdown` renders PROTOCOL.md from the record, so the protocol has one source.

A grid is then one data module (`hts_jax.results.memory`) with `GRID = Grid(...)`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import flags

from hts_jax.analysis import metrics, stats
from hts_jax.results import grid, provenance, publish

SHARED = "shared_machine.json"  # a run's mark that other work shared the machine
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Method:
  name: str
  flags: Mapping[str, Any]  # over its task's flags
  label: str  # what it is (PROTOCOL.md's methods table)


@dataclasses.dataclass(frozen=True)
class Task:
  name: Optional[str]  # runs/<task>/...; None: a one-task grid (runs/<method>/seed<k>)
  env: str
  flags: Mapping[str, Any]  # preset, env, evaluation cadence
  budget: int
  seeds: Tuple[int, ...]
  eval_every: int
  target: Optional[float] = None  # env steps (and time) to a running average of it
  window: int = 10  # evaluations in that running average

  @property
  def first_window(self) -> int:
    """Env steps of the earliest evaluation that can reach the target (a floor there)."""
    return self.window * self.eval_every


@dataclasses.dataclass(frozen=True)
class Column:
  header: str
  cell: Callable[[Dict[str, Any]], str]  # a results.json cell -> its text


@dataclasses.dataclass(frozen=True)
class Grid:
  name: str
  title: str
  results: str  # the protocol's folder, from the repository's root
  question: str  # what the grid asks (PROTOCOL.md's first section)
  methods: Tuple[Method, ...]
  tasks: Tuple[Task, ...]
  reference: str  # the method time ratios are taken against
  columns: Tuple[Column, ...]
  notes: Callable[[Dict[str, Any]], str]  # the paragraph above the table (what its cells are)
  readme: Optional[publish.Block] = None  # the README block the table goes to
  fixed: str = ""  # when the protocol was fixed
  changes: Tuple[str, ...] = ()  # PROTOCOL.md's "Changes" log, dated
  plot: Optional[Callable[[str, List[Dict[str, Any]]], None]] = None  # (results, runs): figures

  def method(self, name: str) -> Method:
    return next(m for m in self.methods if m.name == name)

  def task(self, name: Optional[str]) -> Task:
    return next(t for t in self.tasks if t.name == name)

  def run_flags(self, task: Optional[str], method: str, seed: int,
                steps: Optional[int] = None) -> Dict[str, Any]:
    """One run's launcher flags: the task's, the method's over them, the seed and budget."""
    t = self.task(task)
    return {**t.flags, **self.method(method).flags, "seed": seed,
            "total_steps": t.budget if steps is None else steps}


def define_flags(g: Grid) -> None:
  """`hts-reproduce <grid>`'s flags, from the record."""
  names = [t.name for t in g.tasks if t.name]
  if names:
    flags.DEFINE_list("tasks", names, f"Tasks, of {names}.")
  flags.DEFINE_list("methods", [m.name for m in g.methods],
                    f"Methods, of {[m.name for m in g.methods]}.")
  flags.DEFINE_list("seeds", [], "Seeds (default: each task's, PROTOCOL.md).")
  flags.DEFINE_integer("steps", None, "Env steps per run (default: each task's budget; another "
                       "makes a grid off its protocol, which does not write README).")
  flags.DEFINE_string("results", g.results, "Where runs and the report go.")
  flags.DEFINE_bool("report_only", False, "Only rewrite the report from the runs there are.")
  flags.DEFINE_bool("dry_run", False, "Print the runs still to do and the hours they would take.")
  flags.DEFINE_bool("readme", True, "Write README's block (the protocol's grid only, unless given "
                    "on the command line).")
  flags.DEFINE_string("shared_machine", "", "What else ran on the machine during the runs made "
                      "now (recorded beside each: their times are left out of ratios).")


def main(g: Grid, argv: Sequence[str]) -> List[str]:
  """Runs what is missing of the grid the flags ask for, then the report; returns the failed
  runs' logdirs."""
  if len(argv) > 1:
    raise grid.GridError(f"unexpected arguments: {' '.join(argv[1:])}")
  grid.check_methods(FLAGS.methods, [m.name for m in g.methods])
  tasks = [None] if not any(t.name for t in g.tasks) else FLAGS.tasks
  if any(t.name for t in g.tasks):
    grid.check_tasks("--tasks", tasks, [t.name for t in g.tasks], "the protocol's tasks")
  seeds = grid.parse_seeds(FLAGS.seeds)
  steps = FLAGS.steps
  runs = []
  for task in tasks:
    runs += grid.paired_blocks([task], FLAGS.methods, seeds or list(g.task(task).seeds),
                               lambda t, m, s: g.run_flags(t, m, s, steps))
  failed = []
  if not FLAGS.report_only:
    for run in runs:  # one at a time, each marked as it finishes
      logdir = run.logdir(FLAGS.results)
      fresh = not os.path.exists(os.path.join(logdir, "summary.json"))
      failed += grid.run_all([run], FLAGS.results, dry_run=FLAGS.dry_run)
      if fresh and FLAGS.shared_machine and os.path.exists(os.path.join(logdir, "summary.json")):
        with open(os.path.join(logdir, SHARED), "w") as f:
          json.dump({"note": FLAGS.shared_machine}, f)
  if FLAGS.dry_run:
    return []
  protocol_seeds = {s for t in g.tasks for s in t.seeds}
  readme, _ = publish.doc_paths(publish.off_protocol(
      same=("steps",), within={"seeds": protocol_seeds, "methods": [m.name for m in g.methods]}))
  out = report(g, FLAGS.results, readme)
  print(render_markdown(g, out), end="")
  return failed


def run_record(g: Grid, f: grid.Finished) -> Dict[str, Any]:
  """One finished run as results.json keeps it."""
  t, s = g.task(f.task), f.summary
  evals = s.get("eval") or []
  returns = [e["mean_return"] for e in evals]
  hit = (metrics.first_reached(returns, t.target, t.window)
         if t.target is not None and returns else None)
  marked = os.path.join(f.logdir, SHARED)
  note = json.load(open(marked))["note"] if os.path.exists(marked) else ""
  return {"task": f.task, "method": f.method, "seed": s["seed"], "env_steps": s["env_steps"],
          "logdir": os.path.relpath(os.path.abspath(f.logdir), provenance.ROOT),
          "final_eval": returns[-1] if returns else None,
          "best_eval": max(returns) if returns else None,
          "final_metric": sum(returns[-10:]) / len(returns[-10:]) if returns else None,
          "steps_to_target": evals[hit]["env_steps"] if hit is not None else None,
          "time_to_target_s": evals[hit]["wall_time_s"] if hit is not None else None,
          "floor": stats.is_floor(evals[hit]["env_steps"] if hit is not None else None,
                                  t.first_window),
          "sps": s["sps"], "wall_time_s": s["wall_time_s"],
          "param_sha256": s["param_sha256"][:16], **provenance.run_host(s), "marked": note,
          "evals": [[e["env_steps"], e["mean_return"]] for e in evals]}


def cell(g: Grid, runs: List[Dict[str, Any]], task: Optional[str], method: str
         ) -> Dict[str, Any]:
  """A (task, method) cell: per-seed values and their spreads; steps to the target censored at
  the budget; the time ratio of the reference over the method in the blocks (seeds) where
  neither run shared the machine."""
  t = g.task(task)
  mine = sorted((r for r in runs if r["task"] == task and r["method"] == method),
                key=lambda r: r["seed"])
  out: Dict[str, Any] = {"seeds": [r["seed"] for r in mine]}
  for key in ("final_eval", "best_eval", "final_metric", "sps"):
    values = [r[key] for r in mine if r[key] is not None]
    out[key] = stats.spread(values) if values else None
  if t.target is not None:
    steps = [stats.Censored.of(r["steps_to_target"], t.budget) for r in mine]
    out["steps_to_target"] = {
        "per_seed": [r["steps_to_target"] for r in mine], "floors": [r["floor"] for r in mine],
        "median": dataclasses.asdict(stats.censored_median(steps)) if steps else None,
        "reached": sum(not c.censored for c in steps)}
    ref = {r["seed"]: r for r in runs if r["task"] == task and r["method"] == g.reference}
    pairs = [(_time(ref[r["seed"]]), _time(r)) for r in mine
             if r["seed"] in ref and not r["shared"] and not ref[r["seed"]]["shared"]]
    out["time_ratio"] = None if method == g.reference else stats.ratio(pairs)
  return out


def _time(r: Dict[str, Any]) -> stats.Censored:
  """Wall time to the target, censored at the run's whole wall time where it missed."""
  return (stats.Censored(r["wall_time_s"], True) if r["time_to_target_s"] is None
          else stats.Censored(r["time_to_target_s"]))


def report(g: Grid, results: str, readme: Optional[str] = None) -> Dict[str, Any]:
  """results.json and table.md (and README's block where `readme`) from the finished runs."""
  tasked = any(t.name for t in g.tasks)
  runs = [run_record(g, f) for f in grid.finished_runs(
      results, tasks=tasked, methods=[m.name for m in g.methods])
          if f.task in [t.name for t in g.tasks]]
  for r in runs:
    r["shared"] = stats.shared(r, [q for q in runs if q["host"] == r["host"]],
                               marked=bool(r["marked"]))
  table = {t.name or t.env: {m.name: cell(g, runs, t.name, m.name) for m in g.methods
                         if any(r["task"] == t.name and r["method"] == m.name for r in runs)}
           for t in g.tasks}
  out = {"grid": g.name, "protocol": os.path.join(g.results, "PROTOCOL.md"), "runs": runs,
         "table": table, "hosts": list(dict.fromkeys(r["host"] for r in runs)),
         "runs_commit": stats.provenance_commit(provenance.ROOT, [r["logdir"] for r in runs])}
  if g.plot is not None and runs:
    g.plot(results, runs)
  os.makedirs(results, exist_ok=True)
  with open(os.path.join(results, "PROTOCOL.md"), "w") as f:
    f.write(protocol_markdown(g))
  render = lambda o: render_markdown(g, o)  # noqa: E731
  return publish.publish(results, out, render,
                         [(readme, g.readme, render)] if readme and g.readme else [])


def render_markdown(g: Grid, out: Dict[str, Any]) -> str:
  """The note and the table: one row per (task, method) with runs."""
  rows = [[*([task] if len(g.tasks) > 1 else []), method, *(c.cell(cells[method])
                                                           for c in g.columns)]
          for task, cells in out["table"].items() for method in cells]
  headers = [*(["task"] if len(g.tasks) > 1 else []), "method", *(c.header for c in g.columns)]
  commit = out.get("runs_commit")
  shared = [r for r in out["runs"] if r.get("shared")]
  source = (f"Source: {publish.source(out, os.path.join(g.results, 'results.json'))}; the runs "
            f"as committed in {f'`{commit[:12]}`' if commit else 'no commit yet'}; "
            f"{len(shared)} of {len(out['runs'])} runs shared the machine (results.json's "
            "`shared`; their times are left out of ratios).")
  return f"{g.notes(out)} {source}\n\n{stats.markdown(headers, rows)}"


def spread_cell(key: str, fmt: str = "{:,.0f}") -> Callable[[Dict[str, Any]], str]:
  """A column's cell: the spread of `key` as `mean [lo, hi] (its kind)`."""
  return lambda c: stats.interval_cell(c[key], fmt) if c.get(key) else "-"


def steps_cell(c: Dict[str, Any]) -> str:
  """Env steps to the target: the censored median and how many seeds reached it."""
  s = c.get("steps_to_target")
  if not s or s["median"] is None:
    return "-"
  median = stats.Censored(**s["median"])
  floors = sum(bool(f) for f in s["floors"])
  return (f"{median.cell()} ({s['reached']}/{len(s['per_seed'])} reached"
          + (f"; {floors} at the first window, a floor" if floors else "") + ")")


def ratio_cell(c: Dict[str, Any]) -> str:
  return stats.ratio_cell(c["time_ratio"]) if c.get("time_ratio") else "-"


def protocol_markdown(g: Grid) -> str:
  """PROTOCOL.md, rendered from the record."""
  lines = [f"# {g.title}: protocol", "",
           f"Fixed on {g.fixed}; rendered from `GRID` in `hts_jax/results/{g.name}.py` (a value "
           "is never changed after seeing results: a change goes under \"Changes\" with its date "
           "and reason).", "", "## Question", g.question, "", "## Methods",
           stats.markdown(["name", "flags over each task's", "what it is"],
                          [[f"`{m.name}`", " ".join(f"`--{k}={v}`" for k, v in m.flags.items()),
                            m.label] for m in g.methods]).rstrip(), "",
           "## Tasks, budgets, seeds, evaluation",
           stats.markdown(["task", "env", "flags", "env steps", "seeds", "evaluations", "target"],
                          [[str(t.name or "-"), f"`{t.env}`",
                            " ".join(f"`--{k}={v}`" for k, v in t.flags.items()),
                            f"{t.budget:,}", ", ".join(map(str, t.seeds)),
                            f"every {t.eval_every:,} env steps",
                            "-" if t.target is None else
                            f"{t.target:g} (running average of {t.window})"]
                           for t in g.tasks]).rstrip(), "",
           "## Blocks, statistics, hosts",
           f"A block is one (task, seed)'s runs of every method, back to back on one host in a "
           "seeded order (`provenance.block_order`). The report follows "
           "`hts_jax/analysis/stats.py`: per-seed values; [min, max] below 6 seeds; a miss "
           f"censored at the budget, never dropped; time ratios `{g.reference}` / method as "
           "geometric means over the blocks where neither run shared the machine (a run marked "
           "by its driver, or whose calibration or start load is well above its host kind's "
           "median); env steps at the first full window flagged as floors.", "", "## Changes"]
  lines += [f"- {c}" for c in g.changes] or ["- none"]
  return "\n".join(lines) + "\n"


def protocol_stale(g: Grid) -> bool:
  """Whether the committed PROTOCOL.md is not the record rendered."""
  path = os.path.join(provenance.ROOT, g.results, "PROTOCOL.md")
  return not os.path.exists(path) or open(path).read() != protocol_markdown(g)

