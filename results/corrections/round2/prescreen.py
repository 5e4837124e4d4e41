"""What the corrections study's second-round pre-screen (`prescreen_extrapolation.py` beside it)
makes of its runs: per acting extrapolation β, how close the acting policy came to θ_{j+1}, and
docs/modes.md's block rendered from its JSON (prescreen.json beside it)."""

import statistics
from typing import Any, Dict, List

from hts_jax.results import publish

PRESCREEN = publish.Block("corrections-prescreen", "corrections",
                          by="python -m results.corrections.round2.prescreen_extrapolation")


def prescreen_markdown(out: Dict[str, Any]) -> str:
  """docs/modes.md's block from the pre-screen's JSON."""
  rows = "".join(f"| {b} | {v['kl_next']:.4f} | {v['kl_pred']:.4f} | {v['ratio']:.2f} | "
                 f"{v['updates']} |\n" for b, v in out["betas"].items())
  pick = (f"β = {out['pick']} goes on to the learning runs" if out["pick"] is not None else
          "no β brings the acting policy closer to θ_{j+1} than θ_j itself: no learning run")
  flags = out["flags"]
  return (f"**The pre-screen** ({flags['env']}, seed {flags['seed']}, HTS `none`, "
          f"{flags['total_steps']:,} env steps; each run's mean over its updates; "
          f"`results/corrections/round2/prescreen.json`, {out['date']}, commit "
          f"`{out['commit'][:12]}`): {pick}.\n\n| β | kl_next | kl_pred | kl_pred / kl_next | "
          f"updates |\n|---|---|---|---|---|\n{rows}")


def prescreen_summary(rows_by_beta: Dict[str, List[Dict[str, float]]]) -> Dict[str, Any]:
  """Per β (its run's metrics.csv rows) the means of kl_next and kl_pred over its updates and
  their ratio; `pick`: the β with the smallest ratio below 1 (None: no β below 1)."""
  out = {}
  for beta, rows in rows_by_beta.items():
    have = [r for r in rows if "kl_pred" in r]
    nxt, pred = (statistics.fmean(r[k] for r in have) for k in ("kl_next", "kl_pred"))
    out[beta] = {"kl_next": nxt, "kl_pred": pred, "ratio": pred / nxt, "updates": len(have)}
  below = [b for b in out if out[b]["ratio"] < 1]
  return {"betas": out, "pick": min(below, key=lambda b: out[b]["ratio"]) if below else None}
