"""The paper's metrics over a grid of (scenario, method, seed) runs, from its run table
(`driver.run_table`: the runs' summary.json files only), for any grid that names its methods,
its reference method, the method whose wall time is the final time metric's clock, and its
targets (`Spec`): required time and env steps to each target (Table 2 / A8 / A10), paired time
ratios per block, minutes from env steps over a throughput benchmark's SPS, the final time metric
(Table A7 / A9), idle shares, the cells of the paired ratios and benchmark minutes, the curves
and the actor-count identity (Tables 4/5). The report of every grid with a `[paper]` part
(GFootball, MinAtar, Atari: `hts_jax.results.driver.report`)."""

from __future__ import annotations

import functools
import math
import os
from typing import Any, Callable, Dict, List, Optional, Sequence

from hts_jax.analysis import metrics, plots, stats
from hts_jax.results import compare, grid
from hts_jax.results.compare import Spec  # noqa: F401 (the grids' name for it)
from hts_jax.runtime.outputs import integrity


def add_required(runs: List[Dict[str, Any]], spec: Spec) -> None:
  """Each run's task's targets (`spec.targets`, which may depend on the task's runs) and its
  minutes and env steps to each (`metrics.required_time_metric`), in place."""
  targets = {sc: spec.targets(sc, [r for r in runs if r["task"] == sc])
             for sc in dict.fromkeys(r["task"] for r in runs)}
  for r in runs:
    r["targets"], r["required"] = targets[r["task"]], {}
    run = metrics.Run(r["path"], {}, tuple(r["evals"]))
    for name, score in targets[r["task"]].items():
      q = metrics.required_time_metric(run, score)
      r["required"][name] = {"minutes": q["wall_time_s"] / 60, "env_steps": q["env_steps"]}


def _floor(r: Dict[str, Any], t: str) -> bool:
  """Whether a run's env steps to target `t` sit at its first full window of evaluations (the
  earliest the running average can reach it): a floor of the cadence, not a measure of learning."""
  window = metrics.RUNNING_WINDOW
  return len(r["evals"]) >= window and stats.is_floor(r["required"][t]["env_steps"],
                                                      r["evals"][window - 1]["env_steps"])


def _reached(values: Sequence[float], ends: Sequence[float], resamples: int) -> Dict[str, Any]:
  """Mean and interval over the seeds when every seed reached the target, and how many did.
  Where a seed missed (a mean over the seeds that happened to reach it would flatter the method):
  `censored_mean`, the mean with each miss counted at its run's end (`ends`), a lower bound (the
  statistics rules' censoring; shown as ≥), and `mean_of_reached`, the mean over those that
  reached it."""
  hit = [v for v in values if math.isfinite(v)]
  out: Dict[str, Any] = {"mean": None}
  if hit and len(hit) == len(values):
    out = dict(metrics.seed_interval(hit, resamples=resamples))
  elif values:
    out["censored_mean"] = sum(v if math.isfinite(v) else e
                               for v, e in zip(values, ends)) / len(values)
    if hit:
      out["mean_of_reached"] = sum(hit) / len(hit)
  return {**out, "reached": len(hit), "runs": len(values)}


def summarize(runs: List[Dict[str, Any]], spec: Spec, resamples: int = 10_000) -> Dict[str, Any]:
  """Per scenario and method: the paper's metrics, mean over seeds with [min, max] below 6 seeds.
  The final time metric's limit (Table A9 / A7: "the time when IMPALA finishes training") is the
  wall time of the same block's `spec.limit_method` run (one seed, one host), for the other
  methods; that method's own value is each seed's final metric (its limit is its own end). A seed
  with no such run of its host kind, or no evaluation before the limit, has no score: `reached`
  says how many had one. `time_limit_s` is that method's mean wall time (shown beside the
  table)."""
  ci = functools.partial(metrics.interval_or_none, resamples=resamples)
  out: Dict[str, Any] = {}
  for scenario, cells in compare.cells(runs).items():
    here = [r for r in runs if r["task"] == scenario]
    targets = list(here[0]["targets"])
    limits = {r["seed"]: r for r in cells.get(spec.limit_method, ())}
    limit = (sum(r["wall_time_s"] for r in limits.values()) / len(limits)) if limits else None
    rows = {}
    for method, mine in ((m, cells[m]) for m in spec.methods if m in cells):
      rows[method] = {
          "seeds": [r["seed"] for r in mine],
          "env_steps": [r["env_steps"] for r in mine], **speed(mine, resamples),
          "final_metric": ci([r["final_metric"] for r in mine if r["final_metric"] is not None]),
          "required_min": {t: _reached([r["required"][t]["minutes"] for r in mine],
                                       [r["wall_time_s"] / 60 for r in mine], resamples)
                           for t in targets},
          "required_steps": {t: dict(_reached([r["required"][t]["env_steps"] for r in mine],
                                              [r["env_steps"] for r in mine], resamples),
                                     floors=sum(_floor(r, t) for r in mine))
                             for t in targets},
          "idle_share": _idle(mine)}
      if limit is not None:
        scores = [v for v in (_final_time(r, method == spec.limit_method, limits.get(r["seed"]))
                              for r in mine) if v is not None]
        rows[method]["final_time"] = {**(ci(scores) or {"mean": None}), "reached": len(scores),
                                      "runs": len(mine)}
    out[scenario] = {"budget": max(r["total_steps"] for r in here), "time_limit_s": limit,
                     "targets": here[0]["targets"], "methods": rows}
  return out


