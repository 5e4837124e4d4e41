"""The GFootball grid's report, from the runs' summary.json files only: the paper's metrics per
scenario and method (mean over seeds, 95% bootstrap intervals), required time two ways (paired
ratios per block; env steps to the target over the benchmark's SPS), the IMPALA validation, the
actor-count identity (Tables 4/5), the markdown of docs/results.md and README's summary, and the
curves (results/gfootball/PROTOCOL.md says what each figure is)."""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence

from hts_jax.analysis import metrics, plots
from hts_jax.results import grid, launch, publish
from hts_jax.results.gfootball_markdown import short, render_markdown, render_summary
from hts_jax.results.gfootball_spec import LABELS, METHODS, PAPER, PROTOCOL, REFERENCE, TARGETS

README_BLOCK = publish.Block("gfootball-results", "gfootball")
DOCS_BLOCK = publish.Block("gfootball-tables", "gfootball")
THROUGHPUT = "throughput.json"  # `hts-reproduce gfootball --benchmark` writes it
VALIDATION = "impala_validation"  # the IMPALA validation's runs: <results>/impala_validation/seed<k>

def _run_record(path: str, results: str, scenario: str, method: str) -> Dict[str, Any]:
  run = metrics.load_run(path)
  s = run.summary
  req = {str(t): metrics.required_time_metric(run, t) for t in TARGETS}
  return {
      "scenario": scenario, "method": method, "seed": run.seed,
      "path": os.path.relpath(path, results), "network": s.get("network"),
      "total_steps": (s.get("config") or {}).get("total_steps", s["env_steps"]),
      "env_steps": s["env_steps"], "wall_time_s": s["wall_time_s"], "sps": s["sps"],
      "updates": s["updates"], "param_sha256": s["param_sha256"],
      "num_envs": s.get("num_envs"), "num_actors": s.get("num_actors"),
      "num_executors": s.get("num_executors"), "alpha": s.get("alpha"),
      "policy_lag": s.get("policy_lag"), "idle": s.get("idle"), "idle_share": _idle_share(s),
      "host": run.host, "host_recorded": bool(s.get("host")),
      "required": {t: {"minutes": q["wall_time_s"] / 60, "env_steps": q["env_steps"]}
                   for t, q in req.items()},
      "final": metrics.final_metric(run),
      "evals": [{"env_steps": e["env_steps"], "wall_time_s": e["wall_time_s"],
                 "score": e["mean_return"]} for e in run.evals],
  }


def load_runs(results: str) -> List[Dict[str, Any]]:
  """Every finished run under `<results>/runs/<scenario>/<method>/seed<k>`, in a fixed order."""
  return [_run_record(f.logdir, results, f.task, f.method)
          for f in grid.finished_runs(results, methods=list(METHODS))]


def _ci(values: Sequence[float], resamples: int) -> Optional[Dict[str, float]]:
  return metrics.bootstrap_ci(values, resamples=resamples) if values else None


def _reached(values: Sequence[float], resamples: int) -> Dict[str, Any]:
  """Mean and interval over the seeds when every seed reached the target (the paper's '-'
  otherwise: a mean over the seeds that happened to reach it would flatter the method), and how
  many did; `mean_of_reached` keeps the figure over those that did."""
  hit = [v for v in values if math.isfinite(v)]
  out: Dict[str, Any] = {"mean": None}
  if hit and len(hit) == len(values):
    out = dict(_ci(hit, resamples))
  elif hit:
    out["mean_of_reached"] = sum(hit) / len(hit)
  return {**out, "reached": len(hit), "runs": len(values)}


