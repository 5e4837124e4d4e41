"""The GFootball report's markdown, from results.json only: every table (results/gfootball/
tables.md and docs/results.md) and README's summary."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from hts_jax.results import paper_ratios, publish
from hts_jax.results.gfootball_spec import LABELS, METHODS, REFERENCE, TARGETS
from hts_jax.results.gfootball_update import (paired_ci, partial, per_host, ratio_cell, seeds_of,
                                              short, throughput_lines, update_lines,
                                              update_summary)
from hts_jax.results.publish import fmt_ci, fmt_steps


def _source(report: Dict[str, Any]) -> str:
  return publish.source(report, "results/gfootball/results.json",
                        "MIXED host kinds: their minutes are never put side by side")


def render_markdown(report: Dict[str, Any]) -> str:
  """Every table of `report` (results.json) as markdown: results/gfootball/tables.md and
  docs/results.md."""
  summ, paper = report["summary"], report["paper"]
  methods = [m for m in METHODS if any(m in s["methods"] for s in summ.values())]
  st = report["settings"]
  networks = sorted({str(r.get("network")) for r in report["runs"]}) or ["-"]
  lines = [
      f"Protocol: `results/gfootball/PROTOCOL.md` (budgets, seeds and schedules fixed before the "
      f"runs; every method's learning rate over the paper's 5M-step schedule). Every method: "
      f"{st['num_envs']} envs, {st['representation']} observations, network "
      f"{'/'.join(networks)}; each (scenario, seed) a block of its methods back to back on one "
      f"host. Source: {_source(report)}. Cells: mean over seeds [min, max] (fewer than 6 seeds: no interval claimed); '-' "
      "where a seed's budget ran out before the target (k/n: seeds that reached it). Paper (Liu "
      "et al. 2020): 4 GPUs, 16 envs, extracted maps and the CNN, 5M steps, 5 seeds; its ± is a "
      "spread over seeds whose statistic it does not state.", ""]
  runs = report.get("runs", [])
  if any(not r.get("host_recorded") for r in runs):
    lines[0:0] = ["**These runs are to be re-run** (the GFootball protocol issue): they were made "
                  "before evaluations played new episodes and before runs recorded their host.",
                  ""]
  if not summ:
    lines.append("No finished runs yet.")
  head = "| scenario (budget) | " + " | ".join(LABELS[m] for m in methods)
  sep = "|---" * (len(methods) + 1) + "|"

  def table(title, cell, paper_cell=None, final_time=False, rows=None):
    """One row per scenario; `paper_cell(paper figures, method)` adds the paper's beside ours."""
    lines.extend([f"**{title}**", "", head + " |", sep])
    for scenario, s in summ.items():
      cells = []
      for m in methods:
        here = partial(s, m) + cell(scenario, m, s["methods"][m]) if m in s["methods"] else ""
        if paper_cell and paper.get(scenario) and m in paper[scenario]["required_min"]:
          here += f" (paper: {paper_cell(paper[scenario], m)})"
        cells.append(here)
      limit = f"; IMPALA {s['time_limit_s'] / 60:.1f} min" if final_time and \
          s["time_limit_s"] and len(s.get("hosts", ())) < 2 else ""
      lines.append(f"| {short(scenario)} ({s['budget']:,} steps{limit}) | " +
                   " | ".join(cells) + " |")
    lines.append("")

  def paper_req(p, m):
    return " / ".join("-" if v is None else f"{v:.1f}" for v in p["required_min"][m])

  def both(fmt, get):
    return lambda sc, m, r: " / ".join(fmt(get(sc, m, r, t)) for t in map(str, TARGETS))

  targets = " / ".join(map(str, TARGETS))
  if summ:
    table(f"Env steps to a running-average score of {targets}, over full windows of 10 "
          "evaluations (host-independent; data efficiency, Appendix H)",
          both(fmt_steps, lambda sc, m, r, t: r["required_steps"][t]))
    table(f"Required time relative to HTS-PPO's, to {targets}: per block (one seed, one host) "
          "the method's minutes over HTS-PPO's; geometric mean over blocks [min, max] (n: blocks "
          "on one host kind where no run shared the machine; ≥ / ≤: a bound, where a run missed "
          "the target and counts at its end)",
          both(lambda c: c, lambda sc, m, r, t: ratio_cell(report, sc, m, t, "1 (reference)")))
    bench = report.get("throughput")
    if bench:
      bm = report.get("throughput_minutes") or {}
      table(f"Required minutes from env steps to {targets} over the benchmark's SPS on "
            f"{bench.get('host', '?')} (training only, no evaluations; the benchmark's median "
            f"SPS in parentheses; Table 2 / A10)",
            lambda sc, m, r: " / ".join(
                "-" if v is None else f"{v:.1f}" for v in (bm.get(sc, {}).get(m) or {}).values())
            + _bench_sps(bench, sc, m), paper_req)
    hosts = report.get("hosts") or []
    if len(hosts) == 1:
      table(f"Required time as measured (minutes to {targets}, evaluations included) on "
            f"{hosts[0]}", both(fmt_ci, lambda sc, m, r, t: r["required_min"][t]), paper_req)
    if any(s["time_limit_s"] for s in summ.values()):
      table("Final time metric (score of the last 10 evaluations by the wall time of the same "
            "block's IMPALA run; IMPALA's own: its final metric; Table A9)",
            lambda sc, m, r: fmt_ci(r.get("final_time"), "{:.2f}"),
            lambda p, m: "{:.2f} ± {:.2f}".format(*p["final_time"][m]), final_time=True)
    table("Final metric (last 10 evaluations x 10 episodes) and SPS (per host kind where a "
          "scenario's runs ran on several)",
          lambda sc, m, r: f"{fmt_ci(r['final'], '{:.2f}')}; " + per_host(r, "sps", "{:,.0f}",
                                                                           " SPS"))
    names = {"executors_waiting_for_actions": "executors wait for actions",
             "executors_at_barrier": "at the barrier", "actors": "actors", "learner": "learner"}
    table("Wall time of the whole budget (minutes, per host kind where a scenario's runs ran on "
          "several); share of it each part waited (executors and actors: mean over them)",
          lambda sc, m, r: per_host(r, "wall_time_min", "{:.1f}", "") + "; " + ", ".join(
              f"{names[k]} {v:.0%}" for k, v in r["idle_share"].items()))
  lines.extend(update_lines(report))
  lines.extend(throughput_lines(report))
  lines.extend(_validation_lines(report.get("validation")))
  ident = report.get("identity")
  if ident:
    lines.extend(["**The same run with 1, 2 and 4 actors (Tables 4/5)**", "",
                  "| actors | env | seed | env steps | SPS | param_sha256 | evaluation scores |",
                  "|---|---|---|---|---|---|---|"])
    for r in ident["runs"]:
      scores = ", ".join(f"{x:.1f}" for x in r["eval_scores"][-5:])
      lines.append(f"| {r['num_actors']} | {r['env']} | {r['seed']} | {r['env_steps']:,} | "
                   f"{r['sps']:,.0f} | `{r['param_sha256'][:16]}` | ... {scores} |")
    lines.extend(["", "Identical parameters and scores: " +
                  ("yes" if ident["identical"] else "**no**"), ""])
  agg = paper_ratios.aggregates_line(report, lambda m: LABELS.get(m, m))
  return "\n".join(lines).rstrip() + "\n" + (f"\n{agg}\n" if agg else "")


