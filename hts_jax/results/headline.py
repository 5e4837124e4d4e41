"""The headline: does HTS reach each score sooner than sync, and why or why not, from
the committed results only. Per task of the paper-style grids (`SOURCES`), at the highest of its
protocol's targets that a run of HTS or sync reached (its top target where none did), three paired
ratios over the blocks (one seed's runs, back to back on one host kind), each the other method's
over HTS's so that above 1 favours HTS:

- time to the target (the grid's own `paired` cell, its statistics rules: geometric mean, a miss
  censored at its run's end), and its reading under each earlier pair rule that gives another
  (`stats.PAIR_RULES`: a rule changed after runs were made shows both readings);
- throughput: HTS's whole-run SPS over the other's (the speedup HTS would have if it learned as
  much per env step: the ceiling);
- sample efficiency: the other's env steps to the target over HTS's (censored at the run's end),
  over every block: env steps depend on neither the host nor a shared machine.

The first is about the product of the other two. Beside them: the rollout benchmark's HTS/sync
ratios (sampler.json) and what step-time variance does to them (speedup.json, the paper's Fig. 3).
`python -m experiments.headline` writes results/headline.json, results/headline.png, README's
`headline` block and docs/results.md's `headline-details` block: templates/headline.md.j2's words
(Jinja2) around this module's computations; the tests check each block is the JSON rendered.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hts_jax.analysis import stats
from hts_jax.results import compare, provenance, publish
from hts_jax.results.paper_parts import short

# (grid, HTS's method, the methods compared with it, their labels)
SOURCES = (("gfootball", "hts_ppo", ("sync_ppo", "impala"),
            {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO", "impala": "IMPALA"}),
           ("atari", "hts_a2c", ("a2c",), {"hts_a2c": "HTS-A2C", "a2c": "sync A2C"}))
# The paper's "same score" claim: (grid, HTS with the presets' correction, its sync baseline).
SCORES = (("gfootball", "hts_ppo", "sync_ppo"), ("atari", "hts_a2c", "a2c"),
          ("minatar", "hts_a2c", "a2c"), ("mujoco", "hts_ppo_none", "sync_ppo"),
          ("memory", "hts_lstm_none", "sync_lstm"))
GRIDS = tuple(dict.fromkeys(g for g, *_ in SOURCES + SCORES))  # the grids it reads
SYNC = ("sync_ppo", "a2c")  # the synchronous baselines (the bottom line's comparison)
JSON, FIGURE = "results/headline.json", "results/headline.png"
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
BLOCK = publish.Block("headline", "", by="python -m experiments.headline")  # README's
DETAILS_BLOCK = publish.Block("headline-details", "", by="python -m experiments.headline")
Row = Tuple[Dict[str, Any], str, Dict[str, Any]]  # (task row, compared method, its cells)


def task_rows(report: Dict[str, Any], hts: str, others: Sequence[str],
              labels: Dict[str, str]) -> List[Dict[str, Any]]:
  """A grid's results.json -> a row per task: its top target, HTS's seeds, and per other method
  its seeds, the three paired ratios (`compare.paired`'s cells: per block `ratios` over
  `blocks`) and the blocks where a run missed the target (`censored`)."""
  rows = []
  for task, s in report["tasks"].items():
    runs = [r for r in report["runs"] if r["task"] == task]
    seeds = lambda method, runs=runs: sorted(r["seed"] for r in runs if r["method"] == method)
    targets = list(s["targets"])
    reached = [t for t in targets if any(r["required"][t]["minutes"] is not None for r in runs
                                         if r["method"] in (hts, *SYNC))]
    target = (reached or targets)[-1]
    planned = report["protocol"]["settings"]["tasks"].get(task, {}).get("seeds", ())
    row = {"task": task, "target": target, "budget": s["budget"], "label": labels[hts],
           "planned_seeds": len(planned),
           "hts_seeds": seeds(hts), "methods": {}}
    missed = {(r["method"], r["seed"]) for r in runs if r["required"][target]["minutes"] is None}
    for other in others:
      # Env steps depend on neither the host nor a shared machine: every block counts.
      steps = compare.paired(runs, other, hts, lambda r: stats.Censored.of(
          r["required"][target]["env_steps"], r["env_steps"]), every_block=True)
      # Seconds per env step, the other's over HTS's: HTS's SPS over the other's.
      through = compare.paired(runs, other, hts, lambda r: stats.Censored(1.0 / r["sps"]))
      time = (report["paired"].get(task, {}).get(other, {}).get(target)
              or dict(stats.ratio([]), blocks=[]))
      earlier = [(rule, compare.paired(runs, other, hts, compare.minutes_to(target), rule=rule,
                                       population=report["runs"]))
                 for rule in stats.PAIR_RULES[:-1]]
      row["methods"][other] = {
          "label": labels[other], "seeds": seeds(other), "time": time, "throughput": through,
          "steps": steps, "earlier_rules": [
              {"since": rule.since, **{k: cell[k] for k in ("mean", "n", "bound", "blocks")}}
              for rule, cell in earlier if (cell["mean"], cell["n"]) != (time["mean"], time["n"])],
          "censored": [b for b in steps["blocks"] if (hts, b) in missed or (other, b) in missed],
          "neither": [b for b in steps["blocks"] if (hts, b) in missed and (other, b) in missed]}
    rows.append(row)
  return rows


def score_rows(reports: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
  """Per task of `SCORES`' grids (`reports`: their results.json), HTS's and sync's final metric
  (mean over seeds, and seeds)."""
  def side(s: Dict[str, Any], method: str) -> Dict[str, Any]:
    c = s["methods"].get(method) or {}
    return {"mean": (c.get("final_metric") or {}).get("mean"), "seeds": len(c.get("seeds") or ())}
  return [{"grid": grid, "task": task, "hts_method": hts, "sync_method": sync,
           "hts": side(s, hts), "sync": side(s, sync)}
          for grid, hts, sync in SCORES for task, s in reports[grid].get("tasks", {}).items()]


def executor_shares(report: Dict[str, Any], hts: str) -> Optional[Dict[str, float]]:
  """Where HTS's executors spent their time, the mean over its runs that shared no machine:
  waiting for actions (the actor calls), at the barrier (the learner's turn) and the rest,
  stepping their envs (and their own overhead)."""
  got = [r["idle_share"] for r in report["runs"] if r["method"] == hts and not r.get("shared")
         and "executors_waiting_for_actions" in r.get("idle_share", {})]
  if not got:
    return None
  wait = sum(g["executors_waiting_for_actions"] for g in got) / len(got)
  barrier = sum(g.get("executors_at_barrier", 0.0) for g in got) / len(got)
  return {"stepping envs": 1.0 - wait - barrier, "waiting for actions": wait,
          "at the barrier": barrier, "runs": len(got)}


def build(root: str) -> Dict[str, Any]:
  """headline.json's content, from the committed JSON under `root` (the repository)."""
  reports = {g: publish.read_json(os.path.join(root, "results", g), "results.json") or {}
             for g in GRIDS}
  tasks, sources, waiting = [], {}, {}
  for grid, hts, others, labels in SOURCES:
    report = reports[grid]
    if not report:
      continue
    sources[grid] = {"path": f"results/{grid}/results.json", "commit": report.get("commit"),
                     "runs_commit": report.get("runs_commit")}
    tasks += [dict(row, grid=grid) for row in task_rows(report, hts, others, labels)]
    waiting[grid] = executor_shares(report, hts)
  sampler = publish.read_json(os.path.join(root, "results", "benchmarks"), "sampler.json") or {}
  speedup = publish.read_json(os.path.join(root, "results", "benchmarks"), "speedup.json") or {}
  return {"tasks": tasks, "scores": score_rows(reports), "sources": sources,
          "executors": waiting,
          "sampler": {"machine": sampler.get("machine"), "date": sampler.get("date"), **{
              k: {r["case"]: r[v] for r in sampler.get("rows", []) if v in r} for k, v in
              (("ratios", "hts_over_sync"), ("lag_0_ratios", "lag0_over_sync"))}},
          "variance": {"machine": speedup.get("machine"), "date": speedup.get("date"),
                       "rows": [{"var_over_mean2": r["var_over_mean2"], "speedup": r["speedup"]}
                                for r in speedup.get("rows", []) if r.get("grid") == "variance"]}}


# What the words stand on: which ratio is picked, its bound, before and after the pair rules.

def task_name(task: str) -> str:
  """A task's name in the words: 'Empty goal close' for academy_empty_goal_close, 'Pong'."""
  return short(task) if task.startswith("academy_") else task.split("/")[-1]


def measured(cell: Dict[str, Any]) -> bool:
  """The ratio has a value (some block counted)."""
  return cell.get("mean") is not None


def neither(m: Dict[str, Any], cell: Dict[str, Any]) -> bool:
  """Every block of the cell had both runs miss the target (its ratio is the runs' lengths')."""
  return bool(cell.get("n")) and len(m["neither"]) >= cell["n"]


def sooner(m: Dict[str, Any]) -> Optional[bool]:
  """Whether HTS is measured sooner: True for a time ratio above 1 that is measured or a lower
  bound, False for one at most 1 that is measured or an upper bound; None for any other bound, or
  where no block counted in which some run reached the target."""
  cell = m["time"]
  if not measured(cell) or neither(m, cell):
    return None
  above = cell["mean"] > 1.0
  return above if cell.get("bound") in (None, "lower" if above else "upper") else None


def against_sync(out: Dict[str, Any]) -> List[Row]:
  """Every task against its sync method, in the JSON's order."""
  return [(t, k, m) for t in out["tasks"] for k, m in t["methods"].items() if k in SYNC]


def soonest(out: Dict[str, Any]) -> Optional[Dict[str, Any]]:
  """Where HTS reached the target soonest against sync (`row`, `sync`, `cells`), the other time
  ratios where it was sooner (`rest`, ascending), and of how many tasks timed (`ahead` of
  `timed`); None where it was sooner on none."""
  timed = [x for x in against_sync(out) if measured(x[2]["time"])]
  ahead = [x for x in timed if sooner(x[2])]
  if not ahead:
    return None
  t, k, m = max(ahead, key=lambda x: x[2]["time"]["mean"])
  rest = sorted(x[2]["time"]["mean"] for x in ahead if x[2] is not m)
  return {"row": t, "sync": k, "cells": m, "rest": rest, "ahead": len(ahead), "timed": len(timed)}


def behind(out: Dict[str, Any]) -> List[Row]:
  """The tasks where HTS was measured not sooner than sync."""
  return [x for x in against_sync(out) if sooner(x[2]) is False]


def untimed(out: Dict[str, Any]) -> List[Row]:
  """The tasks where no block could be timed against sync, but HTS needed more env steps."""
  return [(t, k, m) for t, k, m in against_sync(out) if not measured(m["time"])
          and measured(m["steps"]) and m["steps"]["mean"] < 1.0]


def reason(m: Dict[str, Any]) -> str:
  """Why HTS was not sooner: "speed" (no throughput lead), "steps" (more env steps than its lead
  makes up for) or "blocks" (neither: the blocks differ more than both explain)."""
  through, steps = m["throughput"].get("mean"), m["steps"].get("mean")
  if through is not None and through <= 1.0:
    return "speed"
  return "steps" if steps is not None and steps < 1.0 else "blocks"


def inverse(cell: Dict[str, Any]) -> Dict[str, Any]:
  """A ratio turned over (HTS's env steps over the other's), its bound with it."""
  flip = {"lower": "upper", "upper": "lower"}
  return dict(cell, mean=1 / cell["mean"], bound=flip.get(cell.get("bound"), cell.get("bound")))


def by_share(shares: Dict[str, float]) -> List[Tuple[str, float]]:
  """The executors' stages (`executor_shares`), the largest share first."""
  return sorted(((k, v) for k, v in shares.items() if k != "runs"), key=lambda kv: -kv[1])


def changes(out: Dict[str, Any], sync: bool = False) -> List[Tuple[Any, ...]]:
  """(task row, cells, reading, date): each time ratio that read otherwise before a change of the
  pair rules (`stats.PAIR_RULES`), its reading just before the last change that moved it and that
  change's date, in the JSON's order; with `sync`, against sync only, the earliest change first."""
  since = [r.since for r in stats.PAIR_RULES]
  got = []
  for t in out["tasks"]:
    for k, m in t["methods"].items():
      if m.get("earlier_rules") and (k in SYNC or not sync):
        last = max(m["earlier_rules"], key=lambda e: since.index(e["since"]))
        got.append((t, m, last, since[since.index(last["since"]) + 1]))
  return sorted(got, key=lambda x: x[3]) if sync else got


def _table(text: str) -> str:
  """The template's paragraphs as a markdown table's rows (cells split at `|`), header first."""
  rows = publish.lines(text).splitlines()
  header, *rows = [[c.strip() for c in line.split("|")] for line in rows]
  return stats.markdown(header, rows).rstrip("\n")


@functools.cache
def _macros() -> Any:
  """templates/headline.md.j2's macros, loaded once, with the computations above to call."""
  env = publish.templates(TEMPLATES)
  env.filters["table"] = _table
  env.tests["measured"] = measured
  env.globals.update({f.__name__: f for f in (task_name, neither, against_sync, soonest, behind,
                                              untimed, reason, inverse, by_share, changes)})
  env.globals.update(MARK=stats.BOUND_MARK, RULE=stats.PAIR_RULES[-1], JSON=JSON, FIGURE=FIGURE)
  return env.get_template("headline.md.j2").module


def render(macro: str, *args: Any) -> str:
  """A macro of templates/headline.md.j2 rendered: `plain` (README's `headline` block), `details`
  (docs/results.md's `headline-details` block), `sentences`, `bottom_line`, `table`, `spread`...,
  each called with the JSON or its cells; the computations above are theirs to call."""
  return getattr(_macros(), macro)(*args)


def plain_sentences(out: Dict[str, Any]) -> List[str]:
  """README's sentences (at most 4), the `headline` block's first lines."""
  return render("sentences", out).splitlines()


def bottom_line(out: Dict[str, Any]) -> List[str]:
  """docs/results.md's bottom line, at most 6 lines."""
  return render("bottom_line", out).splitlines()


# (markdown file, its block, the macro that renders it): what `refresh` writes and the tests check.
TARGETS = (("README.md", BLOCK, "plain"), ("docs/results.md", DETAILS_BLOCK, "details"))


def plot(out: Dict[str, Any], path: str) -> str:
  """The headline figure (`plots.ratio_rows`): per task, each block's time ratio (the other's
  over HTS's; hollow where a run missed the target), their geometric mean and the SPS ratio."""
  from hts_jax.analysis import plots  # pylint: disable=import-outside-toplevel
  rows = []
  for t in out["tasks"]:
    for k, m in t["methods"].items():
      time, note = m["time"], None
      if not measured(time) or neither(m, time):
        note = "neither reached it" if measured(time) else render("spread", m)
      rows.append({"label": f"{task_name(t['task'])}: {m['label']}", "note": note,
                   "color": "tab:orange" if k == "impala" else "tab:blue",
                   "dots": [(r, b in m["censored"]) for b, r in zip(time.get("blocks") or [],
                                                                   time.get("ratios") or [])],
                   "mean": time.get("mean"), "tick": m["throughput"].get("mean")})
  return plots.ratio_rows(
      path, rows, title="Time to each task's target, HTS against sync (and IMPALA)",
      xlabel="time to target, the method's over HTS's (> 1: HTS sooner)\ndots: blocks (hollow: "
             "a miss, a bound); diamond: geometric mean; grey: the SPS ratio")


def refresh(root: str, readme: bool = True) -> Dict[str, Any]:
  """Writes headline.json (as a reader of it gets it), the figure and, with `readme`, README's
  and docs/results.md's blocks under `root` (the repository); returns the JSON. A file without
  its block is left."""
  out = provenance.save(os.path.join(root, JSON), build(root))
  plot(out, os.path.join(root, FIGURE))
  if readme:
    for doc, block, macro in TARGETS:
      block.write(os.path.join(root, doc), render(macro, out))
  return out
