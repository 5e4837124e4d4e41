"""The GFootball report's update statistics (`update_diagnostics` in results.json, from the runs'
metrics.csv): docs' table and README's line, which say how the policy-lag corrections change
PPO's update (the share of clipped ratios, |ρ - 1|, the approximate KL, the entropy)."""

from __future__ import annotations

from typing import Any, Dict, List

from hts_jax.results.gfootball_spec import LABELS, METHODS, REFERENCE
from hts_jax.results.publish import fmt_ci


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
  """The most seeds any method of the scenario has (a method with fewer is labelled)."""
  return max(len(r["seeds"]) for r in scenario_summary["methods"].values())


def partial(scenario_summary: Dict[str, Any], method: str) -> str:
  """'(k of n seeds) ' where the method has fewer seeds than the scenario's others, else ''
  (a summary's or the update statistics' scenario: both hold `methods` with their `seeds`)."""
  k, n = len(scenario_summary["methods"][method]["seeds"]), seeds_of(scenario_summary)
  return f"({k} of {n} seeds) " if k < n else ""


def update_lines(report: Dict[str, Any]) -> List[str]:
  """docs' table of the PPO update's diagnostics over the first quarter of each budget."""
  diag = report.get("update_diagnostics") or {}
  methods = _diag_methods(report)
  if not diag:
    return []
  out = ["**The PPO update over the first quarter of each budget** (each run's metrics.csv: the "
         "mean over its updates, then over seeds [95% bootstrap interval]): the share of samples "
         "whose ratio lies outside 1 ± clip; the mean of \\|ρ - 1\\|; the approximate KL; the "
         "policy's entropy over the quarter's last fifth (uniform over 19 actions: 2.94). "
         + UPDATE_INTRO + ".", "",
         "| scenario (first env steps, clip) | " + " | ".join(LABELS[m] for m in methods) + " |",
         "|---" * (len(methods) + 1) + "|"]
  for scenario, d in diag.items():
    cells = []
    for m in methods:
      r = d["methods"].get(m)
      cells.append("" if r is None else partial(d, m) + "; ".join(
          f"{name} {fmt_ci(r.get(key), fmt)}" for key, name, fmt in (
              ("clip_frac", "clipped", "{:.3f}"), ("ratio_abs_dev", "\\|ρ - 1\\|", "{:.3f}"),
              ("approx_kl", "KL", "{:.4f}"), ("entropy", "entropy", "{:.2f}"))))
    out.append(f"| {short(scenario)} ({_listed(d['window_steps'])}, "
               f"{_listed(d['clip_eps'], '{:g}')}) | " + " | ".join(cells) + " |")
  return out + [""]


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
