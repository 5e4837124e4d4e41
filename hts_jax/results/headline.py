"""The headline (issue 54): does HTS reach each score sooner than sync, and why or why not, from
the committed results only. Per task of the paper-style grids (`SOURCES`), at the highest of its
protocol's targets that a run of HTS or sync reached (its top target where none did), three paired
ratios over the blocks (one seed's runs, back to back on one host kind), each the other method's
over HTS's so that above 1 favours HTS:

- time to the target (the grid's own `paired` cell, its statistics rules: geometric mean, a miss
  censored at its run's end);
- throughput: HTS's whole-run SPS over the other's (the speedup HTS would have if it learned as
  much per env step: the ceiling);
- sample efficiency: the other's env steps to the target over HTS's (censored at the run's end),
  over every block: env steps depend on neither the host nor a shared machine.

The first is about the product of the other two. Beside them: the rollout benchmark's HTS/sync
ratios (sampler.json) and what step-time variance does to them (speedup.json, the paper's Fig. 3).
`python -m experiments.headline` writes results/headline.json, results/headline.png and README's
`headline` block; the tests check the block is the JSON rendered.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence

from hts_jax.analysis import stats
from hts_jax.results import compare, provenance, publish
from hts_jax.results.gfootball_markdown import short

# (grid, HTS's method, the methods compared with it, their labels)
SOURCES = (("gfootball", "hts_ppo", ("sync_ppo", "impala"),
            {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO", "impala": "IMPALA"}),
           ("atari", "hts_a2c", ("a2c",), {"hts_a2c": "HTS-A2C", "a2c": "sync A2C"}))
SYNC = ("sync_ppo", "a2c")  # the synchronous baselines (the bottom line's comparison)
# The paper's "same score" claim: (grid, HTS with the presets' correction, its sync baseline);
# paper-style grids keep per-task finals in `summary`, record grids in `table`.
SCORES = (("gfootball", "hts_ppo", "sync_ppo"), ("atari", "hts_a2c", "a2c"),
          ("minatar", "hts_a2c", "a2c"), ("mujoco", "hts_ppo_none", "sync_ppo"),
          ("memory", "hts_lstm_none", "sync_lstm"))
GRIDS = tuple(dict.fromkeys(g for g, *_ in SOURCES + SCORES))  # the grids it reads
BLOCK = publish.Block("headline", "", by="python -m experiments.headline")
JSON, FIGURE = "results/headline.json", "results/headline.png"


def task_rows(report: Dict[str, Any], hts: str, others: Sequence[str],
              labels: Dict[str, str]) -> List[Dict[str, Any]]:
  """A grid's results.json -> a row per task: its top target, HTS's seeds, and per other method
  its seeds, the three paired ratios (`compare.paired`'s cells: per block `ratios` over
  `blocks`) and the blocks where a run missed the target (`censored`)."""
  rows = []
  for task, s in report["summary"].items():
    runs = [r for r in report["runs"] if r["scenario"] == task]
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
      row["methods"][other] = {
          "label": labels[other], "seeds": seeds(other), "time": time, "throughput": through, "steps": steps,
          "censored": [b for b in steps["blocks"] if (hts, b) in missed or (other, b) in missed],
          "neither": [b for b in steps["blocks"] if (hts, b) in missed and (other, b) in missed]}
    rows.append(row)
  return rows


def score_rows(reports: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
  """Per task of `SCORES`' grids (`reports`: their results.json), HTS's and sync's final metric
  (mean over seeds, and seeds)."""
  rows = []
  for grid, hts, sync in SCORES:
    report = reports[grid]
    cells = ({t: s["methods"] for t, s in report.get("summary", {}).items()}
             if "summary" in report else report.get("table", {}))
    for task, methods in cells.items():
      got = {}
      for side, m in (("hts", hts), ("sync", sync)):
        c = (methods.get(m) or {})
        final = c.get("final") or c.get("final_metric") or {}
        got[side] = {"mean": final.get("mean"), "seeds": len(c.get("seeds") or ())}
      rows.append({"grid": grid, "task": task, "hts_method": hts, "sync_method": sync, **got})
  return rows


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


def _x(cell: Dict[str, Any], blocks: bool = True) -> str:
  """A ratio as '1.05x' with its mark ('≥', '≤', '~': a bound, see `stats.ratio_cell`)."""
  if cell.get("mean") is None:
    return "-"
  n = f" (n={cell['n']})" if blocks else ""
  return f"{stats.BOUND_MARK[cell.get('bound')]}{cell['mean']:.2f}x{n}"


def _neither(m: Dict[str, Any], cell: Dict[str, Any]) -> bool:
  """Every block of the cell had both runs miss the target (its ratio is the runs' lengths')."""
  return bool(cell.get("n")) and len(m["neither"]) >= cell["n"]


def _spread(m: Dict[str, Any], key: str = "time") -> str:
  """'1.02x [0.88, 1.18] (n=2 of 3)': of 3 blocks with both runs, 2 count (the rest ran on two
  host kinds, or were marked or calibrated apart: `compare.paired`)."""
  cell = m[key]
  apart = len(cell.get("left_out") or ())
  if cell.get("mean") is None:
    shared = len(cell.get("shared") or ())
    return (f"no block counts yet ({shared} marked or calibrated apart)" if shared
            else "no paired block yet" + (f" ({apart} on two host kinds)" if apart else ""))
  total = len(cell.get("could") or ()) + apart
  n = f"n={cell['n']}" + (f" of {total}" if total > cell["n"] else "")
  if _neither(m, cell):
    return f"neither reached it ({n})"
  lo_hi = f" [{cell['lo']:.2f}, {cell['hi']:.2f}]" if cell["n"] > 1 else ""
  return f"{_x(cell, False)}{lo_hi} ({n})"


def _name(task: str) -> str:
  return short(task) if task.startswith("academy_") else task.split("/")[-1]


def _stage(shares: Dict[str, float]) -> str:
  """'stepping envs 70% (waiting for actions 16%, at the barrier 14%)': the largest first."""
  parts = sorted(((k, v) for k, v in shares.items() if k != "runs"), key=lambda kv: -kv[1])
  return f"{parts[0][0]} {parts[0][1]:.0%} (" + ", ".join(f"{k} {v:.0%}" for k, v in parts[1:]) \
      + ")"


def _not_sooner(cell: Dict[str, Any]) -> bool:
  """HTS is measured not sooner: a ratio at most 1 that is measured or an upper bound."""
  return cell.get("mean") is not None and cell["mean"] <= 1.0 and cell.get("bound") in (
      None, "upper")


def _why_not(m: Dict[str, Any]) -> str:
  through, steps = m["throughput"].get("mean"), m["steps"].get("mean")
  if through is not None and through <= 1.0:
    return f"no throughput lead, {through:.2f}x"
  if steps is not None and steps < 1.0:
    at_least = "≥" if m["steps"].get("bound") == "upper" else ""  # HTS missed: a bound
    return (f"its {through:.2f}x throughput does not make up for needing "
            f"{at_least}{1 / steps:.2f}x the env steps")
  return "its throughput and sample efficiency are not behind: the blocks differ"


def bottom_line(out: Dict[str, Any]) -> List[str]:
  """README's bottom line, at most 5 lines, each from the JSON."""
  sync = [(t, m) for t in out["tasks"] for k, m in t["methods"].items() if k in SYNC]
  lines = ["**Time to target**, sync's over HTS's (paired blocks, geometric mean [min, max]; "
           "> 1: HTS sooner): " + "; ".join(
               f"{_name(t['task'])} ({t['target']}) {_spread(m)}" for t, m in sync) + "."]
  lines.append("**Why** (time ratio ≈ throughput x sample efficiency): HTS's SPS over sync's / "
               "sync's env steps to the target over HTS's: " + "; ".join(
                   f"{_name(t['task'])} {_x(m['throughput'], False)} / "
                   + ("neither reached it" if _neither(m, m["steps"]) else _x(m["steps"], False))
                   for t, m in sync) + ".")
  ratios, cores = out["sampler"]["ratios"], (out["sampler"]["machine"] or {}).get("cores")
  bounds = [f"{grid} {_stage(sh)}" for grid, sh in out["executors"].items() if sh]
  if ratios:
    lag_0 = list((out["sampler"].get("lag_0_ratios") or {}).values())
    lines.append(f"**Throughput** on {len(ratios)} rollout benchmark cases ({cores} "
                 f"cores, sampler.json): HTS/sync {min(ratios.values()):.2f}-"
                 f"{max(ratios.values()):.2f}x" + (f" (lag 0: {min(lag_0):.2f}-{max(lag_0):.2f}x)"
                 if lag_0 else "") + ". What bounds HTS (its executors' time): "
                 + ("; ".join(bounds) or "no run yet") + ".")
  var = out["variance"]["rows"]
  if var:
    lines.append("**The paper's 2-6x** comes from step-time variance over envs that leave the "
                 "cores idle: on a synthetic env whose steps sleep, at var/mean² "
                 + ", ".join(f"{r['var_over_mean2']:g}" for r in var) + " HTS is "
                 + ", ".join(f"{r['speedup']:.2f}x" for r in var) + " sync (speedup.json).")
  behind = [f"{_name(t['task'])} ({_why_not(m)})" for t, m in sync if _not_sooner(m["time"])
            and not _neither(m, m["time"])]
  if behind:
    lines.append("**Not sooner** on " + "; ".join(behind) + ".")
  return lines


