"""The named parts of a paper-style report beyond the paper's metrics (a grid's TOML names them:
`named.EXTRAS`, `named.SECTIONS`, `named.TITLES`, `named.ROWS`), from the runs' own files: the
IMPALA validation (its runs under <results>/impala_validation), the PPO update's diagnostics over
the first quarter of each budget (the runs' metrics.csv: how the policy-lag corrections change
the update), whole runs' throughput against the benchmark's (and what resets cost), each
method's figures per host kind where a task's runs span several; and the cells the tables share
('(k of n seeds)', paired ratios, per-host figures) and where the reference method is not ahead.
Their wording is results/gfootball/text.md.in's."""

from __future__ import annotations

import math
import os
from typing import Any, Dict, Iterable, List, Optional

from hts_jax.analysis import metrics, stats
from hts_jax.results import compare, grid, paper_report, publish
from hts_jax.results.publish import fmt_ci

ENV_COSTS = "env_costs.json"  # `python -m experiments.bench_env_costs --save=...` writes it
VALIDATION = "impala_validation"  # the IMPALA validation's runs: <results>/<VALIDATION>/seed<k>
DIAGNOSTICS = ("entropy", "rho_clipped_frac", "mean_rho", "value_loss", "learning_rate")
WINDOW = 0.25  # the PPO update's diagnostics: over the first quarter of each budget


def extras(results: str, out: Dict[str, Any], resamples: int) -> Dict[str, Any]:
  """The report's GFootball parts (`Paper.extras`); adds each scenario's protocol seed count
  (`planned_seeds`, their '(k of n seeds)': a scenario whose methods all have fewer runs is
  partial) to the summary and the parts, and the summary's host kinds (`by_host`), in place."""
  parts = {"validation": validation_report(results),
           "update_diagnostics": update_diagnostics(results, out["runs"], resamples),
           "run_throughput": run_throughput(
               out["runs"], out["throughput"],
               publish.read_json(results, ENV_COSTS), resamples)}
  planned = {sc: len(t["seeds"]) for sc, t in out["protocol"]["settings"]["tasks"].items()}
  for part in (out["tasks"], parts["update_diagnostics"], parts["run_throughput"]):
    for sc, d in part.items():
      d["planned_seeds"] = planned.get(sc, 0)
  by_host(out, resamples)
  return parts


def validation_report(results: str) -> Optional[Dict[str, Any]]:
  """The IMPALA validation (PROTOCOL.md): per seed, where the running average over full windows
  of 10 evaluations first reached 0.9, the final evaluation, and the diagnostics (metrics.csv) at
  the first and the last update."""
  root = os.path.join(results, VALIDATION)
  rows = []
  for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
    path = os.path.join(root, name)
    if not grid.finished(path):
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


def update_diagnostics(results: str, runs: List[Dict[str, Any]],
                       resamples: int) -> Dict[str, Any]:
  """Why the PPO methods learn at different rates, in the runs' own metrics.csv: per scenario and
  PPO method (the runs whose rows carry `clip_frac`), over the updates of the first WINDOW of the
  budget, the mean share of samples with a clipped ratio, of |ρ - 1| and of the approximate KL,
  and the policy's entropy over the window's last fifth; each a mean over seeds [min, max].
  Under `--correction=behaviour` the ratio's denominator is the behaviour policy, one update
  behind the params the epochs start from, so more samples start outside 1 ± clip."""
  out = {}
  for sc, cells in compare.cells(runs).items():
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
  bench_host = (throughput or {}).get("host")
  costs = (env_costs or {}).get("envs") or {}
  out = {}
  for sc, cells in compare.cells(runs).items():
    cost = costs.get(f"gfootball:{sc}") or {}
    reset, random_len = cost.get("reset_in_steps"), cost.get("random_episode_length")
    out[sc] = {"reset_in_steps": reset, "random_episode_length": random_len,
               "random_reset_share": reset / random_len if reset and random_len else None,
               "methods": {}}
    for m, cell in cells.items():
      lengths = [r["env_steps"] / r["episodes"] for r in cell if r.get("episodes")]
      b = paper_report.benchmark_sps(throughput, sc, m)
      length = metrics.interval_or_none(lengths, resamples=resamples)
      # SPS against the benchmark only from the runs on the benchmark's host kind.
      same = [r for r in cell if r["host"] == bench_host]
      sps = metrics.interval_or_none([r["sps"] for r in same], resamples=resamples)
      out[sc]["methods"][m] = {
          "seeds": [r["seed"] for r in cell], "sps_seeds": [r["seed"] for r in same],
          "sps": sps, "benchmark_sps": b, "benchmark_host": bench_host,
          "sps_to_benchmark": sps["mean"] / b if b and sps else None, "episode_length": length,
          "reset_share": reset / length["mean"] if reset and length else None}
  return out


