"""Reports every grid (`hts_jax.results.spec`) from its finished runs: per-run records,
per-(task, method) cells under the statistics rules of `hts_jax.analysis.stats`, aggregates across
tasks, results.json, the tables' blocks and PROTOCOL.md (`hts_jax.runs.driver` runs a grid, then
this report)."""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, Dict, List, Optional

from hts_jax.analysis import metrics, stats
from hts_jax.results import compare, grid, paper_report, provenance, publish
from hts_jax.results.spec import Grid
from hts_jax.results.render import (protocol_markdown, render_markdown, render_table,
                                    table_file)


def run_record(g: Grid, f: grid.Finished) -> Dict[str, Any]:
  """One finished run as results.json keeps it."""
  t, s = g.task(f.task), f.summary
  evals = s.get("eval") or []
  returns = [e["mean_return"] for e in evals]
  hit = (metrics.first_reached(returns, t.target, t.window)
         if t.target is not None and returns else None)
  budget = (s.get("config") or {}).get("total_steps")
  return {"task": f.task, "method": f.method, "seed": s["seed"], "env_steps": s["env_steps"],
          # the run's own budget (--steps), where a miss of the target is censored
          "budget": budget if isinstance(budget, int) and budget > 0 else t.budget,
          "logdir": os.path.relpath(os.path.abspath(f.logdir), provenance.ROOT),
          "final_eval": returns[-1] if returns else None,
          "best_eval": max(returns) if returns else None,
          "final_metric": sum(returns[-10:]) / len(returns[-10:]) if returns else None,
          "steps_to_target": evals[hit]["env_steps"] if hit is not None else None,
          "time_to_target_s": evals[hit]["wall_time_s"] if hit is not None else None,
          "floor": stats.is_floor(evals[hit]["env_steps"] if hit is not None else None,
                                  t.first_window),
          "sps": s["sps"], "wall_time_s": s["wall_time_s"],
          "param_sha256": s["param_sha256"][:16], **provenance.run_host(s),
          "marked": grid.shared_note(f.logdir),
          "evals": [[e["env_steps"], e["mean_return"]] for e in evals],
          **g.extra("run", f)}


def cell(g: Grid, runs: List[Dict[str, Any]], task: Optional[str], method: str
         ) -> Dict[str, Any]:
  """A (task, method) cell: per-seed values and their spreads; steps to the target censored at
  the budget; the time ratio of the reference over the method (`compare.paired`: the blocks on
  one host kind where neither run was marked and their calibrations agree: `stats.pair_shared`)."""
  t = g.task(task)
  mine = sorted((r for r in runs if r["task"] == task and r["method"] == method),
                key=lambda r: r["seed"])
  out: Dict[str, Any] = {"seeds": [r["seed"] for r in mine]}
  for key in ("final_eval", "best_eval", "final_metric", "env_steps"):
    values = [r[key] for r in mine if r[key] is not None]
    out[key] = stats.spread(values) if values else None
  alone = [r["sps"] for r in mine if not r.get("shared")]  # SPS of runs that had the machine
  out["sps"] = dict(stats.spread(alone), of=len(mine)) if alone else None
  out.update(g.extra("cell", mine))
  if t.target is not None:
    steps = [stats.Censored.of(r["steps_to_target"], r.get("budget", t.budget)) for r in mine]
    out["steps_to_target"] = {
        "per_seed": [r["steps_to_target"] for r in mine], "floors": [r["floor"] for r in mine],
        "median": dataclasses.asdict(stats.censored_median(steps)) if steps else None,
        "reached": sum(not c.censored for c in steps)}
    # Wall time to the target, censored at the run's whole wall time where it missed.
    out["time_ratio"] = None if method == g.reference else compare.paired(
        [r for r in runs if r["task"] == task], method, g.reference,
        lambda r: stats.Censored.of(r["time_to_target_s"], r["wall_time_s"]), False)
  return out