def _bench_sps(bench: Dict[str, Any], scenario: str, method: str) -> str:
  sps = (((bench.get("scenarios") or {}).get(scenario) or {}).get(method) or {}).get("median_sps")
  return f" ({sps:,.0f} SPS)" if sps else ""


def _validation_lines(val: Optional[Dict[str, Any]]) -> List[str]:
  if not val:
    return []
  out = ["**IMPALA validation** (`gfootball_impala` at this scale on academy_empty_goal_close, "
         "the 5M-step schedule, stopping once the running average over 10 evaluations reaches "
         f"0.9; PROTOCOL.md): **{'passed' if val['passed'] else 'not passed'}**", "",
         "| seed | reached 0.9 at (env steps) | final evaluation | updates | entropy per step, "
         "first → last update (uniform: 2.94) | ρ clipped (mean over updates) | value loss per "
         "step, first → last | learning rate first → last | host |",
         "|---|---|---|---|---|---|---|---|---|"]
  for r in val["runs"]:
    d = r["diagnostics"]

    def fl(key, fmt="{:.3g}"):
      return f"{fmt.format(d[key]['first'])} → {fmt.format(d[key]['last'])}" if key in d else "-"
    reached = r["reached_0.9_at_steps"]
    out.append(f"| {r['seed']} | {'-' if reached is None else f'{reached:,.0f}'} | "
               f"{r['final_eval']:.2f} | {r['updates']:,} | {fl('entropy')} | "
               f"{d['rho_clipped_frac']['mean']:.2f} | {fl('value_loss')} | "
               f"{fl('learning_rate')} | {r['host']} |" if "rho_clipped_frac" in d else
               f"| {r['seed']} | {reached} | {r['final_eval']} | {r['updates']} | - | - | - | - | "
               f"{r['host']} |")
  return out + [""]