def summarize(runs: List[Dict[str, Any]], resamples: int = 10_000) -> Dict[str, Any]:
  """Per scenario and method: the paper's metrics, mean over seeds with 95% bootstrap intervals.
  The final time metric's limit (Table A9: "the time when IMPALA finishes training for 5M
  steps") is the wall time of the same block's IMPALA run (one seed, one host), for the other
  methods; IMPALA's own value is each seed's final metric (its limit is its own end). A seed with
  no IMPALA run of its host kind, or no evaluation before the limit, has no score: `reached` says
  how many had one. `time_limit_s` is IMPALA's mean wall time (shown beside the table)."""
  out: Dict[str, Any] = {}
  for scenario in dict.fromkeys(r["scenario"] for r in runs):
    here = [r for r in runs if r["scenario"] == scenario]
    impala = {r["seed"]: r for r in here if r["method"] == "impala"}
    limit = (sum(r["wall_time_s"] for r in impala.values()) / len(impala)) if impala else None
    rows = {}
    for method in (m for m in METHODS if any(r["method"] == m for r in here)):
      mine = [r for r in here if r["method"] == method]
      row: Dict[str, Any] = {
          "seeds": [r["seed"] for r in mine],
          "env_steps": [r["env_steps"] for r in mine],
          "sps": _ci([r["sps"] for r in mine], resamples),
          "wall_time_min": _ci([r["wall_time_s"] / 60 for r in mine], resamples),
          "final": _ci([r["final"] for r in mine if r["final"] is not None], resamples),
          "required_min": {t: _reached([r["required"][t]["minutes"] for r in mine], resamples)
                           for t in map(str, TARGETS)},
          "required_steps": {t: _reached([r["required"][t]["env_steps"] for r in mine],
                                         resamples) for t in map(str, TARGETS)},
          "idle_share": _idle(mine)}
      if limit is not None:
        scores = []
        for r in mine:
          run = metrics.Run(path=r["path"], summary={}, evals=tuple(
              {"env_steps": e["env_steps"], "wall_time_s": e["wall_time_s"],
               "mean_return": e["score"]} for e in r["evals"]))
          twin = impala.get(r["seed"])
          if method == "impala":
            v = r["final"]
          elif twin is None or twin["host"] != r["host"]:
            v = None
          else:
            v = metrics.final_time_metric(run, twin["wall_time_s"])
          if v is not None:
            scores.append(v)
        row["final_time"] = {**(_ci(scores, resamples) or {"mean": None}),
                             "reached": len(scores), "runs": len(mine)}
      rows[method] = row
    out[scenario] = {"budget": max(r["total_steps"] for r in here), "time_limit_s": limit,
                     "methods": rows}
  return out


# summary.json's idle seconds are summed over the executors and over the actor threads.
IDLE_PARTS = (("executors_waiting_for_actions", "num_executors"),
              ("executors_at_barrier", "num_executors"), ("actors", "num_actors"),
              ("learner", None))


def _idle_share(s: Dict[str, Any]) -> Dict[str, float]:
  """The share of the run's wall time each executor, actor and the learner spent waiting (mean
  over executors and actors). `--mode=async` measures no executor waits: left out."""
  idle, wall = s.get("idle") or {}, float(s.get("wall_time_s") or 0)
  out = {}
  for key, per in IDLE_PARTS:
    if key in idle and wall > 0 and not (s.get("mode") == "async" and key.startswith("exec")):
      out[key] = float(idle[key]) / (wall * (int(s.get(per) or 1) if per else 1))
  return out


def _idle(runs: List[Dict[str, Any]]) -> Dict[str, float]:
  """Mean over seeds of each part's idle share (`_idle_share`)."""
  keys = [k for k, _ in IDLE_PARTS if all(k in r["idle_share"] for r in runs)]
  return {k: sum(r["idle_share"][k] for r in runs) / len(runs) for k in keys}


def identity_report(results: str) -> Optional[Dict[str, Any]]:
  root = os.path.join(results, "actor_counts")
  if not os.path.isdir(root):
    return None
  rows = []
  names = [n for n in os.listdir(root) if n.startswith("actors") and n[len("actors"):].isdigit()]
  for name in sorted(names, key=lambda n: int(n[len("actors"):])):
    path = os.path.join(root, name)
    if launch.finished(path):
      with open(os.path.join(path, "summary.json")) as f:
        s = json.load(f)
      rows.append({"num_actors": s["num_actors"], "env": s["env"], "seed": s["seed"],
                   "env_steps": s["env_steps"], "sps": s["sps"],
                   "param_sha256": s["param_sha256"],
                   "eval_scores": [e["mean_return"] for e in s["eval"]],
                   "episode_returns_sha256": _sha([s["episode_returns"]])})
  if not rows:
    return None
  return {"runs": rows, "identical": len({(r["param_sha256"], tuple(r["eval_scores"]),
                                           r["episode_returns_sha256"]) for r in rows}) == 1}


