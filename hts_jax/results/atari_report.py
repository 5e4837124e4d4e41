"""The Atari grid's report (HTS-A2C against A2C on full Atari), from the runs' summary.json files
only (`paper_report`'s metrics): the final metric and the final time metric by the same block's
A2C wall time, env steps and required time to the protocol's scores (paired ratios to HTS-A2C,
minutes over the throughput benchmark's SPS), SPS, the markdown of docs/results.md and README's
summary, and the curves."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from hts_jax.results import paper_report, publish
from hts_jax.results.atari_spec import LABELS, METHODS, PROTOCOL, REFERENCE
from hts_jax.results.publish import fmt_ci, fmt_ratio, fmt_steps

README_BLOCK = publish.Block("atari-results", "atari")
DOCS_BLOCK = publish.Block("atari-tables", "atari")
# The final time metric's clock: the slower method's wall time in the same block (sync A2C's, as
# the paper takes IMPALA's, the slowest of its methods).
SPEC = paper_report.Spec(methods=list(METHODS), reference=REFERENCE, limit_method="a2c",
                         targets=lambda game, runs: dict(PROTOCOL["targets"]))


def build_report(results: str, resamples: int, deviations: Dict[str, Any]) -> Dict[str, Any]:
  return {"title": "HTS-A2C against A2C on full Atari (envpool, the paper's preprocessing)",
          **paper_report.report_body(results, SPEC, resamples, {
              "settings": PROTOCOL, "deviations": deviations,
              "file": paper_report.read_optional(results, "PROTOCOL.md")})}


def _source(report: Dict[str, Any]) -> str:
  return publish.source(report, "results/atari/results.json")


def _targets() -> str:
  return " / ".join(PROTOCOL["targets"])


def _partial(report: Dict[str, Any]) -> str:
  """A label for games with fewer finished seeds than the protocol's (the issue's "one seed each,
  clearly labelled"), or ''."""
  parts = []
  for game, s in report["summary"].items():
    seeds = max(len(r["seeds"]) for r in s["methods"].values())
    wanted = len(PROTOCOL["games"].get(game, ()))
    if seeds < wanted:
      parts.append(f"{game} has {seeds} of the protocol's {wanted} seeds so far"
                   + (" (one run per method: no interval, one block's time ratio)"
                      if seeds == 1 else ""))
  return f" **Partial:** {'; '.join(parts)}." if parts else ""


def render_markdown(report: Dict[str, Any]) -> str:
  """Every table: results/atari/tables.md and docs/results.md's block."""
  summ, paired = report["summary"], report.get("paired") or {}
  lines = [f"Protocol: `results/atari/PROTOCOL.md` (game, seeds, the budget and the target scores "
           f"{_targets()} fixed before the runs). Source: {_source(report)}. Cells: mean over "
           "seeds [min, max] (fewer than 6 seeds: no interval claimed); '-' where a seed's budget ran out before the target "
           "(k/n: seeds that reached it). Full Atari at a 2-core CPU's budget, not the paper's "
           "20M steps on a GPU desktop." + (_partial(report) if summ else ""), ""]
  if not summ:
    return "\n".join(lines + ["No finished runs yet."]) + "\n"
  bench, minutes = report.get("throughput"), report.get("throughput_minutes") or {}
  columns = [("final metric (last 10 evaluations)", lambda g, m, r: fmt_ci(r["final"], "{:.2f}")),
             ("final time metric (by A2C's wall time in the block)",
              lambda g, m, r: fmt_ci(r.get("final_time"), "{:.2f}")),
             (f"env steps to {_targets()}", lambda g, m, r: " / ".join(
                 fmt_steps(c) for c in r["required_steps"].values())),
             (f"time to {_targets()} over HTS-A2C's in the block", lambda g, m, r: (
                 "1 (reference)" if m == REFERENCE else " / ".join(
                     fmt_ratio(c) for c in ((paired.get(g) or {}).get(m) or {}).values()))),
             ("SPS", lambda g, m, r: fmt_ci(r["sps"], "{:,.0f}"))]
  if bench:
    columns.insert(4, (f"minutes to {_targets()} from env steps over the benchmark's median SPS "
                       f"on {bench.get('host', '?')}", lambda g, m, r: " / ".join(
                           "-" if v is None else f"{v:.1f}"
                           for v in ((minutes.get(g) or {}).get(m) or {}).values())))
  for game, s in summ.items():
    lines += [f"**{game}** ({s['budget']:,} env steps)", "",
              "| | " + " | ".join(LABELS[m] for m in s["methods"]) + " |",
              "|---" * (len(s["methods"]) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(cell(game, m, r) for m, r in s["methods"].items()) + " |"
              for name, cell in columns]
    lines.append("")
  return "\n".join(lines).rstrip() + "\n"


def render_summary(report: Dict[str, Any]) -> str:
  """README's block: per game each method's final metric and env steps to the top target."""
  summ = report["summary"]
  top = list(PROTOCOL["targets"])[-1]
  if not summ:
    return f"No finished runs yet (source: {_source(report)}).\n"
  lines = [f"Source: {_source(report)}; the protocol is `results/atari/PROTOCOL.md`, every table "
           "in [docs/results.md](docs/results.md#atari). Cells: final metric (last 10 "
           f"evaluations, mean over seeds [min, max]); env steps to a running-average score "
           f"of {top}." + _partial(report), "",
           "| game (budget, seeds) | " + " | ".join(LABELS[m] for m in METHODS) + " |",
           "|---" * (len(METHODS) + 1) + "|"]
  for game, s in summ.items():
    cells = ["" if r is None else f"{fmt_ci(r['final'], '{:.2f}')}; "
             f"{fmt_steps(r['required_steps'][top])}"
             for r in (s["methods"].get(m) for m in METHODS)]
    seeds = max(len(r["seeds"]) for r in s["methods"].values())
    lines.append(f"| {game} ({s['budget']:,}, {seeds}) | " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


def plot_curves(report: Dict[str, Any], out_dir: str) -> List[str]:
  """Evaluation return vs env steps and vs wall time per game."""
  return paper_report.plot_curves(report, out_dir, list(METHODS), LABELS, lambda g: g, "return",
                                  "evaluation return (10 episodes)", ylim=(-21, 21))


def write_report(results: str, resamples: int, deviations: Dict[str, Any],
                 readme: Optional[str], docs: Optional[str] = None) -> Dict[str, Any]:
  """results.json (with its provenance), tables.md, the curves, README's summary block and
  docs/results.md's tables block (each where given)."""
  return paper_report.write_report(results, build_report(results, resamples, deviations),
                                   render_markdown, render_summary, (README_BLOCK, DOCS_BLOCK),
                                   plot_curves, readme, docs)
