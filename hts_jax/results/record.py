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

A grid is then one data module (`hts_jax.results.memory`) with `GRID = Grid(...)`. This module
holds the record's types and renders it (tables, PROTOCOL.md); `hts_jax.results.driver` runs it
and writes its report.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from hts_jax.analysis import stats
from hts_jax.results import grid, paper_ratios, provenance, publish


@dataclasses.dataclass(frozen=True)
class Method:
  name: str
  flags: Mapping[str, Any]  # over its task's flags
  label: str  # what it is (PROTOCOL.md's methods table)
  default: bool = True  # run by `hts-reproduce <grid>` without --methods (else opt-in)
  short: str = ""  # its column's header in paper-style tables (default: its name)
  tasks: Optional[Tuple[str, ...]] = None  # the tasks whose blocks hold it (None: every task)

  @property
  def header(self) -> str:
    return self.short or self.name


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
  evals: int = 0  # evaluations per run: `eval_every` is then the run's steps over it

  @property
  def first_window(self) -> int:
    """Env steps of the earliest evaluation that can reach the target (a floor there)."""
    return self.window * self.eval_every


@dataclasses.dataclass(frozen=True)
class Column:
  header: str
  cell: Callable[[Dict[str, Any]], str]  # a results.json cell -> its text


@dataclasses.dataclass(frozen=True)
class Section:
  """A paper-style table (a grid with `paper`): a row per task of the report's `summary`, a
  column per method of `methods` (None: every method) with runs there, each cell
  `cell(task, method, the summary's row of the method, the report)`. A `title` that is a function
  of the report and gives None leaves the section out ("": no title line)."""
  title: Any  # str, or (report) -> str
  cell: Callable[[str, str, Dict[str, Any], Dict[str, Any]], str]
  methods: Optional[Tuple[str, ...]] = None
  tasks: Optional[Tuple[str, ...]] = None  # its rows (None: every task)


@dataclasses.dataclass(frozen=True)
class Paper:
  """What a paper-style grid's report adds (`paper_report`: the paper's metrics per task and
  method, paired ratios, the final time metric by `spec.limit_method`'s clock)."""
  spec: paper_ratios.Spec
  figures: Mapping[str, Any]  # the paper's own numbers for these tasks, shown beside ours
  benchmark: Tuple[int, int]  # `--benchmark`: repeats and env steps per method and task
  benchmarked: Tuple[str, ...]  # the methods the benchmark runs
  curves: Tuple[str, Optional[Tuple[float, float]]]  # the curves' y label and limits
  settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # more protocol values


@dataclasses.dataclass(frozen=True)
class Table:
  """A rendered table: `rows` (a row per task and method, the columns given) or `pivot` (a row
  per task, a column per method holding `columns[0]`'s cell). The grid's first table is table.md."""
  columns: Tuple[Column, ...]
  notes: Callable[[Dict[str, Any]], str]  # the paragraph above it (what its cells are)
  block: Optional[publish.Block] = None  # README's or docs/results.md's block it goes to
  doc: str = "readme"  # which: "readme" or "docs"
  pivot: bool = False
  tail: Optional[Callable[[Dict[str, Any]], str]] = None  # a line under it
  sections: Tuple[Section, ...] = ()  # a paper-style grid's tables, in order
  head: str = "task"  # their first column's header; `row(task, its summary)` its cells
  row: Optional[Callable[[str, Dict[str, Any]], str]] = None
  by_task: bool = False  # a table per task instead: a row per section, a column per method
  aggregates: bool = True  # the aggregates across tasks under it


