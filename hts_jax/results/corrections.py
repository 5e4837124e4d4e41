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

from hts_jax.analysis import metrics
from hts_jax.results import grid, provenance, publish
from hts_jax.results import gfootball_spec

CLOSE = "academy_empty_goal_close"
# task key -> (kind, target or None, budget); the protocol's table.
TASKS = {CLOSE: ("steps", 0.8, 400_000), "Hopper-v5": ("final", None, 1_000_000),
         "Walker2d-v5": ("final", None, 1_000_000), "HalfCheetah-v5": ("final", None, 1_000_000),
         "CartPoleNoVel": ("steps", 475.0, 100_000)}
METHODS = {"sync_ppo": {"mode": "sync"}, "behaviour": {"mode": "hts", "correction": "behaviour"},
           "decoupled": {"mode": "hts", "correction": "decoupled"},
           "none": {"mode": "hts", "correction": "none"}}
REFERENCE = "sync_ppo"
CORRECTIONS = ("behaviour", "decoupled", "none")
SEEDS = ("0", "1", "2", "3", "4")
# The committed GFootball runs that count (PROTOCOL.md): method here -> method there.
COMMITTED = {"behaviour": "hts_ppo", "sync_ppo": "sync_ppo"}
DIAGNOSTICS = ("clip_frac", "approx_kl", "kl_lag", "is_weight", "is_ess", "is_above_2",
               "is_capped", "entropy")
PASS_RATIO = 1.1  # steps tasks: pass at <= 1.1x sync PPO's median env steps
SHARED = "shared_machine.json"  # a run's mark that other work shared the machine
FLAGS = flags.FLAGS


def define_flags() -> None:
  flags.DEFINE_list("tasks", list(TASKS), f"Tasks, of {list(TASKS)}.")
  flags.DEFINE_list("methods", list(METHODS), f"Methods, of {list(METHODS)}.")
  flags.DEFINE_list("seeds", list(SEEDS), "Seeds.")
  flags.DEFINE_string("results", "results/corrections", "Where runs and the report go.")
  flags.DEFINE_bool("report_only", False, "Only rewrite the report from the runs there are.")
  flags.DEFINE_string("shared_machine", "", "What else ran on the machine during the runs made "
                      "now (recorded beside each; empty: nothing).")


def run_flags(task: str, method: str, seed: int) -> Dict[str, Any]:
  """One run's launcher flags, as PROTOCOL.md's table fixes them."""
  fixed, budget = METHODS[method], TASKS[task][2]
  if task == CLOSE:
    out = gfootball_spec.run_flags("hts_ppo", CLOSE, seed, budget, num_envs=8, num_executors=4,
                                   ppo_actors=1, impala_actors=4, representation="simple115v2")
    out.pop("mode", None)
    return {**out, **fixed}
  common = {"seed": seed, "total_steps": budget, "tensorboard": False, "log_every_s": 60, **fixed}
  if task == "CartPoleNoVel":
    return {"preset": "memory_lstm_ppo", **common, "eval_every": 2_000, "eval_episodes": 5,
            "eval_greedy": False}
  return {"preset": "mujoco_hts_ppo", "env": task, **common, "eval_every": 50_000}


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
    shared = os.path.join(logdir, SHARED)
    out.append({"task": task, "method": method, "seed": run.summary["seed"],
                "logdir": os.path.relpath(logdir), "evaluations": len(returns),
                "steps_to_target": run.evals[hit]["env_steps"] if hit is not None else None,
                "final_metric": metrics.final_metric(run), **provenance.run_host(run.summary),
                "shared_machine": _note(shared),
                "clip_frac": _mean([r.get("clip_frac") for r in run.train_curve()]),
                "quarters": quarters(run, budget)})
  return sorted(out, key=lambda r: (r["task"], r["method"], r["seed"]))


def _note(path: str):
  """The shared-machine note beside a run (False: none)."""
  if not os.path.exists(path):
    return False
  with open(path) as f:
    return json.load(f)["note"]


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
  out = {"protocol": "results/corrections/PROTOCOL.md", "runs": runs, "table": table,
         "clip_frac_matches_sync": clip_overlap(table),
         "hosts": list(dict.fromkeys(r["host"] for r in runs)), "decision": decide(table)}
  return publish.publish(results, out, render_markdown, [])


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


def _seeds(xs: List[Optional[float]], fmt: str, missing: str = "miss") -> str:
  shown = ", ".join(missing if x is None else fmt.format(x) for x in xs)
  real = [x for x in xs if x is not None]
  return f"{shown} [{fmt.format(min(real))}, {fmt.format(max(real))}]" if real else shown


def render_markdown(out: Dict[str, Any]) -> str:
  lines = [f"**The corrections study** ({out['protocol']}; per seed, then [min, max]; 'miss': the "
           "target not reached within the budget, censored). Source: "
           f"{publish.source(out, 'results/corrections/results.json')}.",
           "", "| task | method | seeds | env steps to target | final metric | clip_frac (mean "
           "over updates) |", "|---|---|---|---|---|---|"]
  for task, cells in out["table"].items():
    for method in METHODS:
      if method in cells:
        c = cells[method]
        lines.append(f"| {task} | {method} | {len(c['seeds'])} | "
                     f"{_seeds(c['steps_to_target'], '{:,.0f}') if TASKS[task][1] else '-'} | "
                     f"{_seeds(c['final_metric'], '{:,.2f}')} | "
                     f"{_seeds(c['clip_frac'], '{:.3f}', '-')} |")
  d = out["decision"]
  q3 = "; ".join(f"{t}: {'-' if v is None else 'yes' if v else 'no'}"
                 for t, v in out["clip_frac_matches_sync"].items())
  lines += ["", f"Does `decoupled`'s clip_frac range overlap sync PPO's? {q3 or '-'}"]
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
  failed = [] if FLAGS.report_only else _run_all(todo)
  print(json.dumps(report(FLAGS.results)["table"], indent=1))
  return failed


def _run_all(todo: List[grid.Run]) -> List[str]:
  failed = []
  for run in todo:
    logdir = run.logdir(FLAGS.results)
    fresh = not os.path.exists(os.path.join(logdir, "summary.json"))
    failed += grid.run_all([run], FLAGS.results)
    if fresh and FLAGS.shared_machine and os.path.exists(os.path.join(logdir, "summary.json")):
      with open(os.path.join(logdir, SHARED), "w") as f:
        json.dump({"note": FLAGS.shared_machine}, f)
  return failed
