r"""The corrections study (results/corrections/PROTOCOL.md, fixed before its runs and rendered from
`GRID`): which policy-lag correction gives HTS-PPO synchronous PPO's sample efficiency, on
GFootball's close scenario, three MuJoCo tasks and the LSTM memory task, 5 seeds each; its
decision rule picks HTS-PPO's default.

    hts-reproduce corrections                          # the protocol's grid, then the report
    hts-reproduce corrections --tasks=CartPoleNoVel --methods=decoupled,none
    hts-reproduce corrections --report_only            # results.json and table.md from the runs

(from a clone: `python -m experiments.reproduce corrections ...`). Runs go one at a time as paired
blocks into `<results>/runs/<task>/<method>/seed<k>/`; the committed GFootball close runs of
`behaviour` and `sync_ppo` (results/gfootball, the same flags) count and are read from there
(`Grid.borrowed`). `--shared_machine="what ran beside"` marks the runs made now as sharing the
machine (their wall times are not used; env steps and returns do not depend on it). The report
gives per task and method each seed's env steps to the target over full windows of 10
evaluations (a miss censored at the budget), the final metric (mean of the last 10 evaluations),
each quarter's mean of the PPO update's diagnostics, and the decision rule's verdict.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Dict, List, Optional


from hts_jax.analysis import metrics, stats
from hts_jax.results import compare, gfootball, grid, publish, render
from hts_jax.results.corrections_text import (CHANGES, DIAGNOSTICS, DIAGNOSTICS_TABLE, PROSE,
                                              QUESTION, README_NOTES, TABLE_NOTES, quarter_medians)
from hts_jax.results.record import Column, Grid, Method, Table, Task

CLOSE = "academy_empty_goal_close"
SEEDS = (0, 1, 2, 3, 4)
REFERENCE = "sync_ppo"
CORRECTIONS = ("behaviour", "decoupled", "none")
SHARED = grid.SHARED  # a run's mark that other work shared the machine
PASS_RATIO = 1.1  # steps tasks: pass at <= 1.1x sync PPO's median env steps


def _close_flags() -> Dict[str, Any]:
  """results/gfootball/PROTOCOL.md's flags of its PPO methods, at its scale."""
  out = gfootball.GRID.run_flags(CLOSE, "hts_ppo", 0)
  return {k: v for k, v in out.items() if k not in ("seed", "total_steps", "mode",
                                                    "correction")}


COMMON = {"tensorboard": False, "log_every_s": 60}
TASKS = (
    Task(CLOSE, f"gfootball:{CLOSE}", _close_flags(), 400_000, SEEDS, 8_000, target=0.8),
    *(Task(t, t, {"preset": "mujoco_hts_ppo", "env": t, **COMMON, "eval_every": 50_000},
           1_000_000, SEEDS, 50_000) for t in ("Hopper-v5", "Walker2d-v5", "HalfCheetah-v5")),
    Task("CartPoleNoVel", "hts_jax/CartPoleNoVel-v1",
         {"preset": "memory_lstm_ppo", **COMMON, "eval_every": 2_000, "eval_episodes": 5,
          "eval_greedy": False}, 100_000, SEEDS, 2_000, target=475.0))
BUDGET = {t.name: t.budget for t in TASKS}
STEPS_TASKS = tuple(t.name for t in TASKS if t.target is not None)  # the others: final metric


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


def _run_extra(f: grid.Finished) -> Dict[str, Any]:
  run = metrics.load_run(f.logdir)
  return {"clip_frac": _mean([r.get("clip_frac") for r in run.train_curve()]),
          "quarters": quarters(run, BUDGET[f.task])}


