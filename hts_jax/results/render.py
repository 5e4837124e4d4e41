"""The one renderer of the grid records (`hts_jax.results.record`): a table with its note and
source line (rows per task and method, a pivot, or a paper-style grid's sections), table.md,
the aggregates line, the cells of the statistics rules (`hts_jax.analysis.stats`) and
PROTOCOL.md, rendered from the record so the protocol has one source."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List

from hts_jax.analysis import stats
from hts_jax.results import compare, provenance, publish, spec
from hts_jax.results.record import Grid, Table


# Where the rule behind a table's "k of n runs flagged shared" is written out in full (once, not
# under every table): stats.py's docstring, and docs/results.md's statistics rules.
SHARED_RULE = ("results.json's `shared`; the statistics rules, `hts_jax/analysis/stats.py`, "
               "say which figures leave them out")


def aggregates_line(g: Grid, out: Dict[str, Any]) -> str:
  """The aggregates across tasks as one line (empty where there are none)."""
  return compare.aggregates_line(out.get("aggregates"), lambda m: g.method(m).header)


def render_table(g: Grid, t: Table, out: Dict[str, Any]) -> str:
  """One table with its note and source line."""
  tasks = len(g.tasks) > 1
  if t.sections:
    body = _sections(g, t, out)
  elif t.pivot:
    methods = [m.name for m in g.methods if any(m.name in c for c in out["table"].values())]
    headers = ["task", *methods, *(c.header for c in t.columns[1:])]
    rows = [[task, *(t.columns[0].cell(dict(cells[m], task=task)) if m in cells else "-"
                     for m in methods),
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
            f"{len(shared)} of {len(out['runs'])} runs flagged shared ({SHARED_RULE}).")
  tail = " ".join(x for x in (aggregates_line(g, out) if t.aggregates else "",
                               t.tail(out) if t.tail else "") if x)
  after = t.after(out) if t.after else ""
  return (f"{t.notes(out)} {source}\n\n{body}" + (f"\n{after.rstrip()}\n" if after else "")
          + (f"\n{tail}\n" if tail else ""))


def _sections(g: Grid, t: Table, out: Dict[str, Any]) -> str:
  """A paper-style grid's tables (`Table.sections`) over its report's `summary`."""
  summ, parts = out["summary"], []
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
  for k, s in (summ.items() if t.by_task else ()):  # a row per section: the summary's only
    methods = [m for m in g.methods if m.name in s["methods"]]
    secs = [(sec.title_in(out), sec) for sec in t.sections
            if sec.data == "summary" and (sec.tasks is None or k in sec.tasks)]
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


def spread_cell(key: str, fmt: str = "{:,.0f}") -> Callable[[Dict[str, Any]], str]:
  """A column's cell: the spread of `key` as `mean [lo, hi] (its kind)`."""
  return lambda c: stats.interval_cell(c[key], fmt) if c.get(key) else "-"


def ratio_cell(c: Dict[str, Any]) -> str:
  return stats.ratio_cell(c.get("time_ratio"))


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


# The Changes entry of the paper-style grids (gfootball, minatar, atari) for their censored means.
CENSORED_MEANS = (
    "2026-11-28: where some seed missed a target, the mean over seeds of the time or env steps to "
    "it is shown as ≥ the mean with each miss counted at its run's end (a lower bound: the "
    "statistics rules' censoring), beside k/n, where it was '-'; no run or other value changed.")


# The Changes entry of every grid with paired ratios: which blocks a paired ratio counts.
PAIRED_CALIBRATION = (
    "2026-11-29, before the runs it first applies to (the GFootball headline's close seeds 3 "
    "and 4): a paired ratio (time to a target, SPS) leaves a block out when either of its two "
    "runs was marked by its driver, or when the two runs' calibrations differ by more than 1.5x "
    "(`stats.pair_shared`). The host kind's median (`stats.shared`, results.json's `shared`) "
    "now flags only figures that are not paired. A pair's ratio cancels its host's speed, so "
    "the kind's median was the wrong reference for it: a host that calibrates at twice its "
    "kind's median when quiet (an AMD EPYC at 126 ms) had every run flagged. No run redone.")


# The Changes entry of every grid with paired ratios: a run whose CPUs other VMs took.
STOLEN_CPU = (
    "2026-12-02, before the runs it first applies to (Pong's remaining runs): a run whose CPU steal "
    "share is above 5% (summary.json's `cpu_steal_share`: the time the hypervisor gave its CPUs "
    "to other VMs) shared the machine: `stats.shared` flags it and `stats.pair_shared` leaves "
    "its block out of the paired ratios. One calibration at the start cannot see steal that "
    "comes and goes: a 2-core Intel Xeon host lost 7-37% of its CPU time under load (0% idle) "
    "and ran HTS-A2C on Pong at 250-300 SPS against 817 on AMD EPYC; that run was stopped at "
    "149k steps and not kept. Runs record the share since 2026-12-01 (the committed two: 0.0% "
    "and 0.1%); no run redone, no committed figure moved. The grid driver measures the share "
    "under load before its runs, and a calibration against its host kind's finished runs "
    "(`--host_probe_s`), and warns where its runs would count as shared.")


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
  """PROTOCOL.md: a grid of data's PROTOCOL.md.in with its tables, or rendered from the record."""
  if isinstance(g, spec.Grid):
    return (g.template.replace("{{methods}}", methods_table(g))
            .replace("{{tasks}}", tasks_table(g)).replace("{{reference}}", g.reference))
  lines = [f"# {g.title}: protocol", "",
           f"Fixed on {g.fixed}; rendered from `GRID` in `hts_jax/results/{g.name}.py` (a value "
           "is never changed after seeing results: a change goes under \"Changes\" with its date "
           "and reason).", "", "## Question", g.question, "", "## Methods", methods_table(g), "",
           "## Tasks, budgets, seeds, evaluation", tasks_table(g), "",
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


def identity_lines(out: Dict[str, Any]) -> List[str]:
  """The actor-count identity's table (Tables 4/5: `paper_report.identity_report`), if run."""
  ident = out.get("identity")
  if not ident:
    return []
  rows = [[r["num_actors"], r["env"], r["seed"], f"{r['env_steps']:,}", f"{r['sps']:,.0f}",
           f"`{r['param_sha256'][:16]}`",
           "... " + ", ".join(f"{x:.1f}" for x in r["eval_scores"][-5:])] for r in ident["runs"]]
  return ["**The same run with 1, 2 and 4 actors (Tables 4/5)**", "",
          stats.markdown(["actors", "env", "seed", "env steps", "SPS", "param_sha256",
                          "evaluation scores"], rows),
          "Identical parameters and scores: " + ("yes" if ident["identical"] else "**no**"), ""]