def by_host(body: Dict[str, Any], resamples: int) -> None:
  """Per scenario, in place: its runs' host kinds (`hosts`), and where they are more than one,
  each method's SPS and whole-run minutes per host kind (`by_host`): absolute figures from
  different host kinds are never averaged together (PROTOCOL.md)."""
  for sc, s in body["tasks"].items():
    here = [r for r in body["runs"] if r["task"] == sc]
    s["hosts"] = list(dict.fromkeys(r["host"] for r in here))
    if len(s["hosts"]) < 2:
      continue
    for m, row in s["methods"].items():
      row["by_host"] = {}
      for kind in s["hosts"]:
        mine = [r for r in here if r["method"] == m and r["host"] == kind]
        if mine:
          row["by_host"][kind] = {"seeds": [r["seed"] for r in mine],
                                  **paper_report.speed(mine, resamples)}


def short(scenario: str) -> str:
  return scenario.replace("academy_", "").replace("_", " ").capitalize()


def update_row(sc: str, d: Dict[str, Any]) -> str:
  listed = lambda values, fmt: "/".join(fmt.format(v) for v in values) or "-"  # noqa: E731
  return f"{short(sc)} ({listed(d['window_steps'], '{:,}')}, {listed(d['clip_eps'], '{:g}')})"


def seeds_of(scenario_summary: Dict[str, Any]) -> int:
  """The protocol's seeds for the scenario (`planned_seeds`), or more where a method has more (a
  method with fewer is labelled)."""
  return max(scenario_summary.get("planned_seeds", 0),
             *(len(r["seeds"]) for r in scenario_summary["methods"].values()))


def partial(scenario_summary: Dict[str, Any], method: str) -> str:
  """'(k of n seeds) ' where the method has fewer seeds than the scenario's others, else ''
  (a summary's or the update statistics' scenario: both hold `methods` with their `seeds`)."""
  k, n = len(scenario_summary["methods"][method]["seeds"]), seeds_of(scenario_summary)
  return f"({k} of {n} seeds) " if k < n else ""


def _part(report: Dict[str, Any], part: str, scenario: str, method: str) -> Dict[str, Any]:
  """The report's `part` ("paired": the paired ratios, "throughput_minutes": the benchmark's
  minutes) of `method` on `scenario`, per target ({} where it has none)."""
  return ((report.get(part) or {}).get(scenario) or {}).get(method) or {}


def ratio_cell(report: Dict[str, Any], scenario: str, method: str, t: str, ref: str) -> str:
  """The paired ratio's cell: `ref` for HTS-PPO where one of its seeds reached the target ('-'
  where none did), else the geometric mean over the blocks (a miss counts at its run's end and
  makes the ratio a bound), as 'n=k of N' where N blocks could count (`compare.paired`'s `could`:
  both runs, one host kind) and k < N (blocks where a run shared the machine are left out)."""
  if method == report["reference"]:
    steps = report["tasks"][scenario]["methods"][method]["required_steps"][t]
    return ref if steps.get("reached") else "-"
  ci = _part(report, "paired", scenario, method).get(t)
  cell = stats.ratio_cell(ci)
  if ci and ci.get("mean") is not None and len(ci["could"]) > ci["n"]:
    cell = cell[:-1] + f" of {len(ci['could'])})"
  return cell


def per_host(r: Dict[str, Any], key: str, fmt: str, unit: str) -> str:
  """`r[key]` over its seeds, or per host kind (`by_host`) where the scenario's runs span
  several."""
  if not r.get("by_host"):
    return fmt_ci(r[key], fmt) + unit
  return "; ".join(f"{fmt_ci(v[key], fmt)}{unit} on {kind} (seed{'s' * (len(v['seeds']) > 1)} "
                   f"{', '.join(map(str, v['seeds']))})" for kind, v in r["by_host"].items())


