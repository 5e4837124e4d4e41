r"""The paper's evaluation metrics, computed from run directories, with bootstrap confidence
intervals over seeds.

- final metric: the mean evaluation return of the last `last` (10) evaluated policies; each
  evaluation is `eval_episodes` (10 in the paper) episodes, so 10 x 10 episodes.
- final time metric: the final metric of the policies evaluated within a wall-time limit.
- required time metric: the wall time (and env steps) at which the running average evaluation
  return first reaches a target: the paper's "running average of the most recent 100 evaluation
  episodes, i.e., 10 episodes for each of the most recent ten policies" (`RUNNING_WINDOW`
  evaluations). Only full windows count: a run reaches a target at its 10th evaluation at the
  earliest, and every average is over 10 evaluations that played different episodes
  (`hts_jax.runtime.outputs.evaluation`). `--stop_at_return` stops a run on the same average
  (`first_reached`).
Each is computed per run (seed); a group of seeds is summarized by its mean and its interval under
the statistics rules (`seed_interval`: the [min, max] below 6 seeds, from 6 a 95% percentile
bootstrap of the mean).

Host-side only: reads `summary.json` (evaluations, config) and `metrics.csv` (training curves).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from hts_jax.analysis import stats
from hts_jax.config import RUNNING_WINDOW  # evaluations in the paper's running average
from hts_jax.runtime.outputs import files

# Fields that make two runs different experiments (the seed does not).
GROUP_FIELDS = ("env", "mode", "algo", "alpha", "num_actors", "num_envs", "correction")


class RunDirError(ValueError):
  """A directory that is not a finished run."""


@dataclasses.dataclass(frozen=True)
class Run:
  """One finished run: its summary.json and the evaluation history in time order."""
  path: str
  summary: Dict[str, Any]
  evals: Tuple[Dict[str, Any], ...]

  @property
  def seed(self) -> int:
    return int(self.summary.get("seed", 0))

  def key(self) -> Tuple:
    return tuple(self.summary.get(f) for f in GROUP_FIELDS)

  @property
  def host(self) -> str:
    """The run's host kind (`host_kind`)."""
    return host_kind(self.summary.get("host"))

  def train_curve(self) -> List[Dict[str, float]]:
    """metrics.csv rows as floats (empty cells dropped); [] when there is no metrics.csv."""
    path = os.path.join(self.path, "metrics.csv")
    if not os.path.exists(path):
      return []
    rows = []
    try:
      with files.open_read(path, "r", newline="") as f:  # a regular file only: a FIFO never hangs
        for r in csv.DictReader(f):
          rows.append({k: float(v) for k, v in r.items() if v not in ("", None)})
    except OSError as e:
      raise RunDirError(f"{path}: unreadable: {e}") from None
    return rows


# The PPO update's diagnostics (metrics.csv): the share of samples whose ratio lies outside
# 1 ± clip, E|ρ - 1| and the approximate KL.
PPO_UPDATE_KEYS = ("clip_frac", "ratio_abs_dev", "approx_kl")


def early_update(run: Run, fraction: float = 0.25,
                 keys: Sequence[str] = PPO_UPDATE_KEYS) -> Optional[Dict[str, float]]:
  """The run's update early on, from metrics.csv: over the updates of the first `fraction` of its
  budget (config's total_steps, else its env steps), the mean of each of `keys` its rows carry,
  and `entropy` over that window's last fifth; `window_steps` is the window's end. None when the
  rows lack `keys[0]` (not that kind of update) or there are none in the window."""
  budget = (run.summary.get("config") or {}).get("total_steps") or run.summary.get("env_steps", 0)
  end = int(budget * fraction)
  rows = [row for row in run.train_curve() if row.get("env_steps", 0) <= end]
  if not any(keys[0] in row for row in rows):
    return None
  out: Dict[str, float] = {"window_steps": end}
  for key in keys:
    vals = [row[key] for row in rows if key in row]
    if vals:
      out[key] = sum(vals) / len(vals)
  late = [row["entropy"] for row in rows
          if row.get("env_steps", 0) > 0.8 * end and "entropy" in row]
  if late:
    out["entropy"] = sum(late) / len(late)
  return out


UNKNOWN_HOST = "host not recorded"


def host_kind(record: Optional[Dict[str, Any]]) -> str:
  """What makes two runs' wall times comparable: the CPU model, the cores the process could use
  and the accelerators (summary.json's `host` block, `hts_jax.runtime.host`); UNKNOWN_HOST for a
  run without one; "mixed (...)" for a resumed run whose sessions ran on different kinds, or a
  multi-process run whose processes did (`other_processes`)."""
  if not record:
    return UNKNOWN_HOST
  kinds = list(dict.fromkeys(_one_host(r) for r in [*record.get("earlier_sessions", []), record,
                                                     *record.get("other_processes", [])]))
  return kinds[0] if len(kinds) == 1 else f"mixed ({'; '.join(kinds)})"


