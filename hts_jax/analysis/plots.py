"""Figures: the paper's Fig. 3(a)-(c) (Claims 1 and 2, formula lines and simulator markers, measured
async lag overlaid) and Fig. 5-style learning curves. Writes PNGs with matplotlib's Agg backend."""

from __future__ import annotations

import math
import os
import textwrap
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from hts_jax.analysis import lag_model
from hts_jax.analysis import metrics
from hts_jax.analysis import runtime_model
from hts_jax.analysis import stats

_NS = (4, 16, 64)


def _plt():
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  return plt


def _save(fig, path: str) -> str:
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  _plt().close(fig)
  return path


def fig3a(path: str, *, K: int = 100_000, alpha: int = 4, c: float = 0.0, ns: Sequence[int] = _NS,
          betas: Sequence[float] = (0.5, 0.75, 1, 1.5, 2, 3, 4, 6, 8), repeats: int = 4) -> str:
  """Runtime to collect K states vs step-time variance 1/beta^2: Eq. 7 (lines) and the simulator
  (markers), syncing every alpha steps (solid) and every step (dashed, the sync baseline)."""
  plt = _plt()
  fig, ax = plt.subplots(figsize=(5, 3.8))
  var = [1 / b ** 2 for b in betas]
  for i, n in enumerate(ns):
    color = f"C{i}"
    for a, style in ((alpha, "-"), (1, "--")):
      ax.plot(var, [runtime_model.expected_runtime(K, n, a, b, c) for b in betas], style,
              color=color, label=f"n={n}, " + (f"alpha={a}" if a > 1 else "sync (alpha=1)"))
      ax.plot(var, [runtime_model.simulate_runtime(K, n, a, b, c, repeats=repeats)["mean_s"]
                    for b in betas], "o" if a > 1 else "x", color=color, ms=4)
  ax.set_xscale("log")
  ax.set_yscale("log")
  ax.set_xlabel("step-time variance 1/beta$^2$ (s$^2$)")
  ax.set_ylabel(f"time to collect K={K:,} states (s)")
  ax.set_title(f"Claim 1 (Eq. 7): lines; simulation: markers; c={c:g}", fontsize=9)
  ax.legend(fontsize=6)
  return _save(fig, path)


def fig3b(path: str, *, K: int = 100_000, beta: float = 2.0, c: float = 0.0,
          ns: Sequence[int] = _NS, alphas: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
          repeats: int = 4) -> str:
  """Runtime to collect K states vs the synchronization interval alpha at rate beta."""
  plt = _plt()
  fig, ax = plt.subplots(figsize=(5, 3.8))
  for i, n in enumerate(ns):
    ax.plot(alphas, [runtime_model.expected_runtime(K, n, a, beta, c) for a in alphas], "-",
            color=f"C{i}", label=f"n={n} (Eq. 7)")
    ax.plot(alphas, [runtime_model.simulate_runtime(K, n, a, beta, c, repeats=repeats)["mean_s"]
                     for a in alphas], "o", color=f"C{i}", ms=4)
  ax.axhline(K / beta / max(ns), color="gray", lw=0.8, ls=":")
  ax.set_xscale("log", base=2)
  ax.set_yscale("log")
  ax.set_xlabel("alpha (steps between synchronizations)")
  ax.set_ylabel(f"time to collect K={K:,} states (s)")
  ax.set_title(f"Claim 1 vs alpha, beta={beta:g}, c={c:g} (markers: simulation)", fontsize=9)
  ax.legend(fontsize=7)
  return _save(fig, path)


