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


def run_record(g: Grid, f: grid.Finished, results: str) -> Dict[str, Any]:
  """One finished run as the run table holds it, from its summary.json (and its metrics.csv where
  the grid's `run_metrics` read it): every column of either kind of grid's results.json, with the
  time and env steps to its task's target (a running average over `window` evaluations; a
  paper-style grid's targets come from `run_table`) and its evaluations in time order."""
  t, s = g.task(f.task), f.summary
  evals = metrics.time_ordered(s.get("eval") or [])
  scores = [e["mean_return"] for e in evals]
  hit = (metrics.first_reached(scores, t.target, t.window)
         if t.target is not None and scores else None)
  reached = evals[hit] if hit is not None else {}
  config = s.get("config") or {}
  budget = config.get("total_steps")
  return {"task": f.task, "method": f.method, "seed": s["seed"],
          "path": os.path.relpath(f.logdir, results),
          "logdir": os.path.relpath(os.path.abspath(f.logdir), provenance.ROOT),
          "network": s.get("network"), "total_steps": config.get("total_steps", s["env_steps"]),
          # the run's own budget (--steps), where a miss of the target is censored
          "budget": budget if isinstance(budget, int) and budget > 0 else t.budget,
          "env_steps": s["env_steps"], "wall_time_s": s["wall_time_s"], "sps": s["sps"],
          "episodes": sum(map(len, s.get("episode_returns") or [])),  # training's finished ones
          "updates": s.get("updates"), "param_sha256": s["param_sha256"],
          **{k: s.get(k) for k in ("num_envs", "num_actors", "num_executors", "alpha",
                                   "policy_lag", "idle")},
          "idle_share": paper_report.idle_share(s), **provenance.run_host(s),
          "host_recorded": bool(s.get("host")),
          "usable_cores": (s.get("host") or {}).get("usable_cores"),
          # A paper-style grid's final metric is over each evaluation's episodes (`metrics.
          # eval_return`), the others' over the means evaluations recorded (the last bits differ).
          "final_metric": (metrics.final_metric(metrics.Run(f.logdir, s, tuple(evals))) if g.paper
                           else sum(scores[-10:]) / len(scores[-10:]) if scores else None),
          "final_eval": scores[-1] if scores else None,
          "best_eval": max(scores) if scores else None,
          "steps_to_target": reached.get("env_steps"),
          "time_to_target_s": reached.get("wall_time_s"),
          "floor": stats.is_floor(reached.get("env_steps"), t.first_window),
          "marked": grid.shared_note(f.logdir), "evals": evals, **g.extra("run", f)}


def run_table(g: Grid, results: str) -> List[Dict[str, Any]]:
  """The grid's run table: a record per finished run under `<results>/runs` and per borrowed one
  (`run_record`), a paper-style grid's in its `scenarios`' order first, each flagged `shared`
  under the statistics rules (`compare.mark_shared`); a paper-style grid's with its task's
  `targets` (which may depend on the task's runs) and its minutes and env steps to each
  (`required`). A run whose summary.json lacks a field, or holds one of another type: skipped,
  named."""
  order = list(g.paper.spec.scenarios) if g.paper else []
  found = sorted(grid.finished_runs(results, tasks=any(t.name for t in g.tasks),
                                    methods=reported_methods(g)),
                 key=lambda f: order.index(f.task) if f.task in order else len(order))
  for (task, method), where in g.borrowed.items():
    for seed in g.task(task).seeds:
      logdir = os.path.join(results, where.format(seed=seed))
      summary = grid.read_summary(logdir)
      if summary is not None:
        found.append(grid.Finished(task, method, logdir, summary))
  runs, known = [], [t.name for t in g.tasks]
  for f in (f for f in found if g.make_task or f.task in known):
    try:
      runs.append(run_record(g, f, results))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
      print(f"  {os.path.join(f.logdir, 'summary.json')}: {type(e).__name__}: {e}: the run is "
            "skipped", flush=True)
  compare.mark_shared(runs)
  if g.paper:
    paper_report.add_required(runs, g.paper.spec)
  return runs


