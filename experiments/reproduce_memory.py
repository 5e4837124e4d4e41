"""A task where memory matters, learned: recurrent HTS-PPO (`--core=lstm`) against the same PPO
with a feed-forward policy, on CartPole without velocities (`hts_jax/CartPoleNoVel-v1`,
`--preset=memory_lstm_ppo`: rl-baselines3-zoo's RecurrentPPO setup for the task), HTS and
synchronous, over seeds.

    python -m experiments.reproduce_memory                  # the grid (resumes: done runs stay)
    python -m experiments.reproduce_memory --report_only    # results.json, table.md, curves.png

Each run is one `experiments.train` process (logdir `<results>/runs/<method>/seed<k>`), one at a
time. The report (`<results>/results.json`, printed as JSON) gives per method the final
evaluation (10 episodes of the final params), the best evaluation, how many seeds reached
CartPole's `reward_threshold` (475) in some evaluation and at how many env steps first, and SPS;
`table.md`, `curves.png` and README's memory block show it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

from absl import app, flags

from experiments import provenance
from experiments.reproduce_mujoco import _cell, _spread

ROOT = provenance.ROOT
ENV = "hts_jax/CartPoleNoVel-v1"
THRESHOLD = 475.0  # CartPole-v1's reward_threshold (gymnasium's registration)
# `hts_*` without a suffix: --correction=delayed (the paper's Eq. 6); `_behaviour`: the reference
# code's HTS-PPO (the preset's correction since this grid); `_none`: at θ_j, everything recomputed
# there (docs/modes.md).
METHODS = {"hts_lstm": ["--mode=hts", "--core=lstm", "--correction=delayed"],
           "sync_lstm": ["--mode=sync", "--core=lstm"],
           "hts_ff": ["--mode=hts", "--core=none", "--correction=delayed"],
           "sync_ff": ["--mode=sync", "--core=none"],
           "hts_lstm_behaviour": ["--mode=hts", "--core=lstm", "--correction=behaviour"],
           "hts_lstm_none": ["--mode=hts", "--core=lstm", "--correction=none"]}
DEFAULT_METHODS = ["sync_lstm", "hts_lstm", "hts_lstm_behaviour", "hts_lstm_none", "hts_ff",
                   "sync_ff"]
README_BEGIN = "<!-- memory-results:begin (experiments/reproduce_memory.py writes this) -->"
README_END = "<!-- memory-results:end -->"
FLAGS = flags.FLAGS


def define_flags() -> None:
  flags.DEFINE_list("methods", DEFAULT_METHODS, f"Methods to run, of {sorted(METHODS)}.")
  flags.DEFINE_list("seeds", ["0", "1", "2", "3", "4"], "Seeds.")
  flags.DEFINE_integer("steps", 100_000, "Env steps per run.")
  flags.DEFINE_string("results", "results/memory", "Where runs and the report go.")
  flags.DEFINE_bool("report_only", False, "Only rewrite the report from the runs there are.")
  flags.DEFINE_bool("readme", True, "Rewrite README.md's memory block from results.json.")
  flags.DEFINE_bool("mixed_hosts", False, "Report runs made on different host kinds together "
                    "(their SPS are then not comparable, and the table says so).")


def run_dir(results: str, method: str, seed: int) -> str:
  return os.path.join(results, "runs", method, f"seed{seed}")


def command(method: str, seed: int, steps: int, logdir: str) -> List[str]:
  return [sys.executable, "-m", "experiments.train", "--preset=memory_lstm_ppo",
          *METHODS[method], f"--seed={seed}", f"--total_steps={steps}", f"--logdir={logdir}",
          "--notensorboard", "--log_every_s=60"]


def first_reaching(evals: List[Dict[str, Any]], threshold: float) -> Optional[int]:
  """The env steps of the first evaluation whose mean return reaches `threshold` (None: none)."""
  return next((e["env_steps"] for e in evals if e["mean_return"] >= threshold), None)


def report(results: str, readme: Optional[str] = None,
           mixed_hosts: bool = False) -> Dict[str, Any]:
  runs, table = [], {}
  base = os.path.join(results, "runs")
  for method in sorted(os.listdir(base)) if os.path.isdir(base) else []:
    for seed_dir in sorted(os.listdir(os.path.join(base, method))):
      path = os.path.join(base, method, seed_dir, "summary.json")
      if not os.path.exists(path):
        continue
      with open(path) as f:
        s = json.load(f)
      evals = s["eval"]
      runs.append({"method": method, "seed": s["seed"], "env_steps": s["env_steps"],
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
    table[method] = {"seeds": len(mine), "final_eval": _spread([r["final_eval"] for r in mine]),
                     "best_eval": _spread([r["best_eval"] for r in mine]),
                     "seeds_reaching_threshold": len(reached),
                     "first_reached_at": _spread(reached) if reached else None,
                     "sps": _spread([r["sps"] for r in mine])}
  _plot(results, runs)
  return provenance.publish(results, {"env": ENV, "threshold": THRESHOLD, "runs": runs,
                                      "table": table, "hosts": hosts}, render_markdown, readme,
                            README_BEGIN, README_END)


def render_markdown(out: Dict[str, Any]) -> str:
  hosts = out.get("hosts") or [out["machine"].get("cpu", "?")]
  lines = [f"**Memory: {out['env']}** (`--preset=memory_lstm_ppo`; `*_lstm`: `--core=lstm`, "
           "`*_ff`: the same PPO with a feed-forward policy; `hts_lstm`, `hts_ff`: "
           "`--correction=delayed` (the paper's Eq. 6: PPO's 20 epochs taken at θ_{j-1}, their sum "
           "added to θ_j), `hts_lstm_behaviour`: `--correction=behaviour` (the reference code's "
           "HTS-PPO: the epochs start at θ_j, the ratio, old values and GAE are θ_{j-1}'s), "
           "`hts_lstm_none`: `--correction=none` (at θ_j, everything recomputed there)). "
           "Evaluations: 10 greedy episodes every 10k env steps, every evaluation new episodes; "
           f"'reached': one evaluation's mean (a window of 1 evaluation, not the paper's 10). "
           f"Source: `results/memory/results.json`, {out['date']}, commit {out['commit'][:12]}; "
           f"runs on {'; '.join(hosts)}"
           + (" (MIXED hosts: SPS not comparable across them)" if len(hosts) > 1 else "")
           + ", each seed a block of its methods back to back in a random order; "
           f"`{out['command']}`.", "",
           "| method | seeds | final evaluation, mean [min, max] | best evaluation, mean [min, "
           f"max] | seeds reaching {out['threshold']:.0f} | first reached at (env steps), mean "
           "[min, max] | SPS, mean [min, max] |", "|---|---|---|---|---|---|---|"]
  for method, t in out["table"].items():
    lines.append(f"| {method} | {t['seeds']} | {_cell(t['final_eval'])} | "
                 f"{_cell(t['best_eval'])} | {t['seeds_reaching_threshold']} | "
                 f"{_cell(t['first_reached_at'])} | {_cell(t['sps'])} |")
  return "\n".join(lines) + "\n"


def _plot(results: str, runs: List[Dict[str, Any]]) -> None:
  if not runs:
    return
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  colors = {"hts_lstm": "tab:red", "sync_lstm": "tab:blue", "hts_ff": "tab:orange",
            "sync_ff": "tab:cyan", "hts_lstm_none": "tab:purple",
            "hts_lstm_behaviour": "tab:green"}
  fig, ax = plt.subplots(figsize=(6, 3.6))
  labelled = set()
  for r in runs:
    xs, ys = zip(*r["evals"])
    ax.plot(xs, ys, color=colors.get(r["method"], "gray"), alpha=0.7,
            label=None if r["method"] in labelled else r["method"])
    labelled.add(r["method"])
  ax.axhline(THRESHOLD, color="gray", lw=0.8, ls="--")
  ax.set_title(ENV)
  ax.set_xlabel("env steps")
  ax.set_ylabel("evaluation return")
  ax.legend()
  fig.tight_layout()
  fig.savefig(os.path.join(results, "curves.png"), dpi=90)
  plt.close(fig)


def main(argv):
  del argv
  unknown = sorted(set(FLAGS.methods) - set(METHODS))
  if unknown:
    raise app.UsageError(f"--methods: unknown {unknown}; expected some of {sorted(METHODS)}")
  if not FLAGS.report_only:
    # Paired blocks: each seed's methods back to back in a random order.
    dirs = [(run_dir(FLAGS.results, m, int(s)), m, int(s)) for s in FLAGS.seeds
            for m in provenance.block_order(f"seed{s}", FLAGS.methods)]
    provenance.run_missing((d, command(m, s, FLAGS.steps, d)) for d, m, s in dirs)
  out = report(FLAGS.results, os.path.join(ROOT, "README.md") if FLAGS.readme else None,
               FLAGS.mixed_hosts)
  print(json.dumps(out["table"], indent=1))


if __name__ == "__main__":
  define_flags()
  app.run(main)