def fig3c(path: str, *, lambda0: float = 100.0, mu: float = 4000.0,
          measured: Optional[List[Dict[str, float]]] = None, num_unrolls: int = 400_000) -> str:
  """Claim 2: expected lag vs the number of actors at the paper's lambda0, mu (formula line,
  simulator markers); right panel: lag vs learner load rho = n rho0 with the lag measured by real
  `--mode=async` runs overlaid (`measured`: dicts with actors, rho, lag_queued and/or lag)."""
  plt = _plt()
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.8))
  n_max = int(math.floor(0.95 * mu / lambda0))
  ns = list(range(1, n_max + 1))
  ax1.plot(ns, [lag_model.expected_lag(n, lambda0, mu) for n in ns], "-", label="E[L] (Claim 2)")
  sim_ns = [n for n in (1, 4, 8, 16, 24, 32, 36) if n <= n_max]
  ax1.plot(sim_ns, [lag_model.simulate_lag(n, lambda0, mu, num_unrolls=num_unrolls)["mean"]
                    for n in sim_ns], "o", label="queue simulation")
  ax1.axhline(1.0, color="k", ls="--", lw=0.8, label="HTS-RL (lag 1)")
  ax1.set_yscale("log")
  ax1.set_xlabel("actors n")
  ax1.set_ylabel("expected policy lag")
  ax1.set_title(f"lambda0={lambda0:g}, mu={mu:g}", fontsize=9)
  ax1.legend(fontsize=7)
  rhos = np.linspace(0.0, 0.95, 96)
  ax2.plot(rhos, [lag_model.lag_from_utilization(r) for r in rhos], "-", label="rho/(1-rho)")
  for key, style, label in (("lag_queued", "s", "measured async, updates while queued"),
                            ("lag", "^", "measured async, full policy lag")):
    pts = [m for m in measured or [] if m.get(key) is not None]
    if pts:
      ax2.plot([m["rho"] for m in pts], [m[key] for m in pts], style, label=label)
      for m in pts:
        ax2.annotate(f"n={int(m['actors'])}", (m["rho"], m[key]), fontsize=6,
                     xytext=(3, 3), textcoords="offset points")
  ax2.set_xlabel("learner load rho = n lambda0 / mu")
  ax2.set_ylabel("mean policy lag")
  ax2.set_ylim(0, max([5.0] + [m.get("lag", 0) * 1.2 for m in measured or []]))
  ax2.legend(fontsize=7)
  return _save(fig, path)


Curve = Tuple[Sequence[float], Sequence[float]]  # one seed's (x, y)


def mean_band(curves: Sequence[Curve], points: int = 150, resamples: int = 2_000,
              seed: int = 0) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """Per-seed step curves (each value carried forward to the next x) on a common grid from the
  earliest first x to the latest last x, kept where every seed has a value: the grid, the mean
  over seeds and its band over seeds under the statistics rules (`stats`): the [min, max] envelope
  below 6 seeds, from 6 the 95% percentile bootstrap of the mean (`scipy.stats.bootstrap`)."""
  xs = [np.asarray(x, float) for x, _ in curves]
  ys = [np.asarray(y, float) for _, y in curves]
  grid = np.linspace(min(x[0] for x in xs), max(x[-1] for x in xs), points)
  vals = np.array([np.where(grid >= x[0],
                            y[np.clip(np.searchsorted(x, grid, "right") - 1, 0, None)], np.nan)
                   for x, y in zip(xs, ys)])
  ok = ~np.isnan(vals).any(axis=0)
  vals, grid = vals[:, ok], grid[ok]
  if len(curves) < stats.MIN_N_INTERVAL or not vals.size:
    return grid, vals.mean(axis=0), vals.min(axis=0), vals.max(axis=0)
  from scipy import stats as sps  # pylint: disable=import-outside-toplevel
  ci = sps.bootstrap((vals,), np.mean, axis=0, n_resamples=resamples, method="percentile",
                     random_state=np.random.default_rng(seed)).confidence_interval
  mean = vals.mean(axis=0)  # a constant point has no bootstrap spread (NaN): its band is the mean
  return grid, mean, np.fmin(ci.low, mean), np.fmax(ci.high, mean)


def band_figure(path: str, panels: Sequence[Tuple[str, Dict[str, List[Curve]]]], *, xlabel: str,
                ylabel: str, ylim: Optional[Tuple[float, float]] = None,
                hline: Optional[float] = None) -> str:
  """One panel per (title, {label: per-seed curves}): each label's mean over seeds and its band
  (`mean_band`: [min, max] below 6 seeds, else 95% bootstrap), labelled with its seed count.
  Returns the PNG path."""
  plt = _plt()
  fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.5), squeeze=False)
  for ax, (title, lines) in zip(axes[0], panels):
    for i, (label, curves) in enumerate(lines.items()):
      curves = [c for c in curves if len(c[0])]
      if not curves:
        continue
      grid, mean, lo, hi = mean_band(curves)
      seeds = f"{len(curves)} seed" + ("" if len(curves) == 1 else "s")
      ax.plot(grid, mean, color=f"C{i}", label=f"{label} ({seeds})")
      ax.fill_between(grid, lo, hi, color=f"C{i}", alpha=0.2)
    if hline is not None:
      ax.axhline(hline, color="gray", lw=0.8, ls="--")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
      ax.set_ylim(*ylim)
    ax.legend(fontsize=7, loc="lower right")
  return _save(fig, path)