def reported_methods(g: Grid) -> List[str]:
  """The methods the report covers, in its order (a paper-style grid's `[paper] methods`)."""
  return list(g.paper.spec.methods) if g.paper else [m.name for m in g.methods]


# results.json's columns of a run, in the order each kind of grid first wrote them (`results_row`:
# the run table holds them all); a grid's `run_metrics` follow the others' `evals`.
HOST_COLUMNS = ("calibration_ms", "calibration_end_ms", "steal_share", "load", "code")
PAPER_COLUMNS = ("task", "method", "seed", "path", "network", "total_steps", "env_steps",
                 "wall_time_s", "sps", "episodes", "updates", "param_sha256", "num_envs",
                 "num_actors", "num_executors", "alpha", "policy_lag", "idle", "idle_share", "host",
                 "host_recorded", "final_metric", *HOST_COLUMNS, "usable_cores", "marked",
                 "evals", "shared", "targets", "required")
GRID_COLUMNS = ("task", "method", "seed", "env_steps", "budget", "logdir", "final_eval",
                "best_eval", "final_metric", "steps_to_target", "time_to_target_s", "floor", "sps",
                "wall_time_s", "param_sha256", "host", *HOST_COLUMNS, "marked", "evals")


def results_row(g: Grid, r: Dict[str, Any]) -> Dict[str, Any]:
  """A run record as results.json keeps it: its kind of grid's columns (`PAPER_COLUMNS`, else
  `GRID_COLUMNS`, the grid's `run_metrics` and `shared`), in their order and first forms: an
  evaluation's env steps, wall time and score (its recorded mean), else [env steps, score] and
  the hash's first 16 digits; a paper-style grid's mark as a bool."""
  if g.paper:
    return dict({k: r[k] for k in PAPER_COLUMNS}, marked=bool(r["marked"]), evals=[
        {"env_steps": e["env_steps"], "wall_time_s": e["wall_time_s"], "score": e["mean_return"]}
        for e in r["evals"]])
  named = [k for k in r if k not in (*PAPER_COLUMNS, *GRID_COLUMNS)]
  return dict({k: r[k] for k in (*GRID_COLUMNS, *named, "shared")},
              param_sha256=r["param_sha256"][:16],
              evals=[[e["env_steps"], e["mean_return"]] for e in r["evals"]])


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
  out.update(g.extra("cell", [results_row(g, r) for r in mine]))  # as results.json has them
  if t.target is not None:
    steps = [stats.Censored.of(r["steps_to_target"], r["budget"]) for r in mine]
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
  """What results.json holds (less its provenance) from the run table (`run_table`), one schema
  for every grid: a row per run (`results_row`), a cell per (task, method) (a paper-style grid's:
  the paper's metrics, `paper_report.summarize`; the others': `cell`), the runs' host kinds and the
  commit holding them, the aggregates across tasks; then a paper-style grid's parts
  (`_paper_parts`) or the grid's named ones."""
  p, table = g.paper, run_table(g, results)
  methods = reported_methods(g)
  if p:  # (reference, metric, what it is) of the aggregates
    tasks = paper_report.summarize(table, p.spec, resamples)
    reference, metric, label = p.spec.baseline, "final_metric", "the final metric"
  else:
    cells = compare.cells(table)
    tasks = {t.name or t.env: {"methods": {m: cell(g, table, t.name, m) for m in methods
                                           if m in cells.get(t.name, {})}} for t in g.tasks}
    reference, metric = g.aggregate and g.reference, g.aggregate
    label = f"each run's `{g.aggregate}`"
  out = {"grid": g.name, "protocol": {"path": os.path.join(g.results, "PROTOCOL.md")},
         "runs": [results_row(g, r) for r in table], "tasks": tasks,
         "hosts": list(dict.fromkeys(r["host"] for r in table)),
         "runs_commit": stats.provenance_commit(provenance.ROOT, [r["logdir"] for r in table]),
         "aggregates": compare.aggregates(compare.by_seed(table, metric), methods, reference,
                                          label) if reference else None}
  if p:
    out.update(_paper_parts(g, results, out, resamples, deviations or {}, options))
  else:
    out.update(g.extra("report", out))
  return out


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
