"""Ablation sweeps (the notebooks; paper Tables 4 and 5): one training run per setting of a few
flags and per seed, each in its own logdir, summarized per setting over the seeds.

Every run is one training process started by `hts_jax.runs.launch` (what a user types), so a
sweep exercises the real launcher, executors and runtime; it works in a clone and from an
installed package alike. A sweep resumes: a run whose summary.json reads is taken as it is (one
that finished with other settings is refused, naming the flag), an unfinished one starts over.

    rows = run_grid({"alpha": [16, 64], "policy_lag": [0, 1]}, {"preset": "cartpole_ppo"},
                    "runs/alpha", seeds=[0, 1, 2])
    print(format_summary(summarize(rows, ["alpha", "policy_lag"], "sps")))
"""

import datetime
import itertools
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from hts_jax.analysis import metrics
from hts_jax.runs import launch


def logdir_name(setting: Mapping[str, Any]) -> str:
  """`alpha=64,policy_lag=0,seed=1`: a run's folder under the sweep's root."""
  return ",".join(f"{k}={v}" for k, v in setting.items())


def run_grid(axes: Mapping[str, Sequence[Any]], base_flags: Mapping[str, Any], logroot: str, *,
             seeds: Optional[Sequence[int]] = None, last: int = 10) -> List[Dict[str, Any]]:
  """Runs the launcher once per setting of `axes` (the product of their values) and per seed in
  `seeds` (None: base_flags' seed, left out of the folder name), other flags from `base_flags`,
  each in `<logroot>/<logdir_name(setting)>`. Returns one row per run: the setting, its seed,
  SPS, the final metric (the mean of the last `last` evaluations), its wall time, env steps,
  updates, mean policy lag, param_sha256, the evaluation curve, the logdir and when the run
  finished (its summary.json's time). RuntimeError (one
  line) when a run fails or a finished run there ran with other settings."""
  names = list(axes)
  rows = []
  for values in itertools.product(*(axes[n] for n in names)):
    for seed in ([None] if seeds is None else seeds):
      setting = dict(zip(names, values))
      if seed is not None:
        setting["seed"] = seed
      logdir = os.path.abspath(os.path.join(logroot, logdir_name(setting)))
      if not launch.launch({**base_flags, **setting}, logdir):
        raise RuntimeError(f"{logdir_name(setting)}: the run did not finish (its folder "
                           f"{logdir} says why: stderr.txt, or the line above)")
      rows.append(_row(setting, metrics.load_run(logdir), last, logdir))
  return rows


def _row(setting: Dict[str, Any], run: metrics.Run, last: int, logdir: str) -> Dict[str, Any]:
  s = run.summary
  finished = datetime.datetime.fromtimestamp(os.path.getmtime(os.path.join(logdir, "summary.json")),
                                             datetime.timezone.utc)
  curve = [(e["env_steps"], metrics.eval_return(e)) for e in run.evals]
  return {**setting, "seed": s["config"]["seed"], "sps": s["sps"],
          "final_metric": metrics.final_metric(run, last), "wall_time_s": s["wall_time_s"],
          "env_steps": s["env_steps"], "updates": s["updates"],
          "policy_lag_mean": s["policy_lag"]["mean"], "param_sha256": s["param_sha256"],
          "episode_returns": s["episode_returns"], "eval_curve": curve, "logdir": logdir,
          "finished": finished.strftime("%Y-%m-%d %H:%M UTC")}


def run_sweep(name: str, values: Sequence[Any], base_flags: Mapping[str, Any], logroot: str, *,
              seeds: Optional[Sequence[int]] = None, last: int = 10) -> List[Dict[str, Any]]:
  """`run_grid` over one flag: `<logroot>/<name>=<value>[,seed=<s>]`."""
  return run_grid({name: values}, base_flags, logroot, seeds=seeds, last=last)


def summarize(rows: Sequence[Mapping[str, Any]], by: Sequence[str],
              value: str) -> List[Dict[str, Any]]:
  """Per setting of the `by` flags (in the rows' order): the seeds' count, median, min and max of
  `value` (with fewer than 6 seeds the project shows [min, max], not an interval)."""
  groups: Dict[tuple, List[float]] = {}
  for r in rows:
    groups.setdefault(tuple(r[b] for b in by), []).append(r[value])
  return [{**dict(zip(by, key)), "value": value, "seeds": len(v), "median": float(np.median(v)),
           "min": float(np.min(v)), "max": float(np.max(v))} for key, v in groups.items()]


def format_summary(summary: Sequence[Mapping[str, Any]]) -> str:
  """A markdown table of `summarize`'s rows: the setting, then `median [min, max] (n seeds)`."""
  if not summary:
    return "(no runs)"
  by = [k for k in summary[0] if k not in ("value", "seeds", "median", "min", "max")]
  name = summary[0]["value"]
  lines = ["| " + " | ".join(by + [f"{name}: median [min, max]", "seeds"]) + " |",
           "|" + "---|" * (len(by) + 2)]
  for s in summary:
    cells = [str(s[b]) for b in by] + [f"{_num(s['median'])} [{_num(s['min'])}, {_num(s['max'])}]",
                                       str(s["seeds"])]
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)


def _num(x: float) -> str:
  """SPS as whole numbers, small figures (scores in [0, 1]) to three significant digits."""
  return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def plot_bands(ax, rows: Sequence[Mapping[str, Any]], x: str, value: str,
               hue: Optional[str] = None, log_x: bool = False) -> None:
  """On a matplotlib axis: `value`'s median over seeds against flag `x`, one line per value of
  `hue`, with a band from the seeds' min to max."""
  hues = list(dict.fromkeys(r[hue] for r in rows)) if hue else [None]
  for h in hues:
    part = [r for r in rows if hue is None or r[hue] == h]
    s = summarize(part, [x], value)
    xs = [p[x] for p in s]
    label = None if hue is None else f"{hue}={h}"
    line, = ax.plot(xs, [p["median"] for p in s], "o-", label=label)
    ax.fill_between(xs, [p["min"] for p in s], [p["max"] for p in s], alpha=0.25,
                    color=line.get_color(), linewidth=0)
  if log_x:
    ax.set_xscale("log", base=2)
  ticks = sorted(dict.fromkeys(r[x] for r in rows))  # the swept values, as they were given
  ax.set_xticks(ticks, [str(t) for t in ticks])
  ax.set_xlabel(x)
  ax.set_ylabel(value)
  if hue:
    ax.legend(title="median, band [min, max] over seeds", fontsize=8, title_fontsize=8)
