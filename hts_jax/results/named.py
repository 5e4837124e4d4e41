"""The functions a grid's TOML names (`hts_jax.results.spec`): a table's cells (`CELLS`, given the
column and a results.json cell; `SECTIONS`, a paper-style table's, given the section, the task,
the method, its summary row and the report), the paper's figures beside them (`FIGURES`), lines
beside a table (`LINES`, given the grid's Context and the report), a section's title (`TITLES`),
a row's first cell (`ROWS`), a note's fields (`FIELDS`), more per-run fields from a finished run
(`RUN`), more per-cell fields from a cell's runs (`CELL`), more parts of results.json (`REPORT`;
a paper-style report's: `EXTRAS`), a curve panel's title (`PANELS`), the grid's options over a
run's flags (`ADJUST`) and a paper-style grid's targets (`targets`). A grid that needs a new
metric adds one function here (or in `paper_parts`) and names it in its grid.toml. The metrics
are Python; their wording is the grid's: results/<grid>/text.md.in, a Jinja macro per line,
title or cell, rendered by `words` with the fields the function here computes."""

from __future__ import annotations

import json
import math
import os
import statistics
from typing import Any, Callable, Dict, List, Mapping, Optional

from hts_jax.analysis import metrics, plots, stats
from hts_jax.results import compare, grid, paper_parts, provenance, publish
from hts_jax.results.publish import fmt_ci, fmt_steps

# The grids' wording: results/<grid>/text.md.in, a Jinja macro per named part of its tables.
TEMPLATES = publish.templates(os.path.join(provenance.ROOT, "results"))
TEMPLATES.filters.update(
    short=paper_parts.short, partial=paper_parts.partial,
    table=lambda rows, columns: stats.markdown([c[0] for c in columns], [
        [publish.cell(c[1], r) for c in columns] for r in rows]))
TEMPLATES.globals.update(
    ratio=paper_parts.ratio_cell, benchratio=paper_parts.benchratio,
    per_host=paper_parts.per_host, ahead=paper_parts.ahead,
    aggregates_line=lambda agg: compare.aggregates_line(agg, lambda m: f"`{m}`"))


def words(report: Dict[str, Any], part: str, **fields: Any) -> str:
  """The grid's wording of `part`: the macro of that name in results/<grid>/text.md.in (the
  grid of `report`, its results.json) rendered with `fields`, its last newline dropped."""
  macro = getattr(TEMPLATES.get_template(f"{report['grid']}/text.md.in").module, part)
  text = str(macro(**fields))
  return text[:-1] if text.endswith("\n") else text


def _spread(col, c: Dict[str, Any]) -> str:
  """The spread of `key` as `mean [lo, hi] (its kind)`."""
  return stats.interval_cell(c[col.key], col.fmt) if c.get(col.key) else "-"


def steps_cell(col, c: Dict[str, Any]) -> str:  # pylint: disable=unused-argument
  """Env steps to the target: the censored median and how many seeds reached it."""
  s = c.get("steps_to_target")
  if not s or s["median"] is None:
    return "-"
  median = stats.Censored(**s["median"])
  floors = sum(bool(f) for f in s["floors"])
  return (f"{median.cell()} ({s['reached']}/{len(s['per_seed'])} reached"
          + (f"; {floors} at the first window, a floor" if floors else "") + ")")


UPDATE_KEYS = (("clip_frac", "clipped", "{:.3f}"), ("approx_kl", "KL", "{:.4f}"),
               ("entropy", "entropy", "{:.2f}"))


def update_cell(col, c: Dict[str, Any]) -> str:  # pylint: disable=unused-argument
  """The PPO update over the first quarter of the budget: clipped share, KL, entropy."""
  e = c.get("early_update") or {}
  return "; ".join(f"{name} {stats.interval_cell(e[k], fmt)}" for k, name, fmt in UPDATE_KEYS
                   if k in e) or "-"