def _sha(obj) -> str:
  import hashlib  # pylint: disable=import-outside-toplevel
  return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def paired_ratios(runs: List[Dict[str, Any]], resamples: int = 10_000) -> Dict[str, Any]:
  """Per scenario, method and target: per block (scenario, seed) the method's minutes to the
  target over HTS-PPO's in the same block, where both reached it on one host kind; their mean
  over blocks with a 95% bootstrap interval (`blocks`: the seeds that count; `left_out`: blocks
  with a run on another host kind)."""
  out: Dict[str, Any] = {}
  for scenario in dict.fromkeys(r["scenario"] for r in runs):
    here = [r for r in runs if r["scenario"] == scenario]
    ref = {r["seed"]: r for r in here if r["method"] == REFERENCE}
    rows = {}
    for method in (m for m in METHODS if m != REFERENCE and any(r["method"] == m for r in here)):
      row = {}
      for t in map(str, TARGETS):
        ratios, seeds, left_out = [], [], []
        for r in (r for r in here if r["method"] == method and r["seed"] in ref):
          base = ref[r["seed"]]
          if r["host"] != base["host"]:
            left_out.append(r["seed"])
            continue
          num, den = r["required"][t]["minutes"], base["required"][t]["minutes"]
          if math.isfinite(num) and math.isfinite(den) and den > 0:
            ratios.append(num / den)
            seeds.append(r["seed"])
        row[t] = {**(_ci(ratios, resamples) or {"mean": None}), "blocks": seeds,
                  "left_out": left_out}
      rows[method] = row
    out[scenario] = rows
  return out


def throughput_minutes(summary: Dict[str, Any],
                       throughput: Optional[Dict[str, Any]]) -> Dict[str, Any]:
  """Per scenario, method and target: the mean env steps to the target (every seed reached it)
  over the method's median SPS in the interleaved benchmark (`throughput.json`), in minutes on
  the benchmark's host; None where a seed missed the target or the benchmark lacks the method."""
  out: Dict[str, Any] = {}
  for scenario, s in summary.items():
    bench = ((throughput or {}).get("scenarios") or {}).get(scenario) or {}
    out[scenario] = {}
    for method, row in s["methods"].items():
      sps = (bench.get(method) or {}).get("median_sps")
      out[scenario][method] = {
          t: (row["required_steps"][t]["mean"] / sps / 60
              if sps and row["required_steps"][t].get("mean") is not None else None)
          for t in map(str, TARGETS)}
  return out


DIAGNOSTICS = ("entropy", "rho_clipped_frac", "mean_rho", "value_loss", "learning_rate")