def _one_host(record: Dict[str, Any]) -> str:
  acc = record.get("accelerators") or {}
  return (f"{record.get('cpu_model', '?')} x{record.get('usable_cores', '?')}"
          + "".join(f" + {n}x {kind}" for kind, n in sorted(acc.items())))


class MixedHostsError(ValueError):
  """Wall-time figures of runs made on different host kinds would share a column."""


def check_one_host(runs: Sequence[Run], allow_mixed: bool = False) -> List[str]:
  """The host kinds of `runs`, in order of appearance. More than one raises MixedHostsError (one
  line naming them) unless `allow_mixed`: wall times (SPS, time to a target, final time metric)
  from hosts ~3x apart in speed are not comparable."""
  kinds = list(dict.fromkeys(r.host for r in runs))
  if len(kinds) > 1 and not allow_mixed:
    raise MixedHostsError(
        f"the runs come from {len(kinds)} host kinds ({'; '.join(kinds)}): their wall-time "
        "figures are not comparable; pass --mixed_hosts to report them together (the tables "
        "then say so)")
  return kinds


def load_run(path: str) -> Run:
  """Reads `<path>/summary.json`; raises RunDirError with a one-line reason otherwise."""
  fn = os.path.join(path, "summary.json")
  if not os.path.isdir(path):
    raise RunDirError(f"{path}: not a directory")
  if not os.path.exists(fn):
    raise RunDirError(f"{path}: no summary.json (not a finished run)")
  try:
    with files.open_read(fn, "r") as f:  # a regular file only: a FIFO or a link is refused
      summary = json.load(f)
  except (OSError, ValueError) as e:
    raise RunDirError(f"{fn}: unreadable: {e}") from e
  evals = summary.get("eval")
  if not isinstance(evals, list) or not all(
      isinstance(e, dict) and {"env_steps", "wall_time_s", "mean_return"} <= set(e) for e in evals):
    raise RunDirError(f"{fn}: no evaluation history ('eval' list of env_steps, wall_time_s, "
                      "mean_return)")
  return Run(path=path, summary=summary, evals=tuple(time_ordered(evals)))