def _table(out: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
  """results.json's cells: {task: {method: cell}}."""
  return {task: t["methods"] for task, t in out["tasks"].items()}


def clipped_line(ctx, out: Dict[str, Any]) -> str:
  """The clipped share over the first quarter of the budget, the methods side by side."""
  table = _table(out)
  methods = [m.name for m in ctx.methods if any(m.name in t for t in table.values())]
  clips = {task: [((t.get(m) or {}).get("early_update") or {}).get("clip_frac") for m in methods]
           for task, t in table.items()}
  return (words(out, "clipped_share", methods=methods, clips=clips)
          if any(any(c) for c in clips.values()) else "")


def partial_seeds(ctx, out: Dict[str, Any]) -> str:  # pylint: disable=unused-argument
  """A label for tasks where a method has fewer finished seeds than the protocol's, or ''; each
  method's count where they differ."""
  partial = {}
  for task, s in out["tasks"].items():
    counts = {m: len(r["seeds"]) for m, r in s["methods"].items()}
    protocol = len(out["protocol"]["settings"]["tasks"][task]["seeds"])
    if min(counts.values()) < protocol:
      partial[task] = {"seeds": min(counts.values()), "protocol": protocol,
                       "counts": counts if len(set(counts.values())) > 1 else None}
  return words(out, "partial_seeds", partial=partial)


def targets(settings: Dict[str, Any]) -> Callable[[str, List[Dict[str, Any]]], Dict[str, float]]:
  """A task's targets from the protocol's settings: `targets` (fixed scores: name -> score, or
  the scores' names) or `target_fractions` of `reference_method`'s mean final metric over its
  seeds on the task (none before it has a finished run)."""
  if "target_fractions" in settings:
    fractions, method = settings["target_fractions"], settings["reference_method"]

    def of_reference(task, runs):  # pylint: disable=unused-argument
      ref = [r["final_metric"] for r in runs
             if r["method"] == method and r["final_metric"] is not None]
      return {f"{f:.0%}": f * sum(ref) / len(ref) for f in fractions} if ref else {}
    return of_reference
  fixed = settings["targets"]
  scores = dict(fixed) if isinstance(fixed, dict) else {t: float(t) for t in fixed}
  return lambda task, runs: dict(scores)


def final_return(summary: Dict[str, Any]) -> float:
  """The mean over envs of each env's last finished training episode."""
  last = [rs[-1] for rs in summary["episode_returns"] if rs]
  return sum(last) / len(last)


def early(runs: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
  """The PPO update over the first quarter of the budget (`metrics.early_update`), per-seed with
  its [min, max] over the seeds that logged it; None where none did."""
  found = [r["early_update"] for r in runs if r.get("early_update")]
  if not found:
    return None
  windows = sorted({e["window_steps"] for e in found})
  return {"window_steps": windows[0] if len(windows) == 1 else windows,
          **{k: stats.spread([e[k] for e in found]) for k, _, _ in UPDATE_KEYS
             if all(k in e for e in found)}}


def plot(g, results: str, runs: List[Dict[str, Any]]) -> None:
  """curves.png: a panel per task with runs, each method's mean over seeds of the runs' series
  and its band ([min, max] below 6 seeds)."""
  p = g.curves
  methods = [m.name for m in g.methods if any(r["method"] == m.name for r in runs)]
  tasks = sorted({r["task"] for r in runs}, key=str)
  panels = [(task or g.task(task).env,
             {m: [tuple(zip(*r[p.series])) for r in runs
                  if r["task"] == task and r["method"] == m and r[p.series]] for m in methods})
            for task in tasks]
  hline = g.task(tasks[0]).target if p.hline else None
  plots.band_figure(os.path.join(results, "curves.png"), panels, xlabel="env steps",
                    ylabel=p.ylabel, hline=hline)


# The corrections study's decision rule (its PROTOCOL.md) and its cells: the TOML's [settings]
# give the `corrections` it judges against the grid's reference, the `pass_ratio` of the steps
# tasks (those with a target) and the update's `diagnostics` averaged per quarter of the budget.


def quarters(run: metrics.Run, budget: int, keys: List[str]) -> List[Dict[str, float]]:
  """Each quarter of the budget's mean of the diagnostics its metrics.csv rows carry."""
  rows = run.train_curve()
  out = []
  for q in range(4):
    lo, hi = q * budget / 4, (q + 1) * budget / 4
    mine = [r for r in rows if lo < r.get("env_steps", 0) <= hi]
    out.append({k: sum(r[k] for r in mine if k in r) / sum(1 for r in mine if k in r)
                for k in keys if any(k in r for r in mine)})
  return out


def quarter_medians(ctx, runs: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
  """Per diagnostic, each quarter's median over the runs (seeds) that recorded it there, and how
  many runs recorded it at all."""
  out = {}
  for key in ctx.settings["diagnostics"]:
    have = [r["quarters"] for r in runs if any(key in q for q in r["quarters"])]
    if have:
      out[key] = {"seeds": len(have), "median": [
          statistics.median(vals) if vals else None
          for vals in ([q[i][key] for q in have if key in q[i]] for i in range(4))]}
  return out


def _mean(xs: List[Optional[float]]) -> Optional[float]:
  xs = [x for x in xs if x is not None]
  return sum(xs) / len(xs) if xs else None


def _update_quarters(ctx, f) -> Dict[str, Any]:
  run = metrics.load_run(f.logdir)
  return {"clip_frac": _mean([r.get("clip_frac") for r in run.train_curve()]),
          "quarters": quarters(run, ctx.task(f.task).budget, ctx.settings["diagnostics"])}


def _median(xs: List[Optional[float]], missing: float = math.inf) -> float:
  """The median with None (a censored miss; a run without evaluations) as `missing`."""
  return statistics.median([missing if x is None else x for x in xs])


def score_q(ref: float, c: float) -> float:
  """Steps tasks' score S_sync / S_c: a miss by both is 1, a correction's miss 0, at most 10."""
  if math.isinf(c):
    return 1.0 if math.isinf(ref) else 0.0
  return min(ref / c, 10.0)


def _complete(ctx, table: Dict[str, Dict[str, Any]]) -> List[str]:
  return [t for t, cells in table.items()
          if all(len(cells.get(m.name, {}).get("seeds", [])) == len(ctx.task(t).seeds)
                 for m in ctx.methods)]


def _steps_tasks(ctx) -> List[str]:
  return [t.name for t in ctx.tasks if t.target is not None]


def decide(ctx, table: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """The decision rule over the tasks that have every method's seeds (`table`: per task and
  method, `seeds` and the per-seed `steps_to_target` / `final_metric`); `passes`, per task and
  correction, whether it passes there (None: the task is not complete yet)."""
  corrections, ref_name = ctx.settings["corrections"], ctx.reference  # the first keeps a tie
  passes = {c: [] for c in corrections}
  scores = {c: [] for c in corrections}
  complete = _complete(ctx, table)
  verdicts = {t: {c: None for c in corrections if c in cells} for t, cells in table.items()}
  for task in complete:
    cells = table[task]
    ref = cells[ref_name]
    for c in corrections:
      if task in _steps_tasks(ctx):
        s_c, s_ref = _median(cells[c]["steps_to_target"]), _median(ref["steps_to_target"])
        ok, q = s_c <= ctx.settings["pass_ratio"] * s_ref, score_q(s_ref, s_c)
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
  best = max(corrections, key=lambda c: (len(passes[c]), geo[c], c == corrections[0]))
  return {"complete_tasks": complete, "passes": passes, "geometric_mean_q": geo,
          "winner": best if len(complete) == len(ctx.tasks) else None,
          "leader_so_far": best, "passes_by_task": verdicts}


def _per_seed(ctx, task: str, cell: Dict[str, Any]) -> List[float]:
  """A cell's per-seed scores: the final metric (a run without evaluations at -inf), or on a
  steps task the env steps to the target (lower better; a miss censored at the budget)."""
  if task not in _steps_tasks(ctx):
    return [-math.inf if f is None else f for f in cell["final_metric"]]
  return [ctx.task(task).budget if s is None else s for s in cell["steps_to_target"]]


def study_aggregates(ctx, table: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
  """`compare.aggregates` of every correction against the reference over the tasks that have
  every method's seeds: the final metric, or on a steps task the env steps to the target (a miss
  at the budget; normalised as the reference's median over them)."""
  corrections, ref, steps = (ctx.settings["corrections"], ctx.reference,
                             _steps_tasks(ctx))
  return compare.aggregates(
      {(t, m): dict(zip(table[t][m]["seeds"], _per_seed(ctx, t, table[t][m])))
       for t in _complete(ctx, table) for m in (ref, *corrections)},
      corrections, ref, "the final metric, or env steps to the target on "
      f"{', '.join(steps)} (a miss at the budget)", lower_better=steps)


def clip_overlap(ctx, table: Dict[str, Dict[str, Any]]) -> Dict[str, Optional[bool]]:
  """Question 3, per task: whether `decoupled`'s per-seed clip_frac range overlaps the
  reference's (None where either has none)."""
  out = {}
  for task, cells in table.items():
    ranges = []
    for m in ("decoupled", ctx.reference):
      xs = [x for x in cells.get(m, {}).get("clip_frac", []) if x is not None]
      ranges.append((min(xs), max(xs)) if xs else None)
    out[task] = (None if None in ranges
                 else ranges[0][0] <= ranges[1][1] and ranges[1][0] <= ranges[0][1])
  return out


def _verdict(ctx, out: Dict[str, Any]) -> Dict[str, Any]:
  """The decision, the aggregates and question 3 over the cells' per-seed values; each
  correction's cell gets its verdict (`passes`: None until its task is complete), in place."""
  table = {t: {m: {"seeds": c["seeds"], **c["per_seed"]} for m, c in cells.items()}
           for t, cells in _table(out).items()}
  decision = decide(ctx, table)
  for task, verdicts in decision["passes_by_task"].items():
    for c, ok in verdicts.items():
      out["tasks"][task]["methods"][c]["passes"] = ok
  return {"decision": decision, "study_aggregates": study_aggregates(ctx, table),
          "clip_frac_matches_sync": clip_overlap(ctx, table)}


def _median_range(xs: List[stats.Censored]) -> str:
  """'median [min, max]' of per-seed values, a miss censored at the budget (≥)."""
  lo, hi = min(xs, key=lambda s: s.value), max(xs, key=lambda s: s.value)
  return f"{stats.censored_median(xs).cell()} [{lo.cell()}, {hi.cell()}]"


def seeds_steps_cell(col, c: Dict[str, Any]) -> str:
  """Per seed (≥ budget: a miss, censored; `floor`: at the first full window), then the median
  the decision rule uses and the [min, max]."""
  t = col.ctx.task(c["task"])
  if t.target is None:
    return "-"
  xs = c["per_seed"]["steps_to_target"]
  seeds = [stats.Censored.of(x, t.budget) for x in xs]
  shown = ", ".join(s.cell() + (" (floor)" if stats.is_floor(x, t.first_window) else "")
                    for s, x in zip(seeds, xs))
  return f"{shown}; median {_median_range(seeds)} (min-max)"


def seeds_values_cell(col, c: Dict[str, Any]) -> str:
  """Per seed `key`, then its median and spread."""
  xs, fmt = c["per_seed"][col.key], col.fmt
  real = [x for x in xs if x is not None]
  if not real:
    return "-"
  s = stats.spread(real)
  shown = ", ".join("-" if x is None else fmt.format(x) for x in xs)
  return (f"{shown}; median {fmt.format(s['median'])} [{fmt.format(s['interval']['lo'])}, "
          f"{fmt.format(s['interval']['hi'])}] ({s['interval']['kind']})")


def rule_cell(col, c: Dict[str, Any]) -> str:
  """The median the decision rule reads and the seeds' [min, max] (k of n where fewer), then the
  rule's verdict once the task is complete."""
  t = col.ctx.task(c["task"])
  if t.target is not None:
    xs = [stats.Censored.of(x, t.budget) for x in c["per_seed"]["steps_to_target"]]
  else:
    xs = [stats.Censored(x) for x in c["per_seed"]["final_metric"] if x is not None]
  if not xs:
    return "-"
  part = f" ({len(xs)} of {len(t.seeds)} seeds)" if len(xs) < len(t.seeds) else ""
  verdict = {None: "", True: "; passes", False: "; misses"}[c.get("passes")]
  return f"{_median_range(xs)}{part}{verdict}"


def quarters_cell(col, c: Dict[str, Any]) -> str:
  """`key`'s median over seeds per quarter, and how many seeds recorded it where fewer."""
  got = (c.get("quarters") or {}).get(col.key)
  if not got:
    return "-"
  shown = " / ".join("-" if v is None else col.fmt.format(v) for v in got["median"])
  n = got["seeds"]
  return shown + (f" ({n} seed{'' if n == 1 else 's'})" if n < len(c["seeds"]) else "")


def clip_medians(ctx, out: Dict[str, Any]) -> Dict[str, List[Optional[float]]]:
  """Per task, each method's median over seeds of its runs' mean clip fraction (None: none)."""
  return {task: [statistics.median(xs) if xs else None for xs in (
      [x for x in (cells.get(m.name) or {}).get("per_seed", {}).get("clip_frac", [])
       if x is not None] for m in ctx.methods)] for task, cells in _table(out).items()}


# A paper-style report's parts beyond the paper's metrics (`paper_parts`), by name.


def _docs_tail(ctx, out: Dict[str, Any]) -> str:  # pylint: disable=unused-argument
  """Under docs' tables: the IMPALA validation's table (a row per run, its diagnostics among its
  fields) and the actor-count identity's (Tables 4/5), where they ran."""
  val, ident = out.get("validation"), out.get("identity")
  return words(out, "docs_tail", validation=val and dict(val, rows=[
      dict(r, **r["diagnostics"], reached=r["reached_0.9_at_steps"]) for r in val["runs"]]),
               identity=ident and dict(ident, rows=[
                   dict(r, last_scores=", ".join(f"{x:.1f}" for x in r["eval_scores"][-5:]))
                   for r in ident["runs"]]))


def _readme_tail(ctx, out: Dict[str, Any]) -> str:
  """Under README's table: where HTS-PPO is not ahead, then the IMPALA validation's verdict with
  the diagnostics every run has."""
  runs = (out.get("validation") or {}).get("runs", [])
  per = {k: [r["diagnostics"].get(k) for r in runs]
         for k in ("entropy", "rho_clipped_frac", "value_loss")}
  return words(out, "readme_tail", out=out, diagnostics={k: v for k, v in per.items() if all(v)},
               labels={m.name: m.short for m in ctx.methods if m.short})


def _final_time_row(task: str, s: Dict[str, Any]) -> str:
  limit = (f"; IMPALA {s['time_limit_s'] / 60:.1f} min"
           if s["time_limit_s"] and len(s.get("hosts", ())) < 2 else "")
  return f"{paper_parts.short(task)} ({s['budget']:,} steps{limit})"


def _scale(out: Dict[str, Any]) -> Dict[str, Any]:
  """The runs' scale: the options, the networks, and whether the runs predate host records."""
  o = out["protocol"]["settings"]["options"]
  networks = sorted({str(r.get("network")) for r in out["runs"]}) or ["-"]
  redo = words(out, "redo") if any(not r.get("host_recorded") for r in out["runs"]) else ""
  return {"redo": redo, "num_envs": o["num_envs"], "representation": o["representation"],
          "networks": "/".join(networks)}


def gfootball_scale(out: Dict[str, Any], method: str, o: Mapping[str, Any]) -> Dict[str, Any]:
  """The scale options over a run's flags: envs and executors of every method, the actors of
  PPO and IMPALA (each IMPALA actor owns whole executors; its batch is Table A6's 8 one-env
  unrolls of 32 steps, whatever the actors' share), the observations, extra flags."""
  del method
  envs, executors, ppo, impala = (o["num_envs"], o["num_executors"], o["ppo_actors"],
                                  o["impala_actors"])
  if min(envs, executors, ppo, impala) < 1:
    raise grid.GridError("--num_envs, --num_executors, --ppo_actors and --impala_actors "
                         "must be >= 1")
  stacked = o["representation"] not in ("simple115", "simple115v2")
  out = {**out, "env_kwargs": json.dumps({"representation": o["representation"],
                                          "stacked": stacked}, separators=(",", ":")),
         "num_envs": envs, "num_executors": executors, "num_actors": ppo}
  if out["preset"] == "gfootball_impala":
    if envs % impala or executors % impala or 8 % (envs // impala):
      raise grid.GridError(f"impala: {impala} actors must divide num_envs ({envs}) and "
                           f"num_executors ({executors}), each actor's envs dividing 8")
    out.update(num_actors=impala, async_batch_unrolls=8 // (envs // impala))
  for item in o["extra"]:
    name, sep, value = item.partition("=")
    if not sep:
      raise grid.GridError(f"--extra: expected NAME=VALUE, got {item!r}")
    out[name] = value
  return out


# The registries a grid.toml names its functions from.
CELLS: Dict[str, Callable[[Any, Dict[str, Any]], str]] = {
    "count": lambda col, c: str(len(c["seeds"])),
    "mean": lambda col, c: col.fmt.format(c[col.key]["mean"]),
    "spread": _spread,
    "steps_to_target": steps_cell,
    "time_ratio": lambda col, c: stats.ratio_cell(c.get("time_ratio")),
    "per_task": lambda col, c: col.values.get(c["task"], ""),
    "early_update": update_cell,
    "seeds_steps": seeds_steps_cell,
    "seeds_values": seeds_values_cell,
    "rule": rule_cell,
    "quarters": quarters_cell,
}


def _worded(part: str) -> Callable[..., str]:
  """A section's cell worded by the grid's macro `part`, given the section, task, method, its
  summary row and the report."""
  return lambda sec, task, m, r, out: words(out, part, sec=sec, task=task, m=m, r=r, out=out)


SECTIONS: Dict[str, Callable[..., str]] = {
    "final": lambda sec, task, m, r, out: fmt_ci(r["final_metric"], sec.fmt),
    "final_time": lambda sec, task, m, r, out: fmt_ci(r.get("final_time"), sec.fmt),
    "required_steps": lambda sec, task, m, r, out: " / ".join(
        map(fmt_steps, r["required_steps"].values())),
    "paired": paper_parts.paired_cell,
    "bench_minutes": paper_parts.bench_minutes,
    "bench_minutes_sps": paper_parts.bench_minutes_sps,
    "sps": lambda sec, task, m, r, out: fmt_ci(r["sps"], "{:,.0f}"),
    **{part: _worded(part) for part in (
        "final_and_sps", "final_and_last_target_steps", "final_and_final_time", "paired_each",
        "required_min", "final_per_host_sps", "wall_idle", "update", "run_throughput", "readme")},
}
FIGURES: Dict[str, Callable[[Any], str]] = {
    "mean_pm": lambda v: f"{v[0]:,} ± {v[1]:,}",
    "each_g": lambda v: " / ".join("-" if x is None else f"{x:g}" for x in v),
    "plain": lambda v: f"{v:,}",
    "pm_2f": lambda v: "{:.2f} ± {:.2f}".format(*v),
    "each_1f": lambda v: " / ".join("-" if x is None else f"{x:.1f}" for x in v),
}
LINES: Dict[str, Callable[[Any, Dict[str, Any]], str]] = {
    "clipped_share": clipped_line, "partial_seeds": partial_seeds,
    "targets": lambda ctx, out: words(out, "targets", out=out),
    "decision": lambda ctx, out: words(out, "decision", out=out),
    "clip_and_decision": lambda ctx, out: words(
        out, "clip_and_decision", out=out, methods=[m.name for m in ctx.methods],
        medians=clip_medians(ctx, out)),
    "docs_tail": _docs_tail, "readme_tail": _readme_tail,
}
TITLES: Dict[str, Callable[[str, Dict[str, Any]], Optional[str]]] = {
    # the host, where the runs ran on one host kind only
    "one_host": lambda title, out: (title.format(host=out["hosts"][0])
                                    if len(out.get("hosts") or []) == 1 else None),
    # where the final time metric has a clock (some scenario's runs of the limit method)
    "time_limit": lambda title, out: (title if any(s["time_limit_s"]
                                                   for s in out["tasks"].values()) else None),
    # what resets cost, where env_costs.json says
    "run_throughput": lambda title, out: words(out, "run_throughput_title", costs={
        sc: d for sc, d in (out.get("run_throughput") or {}).items()
        if d.get("random_reset_share")}),
}
ROWS: Dict[str, Callable[[str, Dict[str, Any]], str]] = {
    "final_time": _final_time_row, "update": paper_parts.update_row,
    "short": lambda task, d: paper_parts.short(task)}
FIELDS: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {"scale": _scale}
PANELS: Dict[str, Callable[[str], str]] = {"task": str, "short": paper_parts.short}
RUN: Dict[str, Callable[[Any, Any], Dict[str, Any]]] = {
    "final_return": lambda ctx, f: {"final_return": final_return(f.summary)},
    # [[env_steps, recent training return]] from metrics.csv (none without the file)
    "train_curve": lambda ctx, f: {"curve": [
        [int(r["env_steps"]), r["train_return"]]
        for r in metrics.Run(f.logdir, f.summary, ()).train_curve() if "train_return" in r]},
    "early_update": lambda ctx, f: {
        "early_update": metrics.early_update(metrics.Run(f.logdir, f.summary, ()))},
    "update_quarters": _update_quarters,
}
CELL: Dict[str, Callable[[Any, List[Dict[str, Any]]], Dict[str, Any]]] = {
    "final_return": lambda ctx, runs: {
        "final_return": stats.spread([r["final_return"] for r in runs])},
    "early_update": lambda ctx, runs: {"early_update": early(runs)},
    "per_seed": lambda ctx, runs: {"per_seed": {
        k: [r[k] for r in runs] for k in ("steps_to_target", "final_metric", "clip_frac")}},
    "quarter_medians": lambda ctx, runs: {"quarters": quarter_medians(ctx, runs)},
}
REPORT: Dict[str, Callable[[Any, Dict[str, Any]], Dict[str, Any]]] = {"decision": _verdict}
EXTRAS: Dict[str, Callable[[str, Dict[str, Any], int], Dict[str, Any]]] = {
    "gfootball": paper_parts.extras}
ADJUST: Dict[str, Callable[..., Dict[str, Any]]] = {"gfootball_scale": gfootball_scale}
