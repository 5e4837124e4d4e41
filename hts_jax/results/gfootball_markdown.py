"""The GFootball report's markdown pieces (`hts_jax.results.gfootball`'s tables, from
results.json only): the cells every table shares ('(k of n seeds)', paired ratios, per-host
figures), the PPO update's and the whole runs' tables, the IMPALA validation and the actor-count
identity under docs' tables, and README's cell and its lines (where HTS-PPO is not ahead, the
validation's verdict)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from hts_jax.analysis import stats
from hts_jax.results import render
from hts_jax.results.gfootball_report import LABELS, REFERENCE, TARGETS
from hts_jax.results.publish import fmt_ci, fmt_steps

UPDATE_INTRO = ("HTS-PPO's ratio (`--correction=behaviour`, the released code's) is taken against "
                "the behaviour policy, one update behind the params its epochs start from")
UPDATE_TITLE = (
    "The PPO update over the first quarter of each budget (each run's metrics.csv: the mean over "
    "its updates, then over seeds [min, max]): the share of samples whose ratio lies outside 1 ± "
    "clip; the mean of \\|ρ - 1\\|; the approximate KL; the policy's entropy over the quarter's "
    "last fifth (uniform over 19 actions: 2.94). " + UPDATE_INTRO + ".")
UPDATE_KEYS = (("clip_frac", "clipped", "{:.3f}"), ("ratio_abs_dev", "\\|ρ - 1\\|", "{:.3f}"),
               ("approx_kl", "KL", "{:.4f}"), ("entropy", "entropy", "{:.2f}"))


def update_row(sc: str, d: Dict[str, Any]) -> str:
  return f"{short(sc)} ({_listed(d['window_steps'])}, {_listed(d['clip_eps'], '{:g}')})"


def update_cell(sc: str, m: str, r: Dict[str, Any], out: Dict[str, Any]) -> str:
  return partial(out["update_diagnostics"][sc], m) + "; ".join(
      f"{name} {fmt_ci(r.get(key), fmt)}" for key, name, fmt in UPDATE_KEYS)


def throughput_title(out: Dict[str, Any]) -> str:
  """The whole runs' table's title: what it shows, and what a reset costs (env_costs.json)."""
  costs = [f"{short(sc)} {d['reset_in_steps']:.1f} steps (a random policy's episodes: "
           f"{d['random_episode_length']:.0f} steps, so resets add {d['random_reset_share']:.0%} "
           "to a step's env time)" for sc, d in (out.get("run_throughput") or {}).items()
           if d.get("random_reset_share")]
  return ("Whole runs against the benchmark: a run's SPS (its evaluations included, mean over the "
          "seeds that ran on the benchmark's host kind [min, max]) as a share of the throughput "
          "benchmark's median (the first 30,000 steps, no evaluation); the runs' mean training "
          "episode length (env steps over finished episodes); and what resets add to a step's "
          "env time at that length" + (": a reset costs " + "; ".join(costs)
                                       + ", results/gfootball/env_costs.json" if costs else "")
          + ". A policy that scores sooner plays shorter episodes and resets more often per step.")


def throughput_cell(sc: str, m: str, r: Dict[str, Any], out: Dict[str, Any]) -> str:
  length = ("" if r["episode_length"] is None else
            f"; episodes {fmt_ci(r['episode_length'], '{:.1f}')} steps")
  resets = "" if r["reset_share"] is None else f"; resets +{r['reset_share']:.0%}"
  cell = partial(out["run_throughput"][sc], m)
  if r["sps"] is None:
    return f"{cell}- SPS (no run on the benchmark's host, {r['benchmark_host']}){length}{resets}"
  share = ("" if r["sps_to_benchmark"] is None else
           f" = {r['sps_to_benchmark']:.2f} of {r['benchmark_sps']:,.0f}")
  if len(r.get("sps_seeds", r["seeds"])) < len(r["seeds"]):
    share += f" (the {len(r['sps_seeds'])} of {len(r['seeds'])} seeds on the benchmark's host)"
  return f"{cell}{fmt_ci(r['sps'], '{:,.0f}')} SPS{share}{length}{resets}"


def docs_tail(out: Dict[str, Any]) -> str:
  """Under docs' tables: the IMPALA validation and the actor-count identity (Tables 4/5)."""
  return "\n".join(_validation_lines(out.get("validation")) + render.identity_lines(out))