def build(g: Grid, results: str, resamples: int = 10_000,
          deviations: Optional[Dict[str, Any]] = None,
          options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """What results.json holds (less its provenance) from the finished runs, one schema for every
  grid: a record per run, a cell per (task, method) (a paper-style grid's: the paper's metrics,
  `paper_report`), the runs' host kinds and the commit holding them, the aggregates across tasks;
  then a paper-style grid's parts (`_paper_parts`) or the grid's named ones."""
  p = g.paper
  if p:  # (methods, reference, metric, what it is) of the aggregates
    runs = paper_report.load_runs(results, p.spec)
    tasks = paper_report.summarize(runs, p.spec, resamples)
    logdirs = [os.path.join(results, r["path"]) for r in runs]
    methods, reference, metric, label = (p.spec.methods, p.spec.baseline, "final_metric",
                                         "the final metric")
  else:
    runs = _records(g, results)
    cells = compare.cells(runs)
    tasks = {t.name or t.env: {"methods": {m.name: cell(g, runs, t.name, m.name)
                                           for m in g.methods if m.name in cells.get(t.name, {})}}
             for t in g.tasks}
    logdirs = [os.path.join(provenance.ROOT, r["logdir"]) for r in runs]
    methods, reference, metric, label = ([m.name for m in g.methods], g.aggregate and g.reference,
                                         g.aggregate, f"each run's `{g.aggregate}`")
  out = {"grid": g.name, "protocol": {"path": os.path.join(g.results, "PROTOCOL.md")},
         "runs": runs, "tasks": tasks, "hosts": list(dict.fromkeys(r["host"] for r in runs)),
         "runs_commit": stats.provenance_commit(provenance.ROOT, [
             os.path.relpath(os.path.abspath(d), provenance.ROOT) for d in logdirs]),
         "aggregates": compare.aggregates(compare.by_seed(runs, metric), methods, reference,
                                          label) if reference else None}
  if p:
    out.update(_paper_parts(g, results, out, resamples, deviations or {}, options))
  else:
    out.update(g.extra("report", out))
  return out


def _records(g: Grid, results: str) -> List[Dict[str, Any]]:
  """A record per finished run, borrowed ones too (`run_record`; one it cannot read: named)."""
  tasked = any(t.name for t in g.tasks)
  found = list(grid.finished_runs(results, tasks=tasked, methods=[m.name for m in g.methods]))
  for (task, method), where in g.borrowed.items():
    for seed in g.task(task).seeds:
      logdir = os.path.join(results, where.format(seed=seed))
      summary = grid.read_summary(logdir)
      if summary is not None:
        found.append(grid.Finished(task, method, logdir, summary))
  runs = []
  for f in (f for f in found if f.task in [t.name for t in g.tasks]):
    try:  # summary.json without a field it needs, or one of another type: skipped, named
      runs.append(run_record(g, f))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
      print(f"  {os.path.join(f.logdir, 'summary.json')}: {type(e).__name__}: {e}: the run is "
            "skipped", flush=True)
  compare.mark_shared(runs)
  return runs


def report(g: Grid, results: str, root: Optional[str] = None, resamples: int = 10_000,
           deviations: Optional[Dict[str, Any]] = None,
           options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """PROTOCOL.md, results.json, the first table's file and, under `root` (the folder holding
  README.md and docs/) where given, the tables' blocks, from the finished runs (`build`); then
  the grid's curves."""
  out = build(g, results, resamples, deviations, options)
  os.makedirs(results, exist_ok=True)
  with open(os.path.join(results, "PROTOCOL.md"), "w") as f:
    f.write(protocol_markdown(g))
  targets = [(os.path.join(root, t.doc), t.block, functools.partial(render_table, g, t))
             for t in g.tables if t.block and root]
  out = publish.publish(results, out, functools.partial(render_markdown, g), targets,
                        table=table_file(g))
  if g.paper:
    prefix, ylabel, ylim = g.paper.curves
    out["plots"] = paper_report.plot_curves(out, results, list(g.paper.benchmarked),
                                            {m.name: m.header for m in g.methods},
                                            g.paper.panel, prefix, ylabel, ylim)
  elif out["runs"]:
    g.plot(results, out["runs"])
  return out


def _paper_parts(g: Grid, results: str, out: Dict[str, Any], resamples: int,
                 deviations: Dict[str, Any], options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
  """What a paper-style grid's results.json adds (`paper_report`): the protocol's settings and
  `deviations` from them, the paper's figures, the paired ratios, the throughput benchmark
  (`throughput.json`, None before it ran) and the minutes from it, the grid's extras."""
  p = g.paper
  settings = {"methods": {m.name: dict(m.flags) for m in g.methods},
              "tasks": {t.name: {"budget": t.budget, "seeds": list(t.seeds),
                                 "eval_every": t.eval_every} for t in g.tasks},
              "options": {**{o.name: o.default for o in g.options}, **(options or {})},
              **p.settings}
  throughput = publish.read_json(results, "throughput.json")
  more = {"title": g.title, "paper": dict(p.figures), "reference": p.spec.reference,
          "protocol": dict(out["protocol"], settings=settings, deviations=deviations),
          "paired": compare.paired_ratios(out["runs"], p.spec), "throughput": throughput,
          "throughput_minutes": paper_report.throughput_minutes(out["tasks"], throughput)}
  if p.extras:
    more.update(p.extras(results, {**out, **more}, resamples))
  if g.identity:
    more["identity"] = paper_report.identity_report(results)
  return more