def table(out: Dict[str, Any]) -> str:
  """A row per task and compared method; at most two numbers a cell."""
  rows = [[f"{_name(t['task'])} ({t['target']}; {t['planned_seeds']})",
           f"{m['label']} ({len(m['seeds'])}) / {t['label']} ({len(t['hts_seeds'])})",
           "neither reached it" if _neither(m, m["time"]) else _x(m["time"]),
           _x(m["throughput"], False),
           "neither reached it" if _neither(m, m["steps"]) else _x(m["steps"], False)]
          for t in out["tasks"] for m in t["methods"].values()]
  return stats.markdown(["task (target; the protocol's seeds)", "compared (seeds run)",
                         "time to target",
                         "throughput", "sample efficiency"], rows)


def scores_table(out: Dict[str, Any]) -> str:
  """The final metric of HTS (the presets' correction) and of sync, per task: two numbers a cell."""
  def cell(side: Dict[str, Any], fmt: str) -> str:
    return "-" if side["mean"] is None else f"{fmt.format(side['mean'])} ({side['seeds']})"
  rows = []
  for r in out["scores"]:
    fmt = "{:,.0f}" if max(abs(r[s]["mean"] or 0) for s in ("hts", "sync")) >= 100 else "{:.2f}"
    rows.append([f"{r['grid']}: {_name(r['task'])}", f"`{r['hts_method']}` / `{r['sync_method']}`",
                 cell(r["hts"], fmt), cell(r["sync"], fmt)])
  return stats.markdown(["task", "HTS / sync", "HTS's final metric (seeds)",
                         "sync's final metric (seeds)"], rows)


