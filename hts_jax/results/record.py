r"""Grids as records (issue 52): one `Grid` describes a grid of training runs (its methods, its
tasks with their seeds, budgets and targets, the reference method of its time ratios, its tables'
columns or sections and where each goes, its protocol's text and "Changes" log, its own flags, a
paper-style report's parts), so that one driver (`hts_jax.results.driver`) runs and reports every
grid and one renderer (`hts_jax.results.render`) writes its tables and PROTOCOL.md. A grid is
then one data module (`hts_jax.results.memory`) with `GRID = Grid(...)`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from hts_jax.results import grid, publish
from hts_jax.results.spec import Method, Paper, Task  # pylint: disable=unused-import


@dataclasses.dataclass(frozen=True)
class Option:
  """A grid's own flag (`--<name>`, typed as `default`: int, str or list), handed to
  `Grid.adjust` for every run; off its default, the grid is off its protocol."""
  name: str
  default: Any
  help: str


@dataclasses.dataclass(frozen=True)
class Identity:
  """The paper's Tables 4/5 check: `method`'s run of `task` and `seed` for `steps` with each
  actor count of `--actor_counts` (the protocol's: `counts`), into <results>/actor_counts."""
  task: str
  method: str
  seed: int
  steps: int
  counts: Tuple[int, ...]


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
  data: str = "summary"  # the report's part it tabulates: {task: {"methods": {method: row}}}
  row: Optional[Callable[[str, Dict[str, Any]], str]] = None  # its rows' first cells (else the
  # table's)
  head: Optional[str] = None  # its first column's header (else the table's)

  def title_in(self, out: Dict[str, Any]) -> Optional[str]:
    """Its title for the report `out` (None: the section is left out)."""
    return self.title(out) if callable(self.title) else self.title


@dataclasses.dataclass(frozen=True)
class Table:
  """A rendered table: `rows` (a row per task and method, the columns given) or `pivot` (a row
  per task, a column per method holding `columns[0]`'s cell). The grid's first table is table.md."""
  columns: Tuple[Column, ...]
  notes: Callable[[Dict[str, Any]], str]  # the paragraph above it (what its cells are)
  block: Optional[publish.Block] = None  # the block of `doc` it goes to
  doc: str = "README.md"  # the markdown file holding the block, from the repository's root
  pivot: bool = False
  tail: Optional[Callable[[Dict[str, Any]], str]] = None  # a line under it
  after: Optional[Callable[[Dict[str, Any]], str]] = None  # paragraphs between it and `tail`
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
  options: Tuple[Option, ...] = ()
  # (a run's flags, its method, the options' values) -> its flags (a bad value: GridError).
  adjust: Optional[Callable[[Dict[str, Any], str, Mapping[str, Any]], Dict[str, Any]]] = None
  identity: Optional[Identity] = None
  make_task: Optional[Callable[[str], Task]] = None  # a task outside the protocol (budget 0)
  seed_major: bool = False  # run every task's block of a seed before the next seed's
  # (task, method) -> its runs kept elsewhere, from `results` ("{seed}" in it): they count, and
  # are never run by this grid.
  borrowed: Mapping[Tuple[str, str], str] = dataclasses.field(default_factory=dict)
  report_extra: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None  # (report) -> more

  def method(self, name: str) -> Method:
    return next(m for m in self.methods if m.name == name)

  def task(self, name: Optional[str]) -> Task:
    found = [t for t in self.tasks if t.name == name]
    if not found and self.make_task and name:
      return self.make_task(name)
    return found[0]

  def run_flags(self, task: Optional[str], method: str, seed: int, steps: Optional[int] = None,
                options: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """One run's launcher flags: the task's, the method's over them, the seed and budget, then
    `adjust`ed under the options (their defaults where not given)."""
    t = self.task(task)
    if steps is None and t.budget < 1:
      raise grid.GridError(f"no budget for {task!r}: give --steps={task}=N")
    steps = t.budget if steps is None else steps
    cadence = {"eval_every": max(1, steps // t.evals)} if t.evals else {}
    out = {**t.flags, **cadence, **self.method(method).flags, "seed": seed, "total_steps": steps}
    if self.adjust:
      out = self.adjust(out, method, {**{o.name: o.default for o in self.options},
                                      **(options or {})})
    return out
