"""The functions a grid's TOML names (`hts_jax.results.spec`): a table's cells (`CELLS`, given the
column and a results.json cell; `SECTIONS`, a paper-style table's, given the section, the task,
the method, its summary row and the report), a section's title (`TITLES`), a row's first cell
(`ROWS`), more per-run fields from a finished run (`RUN`), more per-cell fields from a cell's runs
(`CELL`), more parts of results.json (`REPORT`; a paper-style report's: `EXTRAS`), a curve
panel's title (`PANELS`), the grid's options over a run's flags (`ADJUST`) and a paper-style
grid's targets (`targets`). A grid that needs a new metric adds one function here (or in
`paper_parts`) and names it in its grid.toml. The metrics are Python; their wording is the
grid's: results/<grid>/text.md.in, a Jinja macro per table layout, line, title or cell, rendered
by `words` with the fields the function here computes, or calling the computations here that
`TEMPLATES` holds as globals; a section's cell or a row the TOML names that no registry holds is
such a macro itself."""

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
    markdown=lambda rows, columns: publish.table(columns, rows))


def words(grid_name: str, part: str, **fields: Any) -> str:
  """The grid's wording of `part`: the macro of that name in results/<grid_name>/text.md.in
  rendered with `fields`, its last newline dropped."""
  macro = getattr(TEMPLATES.get_template(f"{grid_name}/text.md.in").module, part)
  text = str(macro(**fields))
  return text[:-1] if text.endswith("\n") else text


def layout(parts: Dict[str, str]) -> str:
  """A table laid out by results/table.md.in from its `parts` (`spec.Table.layout`)."""
  return str(TEMPLATES.get_template("table.md.in").module.table(parts))


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


UPDATE_KEYS = ("clip_frac", "approx_kl", "entropy")  # the PPO update's diagnostics tabulated


def update_cell(col, c: Dict[str, Any]) -> str:
  """The PPO update over the first quarter of the budget: clipped share, KL, entropy."""
  return words(col.ctx.grid, "early_update", e=c.get("early_update") or {}) or "-"


