"""A task where memory matters, learned: recurrent HTS-PPO (`--core=lstm`) against the same PPO
with a feed-forward policy, on CartPole without velocities (`hts_jax/CartPoleNoVel-v1`,
`--preset=memory_lstm_ppo`: rl-baselines3-zoo's RecurrentPPO setup for the task), HTS and
synchronous, over seeds.

    hts-reproduce memory                  # the grid (resumes: done runs stay)
    hts-reproduce memory --report_only    # results.json, table.md, curves.png

(from a clone: `python -m experiments.reproduce memory ...`). Each run is one training process
(`hts_jax.results.grid`: logdir `<results>/runs/<method>/seed<k>`), one at a time, each seed a
paired block of its methods. The report (`<results>/results.json`, printed as JSON) gives per
method the final evaluation (10 episodes of the final params), the best evaluation, how many seeds
reached CartPole's `reward_threshold` (475) in some evaluation and at how many env steps first, and
SPS;
`table.md`, `curves.png` and README's memory block show it.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from absl import flags

from hts_jax.analysis import plots
from hts_jax.results import grid, provenance, publish
from hts_jax.results.publish import cell, spread

ENV = "hts_jax/CartPoleNoVel-v1"
THRESHOLD = 475.0  # CartPole-v1's reward_threshold (gymnasium's registration)
# `hts_*` without a suffix: --correction=delayed (the paper's Eq. 6); `_behaviour`: the reference
# code's HTS-PPO (the preset's correction since this grid); `_none`: at θ_j, everything recomputed
# there (docs/modes.md).
METHODS = {"hts_lstm": {"mode": "hts", "core": "lstm", "correction": "delayed"},
           "sync_lstm": {"mode": "sync", "core": "lstm"},
           "hts_ff": {"mode": "hts", "core": "none", "correction": "delayed"},
           "sync_ff": {"mode": "sync", "core": "none"},
           "hts_lstm_behaviour": {"mode": "hts", "core": "lstm", "correction": "behaviour"},
           "hts_lstm_none": {"mode": "hts", "core": "lstm", "correction": "none"}}
DEFAULT_METHODS = ["sync_lstm", "hts_lstm", "hts_lstm_behaviour", "hts_lstm_none", "hts_ff",
                   "sync_ff"]
BLOCK = publish.Block("memory-results", "memory")
FLAGS = flags.FLAGS


def define_flags() -> None:
  grid.define_flags(DEFAULT_METHODS, METHODS, ["0", "1", "2", "3", "4"], 100_000, "results/memory")


def run_flags(method: str, seed: int, steps: int) -> Dict[str, Any]:
  """One run's launcher flags."""
  return {"preset": "memory_lstm_ppo", **METHODS[method], "seed": seed, "total_steps": steps,
          "tensorboard": False, "log_every_s": 60}


def first_reaching(evals: List[Dict[str, Any]], threshold: float) -> Optional[int]:
  """The env steps of the first evaluation whose mean return reaches `threshold` (None: none)."""
  return next((e["env_steps"] for e in evals if e["mean_return"] >= threshold), None)


def report(results: str, readme: Optional[str] = None,
           mixed_hosts: bool = False) -> Dict[str, Any]:
  runs, table = [], {}
  for f in grid.finished_runs(results, tasks=False):
    s, evals = f.summary, f.summary["eval"]
    runs.append({"method": f.method, "seed": s["seed"], "env_steps": s["env_steps"],
                 "final_eval": evals[-1]["mean_return"],
                 "best_eval": max(e["mean_return"] for e in evals),
                 "reached_at": first_reaching(evals, THRESHOLD), "sps": s["sps"],
                 "wall_time_s": s["wall_time_s"], "param_sha256": s["param_sha256"][:16],
                 **provenance.run_host(s),
                 "evals": [[e["env_steps"], e["mean_return"]] for e in evals]})
  hosts = provenance.check_hosts(runs, mixed_hosts)
  for method in sorted({r["method"] for r in runs}):
    mine = [r for r in runs if r["method"] == method]
    reached = [r["reached_at"] for r in mine if r["reached_at"] is not None]
    table[method] = {"seeds": len(mine), "final_eval": spread([r["final_eval"] for r in mine]),
                     "best_eval": spread([r["best_eval"] for r in mine]),
                     "seeds_reaching_threshold": len(reached),
                     "first_reached_at": spread(reached) if reached else None,
                     "sps": spread([r["sps"] for r in mine])}
  _plot(results, runs)
  return publish.publish(results, {"env": ENV, "threshold": THRESHOLD, "runs": runs,
                                   "table": table, "hosts": hosts}, render_markdown,
                         [(readme, BLOCK, render_markdown)] if readme else [])


def render_markdown(out: Dict[str, Any]) -> str:
  lines = [f"**Memory: {out['env']}** (`--preset=memory_lstm_ppo`; `*_lstm`: `--core=lstm`, "
           "`*_ff`: the same PPO with a feed-forward policy; `hts_lstm`, `hts_ff`: "
           "`--correction=delayed` (the paper's Eq. 6: PPO's 20 epochs taken at θ_{j-1}, their sum "
           "added to θ_j), `hts_lstm_behaviour`: `--correction=behaviour` (the reference code's "
           "HTS-PPO: the epochs start at θ_j, the ratio, old values and GAE are θ_{j-1}'s), "
           "`hts_lstm_none`: `--correction=none` (at θ_j, everything recomputed there)). "
           "Evaluations: 10 greedy episodes every 10k env steps, every evaluation new episodes; "
           f"'reached': one evaluation's mean (a window of 1 evaluation, not the paper's 10). "
           f"Source: `{out.get('source', 'results/memory/results.json')}`, "
           f"{out['date']}, commit {out['commit'][:12]}; "
           f"{publish.host_note(out)}, each seed a block of its methods back to back in a random order; "
           f"`{out['command']}`.", "",
           "| method | seeds | final evaluation, mean [min, max] | best evaluation, mean [min, "
           f"max] | seeds reaching {out['threshold']:.0f} | first reached at (env steps), mean "
           "[min, max] | SPS, mean [min, max] |", "|---|---|---|---|---|---|---|"]
  for method, t in out["table"].items():
    lines.append(f"| {method} | {t['seeds']} | {cell(t['final_eval'])} | "
                 f"{cell(t['best_eval'])} | {t['seeds_reaching_threshold']} | "
                 f"{cell(t['first_reached_at'])} | {cell(t['sps'])} |")
  return "\n".join(lines) + "\n"


def _plot(results: str, runs: List[Dict[str, Any]]) -> None:
  """Evaluation return vs env steps: each method's mean over seeds and its 95% band."""
  if not runs:
    return
  methods = [m for m in METHODS if any(r["method"] == m for r in runs)]
  lines = {m: [tuple(zip(*r["evals"])) for r in runs if r["method"] == m] for m in methods}
  plots.band_figure(os.path.join(results, "curves.png"), [(ENV, lines)], xlabel="env steps",
                    ylabel="evaluation return", hline=THRESHOLD)


def main(argv):
  del argv
  grid.check_methods(FLAGS.methods, METHODS)
  return grid.run_then_report(
      FLAGS.results, lambda: grid.paired_blocks([None], FLAGS.methods,
                                                [int(s) for s in FLAGS.seeds],
                                                lambda t, m, s: run_flags(m, s, FLAGS.steps)),
      FLAGS.report_only, lambda: report(FLAGS.results, grid.doc_paths(METHODS)[0],
                                        FLAGS.mixed_hosts))
