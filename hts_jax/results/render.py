"""The one renderer of the grids (`hts_jax.results.spec`): a table with its note and source line
(rows per task and method, a pivot, or a paper-style grid's sections) from results.json only,
table.md (tables.md), the aggregates line, and PROTOCOL.md from the grid's PROTOCOL.md.in with
the methods' and tasks' tables rendered from its grid.toml, so the protocol has one source."""

from __future__ import annotations

import os
from typing import Any, Dict

from hts_jax.analysis import stats
from hts_jax.results import compare, publish
from hts_jax.results.spec import Grid, Table


# Where the rule behind a table's "k of n runs flagged shared" is written out in full (once, not
# under every table): stats.py's docstring, and docs/results.md's statistics rules.
SHARED_RULE = ("results.json's `shared`; the statistics rules, `hts_jax/analysis/stats.py`, "
               "say which figures leave them out")


def render_table(g: Grid, t: Table, out: Dict[str, Any]) -> str:
  """One table with its note, source line and aggregates line (`Table.layout`)."""
  tasks = len(g.tasks) > 1
  if t.sections:
    body = _sections(g, t, out)
  elif t.pivot:
    methods = [m.name for m in g.methods if any(m.name in c["methods"]
                                                for c in out["tasks"].values())]
    headers = ["task", *methods, *(c.header for c in t.columns[1:])]
    rows = [[task, *(t.columns[0].cell(dict(s["methods"][m], task=task))
                     if m in s["methods"] else "-" for m in methods),
             *(c.cell({"task": task}) for c in t.columns[1:])]
            for task, s in out["tasks"].items()]
  else:
    headers = [*(["task"] if tasks else []), "method", *(c.header for c in t.columns)]
    rows = [[*([task] if tasks else []), method, *(c.cell(dict(cell, task=task))
                                                  for c in t.columns)]
            for task, s in out["tasks"].items() for method, cell in s["methods"].items()]
  if not t.sections:
    body = stats.markdown(headers, rows)
  shared = [r for r in out["runs"] if r.get("shared")]
  source = (f"Source: {publish.source(out, os.path.join(g.results, 'results.json'))}; "
            f"{len(shared)} of {len(out['runs'])} runs flagged shared ({SHARED_RULE}).")
  aggregates = compare.aggregates_line(out.get("aggregates"), lambda m: g.method(m).header)
  return t.layout({"note": t.note, "source": source, "body": body,
                   "aggregates": aggregates if t.aggregates else ""}, out)


def _sections(g: Grid, t: Table, out: Dict[str, Any]) -> str:
  """A paper-style grid's tables (`Table.sections`) over its report's `tasks`."""
  summ, parts = out["tasks"], []
  if not summ:
    return "No finished runs yet.\n"
  row = t.row or (lambda task, s: f"{task} ({s['budget']:,})")
  for sec in ([] if t.by_task else t.sections):
    title = sec.title_in(out)
    here = {k: s for k, s in (out.get(sec.data) or {}).items()
            if sec.tasks is None or k in sec.tasks}
    methods = [m for m in g.methods if (sec.methods is None or m.name in sec.methods)
               and any(m.name in s["methods"] for s in here.values())]
    if title is None or not methods:
      continue
    rows = [[(sec.row or row)(k, s), *(sec.cell(k, m.name, s["methods"][m.name], out)
                                       if s["methods"].get(m.name) is not None else ""
                                       for m in methods)] for k, s in here.items()]
    parts.append((f"**{title}**\n\n" if title else "")
                 + stats.markdown([sec.head or t.head, *(m.header for m in methods)], rows))
  for k, s in (summ.items() if t.by_task else ()):  # a row per section of `tasks` only
    methods = [m for m in g.methods if m.name in s["methods"]]
    secs = [(sec.title_in(out), sec) for sec in t.sections
            if sec.data == "tasks" and (sec.tasks is None or k in sec.tasks)]
    rows = [[title, *(sec.cell(k, m.name, s["methods"][m.name], out)
                      if sec.methods is None or m.name in sec.methods else "" for m in methods)]
            for title, sec in secs if title is not None]
    parts.append(f"**{row(k, s)}**\n\n" + stats.markdown(["", *(m.header for m in methods)], rows))
  return "\n".join(parts)


def table_file(g: Grid) -> str:
  """The file the grid's first table goes to beside results.json."""
  return "tables.md" if g.paper else "table.md"


def render_markdown(g: Grid, out: Dict[str, Any]) -> str:
  """table.md: the grid's first table."""
  return render_table(g, g.tables[0], out)


def methods_table(g: Grid) -> str:
  """PROTOCOL.md's methods: name, flags over each task's, what it is."""
  return stats.markdown(["name", "flags over each task's", "what it is"],
                        [[f"`{m.name}`", " ".join(f"`--{k}={v}`" for k, v in m.flags.items()),
                          m.label + (f" (only on {', '.join(m.tasks)})" if m.tasks else "")]
                         for m in g.methods]).rstrip()


def tasks_table(g: Grid) -> str:
  """PROTOCOL.md's tasks: env, flags, budget, seeds, evaluation cadence, target."""
  return stats.markdown(["task", "env", "flags", "env steps", "seeds", "evaluations", "target"],
                        [[str(t.name or "-"), f"`{t.env}`",
                          " ".join(f"`--{k}={v}`" for k, v in t.flags.items()),
                          f"{t.budget:,}", ", ".join(map(str, t.seeds)),
                          f"every {t.eval_every:,} env steps",
                          "-" if t.target is None else
                          f"{t.target:g} (running average of {t.window})"]
                         for t in g.tasks]).rstrip()


def protocol_markdown(g: Grid) -> str:
  """PROTOCOL.md: the grid's PROTOCOL.md.in with its methods' and tasks' tables and its
  reference method."""
  return (g.template.replace("{{methods}}", methods_table(g))
          .replace("{{tasks}}", tasks_table(g)).replace("{{reference}}", g.reference))