def _table(out: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
  """results.json's cells: {task: {method: cell}}."""
  return {task: t["methods"] for task, t in out["tasks"].items()}


def clip_shares(ctx, out: Dict[str, Any]) -> Optional[Dict[str, Any]]:
  """The clipped share over the first quarter of the budget per task, the `methods` with runs
  side by side (`clips`); None where no run logged it."""
  table = _table(out)
  methods = [m.name for m in ctx.methods if any(m.name in t for t in table.values())]
  clips = {task: [((t.get(m) or {}).get("early_update") or {}).get("clip_frac") for m in methods]
           for task, t in table.items()}
  return ({"methods": methods, "clips": clips} if any(any(c) for c in clips.values())
          else None)


def fewer_seeds(out: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
  """The tasks where a method has fewer finished seeds than the protocol's: the fewest, the
  protocol's, and each method's count where they differ."""
  partial = {}
  for task, s in out["tasks"].items():
    counts = {m: len(r["seeds"]) for m, r in s["methods"].items()}
    protocol = len(out["protocol"]["settings"]["tasks"][task]["seeds"])
    if min(counts.values()) < protocol:
      partial[task] = {"seeds": min(counts.values()), "protocol": protocol,
                       "counts": counts if len(set(counts.values())) > 1 else None}
  return partial


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
          **{k: stats.spread([e[k] for e in found]) for k in UPDATE_KEYS
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


def _median_range(xs: List[stats.Censored]) -> Dict[str, str]:
  """The median of per-seed values and their [`lo`, `hi`], a miss censored at the budget (≥)."""
  lo, hi = min(xs, key=lambda s: s.value), max(xs, key=lambda s: s.value)
  return {"median": stats.censored_median(xs).cell(), "lo": lo.cell(), "hi": hi.cell()}


def seeds_steps_cell(col, c: Dict[str, Any]) -> str:
  """Per seed (≥ budget: a miss, censored; a floor: at the first full window), then the median
  the decision rule uses and the [min, max]."""
  t = col.ctx.task(c["task"])
  if t.target is None:
    return "-"
  xs = c["per_seed"]["steps_to_target"]
  seeds = [stats.Censored.of(x, t.budget) for x in xs]
  return words(col.ctx.grid, "seeds_steps", range=_median_range(seeds), seeds=[
      (s.cell(), stats.is_floor(x, t.first_window)) for s, x in zip(seeds, xs)])


def seeds_values_cell(col, c: Dict[str, Any]) -> str:
  """Per seed `key`, then its median and spread."""
  xs = c["per_seed"][col.key]
  real = [x for x in xs if x is not None]
  if not real:
    return "-"
  return words(col.ctx.grid, "seeds_values", xs=xs, fmt=col.fmt, spread=stats.spread(real))


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
  return words(col.ctx.grid, "rule", range=_median_range(xs), seeds=len(xs), of=len(t.seeds),
               passes=c.get("passes"))


def quarters_cell(col, c: Dict[str, Any]) -> str:
  """`key`'s median over seeds per quarter, and how many seeds recorded it where fewer."""
  got = (c.get("quarters") or {}).get(col.key)
  if not got:
    return "-"
  return words(col.ctx.grid, "quarters", medians=got["median"], fmt=col.fmt, seeds=got["seeds"],
               of=len(c["seeds"]))


def clip_medians(ctx, out: Dict[str, Any]) -> Dict[str, List[Optional[float]]]:
  """Per task, each method's median over seeds of its runs' mean clip fraction (None: none)."""
  return {task: [statistics.median(xs) if xs else None for xs in (
      [x for x in (cells.get(m.name) or {}).get("per_seed", {}).get("clip_frac", [])
       if x is not None] for m in ctx.methods)] for task, cells in _table(out).items()}


# A paper-style report's parts beyond the paper's metrics (`paper_parts`), by name.


def validation_rows(val: Dict[str, Any]) -> List[Dict[str, Any]]:
  """The IMPALA validation's table: a row per run, its diagnostics among its fields."""
  return [dict(r, **r["diagnostics"], reached=r["reached_0.9_at_steps"]) for r in val["runs"]]


def identity_rows(ident: Dict[str, Any]) -> List[Dict[str, Any]]:
  """The actor-count identity's table (Tables 4/5): a row per run, its last 5 scores."""
  return [dict(r, last_scores=", ".join(f"{x:.1f}" for x in r["eval_scores"][-5:]))
          for r in ident["runs"]]


def validation_diagnostics(out: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
  """The IMPALA validation's diagnostics that every run has, per run."""
  runs = (out.get("validation") or {}).get("runs", [])
  per = {k: [r["diagnostics"].get(k) for r in runs]
         for k in ("entropy", "rho_clipped_frac", "value_loss")}
  return {k: v for k, v in per.items() if all(v)}


def scale(out: Dict[str, Any]) -> Dict[str, Any]:
  """The runs' scale: the options, the networks, and whether the runs predate host records
  (`redo`)."""
  o = out["protocol"]["settings"]["options"]
  networks = sorted({str(r.get("network")) for r in out["runs"]}) or ["-"]
  return {"redo": any(not r.get("host_recorded") for r in out["runs"]),
          "num_envs": o["num_envs"], "representation": o["representation"],
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


# What the grids' macros compute with: the computations stay Python, the wording theirs.
TEMPLATES.globals.update(
    ratio=paper_parts.ratio_cell, benchratio=paper_parts.benchratio,
    per_host=paper_parts.per_host, ahead=paper_parts.ahead, interval=stats.interval_cell,
    aggregates_line=lambda agg: compare.aggregates_line(agg, lambda m: f"`{m}`"),
    clip_shares=clip_shares, fewer_seeds=fewer_seeds, clip_medians=clip_medians,
    validation_rows=validation_rows, identity_rows=identity_rows,
    validation_diagnostics=validation_diagnostics, scale=scale,
    shorts=lambda ctx: {m.name: m.short for m in ctx.methods if m.short})

# The registries a grid.toml names its functions from. A section's kind or row that SECTIONS or
# ROWS does not hold is a macro of the grid's text.md.in, given the same arguments by name.
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
SECTIONS: Dict[str, Callable[..., str]] = {
    "final": lambda sec, task, m, r, out: fmt_ci(r["final_metric"], sec.fmt),
    "final_time": lambda sec, task, m, r, out: fmt_ci(r.get("final_time"), sec.fmt),
    "required_steps": lambda sec, task, m, r, out: " / ".join(
        map(fmt_steps, r["required_steps"].values())),
    "paired": paper_parts.paired_cell,
    "bench_minutes": paper_parts.bench_minutes,
    "bench_minutes_sps": paper_parts.bench_minutes_sps,
    "sps": lambda sec, task, m, r, out: fmt_ci(r["sps"], "{:,.0f}"),
}
TITLES: Dict[str, Callable[[str, Dict[str, Any]], Optional[str]]] = {
    # the host, where the runs ran on one host kind only
    "one_host": lambda title, out: (title.format(host=out["hosts"][0])
                                    if len(out.get("hosts") or []) == 1 else None),
    # where the final time metric has a clock (some scenario's runs of the limit method)
    "time_limit": lambda title, out: (title if any(s["time_limit_s"]
                                                   for s in out["tasks"].values()) else None),
    # what resets cost, where env_costs.json says
    "run_throughput": lambda title, out: words(out["grid"], "run_throughput_title", costs={
        sc: d for sc, d in (out.get("run_throughput") or {}).items()
        if d.get("random_reset_share")}),
}
ROWS: Dict[str, Callable[[str, Dict[str, Any]], str]] = {
    "update": paper_parts.update_row, "short": lambda task, d: paper_parts.short(task)}
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
