"""Comparisons across a grid's methods, for every grid (the driver's cells and the paper-style
reports alike): paired time ratios per block under the statistics rules (geometric means, a miss
censored at its run's end, blocks on one host kind whose runs were not marked and calibrated
within 1.5x of each other: `stats.pair_shared`) and the aggregates across tasks (IQM and
probability of improvement against a reference method; Agarwal et al. 2021,
`hts_jax.analysis.stats`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from hts_jax.analysis import metrics, stats


@dataclasses.dataclass(frozen=True)
class Spec:
  """A paper-style grid's comparisons (`paper_report`)."""
  methods: List[str]  # in the tables' order
  reference: str  # the paired ratios' denominator (HTS)
  limit_method: str  # the final time metric's clock: this method's run in the same block
  # Each scenario's targets, name -> score, from its finished runs' records (fixed scores, or
  # fractions of a reference score the runs give).
  targets: Callable[[str, List[Dict[str, Any]]], Dict[str, float]]
  # The tables' scenario order (the protocol's); scenarios not named follow, by name.
  scenarios: Tuple[str, ...] = ()
  baseline: str = ""  # the synchronous method the aggregates across scenarios compare against
  grid: str = ""  # the grid's name (`paper_report.load_runs` reads its runs)


def mark_shared(runs: List[Dict[str, Any]]) -> None:
  """Each run's `shared` flag under the statistics rules (`stats.shared`, against the runs of its
  host kind), in place."""
  for r in runs:
    r["shared"] = stats.shared(r, [q for q in runs if q["host"] == r["host"]],
                               marked=bool(r["marked"]))


def cells(runs: Sequence[Dict[str, Any]]) -> Dict[Any, Dict[str, List[Dict[str, Any]]]]:
  """The runs grouped by (task, method), in their order: {task: {method: [runs]}}."""
  out: Dict[Any, Dict[str, List[Dict[str, Any]]]] = {}
  for r in runs:
    out.setdefault(r["task"], {}).setdefault(r["method"], []).append(r)
  return out