@dataclasses.dataclass(frozen=True)
class Grid:
  name: str
  title: str
  results: str  # the protocol's folder, from the repository's root
  question: str  # what the grid asks (PROTOCOL.md's first section)
  methods: Tuple[Method, ...]
  tasks: Tuple[Task, ...]
  reference: str  # the method time ratios are taken against
  tables: Tuple[Table, ...]
  fixed: str = ""  # when the protocol was fixed
  changes: Tuple[str, ...] = ()  # PROTOCOL.md's "Changes" log, dated
  plot: Optional[Callable[[str, List[Dict[str, Any]]], None]] = None  # (results, runs): figures
  # More per-run fields (from a finished run) and per-cell fields (from a cell's runs).
  run_extra: Optional[Callable[[grid.Finished], Dict[str, Any]]] = None
  cell_extra: Optional[Callable[[List[Dict[str, Any]]], Dict[str, Any]]] = None
  aggregate: Optional[str] = None  # a per-run metric (higher better) aggregated across tasks
  paper: Optional[Paper] = None  # a paper-style report (`paper_report`) instead of per-run cells
  prose: Tuple[Tuple[str, str], ...] = ()  # PROTOCOL.md's further sections: (heading, text)
  task_flag: str = "tasks"  # the flag that picks tasks (`--games` for games)

  def method(self, name: str) -> Method:
    return next(m for m in self.methods if m.name == name)

  def task(self, name: Optional[str]) -> Task:
    return next(t for t in self.tasks if t.name == name)

  def run_flags(self, task: Optional[str], method: str, seed: int,
                steps: Optional[int] = None) -> Dict[str, Any]:
    """One run's launcher flags: the task's, the method's over them, the seed and budget."""
    t = self.task(task)
    steps = t.budget if steps is None else steps
    cadence = {"eval_every": max(1, steps // t.evals)} if t.evals else {}
    return {**t.flags, **cadence, **self.method(method).flags, "seed": seed,
            "total_steps": steps}


def aggregates_line(g: Grid, out: Dict[str, Any]) -> str:
  """The aggregates across tasks as one line (empty where there are none)."""
  if g.paper:
    return paper_ratios.aggregates_line(out, lambda m: g.method(m).header)
  a = out.get("aggregates") or {"tasks": []}
  methods = [m for m in a if m not in ("tasks", "metric", "reference")]
  if not a["tasks"] or not methods:
    return ""
  return (f"Across tasks ({', '.join(a['tasks'])}; Agarwal et al. 2021, rliable's metrics; "
          f"{a['metric']} normalised by `{a['reference']}`'s median on each task; no interval at "
          "fewer than 6 seeds a task): " + "; ".join(
              f"`{m}` IQM {a[m]['iqm_normalised']:.2f}, P(beats `{a['reference']}`) "
              f"{a[m]['probability_of_improvement']:.2f}" for m in methods) + ".")


def render_table(g: Grid, t: Table, out: Dict[str, Any]) -> str:
  """One table with its note and source line."""
  tasks = len(g.tasks) > 1
  if t.sections:
    body = _sections(g, t, out)
  elif t.pivot:
    methods = [m.name for m in g.methods if any(m.name in c for c in out["table"].values())]
    headers = ["task", *methods, *(c.header for c in t.columns[1:])]
    rows = [[task, *(t.columns[0].cell(cells[m]) if m in cells else "-" for m in methods),
             *(c.cell({"task": task}) for c in t.columns[1:])]
            for task, cells in out["table"].items()]
  else:
    headers = [*(["task"] if tasks else []), "method", *(c.header for c in t.columns)]
    rows = [[*([task] if tasks else []), method, *(c.cell(dict(cells[method], task=task))
                                                  for c in t.columns)]
            for task, cells in out["table"].items() for method in cells]
  if not t.sections:
    body = stats.markdown(headers, rows)
  shared = [r for r in out["runs"] if r.get("shared")]
  source = (f"Source: {publish.source(out, os.path.join(g.results, 'results.json'))}; "
            f"{len(shared)} of {len(out['runs'])} runs shared the machine (results.json's "
            "`shared`; their times are left out of ratios).")
  tail = " ".join(x for x in (aggregates_line(g, out) if t.aggregates else "",
                               t.tail(out) if t.tail else "") if x)
  return f"{t.notes(out)} {source}\n\n{body}" + (f"\n{tail}\n" if tail else "")


def _sections(g: Grid, t: Table, out: Dict[str, Any]) -> str:
  """A paper-style grid's tables (`Table.sections`) over its report's `summary`."""
  summ, parts = out["summary"], []
  if not summ:
    return "No finished runs yet.\n"
  row = t.row or (lambda task, s: f"{task} ({s['budget']:,})")
  for sec in ([] if t.by_task else t.sections):
    title = sec.title(out) if callable(sec.title) else sec.title
    here = {k: s for k, s in summ.items() if sec.tasks is None or k in sec.tasks}
    methods = [m for m in g.methods if (sec.methods is None or m.name in sec.methods)
               and any(m.name in s["methods"] for s in here.values())]
    if title is None or not methods:
      continue
    rows = [[row(k, s), *(sec.cell(k, m.name, s["methods"][m.name], out)
                          if m.name in s["methods"] else "" for m in methods)]
            for k, s in here.items()]
    parts.append((f"**{title}**\n\n" if title else "")
                 + stats.markdown([t.head, *(m.header for m in methods)], rows))
  for k, s in (summ.items() if t.by_task else ()):
    methods = [m for m in g.methods if m.name in s["methods"]]
    secs = [(sec.title(out) if callable(sec.title) else sec.title, sec) for sec in t.sections]
    rows = [[title, *(sec.cell(k, m.name, s["methods"][m.name], out) for m in methods)]
            for title, sec in secs if title is not None]
    parts.append(f"**{row(k, s)}**\n\n" + stats.markdown(["", *(m.header for m in methods)], rows))
  return "\n".join(parts)


def table_file(g: Grid) -> str:
  """The file the grid's first table goes to beside results.json."""
  return "tables.md" if g.paper else "table.md"


def render_markdown(g: Grid, out: Dict[str, Any]) -> str:
  """table.md: the grid's first table."""
  return render_table(g, g.tables[0], out)


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


# The Changes entry of the grids whose runs predate the statistics rules (issue 52).
STATS_RULES = (
    "2026-11-27, the statistics rules (issue 52; `hts_jax/analysis/stats.py`), applied to every "
    "committed run, no run redone: intervals over seeds are the [min, max] below 6 seeds (a '95%' "
    "percentile bootstrap over 3 seeds is exactly the [min, max] and covers about 75%); paired "
    "time ratios are geometric means over blocks, and a block where a run missed the target "
    "counts with that run's whole wall time, censored, which makes the ratio a bound (≥ / ≤; it "
    "was left out before, which favoured the method that missed); a run that shared the machine "
    "is flagged in results.json (`shared`: marked by its driver, or its calibration above 1.5x "
    "its host kind's median) and its block left out of the time ratios (its env steps and "
    "returns still count).")


def protocol_markdown(g: Grid) -> str:
  """PROTOCOL.md, rendered from the record."""
  lines = [f"# {g.title}: protocol", "",
           f"Fixed on {g.fixed}; rendered from `GRID` in `hts_jax/results/{g.name}.py` (a value "
           "is never changed after seeing results: a change goes under \"Changes\" with its date "
           "and reason).", "", "## Question", g.question, "", "## Methods",
           stats.markdown(["name", "flags over each task's", "what it is"],
                          [[f"`{m.name}`", " ".join(f"`--{k}={v}`" for k, v in m.flags.items()),
                            m.label + (f" (only on {', '.join(m.tasks)})" if m.tasks else "")]
                           for m in g.methods]).rstrip(), "",
           "## Tasks, budgets, seeds, evaluation",
           stats.markdown(["task", "env", "flags", "env steps", "seeds", "evaluations", "target"],
                          [[str(t.name or "-"), f"`{t.env}`",
                            " ".join(f"`--{k}={v}`" for k, v in t.flags.items()),
                            f"{t.budget:,}", ", ".join(map(str, t.seeds)),
                            f"every {t.eval_every:,} env steps",
                            "-" if t.target is None else
                            f"{t.target:g} (running average of {t.window})"]
                           for t in g.tasks]).rstrip(), "",
           *(x for heading, text in g.prose for x in (f"## {heading}", text, "")),
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
