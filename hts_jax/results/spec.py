"""A grid as data: `results/<grid>/grid.toml` (its methods, tasks, seeds, budgets, targets, the
reference of its time ratios, its tables' columns and the blocks they go to, its named metrics and
its curves) and `results/<grid>/PROTOCOL.md.in` (the protocol's prose, with `{{methods}}`,
`{{tasks}}` and `{{reference}}` where the tables and values rendered from the TOML go), read into
frozen dataclasses by `load`. A cell or a metric the TOML names is a function of
`hts_jax.results.named`, or a macro of the grid's `results/<grid>/text.md.in` (its wording: a
table's layout, a cell, a row's label, the paper's figure beside a cell); the driver
(`hts_jax.results.driver`) runs and reports the grid and `hts_jax.results.render` writes its
tables and PROTOCOL.md.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from hts_jax.results import compare, grid, named, paper_parts, provenance, publish

RESULTS = os.path.join(provenance.ROOT, "results")


def names() -> List[str]:
  """The grids that are data: the folders of results/ holding a grid.toml."""
  return sorted(n for n in os.listdir(RESULTS)
                if os.path.exists(os.path.join(RESULTS, n, "grid.toml")))


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
class Context:
  """What a named function may read of its grid: its name (`named.words` renders its wording),
  its methods, its tasks, the TOML's [settings]."""
  grid: str = ""
  methods: Tuple[Method, ...] = ()
  tasks: Tuple[Task, ...] = ()
  settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  reference: str = ""  # the method time ratios (and a study's verdicts) are taken against

  def task(self, name: Optional[str]) -> Task:
    return next(t for t in self.tasks if t.name == name)