def score_curves(out_dir: str, prefix: str,
                 panels: Sequence[Tuple[str, Dict[str, List[Sequence[Dict[str, Any]]]]]], *,
                 score: str, ylabel: str, minutes: bool = False,
                 ylim: Optional[Tuple[float, float]] = None) -> List[str]:
  """The paper's curve figures (Fig. 5 style): evaluation score vs env steps and vs wall time,
  one panel per (title, {label: each seed's evaluations}), each label's mean over seeds with its
  band (`band_figure`); an evaluation's `score` key gives its score, wall time in seconds or
  `minutes`. Writes `<prefix>_vs_env_steps.png` and `<prefix>_vs_wall_time.png`; returns them."""
  paths = []
  for axis, xlabel, name, scale in (
      ("env_steps", "env steps", "env_steps", 1.0),
      ("wall_time_s", "wall time (minutes)" if minutes else "wall time (s)", "wall_time",
       1 / 60 if minutes else 1.0)):
    curves = [(title, {label: [([e[axis] * scale for e in evals], [e[score] for e in evals])
                               for evals in seeds] for label, seeds in lines.items()})
              for title, lines in panels]
    paths.append(band_figure(os.path.join(out_dir, f"{prefix}_vs_{name}.png"), curves,
                             xlabel=xlabel, ylabel=ylabel, ylim=ylim))
  return paths


def learning_curves(out_dir: str, groups: Dict[Tuple, List[metrics.Run]]) -> List[str]:
  """Evaluation return vs env steps and vs wall time (`score_curves`), one panel per env, a band
  per group of seeds (`metrics.method_label`). Returns the PNG paths."""
  keys = list(groups)
  panels = [(str(env), {metrics.method_label(key, keys): [r.evals for r in runs]
                        for key, runs in groups.items() if key[0] == env})
            for env in sorted({k[0] for k in groups})]
  return score_curves(out_dir, "return", panels, score="mean_return",
                      ylabel="evaluation return")


def throughput(out_dir: str, groups: Dict[Tuple, List[metrics.Run]]) -> str:
  """Throughput per method: mean SPS over seeds as bars (each seed a dot), one panel per env.
  Returns the PNG path."""
  plt = _plt()
  envs = sorted({k[0] for k in groups})
  keys = list(groups)
  fig, axes = plt.subplots(1, len(envs), figsize=(max(4.5, 1.6 * len(keys)) * len(envs), 3.6),
                           squeeze=False)
  for ax, env in zip(axes[0], envs):
    here = [(k, runs) for k, runs in groups.items() if k[0] == env]
    for i, (key, runs) in enumerate(here):
      sps = [float(r.summary.get("sps", float("nan"))) for r in runs]
      ax.bar(i, float(np.mean(sps)), color=f"C{i}", alpha=0.8)
      ax.plot([i] * len(sps), sps, "k.", ms=4)
    ax.set_xticks(range(len(here)))
    ax.set_xticklabels([metrics.method_label(k, keys) for k, _ in here], fontsize=7,
                       rotation=15, ha="right")
    ax.set_title(str(env), fontsize=9)
    ax.set_ylabel("env steps / s (mean over seeds; dots: seeds)")
  return _save(fig, os.path.join(out_dir, "throughput_sps.png"))


def ratio_rows(path: str, rows: Sequence[Dict[str, Any]], *, title: str, xlabel: str) -> str:
  """Ratios on a log axis, a row each: `dots` [(ratio, hollow)], a `mean` (a diamond), a `tick`
  (a grey bar) and a `note` written instead where given; a line at 1."""
  plt = _plt()
  fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.6))
  xs = [0.25, 4.0]
  for y, row in enumerate(rows):
    if row.get("note"):
      # wrapped to fit the half of the axis right of 1x
      ax.text(1.05, y, textwrap.fill(row["note"], 48), va="center", fontsize=8, color="grey")
      continue
    for x, hollow in row["dots"]:
      ax.scatter([x], [y], s=28, facecolors="none" if hollow else row["color"],
                 edgecolors=row["color"], zorder=3)
    if row.get("mean") is not None:
      ax.scatter([row["mean"]], [y], marker="D", s=60, color="k", zorder=4)
    if row.get("tick") is not None:
      ax.plot([row["tick"]] * 2, [y - 0.3, y + 0.3], color="grey", lw=2)
    xs += [x for x, _ in row["dots"]] + [v for v in (row.get("mean"), row.get("tick")) if v]
  ax.axvline(1.0, color="k", lw=0.8)
  ax.set_xscale("log")
  lo, hi = min(xs) / 1.2, max(xs) * 1.2
  ax.set_xlim(lo, hi)
  ticks = [x for x in (0.125, 0.25, 0.5, 1, 2, 4, 8) if lo <= x <= hi]
  ax.set_xticks(ticks, [f"{x:g}x" for x in ticks])
  ax.minorticks_off()
  ax.set_yticks(range(len(rows)), [row["label"] for row in rows])
  ax.set_ylim(len(rows) - 0.5, -0.5)
  ax.set_xlabel(xlabel, fontsize=8)
  ax.set_title(title, fontsize=10)
  return _save(fig, path)
