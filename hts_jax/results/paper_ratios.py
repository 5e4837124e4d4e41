"""The paper-style grids' comparisons across methods (`paper_report`'s run records): paired time
ratios per block under the statistics rules (geometric means, censored misses, shared machines
left out) and the aggregates across scenarios (IQM and probability of improvement against the
synchronous baseline)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple


from hts_jax.analysis import metrics, stats


@dataclasses.dataclass(frozen=True)
class Spec:
  methods: List[str]  # in the tables' order
  reference: str  # the paired ratios' denominator (HTS)
  limit_method: str  # the final time metric's clock: this method's run in the same block
  # Each scenario's targets, name -> score, from its finished runs' records (fixed scores, or
  # fractions of a reference score the runs give).
  targets: Callable[[str, List[Dict[str, Any]]], Dict[str, float]]
  # The tables' scenario order (the protocol's); scenarios not named follow, by name.
  scenarios: Tuple[str, ...] = ()
  baseline: str = ""  # the synchronous method the aggregates across scenarios compare against


def paired_ratios(runs: List[Dict[str, Any]], spec: Spec,
                  resamples: int = 10_000) -> Dict[str, Any]:
  """Per scenario, method and target: each block's minutes to the target over `spec.reference`'s
  (`stats.ratio`): the geometric mean over the blocks that ran on one recorded host kind with
  neither run sharing the machine, [min, max] over them, and where a run missed the target its
  run's whole wall time, censored, which makes the block's ratio and the mean a bound ("bound":
  "lower" where the method missed, "upper" where the reference did, "none" where they disagree).
  `blocks`: seeds that count; `could`: those on one host kind; `shared`: left out for a shared
  machine; `left_out`: the rest."""
  del resamples  # geometric means over blocks: no resampling
  out: Dict[str, Any] = {}
  for scenario in dict.fromkeys(r["scenario"] for r in runs):
    here = [r for r in runs if r["scenario"] == scenario]
    ref = {r["seed"]: r for r in here if r["method"] == spec.reference}
    rows = {}
    for method in (m for m in spec.methods
                   if m != spec.reference and any(r["method"] == m for r in here)):
      row = {}
      for t in here[0]["targets"]:
        pairs, seeds, could, left_out, shared = [], [], [], [], []
        for r in (r for r in here if r["method"] == method and r["seed"] in ref):
          base, kinds = ref[r["seed"]], {x["host"] for x in here if x["seed"] == r["seed"]}
          if len(kinds) != 1 or metrics.UNKNOWN_HOST in kinds:  # the whole block, one known kind
            left_out.append(r["seed"])
            continue
          could.append(r["seed"])
          if r.get("shared") or base.get("shared"):
            shared.append(r["seed"])
            continue
          # Minutes to the target, censored at the run's whole wall time where it missed.
          pairs.append(tuple(stats.Censored.of(x["required"][t]["minutes"], x["wall_time_s"] / 60)
                             for x in (r, base)))
          seeds.append(r["seed"])
        ratio = stats.ratio(pairs)
        row[t] = {"mean": ratio["geomean"], "n": ratio["n"], "bound": ratio["bound"],
                  "ratios": ratio["ratios"], "lo": min(ratio["ratios"], default=None),
                  "hi": max(ratio["ratios"], default=None), "blocks": seeds, "could": could,
                  "shared": shared, "left_out": left_out}
      rows[method] = row
    out[scenario] = rows
  return out


def aggregates(runs: List[Dict[str, Any]], spec: Spec) -> Optional[Dict[str, Any]]:
  """Across the scenarios where a method and `spec.baseline` have final metrics for the same
  seeds (Agarwal et al. 2021, `stats`): its IQM over scenarios x seeds of the final metric
  normalised by the baseline's median there, and the probability that a run of it beats one of
  the baseline on the same scenario, averaged over scenarios (no interval below 6 seeds)."""
  if not spec.baseline:
    return None
  def finals(sc, m):
    return {r["seed"]: r["final"] for r in runs
            if r["scenario"] == sc and r["method"] == m and r["final"] is not None}
  out: Dict[str, Any] = {"baseline": spec.baseline, "methods": {}}
  for m in spec.methods:
    if m == spec.baseline:
      continue
    tasks = [sc for sc in dict.fromkeys(r["scenario"] for r in runs)
             if finals(sc, m) and set(finals(sc, m)) == set(finals(sc, spec.baseline))]
    if not tasks:
      continue
    agg = stats.aggregate({sc: ([finals(sc, m)[k] for k in sorted(finals(sc, m))],
                                [finals(sc, spec.baseline)[k] for k in sorted(finals(sc, m))])
                           for sc in tasks})
    out["methods"][m] = {"scenarios": agg.pop("tasks"), **agg}
  return out


def aggregates_line(report: Dict[str, Any], label: Callable[[str], str]) -> str:
  """The aggregates as one line for the tables (empty where there are none)."""
  a = report.get("aggregates") or {}
  if not a.get("methods"):
    return ""
  base = label(a["baseline"])
  return ("Across scenarios (Agarwal et al. 2021, rliable's metrics; the final metric; no "
          "interval below 6 seeds a scenario): " + "; ".join(
              f"{label(m)} over {', '.join(v['scenarios'])}: IQM normalised by {base}'s median "
              + ("-" if v["iqm_normalised"] is None else f"{v['iqm_normalised']:.2f}")
              + f", P(beats {base}) {v['probability_of_improvement']:.2f}"
              for m, v in a["methods"].items()) + ".")