def paired(here: Sequence[Dict[str, Any]], method: str, reference: str,
           time: Callable[[Dict[str, Any]], stats.Censored], over_reference: bool = True,
           every_block: bool = False, rule: stats.PairRule = stats.PAIR_RULES[-1],
           population: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
  """One task's paired ratio (`here`: its run records, with `method`, `seed`, `host`, `marked`
  and `calibration_ms`; `time(run)`: its time to the target, censored at its end where it
  missed): per block (seed) the method's time over the reference's (`over_reference`; else the
  reference's over the method's), `stats.ratio`'s geometric mean with [min, max] over the blocks
  and its bound. `blocks`: the seeds that count; `could`: those whose two runs ran on one known
  host kind (the block's other methods may have run elsewhere: a block re-run for some methods
  only); `shared`: left out by `stats.pair_shared` (a run marked, or the two calibrations too far
  apart); `left_out`: the rest. `every_block`: every block counts, for figures that depend on
  neither the host nor a shared machine (env steps). `rule`: the pair rule (the one now, else
  an earlier one of `stats.PAIR_RULES`, for a figure's earlier reading) judges a run against
  `population`'s runs of its host kind (default: `here`'s; the grid's runs for the first rule)."""
  ref = {r["seed"]: r for r in here if r["method"] == reference}
  pairs, seeds = [], []
  out: Dict[str, List[int]] = {"could": [], "shared": [], "left_out": []}
  for r in (r for r in here if r["method"] == method and r["seed"] in ref):
    base = ref[r["seed"]]
    why = None if every_block else _left_out(r, base, rule, population or here)
    if why != "left_out":
      out["could"].append(r["seed"])
    if why:
      out[why].append(r["seed"])
      continue
    pairs.append((time(r), time(base)) if over_reference else (time(base), time(r)))
    seeds.append(r["seed"])
  return {**stats.ratio(pairs), "blocks": seeds, **out}


def _left_out(r: Dict[str, Any], base: Dict[str, Any], rule: stats.PairRule,
              runs: Sequence[Dict[str, Any]]) -> Optional[str]:
  """Why a block's two runs are not paired: 'left_out' (not one known host kind), 'shared'
  (`rule`); None: they count."""
  kinds = {r["host"], base["host"]}
  if len(kinds) != 1 or metrics.UNKNOWN_HOST in kinds:
    return "left_out"
  kind_hosts = [q for q in runs if q["host"] == r["host"]]
  return "shared" if rule.left_out(r, base, kind_hosts) else None


def minutes_to(target: str) -> Callable[[Dict[str, Any]], stats.Censored]:
  """A run record's minutes to `target`, censored at its whole run's where it missed."""
  return lambda r: stats.Censored.of(r["required"][target]["minutes"], r["wall_time_s"] / 60)


def paired_ratios(runs: List[Dict[str, Any]], spec: Spec) -> Dict[str, Any]:
  """A paper-style grid's `paired`: per scenario, method and target, the method's minutes to the
  target over `spec.reference`'s (`paired`)."""
  out: Dict[str, Any] = {}
  for scenario in dict.fromkeys(r["task"] for r in runs):
    here = [r for r in runs if r["task"] == scenario]
    out[scenario] = {m: {t: paired(here, m, spec.reference, minutes_to(t))
                         for t in here[0]["targets"]}
        for m in spec.methods if m != spec.reference and any(r["method"] == m for r in here)}
  return out


def aggregates(values: Mapping[Tuple[Any, str], Mapping[int, float]], methods: Sequence[str],
               reference: str, metric: str, lower_better: Sequence[Any] = ()) -> Dict[str, Any]:
  """Across tasks (`values`: (task, method) -> {seed: score}), per method but the reference: over
  the tasks where it has the reference's seeds, the IQM over tasks x seeds of its score
  normalised by the reference's median there, and the probability that a run of it beats one of
  the reference on the same task, averaged over tasks (`stats.aggregate`; no interval below 6
  seeds a task; `lower_better`: tasks whose score is env steps). `metric` says what the score is."""
  out: Dict[str, Any] = {"reference": reference, "metric": metric, "methods": {}}
  tasks = list(dict.fromkeys(t for t, _ in values))
  for m in methods:
    mine = [t for t in tasks if m != reference and values.get((t, m))
            and set(values[t, m]) == set(values.get((t, reference)) or ())]
    if mine:
      agg = stats.aggregate({t: ([values[t, m][k] for k in sorted(values[t, m])],
                                 [values[t, reference][k] for k in sorted(values[t, m])])
                             for t in mine}, lower_better=lower_better)
      out["methods"][m] = {"tasks": [str(t) for t in agg.pop("tasks")], **agg}
  return out


def by_seed(runs: Sequence[Dict[str, Any]], key: str) -> Dict[Tuple[Any, str], Dict[int, float]]:
  """`aggregates`' values: (task, method) -> {seed: run[key]}, where it is not None."""
  out: Dict[Tuple[Any, str], Dict[int, float]] = {}
  for r in runs:
    if r[key] is not None:
      out.setdefault((r["task"], r["method"]), {})[r["seed"]] = r[key]
  return out


def aggregates_line(a: Optional[Dict[str, Any]], label: Callable[[str], str]) -> str:
  """The aggregates as one line under a table (empty where there are none)."""
  if not a or not a.get("methods"):
    return ""
  ref = label(a["reference"])
  return (f"Across tasks (Agarwal et al. 2021, rliable's metrics; {a['metric']}, normalised by "
          f"{ref}'s median on each task; no interval below 6 seeds a task): " + "; ".join(
              f"{label(m)} over {', '.join(v['tasks'])}: IQM "
              + ("-" if v["iqm_normalised"] is None else f"{v['iqm_normalised']:.2f}")
              + f", P(beats {ref}) {v['probability_of_improvement']:.2f}"
              for m, v in a["methods"].items()) + ".")
