r"""The corrections study (results/corrections/PROTOCOL.md, fixed before its runs): which policy-lag
correction gives HTS-PPO synchronous PPO's sample efficiency, on GFootball's close scenario, three
MuJoCo tasks and the LSTM memory task, 5 seeds each; its decision rule picks HTS-PPO's default.

    hts-reproduce corrections                          # the protocol's grid, then the report
    hts-reproduce corrections --tasks=CartPoleNoVel --methods=decoupled,none
    hts-reproduce corrections --report_only            # results.json and table.md from the runs

(from a clone: `python -m experiments.reproduce corrections ...`). Runs go one at a time as paired
blocks (`hts_jax.results.grid`) into `<results>/runs/<task>/<method>/seed<k>/`; the committed
GFootball close runs of `behaviour` and `sync_ppo` (results/gfootball, the same flags) count and
are read from there. `--shared_machine="what ran beside"` marks the runs made now as sharing the
machine (their wall times are not used; env steps and returns do not depend on it). The report
gives per task and method each seed's env steps to the target over full windows of 10 evaluations
(a miss is censored: `null`), the final metric (mean of the last 10 evaluations), each quarter's
mean of the PPO update's diagnostics, and the decision rule's verdict.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from typing import Any, Dict, List, Optional

from absl import flags

import numpy as np

from hts_jax.analysis import metrics, stats
from hts_jax.results import grid, provenance, publish

from hts_jax.results.corrections_spec import (  # noqa: F401 (the study's names, re-exported)
    CLOSE, COMMITTED, CORRECTIONS, DIAGNOSTICS, FIRST_WINDOW, METHODS, PASS_RATIO, REFERENCE,
    SEEDS, SHARED, TASKS, run_flags)

FLAGS = flags.FLAGS


def define_flags() -> None:
  flags.DEFINE_list("tasks", list(TASKS), f"Tasks, of {list(TASKS)}.")
  flags.DEFINE_list("methods", list(METHODS), f"Methods, of {list(METHODS)}.")
  flags.DEFINE_list("seeds", list(SEEDS), "Seeds.")
  flags.DEFINE_string("results", "results/corrections", "Where runs and the report go.")
  flags.DEFINE_bool("report_only", False, "Only rewrite the report from the runs there are.")
  flags.DEFINE_string("shared_machine", "", "What else ran on the machine during the runs made "
                      "now (recorded beside each; empty: nothing).")


def _runs(results: str) -> List[Dict[str, Any]]:
  """Every finished run of the study: the grid's and the committed GFootball ones."""
  found = [(f.task, f.method, f.logdir) for f in grid.finished_runs(results)]
  base = os.path.join(os.path.dirname(os.path.abspath(results)), "gfootball", "runs", CLOSE)
  for method, there in COMMITTED.items():
    for seed in SEEDS:
      logdir = os.path.join(base, there, f"seed{seed}")
      if os.path.exists(os.path.join(logdir, "summary.json")):
        found.append((CLOSE, method, logdir))
  out = []
  for task, method, logdir in found:
    if task not in TASKS or method not in METHODS:
      continue
    run = metrics.load_run(logdir)
    kind, target, budget = TASKS[task]
    returns = [e["mean_return"] for e in run.evals]
    hit = metrics.first_reached(returns, target) if target is not None else None
    out.append({"task": task, "method": method, "seed": run.summary["seed"],
                "logdir": os.path.relpath(logdir), "evaluations": len(returns),
                "steps_to_target": run.evals[hit]["env_steps"] if hit is not None else None,
                "final_metric": metrics.final_metric(run), **provenance.run_host(run.summary),
                "shared_machine": grid.shared_note(logdir) or False,
                "clip_frac": _mean([r.get("clip_frac") for r in run.train_curve()]),
                "quarters": quarters(run, budget)})
  return sorted(out, key=lambda r: (r["task"], r["method"], r["seed"]))


def quarters(run: metrics.Run, budget: int) -> List[Dict[str, float]]:
  """Each quarter of the budget's mean of the diagnostics its metrics.csv rows carry."""
  rows = run.train_curve()
  out = []
  for q in range(4):
    lo, hi = q * budget / 4, (q + 1) * budget / 4
    mine = [r for r in rows if lo < r.get("env_steps", 0) <= hi]
    out.append({k: sum(r[k] for r in mine if k in r) / sum(1 for r in mine if k in r)
                for k in DIAGNOSTICS if any(k in r for r in mine)})
  return out


def _median(xs: List[Optional[float]], missing: float = math.inf) -> float:
  """The median with None (a censored miss; a run without evaluations) as `missing`."""
  return statistics.median([missing if x is None else x for x in xs])


def _q(ref: float, c: float) -> float:
  """Steps tasks' score S_sync / S_c: a miss by both is 1, a correction's miss 0, at most 10
  (PROTOCOL.md, Changes)."""
  if math.isinf(c):
    return 1.0 if math.isinf(ref) else 0.0
  return min(ref / c, 10.0)


