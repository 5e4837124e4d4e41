"""The statistics rules every grid's report follows, as pure functions with golden tests
(`tests/unit/test_stats.py`):

- **Per-seed values always.** `spread` keeps them; with n < MIN_N_INTERVAL (6) seeds its interval
  is the [min, max], labelled so; from 6 seeds a 95% percentile bootstrap of the mean from
  `scipy.stats.bootstrap`, labelled so. Never a "95%" interval at n <= 5: a percentile bootstrap
  over 3 values is their [min, max] and covers about 75%.
- **A seed that missed a target counts**, censored at its budget (`Censored`): shown as "≥", its
  median is a bound where a censored seed reaches it, never dropped.
- **Time ratios are geometric means over blocks** (`ratio`): a block where a side missed gives a
  bound on its ratio, and the mean is marked as the bound they share (or as no bound at all).
- **Floors**: steps to a target at the first full window of evaluations measure the evaluation
  cadence, not learning (`is_floor`).
- **Shared machines** (`shared`): a run that its driver marked (`shared_machine.json`, also
  written for the runs whose commit messages disclosed it), or whose calibration (the ~1 s CPU
  workload timed at its start) is well above its host kind's median, shared the machine; its
  times are left out of ratios. The start load is recorded but not used: in back-to-back blocks
  the 1-minute load average at a run's start still holds the run before it (IMPALA's processes
  leave 5-8 on the 2-core hosts), so on the MinAtar grid it flagged the 12 runs that followed
  IMPALA or another heavy run, not the ones the commit messages name.
- **Paired blocks** (`pair_shared`, from 2026-11-29): a paired ratio (time to a target, SPS)
  leaves a block out when either run was marked, or when the two runs' calibrations differ by
  more than CALIBRATION_SHARED x. A pair's ratio cancels its host's speed, so the kind's median
  (`shared`) flags only figures that are not paired: a host that calibrates at twice its kind's
  median when quiet had every run flagged.
- **CPU steal** (from 2026-12-02): a run whose CPU steal share (summary.json's `cpu_steal_share`:
  the time the hypervisor gave its CPUs to other VMs) is above STEAL_SHARED shared its host with
  another VM, whatever its calibration said at the start: `shared` flags it and `pair_shared`
  leaves its block out. Steal comes and goes inside a run (a 2-core Intel Xeon host: 7-37% under
  load, 0% idle), so one calibration at the start cannot see it. Runs before 2026-12-01 recorded
  no share; a resumed run's covers its sessions up to the checkpoints it kept (from 2026-12-03;
  before, its last session only: no committed run was resumed).
- **Provenance** (`provenance_commit`): the commit that holds the last run used, read from git;
  runs not committed yet give none.
- **Across tasks** (Agarwal et al., NeurIPS 2021): the IQM over tasks x seeds and the probability
  of improvement, from rliable's `metrics` module (its bootstrap module, `rliable.library`, does
  not import with pandas 3); intervals for them come from scipy's bootstrap with each task a
  stratum, only where every task has at least MIN_N_INTERVAL seeds.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import subprocess
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

MIN_N_INTERVAL = 6
CALIBRATION_SHARED = 1.5  # x the host kind's median calibration time
STEAL_SHARED = 0.05  # of a run's CPU time given to other VMs (`host.steal_share`)


def spread(values: Sequence[float], resamples: int = 10_000, seed: int = 0) -> Dict[str, Any]:
  """Per-seed `values`, their mean, median and interval: {"kind": "min-max"} below
  MIN_N_INTERVAL values, {"kind": "95% bootstrap"} (percentile, of the mean) from there."""
  x = [float(v) for v in values]
  if not x:
    raise ValueError("spread needs at least one value")
  out = {"values": x, "n": len(x), "mean": statistics.fmean(x), "median": statistics.median(x),
         "min": min(x), "max": max(x)}
  if len(x) < MIN_N_INTERVAL or min(x) == max(x):
    out["interval"] = {"kind": "min-max", "lo": min(x), "hi": max(x)}
  else:
    from scipy import stats  # pylint: disable=import-outside-toplevel
    ci = stats.bootstrap((np.asarray(x),), np.mean, n_resamples=resamples, method="percentile",
                         random_state=np.random.default_rng(seed)).confidence_interval
    out["interval"] = {"kind": "95% bootstrap", "lo": float(ci.low), "hi": float(ci.high)}
  return out


def interval_cell(s: Dict[str, Any], fmt: str = "{:,.0f}") -> str:
  """`mean [lo, hi] (kind)`: the interval named by what it is; `(kind; n of m runs)` where the
  spread leaves runs out (`of`: the runs there were; shared machines, for SPS)."""
  i = s["interval"]
  left_out = f"; {s['n']} of {s['of']} runs" if s.get("of", s["n"]) > s["n"] else ""
  return (f"{fmt.format(s['mean'])} [{fmt.format(i['lo'])}, {fmt.format(i['hi'])}] "
          f"({i['kind']}{left_out})")


@dataclasses.dataclass(frozen=True)
class Censored:
  """A value to a target: `value` where reached, the budget where not (`censored`)."""
  value: float
  censored: bool = False

  @classmethod
  def of(cls, reached: Optional[float], budget: float) -> "Censored":
    return cls(float(budget), True) if reached is None or math.isinf(reached) else cls(
        float(reached))

  def cell(self, fmt: str = "{:,.0f}") -> str:
    return ("≥" if self.censored else "") + fmt.format(self.value)


def censored_median(xs: Sequence[Censored]) -> Censored:
  """The median of values censored at their budgets (lower is better: steps or time to a
  target): censored where a censored value is at or below it, so the true median is at least it
  (the budget counts as the smallest the missing value could be)."""
  order = sorted(xs, key=lambda c: (c.value, c.censored))
  n = len(order)
  mid = order[(n - 1) // 2:n // 2 + 1]  # one or two middle values
  value = statistics.fmean(c.value for c in mid)
  return Censored(value, any(c.censored for c in mid))


def is_floor(step: Optional[float], first_window_step: float) -> bool:
  """Whether steps to a target sit at the first full window (the earliest the running average can
  reach it): a floor of the evaluation cadence, not a measure of learning."""
  return step is not None and not math.isinf(step) and step <= first_window_step


def ratio(pairs: Sequence[Tuple[Censored, Censored]]) -> Dict[str, Any]:
  """The geometric mean over blocks of the pairs' first time over their second (times or steps
  to a target, lower is better), with the [min, max] of the blocks' ratios. A block where the
  second missed gives an upper bound of its ratio, where the first missed a lower bound, where
  both missed nothing (its ratio is taken at the budgets). "bound": None when every block was
  measured, "lower" or "upper" when the bounded blocks agree, "none" when they do not (the mean
  is no bound then)."""
  if not pairs:
    return {"mean": None, "n": 0, "bound": None, "ratios": [], "lo": None, "hi": None}
  logs, kinds = [], set()
  for first, second in pairs:
    logs.append(math.log(first.value / second.value))
    if first.censored and second.censored:
      kinds.add("none")
    elif second.censored:
      kinds.add("upper")
    elif first.censored:
      kinds.add("lower")
  bound = None if not kinds else (kinds.pop() if len(kinds) == 1 else "none")
  ratios = [math.exp(v) for v in logs]
  return {"mean": math.exp(statistics.fmean(logs)), "n": len(pairs), "bound": bound,
          "ratios": ratios, "lo": min(ratios), "hi": max(ratios)}


BOUND_MARK = {None: "", "lower": "≥", "upper": "≤", "none": "~"}  # a `ratio`'s bound, marked


def ratio_cell(r: Optional[Dict[str, Any]]) -> str:
  """A `ratio` as `mean x [lo, hi] (n=k)`: the geometric mean and the [min, max] over the blocks,
  marked `≥` / `≤` where it is a bound and `~` where the bounds disagree; `-` where none."""
  if not r or r.get("mean") is None:
    return "-"
  mark = BOUND_MARK[r.get("bound")]
  span = f" [{r['lo']:.2f}, {r['hi']:.2f}]" if r["n"] > 1 and r.get("lo") is not None else ""
  return f"{mark}{r['mean']:.2f}x{span} (n={r['n']})"


def stolen(host: Dict[str, Any]) -> Optional[str]:
  """Why a run's record (`steal_share`) says another VM took its CPUs, or None: its CPU steal
  share is above STEAL_SHARED (a run that recorded none is not judged by it)."""
  share = host.get("steal_share")
  if share is not None and share > STEAL_SHARED:
    return f"CPU steal {share:.0%} > {STEAL_SHARED:.0%}"
  return None


def shared(host: Dict[str, Any], kind_hosts: Sequence[Dict[str, Any]],
           marked: bool = False) -> Optional[str]:
  """Why a run counts as having shared the machine, or None. `host`: its record in results.json
  (`calibration_ms`, `steal_share`); `kind_hosts`: every run's of its host kind. Shared when it
  was marked, its CPU steal share is above STEAL_SHARED (`stolen`), or its calibration is above
  CALIBRATION_SHARED times the kind's median."""
  if marked:
    return "marked"
  why = stolen(host)
  if why:
    return why
  cal = [h["calibration_ms"] for h in kind_hosts if h.get("calibration_ms")]
  median = statistics.median(cal) if cal else None
  if host.get("calibration_ms") and median and host["calibration_ms"] > CALIBRATION_SHARED * median:
    return (f"calibration {host['calibration_ms']:.0f} ms > {CALIBRATION_SHARED} x the host "
            f"kind's median {median:.0f} ms")
  return None


