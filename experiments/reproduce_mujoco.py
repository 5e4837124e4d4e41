"""PPO's MuJoCo benchmark under HTS: HTS-PPO against synchronous PPO with the same
hyperparameters (`--preset=mujoco_hts_ppo`, PPO's MuJoCo setup: see `hts_jax/presets.py`), over
tasks and seeds, returns at the end of the budget and SPS side by side.

    python -m experiments.reproduce_mujoco                       # the grid (resumes: done runs stay)
    python -m experiments.reproduce_mujoco --tasks=Hopper-v5 --seeds=0 --steps=200000
    python -m experiments.reproduce_mujoco --report_only          # results.json, table, plot

Each run is one `experiments.train` process (logdir `<results>/runs/<task>/<method>/seed<k>`; a
run whose summary.json exists is not run again), one at a time, so that their SPS compare. The
report reads the runs' summary.json and metrics.csv and writes `<results>/results.json` (with
where and when it ran), `<results>/table.md`, `<results>/curves.png` and README's MuJoCo block. A run's final return is
the mean, over its envs, of each env's last finished training episode (CleanRL reports training
episodes too); its final evaluation is `eval_episodes` sampled episodes of the final params.

CleanRL's published returns for `ppo_continuous_action.py` (1M steps, MuJoCo v4, the same
hyperparameters with one env and return-based reward scaling) are in `CLEANRL` for comparison,
with the page they come from.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from typing import Any, Dict, List, Optional

from absl import app, flags

from experiments import provenance

ROOT = provenance.ROOT
# Synchronous PPO and HTS-PPO under each policy-lag correction (docs/modes.md): `delayed` (the
# paper's Eq. 6; for PPO the sum of its steps taken at θ_{j-1}, added to θ_j), `behaviour` (the
# reference code's HTS-PPO: the steps start at θ_j, the ratio, old values and GAE are θ_{j-1}'s),
# `none` (at θ_j, everything recomputed there: the lag ignored) and, opt-in, `truncated_is`
# (Table A1). Each (task, seed) is a paired block: its methods back to back in a random order.
METHODS = {"hts_ppo": ["--mode=hts", "--correction=delayed"], "sync_ppo": ["--mode=sync"],
           "hts_ppo_behaviour": ["--mode=hts", "--correction=behaviour"],
           "hts_ppo_none": ["--mode=hts", "--correction=none"],
           "hts_ppo_tis": ["--mode=hts", "--correction=truncated_is"]}
DEFAULT_METHODS = ["sync_ppo", "hts_ppo", "hts_ppo_behaviour", "hts_ppo_none"]

README_BEGIN = "<!-- mujoco-results:begin (experiments/reproduce_mujoco.py writes this) -->"
README_END = "<!-- mujoco-results:end -->"
FLAGS = flags.FLAGS


def define_flags() -> None:
  """Defined only when this runs as the program (importing it leaves absl's flags alone)."""
  flags.DEFINE_list("tasks", ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5"], "MuJoCo tasks.")
  flags.DEFINE_list("methods", DEFAULT_METHODS, f"Methods to run, of {sorted(METHODS)}.")
  flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds.")
  flags.DEFINE_integer("steps", 1_000_000, "Env steps per run.")
  flags.DEFINE_string("results", "results/mujoco", "Where runs and the report go.")
  flags.DEFINE_bool("report_only", False, "Only rewrite the report from the runs there are.")
  flags.DEFINE_bool("readme", True, "Rewrite README.md's MuJoCo block from results.json.")
  flags.DEFINE_bool("mixed_hosts", False, "Report runs made on different host kinds together "
                    "(their SPS are then not comparable, and the table says so).")


def run_dir(results: str, task: str, method: str, seed: int) -> str:
  return os.path.join(results, "runs", task, method, f"seed{seed}")


def command(task: str, method: str, seed: int, steps: int, logdir: str) -> List[str]:
  return [sys.executable, "-m", "experiments.train", "--preset=mujoco_hts_ppo", *METHODS[method],
          f"--env={task}", f"--seed={seed}", f"--total_steps={steps}", f"--logdir={logdir}",
          "--notensorboard", "--log_every_s=60"]


def final_return(summary: Dict[str, Any]) -> float:
  """The mean over envs of each env's last finished training episode."""
  last = [rs[-1] for rs in summary["episode_returns"] if rs]
  return sum(last) / len(last)


def curve(logdir: str) -> List[List[float]]:
  """[[env_steps, recent training return]] from metrics.csv (none if the run has no file)."""
  out = []
  path = os.path.join(logdir, "metrics.csv")
  if not os.path.exists(path):
    return out
  with open(path) as f:
    for row in csv.DictReader(f):
      if row.get("train_return") not in (None, ""):
        out.append([int(float(row["env_steps"])), float(row["train_return"])])
  return out


def _spread(xs: List[float]) -> Dict[str, Any]:
  return {"mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def final_metric(summary: Dict[str, Any], last: int = 10) -> Optional[float]:
  """The paper's final metric: the mean return of the last `last` evaluations (each of new
  episodes: 10 x 10 different episodes)."""
  evals = summary["eval"][-last:]
  return sum(e["mean_return"] for e in evals) / len(evals) if evals else None


def report(results: str, readme: Optional[str] = None,
           mixed_hosts: bool = False) -> Dict[str, Any]:
  runs, table = [], {}
  base = os.path.join(results, "runs")
  for task in sorted(os.listdir(base)) if os.path.isdir(base) else []:
    for method in sorted(os.listdir(os.path.join(base, task))):
      for seed_dir in sorted(os.listdir(os.path.join(base, task, method))):
        logdir = os.path.join(base, task, method, seed_dir)
        path = os.path.join(logdir, "summary.json")
        if not os.path.exists(path):
          continue
        with open(path) as f:
          s = json.load(f)
        runs.append({"task": task, "method": method, "seed": s["seed"],
                     "env_steps": s["env_steps"], "final_return": final_return(s),
                     "final_eval": s["eval"][-1]["mean_return"] if s["eval"] else None,
                     "final_metric": final_metric(s),
                     "sps": s["sps"], "wall_time_s": s["wall_time_s"],
                     "param_sha256": s["param_sha256"][:16], **provenance.run_host(s),
                     "curve": curve(logdir)})
  hosts = provenance.check_hosts(runs, mixed_hosts)
  for task in sorted({r["task"] for r in runs}):
    table[task] = {}
    for method in sorted({r["method"] for r in runs if r["task"] == task}):
      mine = [r for r in runs if r["task"] == task and r["method"] == method]
      evals = [r["final_eval"] for r in mine if r["final_eval"] is not None]
      finals = [r["final_metric"] for r in mine if r.get("final_metric") is not None]
      table[task][method] = {"final_return": _spread([r["final_return"] for r in mine]),
                             "final_eval": _spread(evals) if evals else None,
                             "final_metric": _spread(finals) if finals else None,
                             "sps": _spread([r["sps"] for r in mine]),
                             "env_steps": _spread([r["env_steps"] for r in mine])}
  _plot(results, runs)
  return provenance.publish(results, {"runs": runs, "table": table, "cleanrl": CLEANRL,
                                      "hosts": hosts}, render_markdown, readme, README_BEGIN,
                            README_END)


def render_markdown(out: Dict[str, Any]) -> str:
  """The table (and where it came from) as README and table.md show it."""
  table = out["table"]
  hosts = out.get("hosts") or [out["machine"].get("cpu", "?")]
  lines = [f"**HTS-PPO vs synchronous PPO on MuJoCo** (`--preset=mujoco_hts_ppo`: PPO's MuJoCo "
           "setup, 8 envs x 256 steps per update; `sync_ppo` is `--mode=sync`, the others "
           "`--mode=hts` with a correction: `hts_ppo` `delayed` (the paper's Eq. 6: PPO's 320 "
           "steps taken at θ_{j-1}, their sum added to θ_j), `hts_ppo_behaviour` `behaviour` (the "
           "reference code's HTS-PPO: the steps start at θ_j, the ratio, old values and GAE are "
           "θ_{j-1}'s), `hts_ppo_none` `none` (at θ_j, everything recomputed there: the lag "
           "ignored), `hts_ppo_tis` `truncated_is` (Table A1)). Final return: the mean over the 8 "
           "envs of each one's last training episode; final evaluation: the last evaluation's 10 "
           "sampled episodes; last 10 evaluations: their mean (every evaluation plays new "
           "episodes; at one evaluation per 100k steps they span 200k steps to the end, so this is "
           "a mean over most of the curve, not the paper's final metric); CleanRL's "
           f"column is its published 1M-step return on the v4 task ({out['cleanrl']['source']}). "
           f"Source: `results/mujoco/results.json`, {out['date']}, commit {out['commit'][:12]}; "
           f"runs on {'; '.join(hosts)}"
           + (" (MIXED hosts: SPS not comparable across them)" if len(hosts) > 1 else "")
           + f", each (task, seed) a block of its methods back to back in a random order; "
           f"`{out['command']}`.", "",
           "| task | method | seeds | env steps | final return, mean [min, max] | final "
           "evaluation, mean [min, max] | last 10 evaluations, mean [min, max] | SPS, mean [min, "
           "max] | CleanRL PPO (1M) |",
           "|---|---|---|---|---|---|---|---|---|"]
  for task, methods in table.items():
    for method, t in methods.items():
      lines.append(f"| {task} | {method} | {t['final_return']['n']} | "
                   f"{t['env_steps']['mean']:,.0f} | {_cell(t['final_return'])} | "
                   f"{_cell(t.get('final_eval'))} | {_cell(t.get('final_metric'))} | "
                   f"{_cell(t['sps'])} | "
                   f"{CLEANRL['returns'].get(task.replace('-v5', '-v4'), '')} |")
  return "\n".join(lines) + "\n"


def _cell(spread: Optional[Dict[str, Any]]) -> str:
  if not spread:
    return ""
  return f"{spread['mean']:,.0f} [{spread['min']:,.0f}, {spread['max']:,.0f}]"


def _plot(results: str, runs: List[Dict[str, Any]]) -> None:
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  tasks = sorted({r["task"] for r in runs})
  if not tasks:
    return
  fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.6), squeeze=False)
  colors = {"hts_ppo": "tab:red", "sync_ppo": "tab:blue", "hts_ppo_none": "tab:orange",
            "hts_ppo_tis": "tab:green", "hts_ppo_behaviour": "tab:purple"}
  for ax, task in zip(axes[0], tasks):
    labelled = set()
    for r in runs:
      if r["task"] == task and r["curve"]:
        xs, ys = zip(*r["curve"])
        ax.plot(xs, ys, color=colors.get(r["method"], "gray"), alpha=0.8,
                label=None if r["method"] in labelled else r["method"])
        labelled.add(r["method"])
    ax.set_title(task)
    ax.set_xlabel("env steps")
    ax.set_ylabel("training return")
    ax.legend()
  fig.tight_layout()
  fig.savefig(os.path.join(results, "curves.png"), dpi=90)
  plt.close(fig)


# CleanRL's `ppo_continuous_action.py` on MuJoCo v4 at 1M steps (mean ± std over seeds), as its
# PPO page publishes them (the openrlbenchmark table "ppo_continuous_action ({'tag': ['pr-424']})").
CLEANRL = {
    "source": "https://docs.cleanrl.dev/rl-algorithms/ppo/#ppo_continuous_actionpy",
    "returns": {"HalfCheetah-v4": "1442.64 ± 46.03", "Walker2d-v4": "2287.95 ± 571.78",
                "Hopper-v4": "2382.86 ± 271.74", "InvertedPendulum-v4": "963.09 ± 22.20"},
}


def main(argv):
  del argv
  unknown = sorted(set(FLAGS.methods) - set(METHODS))
  if unknown:
    raise app.UsageError(f"--methods: unknown {unknown}; expected some of {sorted(METHODS)}")
  if not FLAGS.report_only:
    # Paired blocks: seed-major, each (task, seed)'s methods back to back in a random order.
    dirs = [(run_dir(FLAGS.results, t, m, int(s)), t, m, int(s)) for s in FLAGS.seeds
            for t in FLAGS.tasks for m in provenance.block_order(f"{t}/seed{s}", FLAGS.methods)]
    provenance.run_missing((d, command(t, m, s, FLAGS.steps, d)) for d, t, m, s in dirs)
  out = report(FLAGS.results, os.path.join(ROOT, "README.md") if FLAGS.readme else None,
               FLAGS.mixed_hosts)
  print(json.dumps(out["table"], indent=1))


if __name__ == "__main__":
  define_flags()
  app.run(main)