def readme_cell(sc: str, m: str, r: Dict[str, Any], out: Dict[str, Any]) -> str:
  """README's cell: env steps to the top target; time to it relative to HTS-PPO's, paired / from
  the benchmark's SPS; the final / final time metric."""
  t = TARGETS[-1]
  bench = _benchratio_cell(out, sc, m, t)
  bench = "1" if m == REFERENCE and bench else "-" if bench is None else f"{bench:.2f}x"
  return (f"{partial(out['summary'][sc], m)}{fmt_steps(r['required_steps'][t])}; "
          f"{ratio_cell(out, sc, m, t, '1')} / {bench}; "
          f"{fmt_ci(r['final'], '{:.2f}')} / {fmt_ci(r.get('final_time'), '{:.2f}')}")


def readme_tail(out: Dict[str, Any]) -> str:
  """Under README's table: where HTS-PPO is not ahead and the IMPALA validation's verdict (the
  PPO update's diagnostics are the corrections study's, README's section of its own)."""
  t = TARGETS[-1]
  lines = [f"Where HTS-PPO is not ahead (written from the JSON; {t} is the target):"]
  lines += [f"- {short(sc)}: {_behind(out, sc, t)}" for sc in out["summary"]]
  return "\n".join(lines + [""] + _verdict(out))


def short(scenario: str) -> str:
  return scenario.replace("academy_", "").replace("_", " ").capitalize()


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


def paired_ci(report: Dict[str, Any], scenario: str, method: str, t: str) -> Optional[Dict]:
  return (((report.get("paired") or {}).get(scenario) or {}).get(method) or {}).get(t)


def ratio_cell(report: Dict[str, Any], scenario: str, method: str, t: str, ref: str) -> str:
  """The paired ratio's cell: `ref` for HTS-PPO where one of its seeds reached the target ('-'
  where none did), else the geometric mean over the blocks (a miss counts at its run's end and
  makes the ratio a bound), as 'n=k of N' where N blocks could count (`compare.paired`'s `could`:
  both runs, one host kind) and k < N (blocks where a run shared the machine are left out)."""
  if method == REFERENCE:
    steps = report["summary"][scenario]["methods"][REFERENCE]["required_steps"][t]
    return ref if steps.get("reached") else "-"
  ci = paired_ci(report, scenario, method, t)
  cell = stats.ratio_cell(ci)
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


def bench_sps(out: Dict[str, Any], scenario: str, method: str) -> str:
  """The benchmark's median SPS of the method, in parentheses."""
  bench = ((out.get("throughput") or {}).get("scenarios") or {}).get(scenario) or {}
  sps = (bench.get(method) or {}).get("median_sps")
  return f" ({sps:,.0f} SPS)" if sps else ""


def _validation_lines(val: Optional[Dict[str, Any]]) -> List[str]:
  if not val:
    return []
  rows = []
  for r in val["runs"]:
    d, reached = r["diagnostics"], r["reached_0.9_at_steps"]

    def fl(key, fmt="{:.3g}"):
      return f"{fmt.format(d[key]['first'])} → {fmt.format(d[key]['last'])}" if key in d else "-"
    rows.append([r["seed"], "-" if reached is None else f"{reached:,.0f}", f"{r['final_eval']:.2f}",
                 f"{r['updates']:,}", fl("entropy"), f"{d['rho_clipped_frac']['mean']:.2f}",
                 fl("value_loss"), fl("learning_rate"), r["host"]] if "rho_clipped_frac" in d else
                [r["seed"], reached, r["final_eval"], r["updates"], "-", "-", "-", "-", r["host"]])
  return ["**IMPALA validation** (`gfootball_impala` at this scale on academy_empty_goal_close, "
          "the 5M-step schedule, stopping once the running average over 10 evaluations reaches "
          f"0.9; PROTOCOL.md): **{'passed' if val['passed'] else 'not passed'}**", "",
          stats.markdown(["seed", "reached 0.9 at (env steps)", "final evaluation", "updates",
                          "entropy per step, first → last update (uniform: 2.94)",
                          "ρ clipped (mean over updates)", "value loss per step, first → last",
                          "learning rate first → last", "host"], rows)]


def _benchratio_cell(report: Dict[str, Any], scenario: str, method: str, t: str) -> Optional[float]:
  """The method's minutes to the target (env steps over its benchmark SPS) over HTS-PPO's."""
  mins = (report.get("throughput_minutes") or {}).get(scenario) or {}
  mine, ref = (mins.get(method) or {}).get(t), (mins.get(REFERENCE) or {}).get(t)
  return mine / ref if mine is not None and ref else None