def render(out: Dict[str, Any]) -> str:
  """README's `headline` block."""
  srcs = ", ".join(f"`{s['path']}` (runs as committed in `{(s['runs_commit'] or '-')[:12]}`)"
                   for s in out["sources"].values())
  return ("\n".join(f"- {line}" for line in bottom_line(out)) + "\n\n"
          "Each cell is the compared method's figure over HTS's, a geometric mean over paired "
          "blocks (n: blocks whose two runs ran on one host kind, neither marked as sharing the "
          f"machine by its driver, calibrated within {stats.CALIBRATION_SHARED}x of each other: "
          "the statistics rules; ≥ / ≤: a bound where a run missed the target). "
          "Time to target: its time over HTS's. Throughput: HTS's SPS over its SPS. Sample "
          "efficiency: its env steps to the target over HTS's, over every block (env steps "
          "depend on neither the host nor a shared machine). "
          f"Source: `{JSON}`, from {srcs}.\n\n"
          + table(out) + "\n" + f"![time to target, HTS vs sync]({FIGURE})\n\n"
          "The same score? Each grid's final metric as its protocol defines it (the mean over "
          "seeds), HTS with the presets' correction against sync; the definitions, the spreads "
          "and every other method are in [docs/results.md](docs/results.md).\n\n"
          + scores_table(out) + "\n")


def plot(out: Dict[str, Any], path: str) -> str:
  """The headline figure (`plots.ratio_rows`): per task, each block's time ratio (the other's
  over HTS's; hollow where a run missed the target), their geometric mean and the SPS ratio."""
  from hts_jax.analysis import plots  # pylint: disable=import-outside-toplevel
  rows = []
  for t in out["tasks"]:
    for k, m in t["methods"].items():
      time, note = m["time"], None
      if time.get("mean") is None or _neither(m, time):
        note = _spread(m) if time.get("mean") is None else "neither reached it"
      rows.append({"label": f"{_name(t['task'])}: {m['label']}", "note": note,
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
  block under `root` (the repository); returns the JSON. A README without the block is left."""
  out = provenance.save(os.path.join(root, JSON), build(root))
  plot(out, os.path.join(root, FIGURE))
  if readme:
    BLOCK.write(os.path.join(root, "README.md"), render(out))
  return out
