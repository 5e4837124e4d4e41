"""What the GFootball grid's report adds to the paper's metrics (`hts_jax.results.gfootball`'s
`Paper.extras`), from the runs' own files: the IMPALA validation (its runs under
<results>/impala_validation), the PPO update's diagnostics over the first quarter of each budget
(the runs' metrics.csv: how the policy-lag corrections change the update), whole runs' throughput
against the benchmark's (and what resets cost), and each method's figures per host kind where a
scenario's runs span several."""

from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Optional

from hts_jax.analysis import metrics
from hts_jax.results import launch, publish

LABELS = {"hts_ppo": "HTS-PPO", "sync_ppo": "PPO (sync)", "impala": "IMPALA",
          "hts_ppo_behaviour": "HTS-PPO (behaviour)",
          "hts_ppo_delayed": "HTS-PPO (delayed)"}  # the methods, in the tables' order
REFERENCE = "hts_ppo"  # the paired ratios' denominator
TARGETS = ("0.4", "0.8")  # Table 2 / A10
ENV_COSTS = "env_costs.json"  # `python -m experiments.bench_env_costs --save=...` writes it
VALIDATION = "impala_validation"  # the IMPALA validation's runs: <results>/<VALIDATION>/seed<k>
DIAGNOSTICS = ("entropy", "rho_clipped_frac", "mean_rho", "value_loss", "learning_rate")
WINDOW = 0.25  # the PPO update's diagnostics: over the first quarter of each budget


def extras(results: str, out: Dict[str, Any], resamples: int) -> Dict[str, Any]:
  """The report's GFootball parts (`Paper.extras`); adds each scenario's protocol seed count and
  host kinds (and per-host figures) to the summary in place."""
  planned = {sc: len(t["seeds"]) for sc, t in out["protocol"]["settings"]["tasks"].items()}
  by_host(out, planned, resamples)
  parts = {"validation": validation_report(results),
           "update_diagnostics": update_diagnostics(results, out["runs"], resamples),
           "run_throughput": run_throughput(
               out["runs"], out["throughput"],
               publish.read_json(results, ENV_COSTS), resamples)}
  for part in ("update_diagnostics", "run_throughput"):  # their '(k of n seeds)': the protocol's n
    for sc, d in parts[part].items():
      d["planned_seeds"] = planned.get(sc, 0)
  return parts


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
    table = run.train_curve()
    cfg = s.get("config") or {}
    # With the loss summed over the batch (TorchBeast's), entropy and value loss are sums over
    # its env steps: per step, they compare across batch sizes (entropy ln 19 = 2.94 uniform).
    per = 1.0
    if table and (cfg.get("learner") or {}).get("loss_reduction") == "sum":
      per = cfg["alpha"] * cfg["num_envs"] // cfg["num_actors"] * cfg["async_batch_unrolls"]
    for key in DIAGNOSTICS:
      vals = [row[key] for row in table if key in row]
      if key in ("entropy", "value_loss"):
        vals = [v / per for v in vals]
      if vals:
        diag[key] = {"first": vals[0], "last": vals[-1], "mean": sum(vals) / len(vals)}
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


def by_cell(runs: List[Dict[str, Any]]) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
  """The runs as {scenario: {method: [runs, in the report's order]}}, methods in LABELS' order."""
  cells: Dict[str, Dict[str, List[Dict[str, Any]]]] = {}
  for r in runs:
    cells.setdefault(r["scenario"], {}).setdefault(r["method"], []).append(r)
  return {sc: {m: ms[m] for m in sorted(ms, key=list(LABELS).index)} for sc, ms in cells.items()}