def pair_shared(a: Dict[str, Any], b: Dict[str, Any]) -> Optional[str]:
  """Why a paired block (runs `a` and `b`: their records, with `marked` and `calibration_ms`)
  is left out of a paired ratio, or None: either run marked by its driver, either run's CPU
  steal share above STEAL_SHARED (`stolen`), or the two runs' calibrations more than
  CALIBRATION_SHARED x apart (a run without one is judged by its mark)."""
  if a.get("marked") or b.get("marked"):
    return "marked"
  return stolen(a) or stolen(b) or _pair_calibrations(a, b)


def _pair_calibrations(a: Dict[str, Any], b: Dict[str, Any]) -> Optional[str]:
  ca, cb = a.get("calibration_ms"), b.get("calibration_ms")
  if ca and cb and max(ca, cb) > CALIBRATION_SHARED * min(ca, cb):
    return f"calibrations {ca:.0f} and {cb:.0f} ms, more than {CALIBRATION_SHARED}x apart"
  return None


def _kind_median(a: Dict[str, Any], b: Dict[str, Any],
                 kind_hosts: Sequence[Dict[str, Any]]) -> Optional[str]:
  no_steal = lambda r: dict(r, steal_share=None)
  return (shared(no_steal(a), kind_hosts, bool(a.get("marked")))
          or shared(no_steal(b), kind_hosts, bool(b.get("marked"))))