def validation_report(results: str) -> Optional[Dict[str, Any]]:
  """The IMPALA validation (PROTOCOL.md): per seed, where the running average over full windows
  of 10 evaluations first reached 0.9, the final evaluation, and the diagnostics (metrics.csv) at
  the first and the last update."""
  root = os.path.join(results, VALIDATION)
  rows = []
  for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
    path = os.path.join(root, name)
    if not launch.finished(path):
      continue
    run = metrics.load_run(path)
    s = run.summary
    reached = metrics.required_time_metric(run, 0.9)
    diag = {}
    csv_path = os.path.join(path, "metrics.csv")
    if os.path.exists(csv_path):
      import csv  # pylint: disable=import-outside-toplevel
      with open(csv_path) as f:
        table = [row for row in csv.DictReader(f)]
      cfg = s.get("config") or {}
      # With the loss summed over the batch (TorchBeast's), entropy and value loss are sums over
      # its env steps: per step, they compare across batch sizes (entropy ln 19 = 2.94 uniform).
      per = 1.0
      if (cfg.get("learner") or {}).get("loss_reduction") == "sum":
        per = cfg["alpha"] * cfg["num_envs"] // cfg["num_actors"] * cfg["async_batch_unrolls"]
      for key in DIAGNOSTICS:
        vals = [float(row[key]) for row in table if row.get(key) not in (None, "")]
        if key in ("entropy", "value_loss"):
          vals = [v / per for v in vals]
        if vals:
          diag[key] = {"first": vals[0], "last": vals[-1],
                       "mean": sum(vals) / len(vals)}
    cfg = s.get("config") or {}
    rows.append({"seed": run.seed, "env": s.get("env"), "budget": cfg.get("total_steps"),
                 "env_steps": s["env_steps"], "updates": s["updates"],
                 "reached_0.9_at_steps": (reached["env_steps"]
                                          if math.isfinite(reached["env_steps"]) else None),
                 "final_eval": run.evals[-1]["mean_return"] if run.evals else None,
                 "evals": [[e["env_steps"], e["mean_return"]] for e in run.evals],
                 "host": run.host, "sps": s["sps"], "diagnostics": diag})
  if not rows:
    return None
  return {"runs": rows, "passed": len(rows) >= 2 and all(r["reached_0.9_at_steps"] is not None
                                                         for r in rows)}


def _protocol_text(results: str) -> Optional[str]:
  path = os.path.join(results, "PROTOCOL.md")
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return f.read()


def build_report(results: str, resamples: int, settings: Dict[str, Any]) -> Dict[str, Any]:
  runs = load_runs(results)
  summary = summarize(runs, resamples)
  throughput = None
  if os.path.exists(os.path.join(results, THROUGHPUT)):
    with open(os.path.join(results, THROUGHPUT)) as f:
      throughput = json.load(f)
  return {"title": "HTS-RL GFootball learning results (Table 2 / A10, Table A9, Figs. A5/A6)",
          "protocol": {"settings": PROTOCOL, "file": _protocol_text(results)},
          "settings": settings, "targets": list(TARGETS), "paper": PAPER,
          "summary": summary, "paired": paired_ratios(runs, resamples),
          "throughput": throughput, "throughput_minutes": throughput_minutes(summary, throughput),
          "hosts": list(dict.fromkeys(r["host"] for r in runs)),
          "validation": validation_report(results), "identity": identity_report(results),
          "runs": runs}


# ---------------------------------------------------------------------------------------------
# Curves.

def plot_curves(report: Dict[str, Any], out_dir: str, resamples: int = 2_000) -> List[str]:
  """Score vs env steps (Fig. A6) and vs wall time (Fig. A5): per method the mean evaluation
  score over seeds (each seed's last score carried forward) and its 95% bootstrap band."""
  scenarios = list(report["summary"])
  if not scenarios:
    return []
  paths = []
  for axis, xlabel, name, scale in (("env_steps", "env steps", "score_vs_env_steps", 1.0),
                                    ("wall_time_s", "wall time (minutes)", "score_vs_wall_time",
                                     1 / 60)):
    panels = [(short(scenario), {
        LABELS[m]: [([e[axis] * scale for e in r["evals"]], [e["score"] for e in r["evals"]])
                    for r in report["runs"]
                    if r["scenario"] == scenario and r["method"] == m and r["evals"]]
        for m in METHODS}) for scenario in scenarios]
    paths.append(plots.band_figure(os.path.join(out_dir, f"{name}.png"), panels, xlabel=xlabel,
                                   ylabel="evaluation score (10 episodes)", ylim=(-0.05, 1.05),
                                   resamples=resamples))
  return paths


def write_report(results: str, resamples: int, settings: Dict[str, Any],
                 readme: Optional[str], docs: Optional[str] = None) -> Dict[str, Any]:
  """results.json (with its provenance), tables.md, the curves, README's summary block and
  docs/results.md's tables block (each where given)."""
  blocks = [(readme, README_BLOCK, render_summary), (docs, DOCS_BLOCK, render_markdown)]
  report = publish.publish(results, build_report(results, resamples, settings), render_markdown,
                           [(p, b, r) for p, b, r in blocks if p], table="tables.md")
  report["plots"] = plot_curves(report, results)
  return report
