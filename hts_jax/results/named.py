"""The functions a grid's TOML names (`hts_jax.results.spec`): a table's cells (`CELLS`, given the
column and a results.json cell; `SECTIONS`, a paper-style table's, given the section, the task,
the method, its summary row and the report), the paper's figures beside them (`FIGURES`), lines
beside a table (`LINES`, given the report), more per-run fields from a finished run (`RUN`),
more per-cell fields from a cell's runs (`CELL`), a paper-style grid's targets (`targets`). A
grid that needs a new metric adds one function here and names it in its grid.toml."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional

from hts_jax.analysis import metrics, plots, stats
from hts_jax.results import paper_report
from hts_jax.results.publish import fmt_ci, fmt_steps


def _spread(col, c: Dict[str, Any]) -> str:
  """The spread of `key` as `mean [lo, hi] (its kind)`."""
  return stats.interval_cell(c[col.key], col.fmt) if c.get(col.key) else "-"


def steps_cell(c: Dict[str, Any]) -> str:
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


CELLS: Dict[str, Callable[[Any, Dict[str, Any]], str]] = {
    "count": lambda col, c: str(len(c["seeds"])),
    "mean": lambda col, c: col.fmt.format(c[col.key]["mean"]),
    "spread": _spread,
    "steps_to_target": lambda col, c: steps_cell(c),
    "time_ratio": lambda col, c: stats.ratio_cell(c.get("time_ratio")),
    "per_task": lambda col, c: col.values.get(c["task"], ""),
    "early_update": update_cell,
}


def clipped_line(ctx, out: Dict[str, Any]) -> str:
  """The clipped share over the first quarter of the budget, the methods side by side."""
  methods = [m.name for m in ctx.methods if any(m.name in t for t in out["table"].values())]

  def clip(t, m):
    return ((t.get(m) or {}).get("early_update") or {}).get("clip_frac")
  if not any(clip(t, m) for t in out["table"].values() for m in methods):
    return ""
  return ("Share of samples with a clipped ratio over the first quarter of the budget (mean over "
          f"seeds; {' / '.join(methods)}): " + "; ".join(
              f"{task} " + " / ".join("-" if not clip(t, m) else f"{clip(t, m)['mean']:.2f}"
                                      for m in methods) for task, t in out["table"].items()) + ".")


def partial_seeds(ctx, out: Dict[str, Any]) -> str:  # pylint: disable=unused-argument
  """A label for tasks where a method has fewer finished seeds than the protocol's, or ''; each
  method's count where they differ."""
  parts = []
  for task, s in out["summary"].items():
    counts = {m: len(r["seeds"]) for m, r in s["methods"].items()}
    seeds, protocol = min(counts.values()), len(
        out["protocol"]["settings"]["tasks"][task]["seeds"])
    if seeds >= protocol:
      continue
    if len(set(counts.values())) > 1:
      parts.append(f"{task} has " + ", ".join(f"{n} of `{m}`" for m, n in counts.items())
                   + f" of the protocol's {protocol} seeds so far")
    else:
      parts.append(f"{task} has {seeds} of the protocol's {protocol} seeds so far"
                   + (" (one run per method: no interval, one block's time ratio)"
                      if seeds == 1 else ""))
  return f" **Partial:** {'; '.join(parts)}." if parts else ""


def targets_line(ctx, out: Dict[str, Any]) -> str:  # pylint: disable=unused-argument
  """Each task's targets."""
  return "; ".join(f"{g} " + " / ".join(f"{v:.2f}" for v in s["targets"].values())
                   for g, s in out["summary"].items() if s["targets"]) + "."


LINES: Dict[str, Callable[[Any, Dict[str, Any]], str]] = {
    "clipped_share": clipped_line, "partial_seeds": partial_seeds, "targets": targets_line}


def _last_target_steps(sec, task, m, r, out) -> str:  # pylint: disable=unused-argument
  return f"{fmt_ci(r['final'], sec.fmt)}; {fmt_steps(list(r['required_steps'].values())[-1])}"


def _final_time_among(sec, task, m, r, out) -> str:  # pylint: disable=unused-argument
  return fmt_ci(r["final"], sec.fmt) + (f"; {fmt_ci(r['final_time'], sec.fmt)}"
                                        if r.get("final_time") and m in sec.among else "")


SECTIONS: Dict[str, Callable[..., str]] = {
    "final": lambda sec, task, m, r, out: fmt_ci(r["final"], sec.fmt),
    "final_time": lambda sec, task, m, r, out: fmt_ci(r.get("final_time"), sec.fmt),
    "required_steps": lambda sec, task, m, r, out: " / ".join(
        map(fmt_steps, r["required_steps"].values())),
    "paired": lambda sec, task, m, r, out: paper_report.paired_cell(task, m, out),
    "bench_minutes": lambda sec, task, m, r, out: paper_report.bench_minutes(task, m, out),
    "sps": lambda sec, task, m, r, out: fmt_ci(r["sps"], "{:,.0f}"),
    "final_and_sps": lambda sec, task, m, r, out: (
        f"{fmt_ci(r['final'], sec.fmt)}; {fmt_ci(r['sps'], '{:,.0f}')} SPS"),
    "final_and_last_target_steps": _last_target_steps,
    "final_and_final_time": _final_time_among,
}

FIGURES: Dict[str, Callable[[Any], str]] = {
    "mean_pm": lambda v: f"{v[0]:,} ± {v[1]:,}",
    "each_g": lambda v: " / ".join("-" if x is None else f"{x:g}" for x in v),
    "plain": lambda v: f"{v:,}",
}


def targets(settings: Dict[str, Any]) -> Callable[[str, List[Dict[str, Any]]], Dict[str, float]]:
  """A task's targets from the protocol's settings: `targets` (fixed scores: name -> score, or
  the scores' names) or `target_fractions` of `reference_method`'s mean final metric over its
  seeds on the task (none before it has a finished run)."""
  if "target_fractions" in settings:
    fractions, method = settings["target_fractions"], settings["reference_method"]

    def of_reference(task, runs):  # pylint: disable=unused-argument
      ref = [r["final"] for r in runs if r["method"] == method and r["final"] is not None]
      return {f"{f:.0%}": f * sum(ref) / len(ref) for f in fractions} if ref else {}
    return of_reference
  fixed = settings["targets"]
  scores = dict(fixed) if isinstance(fixed, dict) else {t: float(t) for t in fixed}
  return lambda task, runs: dict(scores)


def final_return(summary: Dict[str, Any]) -> float:
  """The mean over envs of each env's last finished training episode."""
  last = [rs[-1] for rs in summary["episode_returns"] if rs]
  return sum(last) / len(last)


RUN: Dict[str, Callable[[Any, Any], Dict[str, Any]]] = {
    "final_return": lambda ctx, f: {"final_return": final_return(f.summary)},
    # [[env_steps, recent training return]] from metrics.csv (none without the file)
    "train_curve": lambda ctx, f: {"curve": [
        [int(r["env_steps"]), r["train_return"]]
        for r in metrics.Run(f.logdir, f.summary, ()).train_curve() if "train_return" in r]},
    "early_update": lambda ctx, f: {
        "early_update": metrics.early_update(metrics.Run(f.logdir, f.summary, ()))},
}


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


CELL: Dict[str, Callable[[List[Dict[str, Any]]], Dict[str, Any]]] = {
    "final_return": lambda runs: {"final_return": stats.spread([r["final_return"] for r in runs])},
    "early_update": lambda runs: {"early_update": early(runs)},
}


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