@dataclasses.dataclass(frozen=True)
class PairRule:
  """A rule that leaves a paired block out, as it stood from `since`: `left_out(a, b,
  kind_hosts)` says why (None: the block counts); `kind_hosts` is every run's record of the
  block's host kind. `text` is the rule in a sentence, naming every exclusion it applies."""
  since: str
  text: str
  left_out: Any


# Every pair rule in force since the grids' first paired ratios, oldest first; the last is the
# rule now (`pair_shared`). A figure that any change moved shows each reading (`readings`).
PAIR_RULES = (
    PairRule("2026-11-27", "a block counts where neither run was marked as sharing the machine "
             "or calibrated above 1.5x its host kind's median", _kind_median),
    PairRule("2026-11-29", "a block counts where neither run was marked as sharing the machine "
             "and the two runs' calibrations are within 1.5x of each other",
             lambda a, b, _: ("marked" if a.get("marked") or b.get("marked")
                              else _pair_calibrations(a, b))),
    PairRule("2026-12-02", "a block counts where neither run was marked as sharing the machine, "
             "the two runs' calibrations are within 1.5x of each other and neither run lost "
             "more than 5% of its CPU time to other virtual machines (CPU steal)",
             lambda a, b, _: pair_shared(a, b)))


def provenance_commit(root: str, paths: Sequence[str]) -> Optional[str]:
  """The commit that holds the last of `paths` (runs' folders or files, from `root`): None when
  any of them is not committed as it is (new or changed since), or outside git."""
  if not paths:
    return None
  try:
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", *paths],
                           capture_output=True, text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "-C", root, "log", "-1", "--format=%H", "--", *paths],
                            capture_output=True, text=True, check=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return None
  return None if dirty or not commit else commit