CONTEXT = dataclasses.field(default_factory=Context, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Column:
  """A table's column: `cell` names a function of `named.CELLS`, given this column (its `key`,
  `fmt` and per-task `values`) and a results.json cell with its task."""
  header: str
  kind: str
  key: str = ""
  fmt: str = "{:,.0f}"
  values: Mapping[str, str] = dataclasses.field(default_factory=dict)
  ctx: Context = CONTEXT

  def cell(self, c: Dict[str, Any]) -> str:
    return named.CELLS[self.kind](self, c)


@dataclasses.dataclass(frozen=True)
class Section:
  """A paper-style table: a row per task, a column per method of `methods` (None: every method)
  with runs there, each cell of the task's summary row of the method: `kind`, a function of
  `named.SECTIONS` or else a macro of the grid's text.md.in (given `sec`, `task`, `m`, `r` and
  `out`, the report), after "(k of n seeds) " where the method has fewer (`partial`), then the
  paper's figure `figure` of (task, method) where it has one, worded by the grid's macro
  `paper_<figure>` (given `v`). A title holding `{host}` names the throughput benchmark's host
  and leaves the section out before the benchmark ran; `title_when` names a function of
  `named.TITLES` that gives the title for the report, or None (the section left out). `data`:
  the report's part it tabulates ({task: {"methods": {method: row}}}), `row_fn` its rows' first
  cells (`named.ROWS`, else a macro given `task` and `s`), `head` its first column's header
  (else the table's)."""
  title: str
  kind: str
  fmt: str = "{:.1f}"
  methods: Optional[Tuple[str, ...]] = None
  tasks: Optional[Tuple[str, ...]] = None  # its rows (None: every task)
  among: Tuple[str, ...] = ()  # the methods a cell's second part is for (a macro's)
  figure: str = ""
  partial: bool = False
  title_when: str = ""
  data: str = "tasks"
  row_fn: str = ""
  head: Optional[str] = None
  ctx: Context = CONTEXT

  @property
  def row(self):
    if not self.row_fn:
      return None
    return named.ROWS.get(self.row_fn) or (
        lambda task, s: named.words(self.ctx.grid, self.row_fn, task=task, s=s))

  def title_in(self, out: Dict[str, Any]) -> Optional[str]:
    if self.title_when:
      return named.TITLES[self.title_when](self.title, out)
    if "{host}" in self.title:
      return out.get("throughput") and self.title.format(host=out["throughput"].get("host", "?"))
    return self.title

  def cell(self, task: str, method: str, r: Dict[str, Any], out: Dict[str, Any]) -> str:
    kind = named.SECTIONS.get(self.kind)
    text = (kind(self, task, method, r, out) if kind else
            named.words(self.ctx.grid, self.kind, sec=self, task=task, m=method, r=r, out=out))
    if self.partial:
      text = paper_parts.partial(out[self.data][task], method) + text
    paper = ((out.get("paper") or {}).get(task) or {}).get(self.figure) or {}
    if method in paper:
      figure = named.words(self.ctx.grid, f"paper_{self.figure}", v=paper[method])
      text += f" (paper: {figure})"
    return text


@dataclasses.dataclass(frozen=True)
class Table:
  """A rendered table: a row per task and method, or (`pivot`) a row per task and a column per
  method holding the first column's cell, or a paper-style grid's `sections` (`by_task`: a table
  per task, a row per section; `row_label` a task's row: `{task}` (`{short}`), `{budget}` and
  `{seeds}` of its summary). Laid out as its `note`, the source line, the table and the
  aggregates line, or by `text`, a macro of the grid's text.md.in given these parts (`t`), the
  report (`out`) and the grid's Context (`ctx`). The grid's first table is table.md (tables.md
  for a paper-style grid)."""
  columns: Tuple[Column, ...]
  note: str = ""
  block: Optional[publish.Block] = None
  doc: str = "README.md"
  pivot: bool = False
  aggregates: bool = True
  sections: Tuple[Section, ...] = ()
  head: str = "task"
  row_label: str = ""
  by_task: bool = False
  text: str = ""
  ctx: Context = CONTEXT

  def layout(self, parts: Dict[str, str], out: Dict[str, Any]) -> str:
    """The table's text from its `parts`: `note`, `source`, `body` and `aggregates` ('' where
    none)."""
    text = (named.words(self.ctx.grid, self.text, t=parts, out=out, ctx=self.ctx) if self.text
            else named.layout(parts))
    return text.rstrip("\n") + "\n"

  @property
  def row(self):
    if not self.row_label:
      return None
    return lambda task, s: self.row_label.format(
        task=task, short=paper_parts.short(task), budget=s["budget"],
        seeds=paper_parts.seeds_of(s))


@dataclasses.dataclass(frozen=True)
class Option:
  """A grid's own flag (`--<name>`, typed as `default`: int, str or list), handed to the grid's
  `adjust` for every run; off its default, the grid is off its protocol."""
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
class Paper:
  """What a paper-style grid's report adds (`paper_report`: the paper's metrics per task and
  method, paired ratios, the final time metric by `spec.limit_method`'s clock)."""
  spec: compare.Spec
  figures: Mapping[str, Any]  # the paper's own numbers for these tasks, shown beside ours
  benchmark: Tuple[int, int]  # `--benchmark`: repeats and env steps per method and task
  benchmarked: Tuple[str, ...]  # the methods the benchmark runs
  curves: Tuple[str, str, Optional[Tuple[float, float]]]  # their file prefix, y label, limits
  settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # more protocol values
  panel: Callable[[str], str] = str  # a task's curve panel's title
  # (results, the report, resamples) -> more parts of the report, computed from its runs.
  extras: Optional[Callable[[str, Dict[str, Any], int], Dict[str, Any]]] = None


@dataclasses.dataclass(frozen=True)
class Plot:
  """curves.png: a panel per task, a band per method over the runs' `series` ([[x, y]])."""
  series: str
  ylabel: str
  hline: bool = False  # the task's target as a line


@dataclasses.dataclass(frozen=True)
class Grid:
  """A grid of training runs: its methods and tasks, run as paired blocks by the driver
  (`hts_jax.results.driver`), reported as results.json and its tables (`render`); the named
  functions it uses read its `ctx`."""
  name: str
  title: str
  results: str  # its folder, from the repository's root
  methods: Tuple[Method, ...]
  tasks: Tuple[Task, ...]
  reference: str  # the method time ratios are taken against
  tables: Tuple[Table, ...]
  template: str  # PROTOCOL.md.in
  about: str = ""  # what it runs (`hts-reproduce <grid> --help`)
  ctx: Context = CONTEXT
  run_metrics: Tuple[str, ...] = ()  # more per-run fields: functions of `named.RUN`
  cell_metrics: Tuple[str, ...] = ()  # more per-cell fields: functions of `named.CELL`
  report_metrics: Tuple[str, ...] = ()  # more parts of results.json: functions of `named.REPORT`
  aggregate: Optional[str] = None  # a per-run metric (higher better) aggregated across tasks
  curves: Optional[Plot] = None
  task_flag: str = "tasks"
  paper: Optional[Paper] = None
  options: Tuple[Option, ...] = ()
  adjust_flags: str = ""  # (a run's flags, its method, the options' values) -> its flags:
  # a function of `named.ADJUST` (a bad value: GridError)
  identity: Optional[Identity] = None
  # A task outside the protocol (budget 0, no seeds): `name` for `{task}` in these fields.
  task_template: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  seed_major: bool = False  # run every task's block of a seed before the next seed's
  # (task, method) -> its runs kept elsewhere, from `results` ("{seed}" in it): they count, and
  # are never run by this grid.
  borrowed: Mapping[Tuple[str, str], str] = dataclasses.field(default_factory=dict)

  def method(self, name: str) -> Method:
    return next(m for m in self.methods if m.name == name)

  def task(self, name: Optional[str]) -> Task:
    found = [t for t in self.tasks if t.name == name]
    return found[0] if found or not self.task_template else self.make_task(name)

  @property
  def make_task(self):
    return self._make_task if self.task_template else None

  def _make_task(self, name: str) -> Task:
    t = self.task_template
    fill = lambda v: v.format(task=name) if isinstance(v, str) else v  # noqa: E731
    return Task(name, fill(t["env"]), {k: fill(v) for k, v in t["flags"].items()}, 0, (), 0,
                evals=t.get("evals", 0))

  def run_flags(self, task: Optional[str], method: str, seed: int, steps: Optional[int] = None,
                options: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """One run's launcher flags: the task's, the method's over them, the seed and budget, then
    adjusted (`adjust_flags`) under the options (their defaults where not given)."""
    t = self.task(task)
    if steps is None and t.budget < 1:
      raise grid.GridError(f"no budget for {task!r}: give --steps={task}=N")
    steps = t.budget if steps is None else steps
    cadence = {"eval_every": max(1, steps // t.evals)} if t.evals else {}
    out = {**t.flags, **cadence, **self.method(method).flags, "seed": seed, "total_steps": steps}
    if self.adjust_flags:
      out = named.ADJUST[self.adjust_flags](out, method, {
          **{o.name: o.default for o in self.options}, **(options or {})})
    return out

  def extra(self, kind: str, arg: Any) -> Dict[str, Any]:
    """More fields of a run (`kind` "run", of a `grid.Finished`), a cell ("cell", of its runs)
    or results.json ("report", of the rest of it): the grid's `<kind>_metrics`, functions of
    `named.RUN`, `named.CELL` or `named.REPORT`, merged."""
    registry = {"run": named.RUN, "cell": named.CELL, "report": named.REPORT}[kind]
    return {k: v for name in getattr(self, f"{kind}_metrics")
            for k, v in registry[name](self.ctx, arg).items()}

  def plot(self, results: str, runs: List[Dict[str, Any]]) -> None:
    if self.curves:
      named.plot(self, results, runs)


def _tuples(d: Dict[str, Any], *keys: str) -> Dict[str, Any]:
  """`d` with the lists under `keys` as tuples."""
  return {k: tuple(v) if k in keys else v for k, v in d.items()}


def _table(t: Dict[str, Any], grid_name: str, ctx: Context) -> Table:
  """A table of the TOML; a column's `values` may name a table of its [settings] (per-task
  text)."""
  block = t.pop("block", None)
  columns = tuple(Column(**dict(c, ctx=ctx, **(
      {"values": ctx.settings[c["values"]]} if isinstance(c.get("values"), str) else {})))
                  for c in t.pop("columns", ()))
  sections = tuple(Section(**_tuples(x, "methods", "tasks", "among"), ctx=ctx)
                   for x in t.pop("sections", ()))
  return Table(columns=columns, sections=sections, ctx=ctx,
               block=publish.Block(block, grid_name) if block else None, **t)


def _nulls(x: Any) -> Any:
  """The paper's figures with "-" (none) as None."""
  if isinstance(x, dict):
    return {k: _nulls(v) for k, v in x.items()}
  if isinstance(x, list):
    return tuple(None if v == "-" else _nulls(v) for v in x)
  return x


def _paper(p: Dict[str, Any], methods: Tuple[Method, ...]) -> Paper:
  settings, curves = p.get("settings", {}), p["curves"]
  return Paper(spec=compare.Spec(
      methods=p.get("methods", [m.name for m in methods]), reference=p["reference"],
      limit_method=p["limit_method"], targets=named.targets(settings),
      scenarios=tuple(p.get("scenarios", ())), baseline=p.get("baseline", "")),
      figures=_nulls(p.get("figures", {})),
      benchmark=tuple(p["benchmark"]), benchmarked=tuple(p["benchmarked"]),
      curves=(curves["prefix"], curves["ylabel"],
              tuple(curves["ylim"]) if "ylim" in curves else None), settings=settings,
      panel=named.PANELS[p.get("panel", "task")],
      extras=named.EXTRAS[p["extras"]] if "extras" in p else None)


def load(name: str, root: str = RESULTS) -> Grid:
  """`<root>/<name>/grid.toml` and its PROTOCOL.md.in as a `Grid`."""
  folder = os.path.join(root, name)
  with open(os.path.join(folder, "grid.toml"), "rb") as f:
    d = tomllib.load(f)
  with open(os.path.join(folder, "PROTOCOL.md.in")) as f:
    template = f.read()
  methods = tuple(Method(**dict(m, tasks=tuple(m["tasks"]) if "tasks" in m else None))
                  for m in d.pop("methods"))
  tasks = tuple(Task(**dict(t, name=t.get("name"), seeds=tuple(t["seeds"])))
                for t in d.pop("tasks"))
  ctx = Context(name, methods, tasks, d.pop("settings", {}), d["reference"])
  tables = tuple(_table(t, name, ctx) for t in d.pop("tables"))
  for key in ("run_metrics", "cell_metrics", "report_metrics"):
    d[key] = tuple(d.get(key, ()))
  d.update(curves=Plot(**d.pop("plot")) if "plot" in d else None,
           paper=_paper(d["paper"], methods) if "paper" in d else None,
           borrowed={(b["task"], b["method"]): b["path"] for b in d.pop("borrowed", ())},
           options=tuple(Option(**o) for o in d.pop("options", ())),
           identity=Identity(**_tuples(d.pop("identity"), "counts")) if "identity" in d else None)
  return Grid(name=name, results=f"results/{name}", methods=methods, tasks=tasks, tables=tables,
              template=template, ctx=ctx, **d)