def paired_cell(sec, task: str, method: str, r: Dict[str, Any], out: Dict[str, Any]) -> str:
  """A paper-style grid's paired time ratios of `method` to the reference, a target each."""
  del sec, r
  if method == out.get("reference"):
    return "1 (reference)"
  return " / ".join(map(stats.ratio_cell, _part(out, "paired", task, method).values()))


def bench_minutes(sec, task: str, method: str, r: Dict[str, Any], out: Dict[str, Any]) -> str:
  """Minutes to each target from env steps over the throughput benchmark's median SPS."""
  del sec, r
  got = _part(out, "throughput_minutes", task, method)
  return " / ".join("-" if v is None else f"{v:.1f}" for v in got.values())


def bench_minutes_sps(sec, scenario: str, method: str, r: Dict[str, Any],
                      out: Dict[str, Any]) -> str:
  """`bench_minutes`, then the benchmark's median SPS of the method in parentheses."""
  sps = paper_report.benchmark_sps(out.get("throughput"), scenario, method)
  return bench_minutes(sec, scenario, method, r, out) + (f" ({sps:,.0f} SPS)" if sps else "")


def benchratio(report: Dict[str, Any], scenario: str, method: str, t: str) -> Optional[float]:
  """The method's minutes to the target (env steps over its benchmark SPS) over HTS-PPO's."""
  mine, ref = (_part(report, "throughput_minutes", scenario, m).get(t)
               for m in (method, report["reference"]))
  return mine / ref if mine is not None and ref else None


def _ci_mean(ci: Optional[Dict[str, Any]]) -> Optional[float]:
  """An interval's mean; None where there is none."""
  return None if not ci else ci.get("mean")


def ahead(report: Dict[str, Any], scenario: str, t: str,
          baselines: Iterable[str]) -> Optional[Dict[str, Dict[str, Any]]]:
  """Where each of `baselines` that ran the scenario is ahead of the reference (HTS-PPO) on the
  target `t` (None where the reference has not run): `fewer` env steps to it (`mine` against
  `theirs`), or where some of the reference's seeds missed it, reached in `more_seeds`; less time
  to it, `paired` (the ratio's cell) or from env steps over the benchmark's SPS (`bench`); and
  per final metric `higher`, the means told apart (`_apart`), with whether one seed or
  overlapping intervals hedge it."""
  ms = report["tasks"][scenario]["methods"]
  ref = ms.get(report["reference"])
  if ref is None:
    return None
  found = {}
  for m in (m for m in baselines if m != report["reference"] and m in ms):
    r, mine, theirs = ms[m], ms[m]["required_steps"][t], ref["required_steps"][t]
    paired = _part(report, "paired", scenario, m).get(t)
    bench = benchratio(report, scenario, m, t)
    found[m] = {"mine": mine, "theirs": theirs, "higher": {},
                "fewer": (None not in (_ci_mean(mine), _ci_mean(theirs))
                          and mine["mean"] < theirs["mean"]),
                "more_seeds": _ci_mean(theirs) is None and mine["reached"] > theirs["reached"],
                "paired": (ratio_cell(report, scenario, m, t, "1")
                           if _ci_mean(paired) is not None and paired["mean"] < 1 else None),
                "bench": bench if bench is not None and bench < 1 else None}
    for key in ("final_metric", "final_time"):
      a, b = r.get(key), ref.get(key)
      # Higher at 4 decimals: two means of equal scores differ only by float sums.
      if None not in (_ci_mean(a), _ci_mean(b)) and round(a["mean"], 4) > round(b["mean"], 4):
        found[m]["higher"][key] = {"apart": _apart(a["mean"], b["mean"]),
                                   "one_seed": min(a.get("n", 1), b.get("n", 1)) < 2,
                                   "overlap": a.get("lo", a["mean"]) <= b.get("hi", b["mean"])}
  return found


def _apart(a: float, b: float) -> str:
  """'a vs b' with 2 decimals, or as many more (up to 4) as it takes to show them apart."""
  d = 2
  while d < 4 and f"{a:.{d}f}" == f"{b:.{d}f}":
    d += 1
  return f"{a:.{d}f} vs {b:.{d}f}"
