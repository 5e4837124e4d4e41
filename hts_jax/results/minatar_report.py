"""The MinAtar grid's report, from the runs' summary.json files only (`paper_report`'s metrics):
Table 1/A7 (final time metric by the same block's IMPALA wall time), Table A8 (required time to
40% / 80% of A2C's final metric, as env steps, paired ratios to HTS-A2C and minutes over the
throughput benchmark's SPS), Table A1 (final metric by correction), the markdown of
docs/results.md and README's summary, and the curves."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from hts_jax.results import paper_ratios, paper_report, publish
from hts_jax.results.publish import fmt_ci, fmt_ratio, fmt_steps
from hts_jax.results.minatar_spec import A1, LABELS, MAIN, METHODS, PAPER, PROTOCOL

README_BLOCK = publish.Block("minatar-results", "minatar")
DOCS_BLOCK = publish.Block("minatar-tables", "minatar")


def targets(game: str, runs: List[Dict[str, Any]]) -> Dict[str, float]:
  """40% / 80% of the reference score: the reference method's (A2C's) mean final metric over its
  seeds on this game (PROTOCOL.md); none before it has a finished run."""
  ref = [r["final"] for r in runs
         if r["method"] == PROTOCOL["reference_method"] and r["final"] is not None]
  if not ref:
    return {}
  score = sum(ref) / len(ref)
  return {f"{f:.0%}": f * score for f in PROTOCOL["target_fractions"]}


SPEC = paper_report.Spec(methods=list(METHODS), reference="hts_a2c", limit_method="impala",
                         targets=targets, baseline="a2c")


def build_report(results: str, resamples: int, deviations: Dict[str, Any]) -> Dict[str, Any]:
  return {"title": "HTS-RL's Atari tables on MinAtar (Table 1/A7, A8, A1)", "paper": PAPER,
          **paper_report.report_body(results, SPEC, resamples, {
              "settings": PROTOCOL, "deviations": deviations,
              "file": paper_report.read_optional(results, "PROTOCOL.md")})}


def _source(report: Dict[str, Any]) -> str:
  return publish.source(report, "results/minatar/results.json")


def _table(lines: List[str], title: str, summ: Dict[str, Any], methods, cell) -> None:
  here = [m for m in methods if any(m in s["methods"] for s in summ.values())]
  if not here:
    return
  lines += [f"**{title}**", "", "| game (budget) | " + " | ".join(LABELS[m] for m in here) + " |",
            "|---" * (len(here) + 1) + "|"]
  for game, s in summ.items():
    cells = [cell(game, m, s["methods"][m]) if m in s["methods"] else "" for m in here]
    lines.append(f"| {game} ({s['budget']:,}) | " + " | ".join(cells) + " |")
  lines.append("")


def render_markdown(report: Dict[str, Any]) -> str:
  """Every table: results/minatar/tables.md and docs/results.md's block."""
  summ, paper, paired = report["summary"], report["paper"], report.get("paired") or {}
  lines = [f"Protocol: `results/minatar/PROTOCOL.md` (games, seeds, the 2M-step budget and the "
           f"reference score fixed before the runs). Source: {_source(report)}. Cells: mean over "
           "seeds [min, max] (fewer than 6 seeds: no interval claimed); '-' where a seed's budget ran out before the target "
           "(k/n: seeds that reached it). Paper: full Atari, 20M steps, a 4-GPU desktop; its "
           "figures are beside ours for the shape of the comparison only.", ""]
  if not summ:
    return "\n".join(lines + ["No finished runs yet."]) + "\n"

  def paper_cell(game, m, key, fmt):
    p = (paper.get(game) or {}).get(key) or {}
    return f" (paper: {fmt(p[m])})" if m in p else ""

  _table(lines, "Final time metric (Table 1/A7): the final metric by the wall time of the same "
         "block's IMPALA run (IMPALA's own: its final metric)", summ, MAIN,
         lambda g, m, r: fmt_ci(r.get("final_time")) + paper_cell(
             g, m, "final_time", lambda v: f"{v[0]:,} ± {v[1]:,}"))
  _table(lines, "Env steps to 40% / 80% of A2C's final metric (host-independent)", summ, MAIN,
         lambda g, m, r: " / ".join(fmt_steps(c) for c in r["required_steps"].values()))
  lines[-1:] = ["", "Targets (40% / 80% of A2C's final metric in this grid): " + "; ".join(
      f"{g} " + " / ".join(f"{v:.2f}" for v in s["targets"].values()) for g, s in summ.items()
      if s["targets"]) + ".", ""]
  _table(lines, "Required time relative to HTS-A2C's (Table A8), to 40% / 80%: per block the "
         "method's minutes over HTS-A2C's; geometric mean over blocks [min, max] (n: blocks; ≥ / ≤: a "
         "bound where a run missed)", summ,
         MAIN, lambda g, m, r: "1 (reference)" if m == "hts_a2c" else " / ".join(
             fmt_ratio(c) for c in ((paired.get(g) or {}).get(m) or {}).values()))
  bench, minutes = report.get("throughput"), report.get("throughput_minutes") or {}
  if bench:
    _table(lines, f"Required minutes to 40% / 80% from env steps over the benchmark's median SPS "
           f"on {bench.get('host', '?')} (training only)", summ, MAIN,
           lambda g, m, r: " / ".join("-" if v is None else f"{v:.1f}" for v in (
               (minutes.get(g) or {}).get(m) or {}).values()) + paper_cell(
                   g, m, "required_min",
                   lambda v: " / ".join("-" if x is None else f"{x:g}" for x in v)))
  _table(lines, "Table A1: final metric (last 10 evaluations x 10 episodes) by policy-lag "
         "correction", {g: s for g, s in summ.items() if g in PROTOCOL["a1_games"]}, A1,
         lambda g, m, r: fmt_ci(r["final"], "{:.2f}") + paper_cell(g, m, "a1", lambda v: f"{v:,}"))
  _table(lines, "Final metric and SPS, every method", summ, list(METHODS),
         lambda g, m, r: f"{fmt_ci(r['final'], '{:.2f}')}; {fmt_ci(r['sps'], '{:,.0f}')} SPS")
  agg = paper_ratios.aggregates_line(report, lambda m: LABELS.get(m, m))
  return "\n".join(lines).rstrip() + "\n" + (f"\n{agg}\n" if agg else "")