def speed(runs: Sequence[Dict[str, Any]], resamples: int) -> Dict[str, Optional[Dict[str, Any]]]:
  """The runs' SPS and whole-run minutes, each a mean over their seeds with its interval."""
  ci = functools.partial(metrics.interval_or_none, resamples=resamples)
  return {"sps": ci([r["sps"] for r in runs]),
          "wall_time_min": ci([r["wall_time_s"] / 60 for r in runs])}


def _final_time(r: Dict[str, Any], is_limit: bool,
                limit_run: Optional[Dict[str, Any]]) -> Optional[float]:
  """A run's final time metric (`summarize`): its final metric where its method sets the limit,
  else over the means its evaluations recorded (not their episodes') by the wall time of its
  block's limit run on the same host kind (None without one)."""
  if is_limit:
    return r["final_metric"]
  if limit_run is None or limit_run["host"] != r["host"]:
    return None
  run = metrics.Run(r["path"], {}, tuple(dict(e, returns=None) for e in r["evals"]))
  return metrics.final_time_metric(run, limit_run["wall_time_s"])


# summary.json's idle seconds are summed over the executors and over the actor threads.
IDLE_PARTS = (("executors_waiting_for_actions", "num_executors"),
              ("executors_at_barrier", "num_executors"), ("actors", "num_actors"),
              ("learner", None))


def idle_share(s: Dict[str, Any]) -> Dict[str, float]:
  """The share of the run's wall time each executor, actor and the learner spent waiting (mean
  over executors and actors). `--mode=async` measures no executor waits: left out."""
  idle, wall = s.get("idle") or {}, float(s.get("wall_time_s") or 0)
  out = {}
  for key, per in IDLE_PARTS:
    if key in idle and wall > 0 and not (s.get("mode") == "async" and key.startswith("exec")):
      out[key] = float(idle[key]) / (wall * (int(s.get(per) or 1) if per else 1))
  return out


def _idle(runs: List[Dict[str, Any]]) -> Dict[str, float]:
  """Mean over seeds of each part's idle share (`idle_share`)."""
  keys = [k for k, _ in IDLE_PARTS if all(k in r["idle_share"] for r in runs)]
  return {k: sum(r["idle_share"][k] for r in runs) / len(runs) for k in keys}


def benchmark_sps(throughput: Optional[Dict[str, Any]], scenario: str,
                  method: str) -> Optional[float]:
  """The method's median SPS on the scenario in the interleaved throughput benchmark
  (`throughput.json`); None where the benchmark lacks it."""
  bench = ((throughput or {}).get("scenarios") or {}).get(scenario) or {}
  return (bench.get(method) or {}).get("median_sps")


def throughput_minutes(summary: Dict[str, Any],
                       throughput: Optional[Dict[str, Any]]) -> Dict[str, Any]:
  """Per scenario, method and target: the mean env steps to the target (every seed reached it)
  over the method's median SPS in the benchmark (`benchmark_sps`), in minutes on the benchmark's
  host; None where a seed missed the target or the benchmark lacks the method."""
  out: Dict[str, Any] = {}
  for scenario, s in summary.items():
    out[scenario] = {}
    for method, row in s["methods"].items():
      sps = benchmark_sps(throughput, scenario, method)
      out[scenario][method] = {
          t: (row["required_steps"][t]["mean"] / sps / 60
              if sps and row["required_steps"][t].get("mean") is not None else None)
          for t in row["required_steps"]}
  return out


def plot_curves(report: Dict[str, Any], out_dir: str, methods: Sequence[str],
                labels: Dict[str, str], title: Callable[[str], str], prefix: str, ylabel: str,
                ylim: Optional[tuple] = None) -> List[str]:
  """The paper's curve figures (`plots.score_curves`, wall time in minutes), one panel per
  scenario, a band per method over its seeds' evaluations (each seed's last score carried
  forward; [min, max] below 6 seeds)."""
  panels = [(title(scenario), {labels[m]: [r["evals"] for r in report["runs"]
                                           if r["task"] == scenario and r["method"] == m]
                               for m in methods}) for scenario in report["tasks"]]
  if not panels:
    return []
  return plots.score_curves(out_dir, prefix, panels, score="score", ylabel=ylabel, minutes=True,
                            ylim=ylim)


def identity_report(results: str) -> Optional[Dict[str, Any]]:
  """The actor-count identity (Tables 4/5): the runs under <results>/actor_counts/actors<k>, and
  whether their params, scores and training returns are identical."""
  root = os.path.join(results, "actor_counts")
  if not os.path.isdir(root):
    return None
  rows = []
  names = [n for n in os.listdir(root) if n.startswith("actors") and n[len("actors"):].isdigit()]
  for name in sorted(names, key=lambda n: int(n[len("actors"):])):
    path = os.path.join(root, name)
    s = grid.read_summary(path)
    if s is not None:
      rows.append({"num_actors": s["num_actors"], "env": s["env"], "seed": s["seed"],
                   "env_steps": s["env_steps"], "sps": s["sps"],
                   "param_sha256": s["param_sha256"],
                   "eval_scores": [e["mean_return"] for e in s["eval"]],
                   "episode_returns_sha256": integrity.sha256_json([s["episode_returns"]])})
  if not rows:
    return None
  return {"runs": rows, "identical": len({(r["param_sha256"], tuple(r["eval_scores"]),
                                           r["episode_returns_sha256"]) for r in rows}) == 1}