def decide(table: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """PROTOCOL.md's decision rule over the tasks that have every method's 5 seeds."""
  passes = {c: [] for c in CORRECTIONS}
  scores = {c: [] for c in CORRECTIONS}
  complete = [t for t, cells in table.items()
              if all(len(cells.get(m, {}).get("seeds", [])) == len(SEEDS) for m in METHODS)]
  for task in complete:
    cells, kind = table[task], TASKS[task][0]
    ref = cells[REFERENCE]
    for c in CORRECTIONS:
      if kind == "steps":
        s_c, s_ref = _median(cells[c]["steps_to_target"]), _median(ref["steps_to_target"])
        ok, q = s_c <= PASS_RATIO * s_ref, _q(s_ref, s_c)
      else:
        f_c = _median(cells[c]["final_metric"], -math.inf)
        ok = f_c >= min(-math.inf if f is None else f for f in ref["final_metric"])
        q = f_c / _median(ref["final_metric"], -math.inf)
      if ok:
        passes[c].append(task)
      scores[c].append(max(q, 0.01))
  if not complete:
    return {"complete_tasks": [], "winner": None}
  geo = {c: math.exp(sum(map(math.log, s)) / len(s)) for c, s in scores.items()}
  best = max(CORRECTIONS, key=lambda c: (len(passes[c]), geo[c], c == "behaviour"))
  return {"complete_tasks": complete, "passes": passes, "geometric_mean_q": geo,
          "winner": best if len(complete) == len(TASKS) else None,
          "leader_so_far": best}


def report(results: str) -> Dict[str, Any]:
  runs = _runs(results)
  table: Dict[str, Dict[str, Any]] = {}
  for r in runs:
    cell = table.setdefault(r["task"], {}).setdefault(r["method"], {
        "seeds": [], "steps_to_target": [], "final_metric": [], "clip_frac": []})
    cell["seeds"].append(r["seed"])
    cell["steps_to_target"].append(r["steps_to_target"])
    cell["final_metric"].append(r["final_metric"])
    cell["clip_frac"].append(r["clip_frac"])
  for r in runs:  # the statistics rules' shared-machine flag, per host kind
    kind = [q for q in runs if q["host"] == r["host"]]
    r["shared"] = stats.shared(r, kind, marked=bool(r["shared_machine"]))
  out = {"protocol": "results/corrections/PROTOCOL.md", "runs": runs, "table": table,
         "clip_frac_matches_sync": clip_overlap(table),
         "hosts": list(dict.fromkeys(r["host"] for r in runs)), "decision": decide(table),
         "aggregates": aggregates(table),
         "runs_commit": stats.provenance_commit(provenance.ROOT, [
             os.path.relpath(os.path.abspath(r["logdir"]), provenance.ROOT) for r in runs])}
  return publish.publish(results, out, render_markdown, [])


def _per_seed(task: str, cell: Dict[str, Any]) -> List[float]:
  """A cell's per-seed values, higher better: the final metric, or minus the env steps to the
  target (a miss at minus its budget: censored, it counts as the budget)."""
  kind, _, budget = TASKS[task]
  if kind == "final":
    return [-math.inf if f is None else f for f in cell["final_metric"]]
  return [-(budget if s is None else s) for s in cell["steps_to_target"]]


def aggregates(table: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """Across the tasks that have every method's seeds (Agarwal et al. 2021, `stats`): per
  correction, the probability that a run of it beats a run of sync PPO on the same task (averaged
  over tasks), and the IQM over tasks x seeds of its score normalised by sync PPO's median there
  (final metric / sync's median; sync's median env steps / its env steps, a miss at the budget)."""
  complete = [t for t, cells in table.items()
              if all(len(cells.get(m, {}).get("seeds", [])) == len(SEEDS) for m in METHODS)]
  if not complete:
    return {"tasks": []}
  ref = np.array([_per_seed(t, table[t][REFERENCE]) for t in complete]).T  # seeds x tasks
  out = {"tasks": complete}
  for c in CORRECTIONS:
    mine = np.array([_per_seed(t, table[t][c]) for t in complete]).T
    norm = mine / np.median(ref, axis=0)  # steps: (-s) / (-s_sync) = s / s_sync: invert
    norm = np.where([TASKS[t][0] == "steps" for t in complete], 1.0 / norm, norm)
    out[c] = {"probability_of_improvement_over_sync": stats.probability_of_improvement(mine, ref),
              "iqm_normalised_to_sync": stats.iqm(norm)}
  return out


def clip_overlap(table: Dict[str, Dict[str, Any]]) -> Dict[str, Optional[bool]]:
  """Question 3, per task: whether `decoupled`'s per-seed clip_frac range overlaps sync PPO's
  (None where either has none)."""
  out = {}
  for task, cells in table.items():
    ranges = []
    for m in ("decoupled", REFERENCE):
      xs = [x for x in cells.get(m, {}).get("clip_frac", []) if x is not None]
      ranges.append((min(xs), max(xs)) if xs else None)
    out[task] = (None if None in ranges
                 else ranges[0][0] <= ranges[1][1] and ranges[1][0] <= ranges[0][1])
  return out


def _mean(xs: List[Optional[float]]) -> Optional[float]:
  xs = [x for x in xs if x is not None]
  return sum(xs) / len(xs) if xs else None


def _steps_cell(task: str, xs: List[Optional[float]]) -> str:
  """Per seed (≥ budget: a miss, censored; `floor`: at the first full window), then the median
  the decision rule uses and the [min, max]."""
  budget = TASKS[task][2]
  seeds = [stats.Censored.of(x, budget) for x in xs]
  shown = ", ".join(c.cell() + (" (floor)" if stats.is_floor(x, FIRST_WINDOW[task]) else "")
                    for c, x in zip(seeds, xs))
  lo, hi = min(seeds, key=lambda c: c.value), max(seeds, key=lambda c: c.value)
  return (f"{shown}; median {stats.censored_median(seeds).cell()} "
          f"[{lo.cell()}, {hi.cell()}] (min-max)")


def _values_cell(xs: List[Optional[float]], fmt: str) -> str:
  real = [x for x in xs if x is not None]
  if not real:
    return "-"
  s = stats.spread(real)
  shown = ", ".join("-" if x is None else fmt.format(x) for x in xs)
  return (f"{shown}; median {fmt.format(s['median'])} [{fmt.format(s['interval']['lo'])}, "
          f"{fmt.format(s['interval']['hi'])}] ({s['interval']['kind']})")


def render_markdown(out: Dict[str, Any]) -> str:
  shared = sum(1 for r in out["runs"] if r.get("shared"))
  lines = [f"**The corrections study** ({out['protocol']}). Cells: each seed, then the median "
           "and the [min, max] over seeds; '≥ budget': the target not reached within the budget "
           "(censored, counted at the budget); '(floor)': reached at the first full window of 10 "
           "evaluations, the earliest the cadence allows. Source: "
           f"{publish.source(out, 'results/corrections/results.json')}"
           + f". {shared} of {len(out['runs'])} runs shared the machine (results.json's `shared`:"
           " the decision uses env steps and returns only, which do not depend on it).", ""]
  rows = []
  for task, cells in out["table"].items():
    for method in METHODS:
      if method in cells:
        c = cells[method]
        rows.append([task, method, len(c["seeds"]),
                     _steps_cell(task, c["steps_to_target"]) if TASKS[task][1] else "-",
                     _values_cell(c["final_metric"], "{:,.2f}"),
                     _values_cell(c["clip_frac"], "{:.3f}")])
  lines.append(stats.markdown(["task", "method", "seeds", "env steps to target",
                               "final metric", "clip_frac (mean over updates)"], rows))
  d, agg = out["decision"], out.get("aggregates") or {"tasks": []}
  q3 = "; ".join(f"{t}: {'-' if v is None else 'yes' if v else 'no'}"
                 for t, v in out["clip_frac_matches_sync"].items())
  lines += [f"Does `decoupled`'s clip_frac range overlap sync PPO's? {q3 or '-'}"]
  if agg["tasks"]:
    lines += ["", f"Across the complete tasks ({', '.join(agg['tasks'])}; Agarwal et al. 2021, "
              "rliable's metrics; no interval at 5 seeds a task): "
              + "; ".join(f"`{c}` P(beats sync PPO) "
                          f"{agg[c]['probability_of_improvement_over_sync']:.2f}, IQM of its score "
                          f"normalised to sync PPO's median {agg[c]['iqm_normalised_to_sync']:.2f}"
                          for c in CORRECTIONS) + "."]
  lines += ["", f"Decision (PROTOCOL.md): tasks complete {d['complete_tasks'] or 'none'}; "
            + (f"winner `{d['winner']}`." if d.get("winner") else
               f"no winner until every task is complete (leading: `{d.get('leader_so_far')}`).")]
  return "\n".join(lines) + "\n"


def main(argv):
  del argv
  grid.check_methods(FLAGS.methods, METHODS)
  grid.check_tasks("--tasks", FLAGS.tasks, list(TASKS), "the protocol's tasks")
  seeds = grid.parse_seeds(FLAGS.seeds)
  todo = grid.paired_blocks(FLAGS.tasks, FLAGS.methods, seeds, run_flags)
  # The committed GFootball runs count: never run them again here.
  todo = [r for r in todo if not (r.task == CLOSE and r.method in COMMITTED)]
  failed = [] if FLAGS.report_only else grid.run_all_marked(todo, FLAGS.results,
                                                             FLAGS.shared_machine)
  print(json.dumps(report(FLAGS.results)["table"], indent=1))
  return failed