def _cell_extra(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
  """The per-seed values the decision rule reads (None: a miss, or no evaluations)."""
  return {"per_seed": {k: [r[k] for r in runs]
                       for k in ("steps_to_target", "final_metric", "clip_frac")},
          "quarters": quarter_medians(runs)}


def _median(xs: List[Optional[float]], missing: float = math.inf) -> float:
  """The median with None (a censored miss; a run without evaluations) as `missing`."""
  return statistics.median([missing if x is None else x for x in xs])


def _q(ref: float, c: float) -> float:
  """Steps tasks' score S_sync / S_c: a miss by both is 1, a correction's miss 0, at most 10
  (PROTOCOL.md, Changes)."""
  if math.isinf(c):
    return 1.0 if math.isinf(ref) else 0.0
  return min(ref / c, 10.0)


def _complete(table: Dict[str, Dict[str, Any]]) -> List[str]:
  return [t for t, cells in table.items()
          if all(len(cells.get(m.name, {}).get("seeds", [])) == len(SEEDS) for m in METHODS)]


def decide(table: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """PROTOCOL.md's decision rule over the tasks that have every method's 5 seeds (`table`: per
  task and method, `seeds` and the per-seed `steps_to_target` / `final_metric`); `passes`, per
  task and correction, whether it passes there (None: the task is not complete yet)."""
  passes = {c: [] for c in CORRECTIONS}
  scores = {c: [] for c in CORRECTIONS}
  complete = _complete(table)
  verdicts = {t: {c: None for c in CORRECTIONS if c in cells} for t, cells in table.items()}
  for task in complete:
    cells = table[task]
    ref = cells[REFERENCE]
    for c in CORRECTIONS:
      if task in STEPS_TASKS:
        s_c, s_ref = _median(cells[c]["steps_to_target"]), _median(ref["steps_to_target"])
        ok, q = s_c <= PASS_RATIO * s_ref, _q(s_ref, s_c)
      else:
        f_c = _median(cells[c]["final_metric"], -math.inf)
        ok = f_c >= min(-math.inf if f is None else f for f in ref["final_metric"])
        q = f_c / _median(ref["final_metric"], -math.inf)
      if ok:
        passes[c].append(task)
      verdicts[task][c] = ok
      scores[c].append(max(q, 0.01))
  if not complete:
    return {"complete_tasks": [], "winner": None, "passes_by_task": verdicts}
  geo = {c: math.exp(sum(map(math.log, s)) / len(s)) for c, s in scores.items()}
  best = max(CORRECTIONS, key=lambda c: (len(passes[c]), geo[c], c == "behaviour"))
  return {"complete_tasks": complete, "passes": passes, "geometric_mean_q": geo,
          "winner": best if len(complete) == len(TASKS) else None,
          "leader_so_far": best, "passes_by_task": verdicts}


def _per_seed(task: str, cell: Dict[str, Any]) -> List[float]:
  """A cell's per-seed scores: the final metric (a run without evaluations at -inf), or on a
  steps task the env steps to the target (lower better; a miss censored at the budget)."""
  if task not in STEPS_TASKS:
    return [-math.inf if f is None else f for f in cell["final_metric"]]
  return [BUDGET[task] if s is None else s for s in cell["steps_to_target"]]


def aggregates(table: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """`compare.aggregates` of every correction against sync PPO over the tasks that have every
  method's seeds: the final metric, or on a steps task the env steps to the target (a miss at
  the budget; normalised as sync's median over them)."""
  return compare.aggregates(
      {(t, m): dict(zip(table[t][m]["seeds"], _per_seed(t, table[t][m])))
       for t in _complete(table) for m in (REFERENCE, *CORRECTIONS)},
      CORRECTIONS, REFERENCE, "the final metric, or env steps to the target on "
      f"{', '.join(STEPS_TASKS)} (a miss at the budget)", lower_better=STEPS_TASKS)


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


def _verdict(out: Dict[str, Any]) -> Dict[str, Any]:
  """The decision, the aggregates and question 3 over the cells' per-seed values; each
  correction's cell gets its verdict (`passes`: None until its task is complete), in place."""
  table = {t: {m: {"seeds": c["seeds"], **c["per_seed"]} for m, c in cells.items()}
           for t, cells in out["table"].items()}
  decision = decide(table)
  for task, verdicts in decision["passes_by_task"].items():
    for c, ok in verdicts.items():
      out["table"][task][c]["passes"] = ok
  return {"decision": decision, "study_aggregates": aggregates(table),
          "clip_frac_matches_sync": clip_overlap(table)}


def _mean(xs: List[Optional[float]]) -> Optional[float]:
  xs = [x for x in xs if x is not None]
  return sum(xs) / len(xs) if xs else None


def _median_range(xs: List[stats.Censored]) -> str:
  """'median [min, max]' of per-seed values, a miss censored at the budget (≥)."""
  lo, hi = min(xs, key=lambda s: s.value), max(xs, key=lambda s: s.value)
  return f"{stats.censored_median(xs).cell()} [{lo.cell()}, {hi.cell()}]"


def _steps_cell(c: Dict[str, Any]) -> str:
  """Per seed (≥ budget: a miss, censored; `floor`: at the first full window), then the median
  the decision rule uses and the [min, max]."""
  t = GRID.task(c["task"])
  if t.target is None:
    return "-"
  xs = c["per_seed"]["steps_to_target"]
  seeds = [stats.Censored.of(x, t.budget) for x in xs]
  shown = ", ".join(s.cell() + (" (floor)" if stats.is_floor(x, t.first_window) else "")
                    for s, x in zip(seeds, xs))
  return f"{shown}; median {_median_range(seeds)} (min-max)"


def _values_cell(key: str, fmt: str) -> Any:
  def cell(c: Dict[str, Any]) -> str:
    xs = c["per_seed"][key]
    real = [x for x in xs if x is not None]
    if not real:
      return "-"
    s = stats.spread(real)
    shown = ", ".join("-" if x is None else fmt.format(x) for x in xs)
    return (f"{shown}; median {fmt.format(s['median'])} [{fmt.format(s['interval']['lo'])}, "
            f"{fmt.format(s['interval']['hi'])}] ({s['interval']['kind']})")
  return cell


def _rule_cell(c: Dict[str, Any]) -> str:
  """README's cell: the median the decision rule reads and the seeds' [min, max] (k of 5 where
  fewer), then the rule's verdict once the task is complete."""
  t = GRID.task(c["task"])
  if t.target is not None:
    xs = [stats.Censored.of(x, t.budget) for x in c["per_seed"]["steps_to_target"]]
  else:
    xs = [stats.Censored(x) for x in c["per_seed"]["final_metric"] if x is not None]
  if not xs:
    return "-"
  part = f" ({len(xs)} of {len(t.seeds)} seeds)" if len(xs) < len(t.seeds) else ""
  verdict = {None: "", True: "; passes", False: "; misses"}[c.get("passes")]
  return f"{_median_range(xs)}{part}{verdict}"


def _decision(out: Dict[str, Any], aggregates_too: bool = True) -> List[str]:
  """Question 3, the aggregates (`aggregates_too`) and the decision with each correction's
  passes and geometric mean of q (its cost in the study), a paragraph each."""
  d, agg = out["decision"], out["study_aggregates"]
  q3 = "; ".join(f"{t}: {'-' if v is None else 'yes' if v else 'no'}"
                 for t, v in out["clip_frac_matches_sync"].items())
  lines = [f"Does `decoupled`'s clip_frac range overlap sync PPO's? {q3 or '-'}."]
  if agg["methods"] and aggregates_too:
    lines.append(compare.aggregates_line(agg, lambda m: f"`{m}`"))
  passed = "; ".join(f"`{c}` passes {len(d['passes'][c])} ({', '.join(d['passes'][c]) or '-'}),"
                     f" geometric mean of q {d['geometric_mean_q'][c]:.2f}"
                     for c in CORRECTIONS) if d["complete_tasks"] else ""
  return lines + [f"Decision (PROTOCOL.md): tasks complete {d['complete_tasks'] or 'none'}; "
                  + (f"{passed}; " if passed else "")
                  + (f"winner `{d['winner']}`." if d.get("winner") else
                     "no winner until every task is complete (leading: "
                     f"`{d.get('leader_so_far')}`).")]


METHODS = (
    Method("sync_ppo", {"mode": "sync"}, "synchronous PPO, the same hyperparameters (lag 0)"),
    Method("behaviour", {"mode": "hts", "correction": "behaviour"},
           "the clip centred on μ (the reference HTS-RL code, APPO, Cleanba)"),
    Method("decoupled", {"mode": "hts", "correction": "decoupled"},
           "the clip centred on p = π_{θ_j}, each sample weighted by min(c̄, p/μ) (Hilton, "
           "Cobbe & Schulman 2022; `--is_cap=100`, the default)"),
    Method("none", {"mode": "hts", "correction": "none"}, "everything at θ_j: the lag ignored"))
TABLE = Table(  # table.md, and docs/modes.md's block
    columns=(Column("seeds", lambda c: str(len(c["seeds"]))),
             Column("env steps to target", _steps_cell),
             Column("final metric", _values_cell("final_metric", "{:,.2f}")),
             Column("clip_frac (mean over updates)", _values_cell("clip_frac", "{:.3f}"))),
    notes=lambda out: TABLE_NOTES,
    after=lambda out: "\n\n".join(_decision(out)), doc="docs/modes.md",
    block=publish.Block("corrections-tables", "corrections"))


def _clip_line(out: Dict[str, Any]) -> str:
  """README's line on the PPO update: per task, each method's median over seeds of its runs'
  mean clip fraction."""
  per = [f"{task} " + " / ".join("-" if not xs else f"{statistics.median(xs):.2f}" for xs in (
      [x for x in (cells.get(m.name) or {}).get("per_seed", {}).get("clip_frac", [])
       if x is not None] for m in METHODS)) for task, cells in out["table"].items()]
  return ("Samples whose ratio starts outside 1 ± ε (`clip_frac`, the median over seeds of each "
          f"run's mean over its updates; {' / '.join(m.name for m in METHODS)}): "
          + "; ".join(per) + ". `behaviour` centres the clip on μ, one update behind the params "
          "the epochs start from.")


README = Table(
    columns=(Column("", _rule_cell),), pivot=True, aggregates=False,
    after=lambda out: " ".join([_clip_line(out), *_decision(out, aggregates_too=False)]),
    block=publish.Block("corrections-results", "corrections"), doc="docs/modes.md",
    notes=lambda out: README_NOTES)
GRID = Grid(
    name="corrections", title="The corrections study", results="results/corrections",
    question=QUESTION, methods=METHODS, tasks=TASKS, reference=REFERENCE,
    tables=(TABLE, README, DIAGNOSTICS_TABLE),
    borrowed={(CLOSE, "behaviour"): f"../gfootball/runs/{CLOSE}/hts_ppo_behaviour/seed{{seed}}",
              (CLOSE, "sync_ppo"): f"../gfootball/runs/{CLOSE}/sync_ppo_r1/seed{{seed}}"},
    run_extra=_run_extra, cell_extra=_cell_extra, report_extra=_verdict, prose=PROSE,
    seed_major=True,
    fixed="2026-11-27, committed before any run of this study (issue 50). It picks, by data, the "
    "policy-lag correction HTS-PPO runs by default; a change goes under \"Changes\" and the "
    "affected task is run again for every method", changes=CHANGES + (render.PAIRED_CALIBRATION,
                                                           render.STOLEN_CPU))