def render_summary(report: Dict[str, Any]) -> str:
  """README's block: per game the final metric of each method, and Table A1's verdict."""
  summ = report["summary"]
  lines = [f"Source: {_source(report)}; the protocol is `results/minatar/PROTOCOL.md`, every "
           "table in [docs/results.md](docs/results.md#minatar). Cells: final metric (last 10 "
           "evaluations; mean over seeds [min, max]); final time metric by IMPALA's wall "
           "time in the same block.", ""]
  if not summ:
    return "\n".join(lines + ["No finished runs yet."]) + "\n"
  methods = [m for m in METHODS if any(m in s["methods"] for s in summ.values())]
  lines += ["| game (budget, seeds) | " + " | ".join(LABELS[m] for m in methods) + " |",
            "|---" * (len(methods) + 1) + "|"]
  for game, s in summ.items():
    cells = []
    for m in methods:
      r = s["methods"].get(m)
      cells.append("" if r is None else fmt_ci(r["final"], "{:.2f}") + (
          f"; {fmt_ci(r['final_time'], '{:.2f}')}" if r.get("final_time") and m in MAIN else ""))
    seeds = max(len(r["seeds"]) for r in s["methods"].values())
    lines.append(f"| {game} ({s['budget']:,}, {seeds}) | " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


def plot_curves(report: Dict[str, Any], out_dir: str) -> List[str]:
  """Evaluation return vs env steps and vs wall time per game (Figs. A3/A4), Table 1's
  methods."""
  return paper_report.plot_curves(report, out_dir, list(MAIN), LABELS, lambda g: g, "return",
                                  "evaluation return (10 episodes)")


def write_report(results: str, resamples: int, deviations: Dict[str, Any],
                 readme: Optional[str], docs: Optional[str] = None) -> Dict[str, Any]:
  """results.json (with its provenance), tables.md, the curves, README's summary block and
  docs/results.md's tables block (each where given)."""
  return paper_report.write_report(results, build_report(results, resamples, deviations),
                                   render_markdown, render_summary, (README_BLOCK, DOCS_BLOCK),
                                   plot_curves, readme, docs)