def _mean(ci: Optional[Dict[str, Any]]) -> Optional[float]:
  return None if not ci else ci.get("mean")


def _behind(report: Dict[str, Any], scenario: str, t: str) -> str:
  """Each baseline's cells where it is ahead of HTS-PPO: fewer env steps to the target (or, where
  some of HTS-PPO's seeds missed it, the target reached in more seeds), less time to it (either
  estimate), a higher final or final time metric ('within the intervals' where the two intervals
  overlap)."""
  ms = report["summary"][scenario]["methods"]
  ref = ms.get(REFERENCE)
  if ref is None:
    return "no HTS-PPO runs yet."
  if not any(m in ms for m in LABELS if m != REFERENCE):
    return "no baseline has a run yet."
  parts = []
  for m in (m for m in LABELS if m != REFERENCE and m in ms):
    r, said = ms[m], []
    mine, theirs = r["required_steps"][t], ref["required_steps"][t]
    if _mean(mine) is not None and _mean(theirs) is not None and mine["mean"] < theirs["mean"]:
      said.append(f"needs fewer env steps to {t} ({fmt_ci(mine, '{:,.0f}')} vs HTS-PPO's "
                  f"{fmt_ci(theirs, '{:,.0f}')})")
    elif _mean(theirs) is None and mine["reached"] > theirs["reached"]:
      said.append(f"reaches {t} in more seeds ({mine['reached']}/{mine['runs']}"
                  + (f", at {mine['mean']:,.0f} env steps" if _mean(mine) is not None else "")
                  + f"; HTS-PPO {theirs['reached']}/{theirs['runs']})")
    paired, bench = paired_ci(report, scenario, m, t), _benchratio_cell(report, scenario, m, t)
    faster = [f"paired {ratio_cell(report, scenario, m, t, '1')}"] \
        if _mean(paired) is not None and paired["mean"] < 1 else []
    faster += [f"steps over benchmark SPS {bench:.2f}x"] if bench is not None and bench < 1 else []
    if faster:
      said.append(f"takes less time to {t} ({'; '.join(faster)})")
    higher = []
    for key, name in (("final", "final metric"), ("final_time", "final time metric")):
      a, b = r.get(key), ref.get(key)
      # Higher at 4 decimals: two means of equal scores differ only by float sums.
      if _mean(a) is not None and _mean(b) is not None and \
          round(a["mean"], 4) > round(b["mean"], 4):
        overlap = a.get("lo", a["mean"]) <= b.get("hi", b["mean"])
        hedge = (", one seed: no interval" if min(a.get("n", 1), b.get("n", 1)) < 2 else
                 ", within the intervals" if overlap else "")
        higher.append(f"{name} {_apart(a['mean'], b['mean'])}{hedge}")
    if higher:
      said.append(f"ends higher ({'; '.join(higher)})")
    if said:
      parts.append(f"{LABELS[m]} " + ", ".join(said))
  return ("; ".join(parts) + ".") if parts else "it is ahead of every baseline in every cell."


def _apart(a: float, b: float) -> str:
  """'a vs b' with 2 decimals, or as many more (up to 4) as it takes to show them apart."""
  d = 2
  while d < 4 and f"{a:.{d}f}" == f"{b:.{d}f}":
    d += 1
  return f"{a:.{d}f} vs {b:.{d}f}"


def _verdict(report: Dict[str, Any]) -> List[str]:
  val = report.get("validation")
  if not val:
    return []
  seeds = ", ".join(f"seed {r['seed']} at "
                    + ("-" if r["reached_0.9_at_steps"] is None else
                       f"{r['reached_0.9_at_steps']:,.0f} steps") for r in val["runs"])
  diag = []
  for key, name, fmt in (("entropy", "entropy per step (uniform 2.94)", "{:.2f}"),
                         ("rho_clipped_frac", "ρ clipped (share, mean over updates)", "{:.2f}"),
                         ("value_loss", "value loss per step", "{:.3f}")):
    per = [r["diagnostics"].get(key) for r in val["runs"]]
    if all(per):
      diag.append(name + " " + " / ".join(
          fmt.format(d["mean"]) if key == "rho_clipped_frac" else
          f"{fmt.format(d['first'])} → {fmt.format(d['last'])}" for d in per))
  return [f"IMPALA validation on academy_empty_goal_close (a running average of 0.9 within 1M "
          f"steps, 2 seeds): {'passed' if val['passed'] else 'not passed'} ({seeds})"
          + (f"; its diagnostics, seed by seed (first → last update): {', '.join(diag)}"
             if diag else "") + "."]