def time_ordered(evals: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """A run's evaluations in the order they were made (by env steps, then wall time), whatever
  order summary.json lists them in: the order every metric over them reads."""
  return sorted(evals, key=lambda e: (e["env_steps"], e["wall_time_s"]))


def eval_return(e: Dict[str, Any]) -> float:
  """One evaluation's mean return (its episodes' returns, or the mean it recorded)."""
  returns = e.get("returns")
  return float(np.mean(returns)) if returns else float(e["mean_return"])


def final_metric(run: Run, last: int = 10) -> Optional[float]:
  """Mean evaluation return of the last `last` evaluations (None without evaluations)."""
  if last < 1:
    raise ValueError(f"need last >= 1, got {last}")
  if not run.evals:
    return None
  return float(np.mean([eval_return(e) for e in run.evals[-last:]]))


def final_time_metric(run: Run, time_limit_s: float, last: int = 10) -> Optional[float]:
  """The final metric over the evaluations of policies reached within `time_limit_s` of wall time
  (None if no policy was evaluated by then)."""
  within = tuple(e for e in run.evals if e["wall_time_s"] <= time_limit_s)
  return final_metric(dataclasses.replace(run, evals=within), last) if within else None


def running_averages(returns: Sequence[float],
                     window: int = RUNNING_WINDOW) -> List[Optional[float]]:
  """Entry i: the mean of evaluation returns [i - window + 1, i]; None while fewer than `window`
  evaluations exist (a partial window does not count)."""
  if window < 1:
    raise ValueError(f"need window >= 1, got {window}")
  return [float(np.mean(returns[i + 1 - window:i + 1])) if i + 1 >= window else None
          for i in range(len(returns))]


def first_reached(returns: Sequence[float], target: float,
                  window: int = RUNNING_WINDOW) -> Optional[int]:
  """The index of the first evaluation whose full-window running average is >= target (None:
  never)."""
  return next((i for i, avg in enumerate(running_averages(returns, window))
               if avg is not None and avg >= target), None)


def required_time_metric(run: Run, target: float,
                         window: int = RUNNING_WINDOW) -> Dict[str, float]:
  """First evaluation at which the running average return over a full window of `window`
  evaluations (`first_reached`) is >= target: {"wall_time_s", "env_steps"}, both inf when the run
  never reached it."""
  i = first_reached([eval_return(e) for e in run.evals], target, window)
  if i is None:
    return {"wall_time_s": math.inf, "env_steps": math.inf}
  return {"wall_time_s": float(run.evals[i]["wall_time_s"]),
          "env_steps": float(run.evals[i]["env_steps"])}


def seed_interval(values: Sequence[float], *, resamples: int = 10_000,
                  seed: int = 0) -> Dict[str, Any]:
  """Mean of `values` (one per seed) and its interval under the statistics rules
  (`hts_jax.analysis.stats.spread`): the [min, max] below 6 values ("kind": "min-max"), from 6 on
  the 95% percentile bootstrap of the mean from `scipy.stats.bootstrap` ("95% bootstrap")."""
  s = stats.spread(values, resamples=resamples, seed=seed)
  return {"mean": s["mean"], "lo": s["interval"]["lo"], "hi": s["interval"]["hi"], "n": s["n"],
          "kind": s["interval"]["kind"]}


def interval_or_none(values: Sequence[float], *, resamples: int = 10_000,
                     seed: int = 0) -> Optional[Dict[str, Any]]:
  """`seed_interval`, or None where no seed has a value."""
  return seed_interval(values, resamples=resamples, seed=seed) if len(values) else None


def group_runs(runs: Sequence[Run]) -> Dict[Tuple, List[Run]]:
  """Runs that differ only in their seed, keyed by GROUP_FIELDS values, seeds in order."""
  groups: Dict[Tuple, List[Run]] = {}
  for r in runs:
    groups.setdefault(r.key(), []).append(r)
  return {k: sorted(v, key=lambda r: r.seed) for k, v in groups.items()}


def method_label(key: Tuple, keys: Sequence[Tuple]) -> str:
  """A column name in the paper's words ('HTS-RL (A2C)', 'A2C (sync)', 'IMPALA'), plus any
  setting that tells two groups of the same method on the same env apart."""
  f = dict(zip(GROUP_FIELDS, key))
  algo = str(f["algo"]).upper()
  base = {"hts": f"HTS-RL ({algo})", "sync": f"{algo} (sync)", "async": "IMPALA"}.get(
      f["mode"], f"{f['mode']}-{algo}")
  same = [dict(zip(GROUP_FIELDS, k)) for k in keys]
  same = [g for g in same if (g["env"], g["mode"], g["algo"]) == (f["env"], f["mode"], f["algo"])]
  extra = [f"{name}={f[name]}" for name in ("alpha", "num_actors", "num_envs", "correction")
           if len({g[name] for g in same}) > 1]
  return base + (f" [{', '.join(extra)}]" if extra else "")


def summarize(groups: Dict[Tuple, List[Run]], *, last: int = 10,
              time_limit_s: Optional[float] = None, targets: Optional[Dict[str, float]] = None,
              window: int = RUNNING_WINDOW, resamples: int = 10_000,
              seed: int = 0) -> List[Dict[str, Any]]:
  """One row per group: the three metrics (mean and interval over seeds, `seed_interval`) and the
  mean SPS.
  `targets` maps env name to the required-time target ('*' for any env)."""
  rows = []
  keys = list(groups)
  ci = functools.partial(interval_or_none, resamples=resamples, seed=seed)
  for key, runs in groups.items():
    f = dict(zip(GROUP_FIELDS, key))
    row: Dict[str, Any] = {"env": f["env"], "method": method_label(key, keys),
                           "seeds": [r.seed for r in runs], **{k: f[k] for k in GROUP_FIELDS},
                           "hosts": list(dict.fromkeys(r.host for r in runs))}
    row["final"] = ci([v for v in (final_metric(r, last) for r in runs) if v is not None])
    if time_limit_s is not None:
      row["time_limit_s"] = time_limit_s
      row["final_time"] = ci([v for v in (final_time_metric(r, time_limit_s, last) for r in runs)
                              if v is not None])
    target = None if targets is None else targets.get(f["env"], targets.get("*"))
    if target is not None:
      req = [required_time_metric(r, target, window) for r in runs]
      reached = [q["wall_time_s"] for q in req if math.isfinite(q["wall_time_s"])]
      row["target"] = target
      row["required_time"] = dict(ci(reached) or {"mean": math.inf}, reached=len(reached),
                                  runs=len(runs),
                                  too_few_evaluations=sum(len(r.evals) < window for r in runs))
      steps = [q["env_steps"] for q in req if math.isfinite(q["env_steps"])]
      row["required_steps"] = ci(steps)
    row["sps"] = float(np.mean([r.summary.get("sps", float("nan")) for r in runs]))
    rows.append(row)
  return rows


def json_safe(x):
  """inf/nan (a target never reached) become null: strict JSON for the reports."""
  if isinstance(x, float) and not math.isfinite(x):
    return None
  if isinstance(x, dict):
    return {k: json_safe(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [json_safe(v) for v in x]
  return x