def render_summary(report: Dict[str, Any]) -> str:
  """README's GFootball block: one table (env steps to 0.8; time to 0.8 relative to HTS-PPO's,
  both ways; the final and final time metrics), one line per scenario saying where HTS-PPO is
  not ahead of a baseline, and the validation's verdict; docs/results.md has every table."""
  summ = report["summary"]
  methods = [m for m in METHODS if any(m in s["methods"] for s in summ.values())]
  t = str(TARGETS[-1])
  lines = [f"Source: {_source(report)}; the protocol is `results/gfootball/PROTOCOL.md`, every "
           "table in [docs/results.md](docs/results.md#gfootball). Cells: env steps to a "
           f"running-average score of {t} (mean over seeds; k/n where some seeds missed it); "
           f"time to {t} relative to HTS-PPO's, paired per block (geometric mean over blocks) / from env "
           "steps over the interleaved benchmark's SPS; final metric (last 10 evaluations) / "
           "final time metric (by the block's IMPALA wall time, Table A9).", ""]
  if not summ:
    return "\n".join(lines + ["No finished runs yet."] + _verdict(report)) + "\n"
  lines += ["| scenario (budget, seeds) | " + " | ".join(LABELS[m] for m in methods) + " |",
            "|---" * (len(methods) + 1) + "|"]
  for scenario, s in summ.items():
    cells = []
    seeds = seeds_of(s)
    for m in methods:
      r = s["methods"].get(m)
      if r is None:
        cells.append("")
        continue
      paired = ratio_cell(report, scenario, m, t, "1")
      bench = _benchratio_cell(report, scenario, m, t)
      bench = "1" if m == REFERENCE and bench else "-" if bench is None else f"{bench:.2f}x"
      cells.append(f"{partial(s, m)}{fmt_steps(r['required_steps'][t])}; {paired} / "
                   f"{bench}; "
                   f"{fmt_ci(r['final'], '{:.2f}')} / {fmt_ci(r.get('final_time'), '{:.2f}')}")
    lines.append(f"| {short(scenario)} ({s['budget']:,}, {seeds}) | " + " | ".join(cells) + " |")
  lines += ["", f"Where HTS-PPO is not ahead (written from the JSON; {t} is the target):"]
  lines += [f"- {short(scenario)}: {_behind(report, scenario, t)}" for scenario in summ]
  return "\n".join(lines + [""] + update_summary(report) + _verdict(report)) + "\n"


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
  if not any(m in ms for m in METHODS if m != REFERENCE):
    return "no baseline has a run yet."
  parts = []
  for m in (m for m in METHODS if m != REFERENCE and m in ms):
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
