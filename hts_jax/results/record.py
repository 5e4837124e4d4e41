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
from hts_jax.results import grid, provenance, publish


@dataclasses.dataclass(frozen=True)
class Method:
  name: str
  flags: Mapping[str, Any]  # over its task's flags
  label: str  # what it is (PROTOCOL.md's methods table)
  default: bool = True  # run by `hts-reproduce <grid>` without --methods (else opt-in)


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
class Table:
  """A rendered table: `rows` (a row per task and method, the columns given) or `pivot` (a row
  per task, a column per method holding `columns[0]`'s cell). The grid's first table is table.md."""
  columns: Tuple[Column, ...]
  notes: Callable[[Dict[str, Any]], str]  # the paragraph above it (what its cells are)
  block: Optional[publish.Block] = None  # README's or docs/results.md's block it goes to
  doc: str = "readme"  # which: "readme" or "docs"
  pivot: bool = False
  tail: Optional[Callable[[Dict[str, Any]], str]] = None  # a line under it


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


def aggregates_line(out: Dict[str, Any]) -> str:
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
  if t.pivot:
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
  shared = [r for r in out["runs"] if r.get("shared")]
  source = (f"Source: {publish.source(out, os.path.join(g.results, 'results.json'))}; "
            f"{len(shared)} of {len(out['runs'])} runs shared the machine (results.json's "
            "`shared`; their times are left out of ratios).")
  tail = " ".join(x for x in (aggregates_line(out), t.tail(out) if t.tail else "") if x)
  return (f"{t.notes(out)} {source}\n\n{stats.markdown(headers, rows)}"
          + (f"\n{tail}\n" if tail else ""))


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
