"""What the GFootball runs' own records say beside the result tables: the update statistics
(`update_diagnostics` in results.json, from the runs' metrics.csv; docs' table and README's line),
which say how the policy-lag corrections change PPO's update (the share of clipped ratios,
|ρ - 1|, the approximate KL, the entropy), and the runs' throughput against the benchmark's
(`run_throughput`: docs' table), which says why whole runs step slower."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from hts_jax.results.gfootball_spec import LABELS, METHODS, REFERENCE
from hts_jax.results.publish import fmt_ci, fmt_ratio


def short(scenario: str) -> str:
  return scenario.replace("academy_", "").replace("_", " ").capitalize()


UPDATE_INTRO = ("HTS-PPO's ratio (`--correction=behaviour`, the released code's) is taken against "
                "the behaviour policy, one update behind the params its epochs start from")


def _diag_methods(report: Dict[str, Any]) -> List[str]:
  diag = report.get("update_diagnostics") or {}
  return [m for m in METHODS if any(m in d["methods"] for d in diag.values())]


def _listed(values: List[Any], fmt: str = "{:,}") -> str:
  return "/".join(fmt.format(v) for v in values) or "-"


def seeds_of(scenario_summary: Dict[str, Any]) -> int:
  """The protocol's seeds for the scenario (`planned_seeds`), or more where a method has more (a
  method with fewer is labelled)."""
  return max(scenario_summary.get("planned_seeds", 0),
             *(len(r["seeds"]) for r in scenario_summary["methods"].values()))


def partial(scenario_summary: Dict[str, Any], method: str) -> str:
  """'(k of n seeds) ' where the method has fewer seeds than the scenario's others, else ''
  (a summary's or the update statistics' scenario: both hold `methods` with their `seeds`)."""
  k, n = len(scenario_summary["methods"][method]["seeds"]), seeds_of(scenario_summary)
  return f"({k} of {n} seeds) " if k < n else ""


def _per_scenario_table(intro: str, head: str, per: Dict[str, Any],
                        first: Callable[[str, Dict[str, Any]], str],
                        cell: Callable[[Dict[str, Any]], str]) -> List[str]:
  """docs' table of `per` ({scenario: {"methods": {m: r}}}): `intro`, then a row per scenario,
  its first column (headed `head`) `first(scenario, d)`, a method's cell `cell(r)` after its
  '(k of n seeds)' label, empty where the method has no entry."""
  methods = [m for m in METHODS if any(m in d["methods"] for d in per.values())]
  out = [intro, "", f"| {head} | " + " | ".join(LABELS[m] for m in methods) + " |",
         "|---" * (len(methods) + 1) + "|"]
  for sc, d in per.items():
    cells = ["" if d["methods"].get(m) is None else partial(d, m) + cell(d["methods"][m])
             for m in methods]
    out.append(f"| {first(sc, d)} | " + " | ".join(cells) + " |")
  return out + [""]


def update_lines(report: Dict[str, Any]) -> List[str]:
  """docs' table of the PPO update's diagnostics over the first quarter of each budget."""
  diag = report.get("update_diagnostics") or {}
  if not diag:
    return []
  return _per_scenario_table(
      "**The PPO update over the first quarter of each budget** (each run's metrics.csv: the "
      "mean over its updates, then over seeds [min, max]): the share of samples "
      "whose ratio lies outside 1 ± clip; the mean of \\|ρ - 1\\|; the approximate KL; the "
      "policy's entropy over the quarter's last fifth (uniform over 19 actions: 2.94). "
      + UPDATE_INTRO + ".", "scenario (first env steps, clip)", diag,
      lambda sc, d: f"{short(sc)} ({_listed(d['window_steps'])}, {_listed(d['clip_eps'], '{:g}')})",
      lambda r: "; ".join(f"{name} {fmt_ci(r.get(key), fmt)}" for key, name, fmt in (
          ("clip_frac", "clipped", "{:.3f}"), ("ratio_abs_dev", "\\|ρ - 1\\|", "{:.3f}"),
          ("approx_kl", "KL", "{:.4f}"), ("entropy", "entropy", "{:.2f}"))))


def update_summary(report: Dict[str, Any]) -> List[str]:
  """README's line: the clipped share and the entropy per scenario, the methods side by side,
  and whether HTS-PPO clips more samples than every other method in every scenario."""
  diag = report.get("update_diagnostics") or {}
  methods = [m for m in _diag_methods(report) if m in (REFERENCE, "sync_ppo", "hts_ppo_delayed")]
  if not diag or REFERENCE not in methods:
    return []

  def mean(d, m, key):
    return ((d["methods"].get(m) or {}).get(key) or {}).get("mean")

  def figs(d, key, fmt):
    return " / ".join("-" if mean(d, m, key) is None else
                      f"{fmt.format(mean(d, m, key))} {partial(d, m)}".rstrip()
                      for m in methods)
  per = [f"{short(sc)}: samples with a clipped ratio {figs(d, 'clip_frac', '{:.2f}')}, policy "
         f"entropy over steps {_listed([int(0.8 * w) for w in d['window_steps']])}-"
         f"{_listed(d['window_steps'])} {figs(d, 'entropy', '{:.2f}')}"
         for sc, d in diag.items()]
  more = all(mean(d, REFERENCE, "clip_frac") is not None and all(
      mean(d, m, "clip_frac") is None or mean(d, m, "clip_frac") < mean(d, REFERENCE, "clip_frac")
      for m in methods if m != REFERENCE) for d in diag.values())
  clips = _listed(sorted({c for d in diag.values() for c in d["clip_eps"]}), "{:g}")
  return [f"Beside it, in the runs' metrics.csv (the first quarter of each budget, mean over "
          f"seeds; {' / '.join(LABELS[m] for m in methods)}): " + "; ".join(per) + ". "
          + UPDATE_INTRO + (f"; it clips more samples (outside 1 ± {clips}) than each other "
                            "method in every scenario" if more else "")
          + " (docs/results.md has the table).", ""]


def throughput_lines(report: Dict[str, Any]) -> List[str]:
  """docs' table: whole runs' SPS against the benchmark's, and the runs' episode lengths, which
  set how much of the env time goes to resets."""
  per = report.get("run_throughput") or {}
  if not per:
    return []
  costs = [f"{short(sc)} {d['reset_in_steps']:.1f} steps (a random policy's episodes: "
           f"{d['random_episode_length']:.0f} steps, so resets add {d['random_reset_share']:.0%} "
           "to a step's env time)" for sc, d in per.items() if d.get("random_reset_share")]

  def cell(r):
    length = ("" if r["episode_length"] is None else
              f"; episodes {fmt_ci(r['episode_length'], '{:.1f}')} steps")
    resets = "" if r["reset_share"] is None else f"; resets +{r['reset_share']:.0%}"
    if r["sps"] is None:
      return f"- SPS (no run on the benchmark's host, {r['benchmark_host']}){length}{resets}"
    share = ("" if r["sps_to_benchmark"] is None else
             f" = {r['sps_to_benchmark']:.2f} of {r['benchmark_sps']:,.0f}")
    if len(r.get("sps_seeds", r["seeds"])) < len(r["seeds"]):
      share += f" (the {len(r['sps_seeds'])} of {len(r['seeds'])} seeds on the benchmark's host)"
    return f"{fmt_ci(r['sps'], '{:,.0f}')} SPS{share}{length}{resets}"
  return _per_scenario_table(
      "**Whole runs against the benchmark.** A run's SPS (its evaluations included, mean over "
      "the seeds that ran on the benchmark's host kind [min, max]) as a share of the "
      "throughput benchmark's median (the first 30,000 "
      "steps, no evaluation); the runs' mean training episode length (env steps over finished "
      "episodes); and what resets add to a step's env time at that length"
      + (": a reset costs " + "; ".join(costs) + ", results/gfootball/env_costs.json"
         if costs else "") + ". A policy that scores sooner plays shorter episodes and resets "
      "more often per step.", "scenario", per, lambda sc, d: short(sc), cell)


def paired_ci(report: Dict[str, Any], scenario: str, method: str, t: str) -> Optional[Dict]:
  return (((report.get("paired") or {}).get(scenario) or {}).get(method) or {}).get(t)


def ratio_cell(report: Dict[str, Any], scenario: str, method: str, t: str, ref: str) -> str:
  """The paired ratio's cell: `ref` for HTS-PPO where one of its seeds reached the target ('-'
  where none did), else the geometric mean over the blocks (a miss counts at its run's end and
  makes the ratio a bound), as 'n=k of N' where N blocks could count (`paired_ratios`' `could`:
  both runs, one host kind) and k < N (blocks where a run shared the machine are left out)."""
  if method == REFERENCE:
    steps = report["summary"][scenario]["methods"][REFERENCE]["required_steps"][t]
    return ref if steps.get("reached") else "-"
  ci = paired_ci(report, scenario, method, t)
  cell = fmt_ratio(ci)
  if ci and ci.get("mean") is not None and len(ci["could"]) > ci["n"]:
    cell = cell[:-1] + f" of {len(ci['could'])})"
  return cell


def per_host(r: Dict[str, Any], key: str, fmt: str, unit: str) -> str:
  """`r[key]` over its seeds, or per host kind (`by_host`) where the scenario's runs span
  several."""
  if not r.get("by_host"):
    return fmt_ci(r[key], fmt) + unit
  return "; ".join(f"{fmt_ci(v[key], fmt)}{unit} on {kind} (seed{'s' * (len(v['seeds']) > 1)} "
                   f"{', '.join(map(str, v['seeds']))})" for kind, v in r["by_host"].items())