def update_diagnostics(results: str, runs: List[Dict[str, Any]],
                       resamples: int) -> Dict[str, Any]:
  """Why the PPO methods learn at different rates, in the runs' own metrics.csv: per scenario and
  PPO method (the runs whose rows carry `clip_frac`), over the updates of the first WINDOW of the
  budget, the mean share of samples with a clipped ratio, of |ρ - 1| and of the approximate KL,
  and the policy's entropy over the window's last fifth; each a mean over seeds [min, max].
  Under `--correction=behaviour` the ratio's denominator is the behaviour policy, one update
  behind the params the epochs start from, so more samples start outside 1 ± clip."""
  out = {}
  for sc, cells in by_cell(runs).items():
    per: Dict[str, Dict[str, List[float]]] = {}
    window, clip = set(), set()
    for m, cell in cells.items():
      for r in cell:
        run = metrics.load_run(os.path.join(results, r["path"]))
        early = metrics.early_update(run, WINDOW)
        if early is None:
          continue
        got = per.setdefault(m, {"seeds": []})
        got["seeds"].append(r["seed"])
        for key in (*metrics.PPO_UPDATE_KEYS, "entropy"):
          got.setdefault(key, []).extend([early[key]] if key in early else [])
        window.add(early["window_steps"])
        clip.add(((run.summary.get("config") or {}).get("learner") or {}).get("clip_eps"))
    # One budget and one clip per scenario under the protocol; a grid that mixes them says so.
    if per:
      out[sc] = {"window_steps": sorted(window), "clip_eps": sorted(clip - {None}),
                 "methods": {m: {"seeds": v.pop("seeds"),
                                 **{k: metrics.seed_interval(x, resamples=resamples)
                                    for k, x in v.items() if x}} for m, v in per.items()}}
  return out


def run_throughput(runs: List[Dict[str, Any]], throughput: Optional[Dict[str, Any]],
                   env_costs: Optional[Dict[str, Any]], resamples: int) -> Dict[str, Any]:
  """Why whole runs step slower than the throughput benchmark: per scenario and method, the SPS
  (evaluations included) of the runs on the benchmark's host kind against the benchmark's median
  (30,000 steps of a barely trained policy, no evaluation), and the runs' mean training episode
  length (env steps over finished episodes, any host). With env_costs.json (a reset's cost in steps,
  `reset_in_steps`, and a random policy's episode length), `reset_share` is what resets add to a
  step's env time at the runs' episode length (reset_in_steps / length), beside the random policy's:
  a policy that scores sooner plays shorter episodes, so more of its env time goes to resets."""
  bench = (throughput or {}).get("scenarios") or {}
  bench_host = (throughput or {}).get("host")
  costs = (env_costs or {}).get("envs") or {}
  out = {}
  for sc, cells in by_cell(runs).items():
    cost = costs.get(f"gfootball:{sc}") or {}
    reset, random_len = cost.get("reset_in_steps"), cost.get("random_episode_length")
    out[sc] = {"reset_in_steps": reset, "random_episode_length": random_len,
               "random_reset_share": reset / random_len if reset and random_len else None,
               "methods": {}}
    for m, cell in cells.items():
      lengths = [r["env_steps"] / r["episodes"] for r in cell if r.get("episodes")]
      b = ((bench.get(sc) or {}).get(m) or {}).get("median_sps")
      length = metrics.seed_interval(lengths, resamples=resamples) if lengths else None
      # SPS against the benchmark only from the runs on the benchmark's host kind.
      same = [r for r in cell if r["host"] == bench_host]
      sps = metrics.seed_interval([r["sps"] for r in same], resamples=resamples) if same else None
      out[sc]["methods"][m] = {
          "seeds": [r["seed"] for r in cell], "sps_seeds": [r["seed"] for r in same],
          "sps": sps, "benchmark_sps": b, "benchmark_host": bench_host,
          "sps_to_benchmark": sps["mean"] / b if b and sps else None, "episode_length": length,
          "reset_share": reset / length["mean"] if reset and length else None}
  return out


def by_host(body: Dict[str, Any], planned: Dict[str, int], resamples: int) -> None:
  """Per scenario, in place: the protocol's seed count (`planned_seeds`: a scenario whose methods
  all have fewer runs is partial), its runs' host kinds (`hosts`), and where they are more than
  one, each method's SPS and whole-run minutes per host kind (`by_host`): absolute figures from
  different host kinds are never averaged together (PROTOCOL.md)."""
  for sc, s in body["summary"].items():
    s["planned_seeds"] = planned.get(sc, 0)
    here = [r for r in body["runs"] if r["scenario"] == sc]
    s["hosts"] = list(dict.fromkeys(r["host"] for r in here))
    if len(s["hosts"]) < 2:
      continue
    for m, row in s["methods"].items():
      row["by_host"] = {}
      for kind in s["hosts"]:
        mine = [r for r in here if r["method"] == m and r["host"] == kind]
        if mine:
          row["by_host"][kind] = {
              "seeds": [r["seed"] for r in mine],
              "sps": metrics.seed_interval([r["sps"] for r in mine], resamples=resamples),
              "wall_time_min": metrics.seed_interval([r["wall_time_s"] / 60 for r in mine],
                                                    resamples=resamples)}