def iqm(scores: np.ndarray) -> float:
  """The interquartile mean over runs x tasks (rliable's `aggregate_iqm`)."""
  from rliable import metrics  # pylint: disable=import-outside-toplevel
  return float(metrics.aggregate_iqm(np.asarray(scores, float)))


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
  """P(X > Y) averaged over tasks, runs x tasks each (rliable's `probability_of_improvement`:
  per task the Mann-Whitney U over the seed pairs, ties half)."""
  from rliable import metrics  # pylint: disable=import-outside-toplevel
  return float(metrics.probability_of_improvement(np.asarray(x, float), np.asarray(y, float)))


def aggregate(per_task: Mapping[str, Tuple[Sequence[float], Sequence[float]]],
              lower_better: Sequence[str] = ()) -> Dict[str, Any]:
  """Across tasks (Agarwal et al. 2021), a method's runs against a reference's, `per_task`: task
  -> (the method's per-seed scores, the reference's), seed counts may differ by task: the IQM of
  every run's score normalised by the reference's median on its task (the median over the score
  where the task is in `lower_better`: env steps or time), None where a median is 0; and the
  probability that a run of the method beats one of the reference on the same task (rliable's,
  per task), averaged over the tasks. No interval: the grids have fewer than 6 seeds a task."""
  norm, poi = [], []
  for task, (mine, ref) in per_task.items():
    x, y, med = np.asarray(mine, float), np.asarray(ref, float), float(np.median(ref))
    low = task in lower_better
    norm.append(None if med == 0 else (med / x if low else x / med))
    poi.append(probability_of_improvement((-x if low else x)[:, None], (-y if low else y)[:, None]))
  return {"tasks": list(per_task), "seeds": [len(m) for m, _ in per_task.values()],
          "iqm_normalised": None if any(n is None for n in norm) or not norm else iqm(
              np.concatenate(norm)[:, None]),
          "probability_of_improvement": float(np.mean(poi)) if poi else None}


def stratified_interval(per_task: Sequence[Sequence[float]], statistic,
                        resamples: int = 10_000, seed: int = 0) -> Optional[Dict[str, Any]]:
  """A 95% percentile bootstrap of `statistic(list of per-task arrays)`, each task's seeds
  resampled within it (scipy's bootstrap, one sample per task); None when a task has fewer than
  MIN_N_INTERVAL seeds."""
  if any(len(t) < MIN_N_INTERVAL for t in per_task):
    return None
  from scipy import stats  # pylint: disable=import-outside-toplevel
  ci = stats.bootstrap(tuple(np.asarray(t, float) for t in per_task),
                       lambda *tasks: statistic(list(tasks)), n_resamples=resamples,
                       method="percentile", vectorized=False,
                       random_state=np.random.default_rng(seed)).confidence_interval
  return {"kind": "95% stratified bootstrap", "lo": float(ci.low), "hi": float(ci.high)}


def markdown(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
  """A GitHub markdown table (tabulate), cells as given."""
  from tabulate import tabulate  # pylint: disable=import-outside-toplevel
  return tabulate([[str(c) for c in r] for r in rows], headers=list(headers), tablefmt="github",
                  disable_numparse=True) + "\n"

