"""PPO's MuJoCo benchmark under HTS: HTS-PPO against synchronous PPO with the same
hyperparameters (`--preset=mujoco_hts_ppo`, PPO's MuJoCo setup: see `hts_jax/presets.py`), over
tasks and seeds, returns at the end of the budget and SPS side by side.

    hts-reproduce mujoco                       # the grid (resumes: done runs stay)
    hts-reproduce mujoco --tasks=Hopper-v5 --seeds=0 --steps=200000
    hts-reproduce mujoco --report_only          # results.json, table, plot

(from a clone: `python -m experiments.reproduce mujoco ...`). Each run is one training process
(`hts_jax.results.grid`: logdir `<results>/runs/<task>/<method>/seed<k>`; a finished run is not run
again), one at a time, so that their SPS compare; each (task, seed) is a paired block. The report
reads the runs' summary.json and metrics.csv and writes `<results>/results.json` (with where and
when it ran), `<results>/table.md`, `<results>/curves.png` and README's MuJoCo block. A run's final
return is the mean, over its envs, of each env's last finished training episode (CleanRL reports
training episodes too); its final evaluation is `eval_episodes` sampled episodes of the final
params.

CleanRL's published returns for `ppo_continuous_action.py` (1M steps, MuJoCo v4, the same
hyperparameters with one env and return-based reward scaling) are in `CLEANRL` for comparison,
with the page they come from.
"""

from __future__ import annotations

import csv
import os
from typing import Any, Dict, List, Optional

from absl import flags

from hts_jax.analysis import metrics, plots
from hts_jax.results import grid, provenance, publish
from hts_jax.results.publish import cell, spread

# Synchronous PPO and HTS-PPO under each policy-lag correction (docs/modes.md): `delayed` (the
# paper's Eq. 6; for PPO the sum of its steps taken at θ_{j-1}, added to θ_j), `behaviour` (the
# reference code's HTS-PPO: the steps start at θ_j, the ratio, old values and GAE are θ_{j-1}'s),
# `none` (at θ_j, everything recomputed there: the lag ignored) and, opt-in, `truncated_is`
# (Table A1). Each (task, seed) is a paired block: its methods back to back in a random order.
METHODS = {"hts_ppo": {"mode": "hts", "correction": "delayed"}, "sync_ppo": {"mode": "sync"},
           "hts_ppo_behaviour": {"mode": "hts", "correction": "behaviour"},
           "hts_ppo_none": {"mode": "hts", "correction": "none"},
           "hts_ppo_tis": {"mode": "hts", "correction": "truncated_is"}}
DEFAULT_METHODS = ["sync_ppo", "hts_ppo", "hts_ppo_behaviour", "hts_ppo_none"]
BLOCK = publish.Block("mujoco-results", "mujoco")  # README: the summary
DOCS_BLOCK = publish.Block("mujoco-tables", "mujoco")  # docs/results.md: the whole table
FLAGS = flags.FLAGS


def define_flags() -> None:
  flags.DEFINE_list("tasks", ["HalfCheetah-v5", "Hopper-v5", "Walker2d-v5"], "MuJoCo tasks.")
  grid.define_flags(DEFAULT_METHODS, METHODS, ["0", "1", "2"], 1_000_000, "results/mujoco")


def run_flags(task: str, method: str, seed: int, steps: int) -> Dict[str, Any]:
  """One run's launcher flags."""
  return {"preset": "mujoco_hts_ppo", **METHODS[method], "env": task, "seed": seed,
          "total_steps": steps, "tensorboard": False, "log_every_s": 60}


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


def final_metric(summary: Dict[str, Any], last: int = 10) -> Optional[float]:
  """The paper's final metric: the mean return of the last `last` evaluations (each of new
  episodes: 10 x 10 different episodes)."""
  evals = summary["eval"][-last:]
  return sum(e["mean_return"] for e in evals) / len(evals) if evals else None


def report(results: str, readme: Optional[str] = None, mixed_hosts: bool = False,
           docs: Optional[str] = None) -> Dict[str, Any]:
  runs, table = [], {}
  for f in grid.finished_runs(results):
    s = f.summary
    runs.append({"task": f.task, "method": f.method, "seed": s["seed"],
                 "env_steps": s["env_steps"], "final_return": final_return(s),
                 "final_eval": s["eval"][-1]["mean_return"] if s["eval"] else None,
                 "final_metric": final_metric(s),
                 "sps": s["sps"], "wall_time_s": s["wall_time_s"],
                 "param_sha256": s["param_sha256"][:16], **provenance.run_host(s),
                 "early_update": metrics.early_update(metrics.Run(f.logdir, s, ())),
                 "curve": curve(f.logdir)})
  hosts = provenance.check_hosts(runs, mixed_hosts)
  for task in sorted({r["task"] for r in runs}):
    table[task] = {}
    for method in sorted({r["method"] for r in runs if r["task"] == task}):
      mine = [r for r in runs if r["task"] == task and r["method"] == method]
      evals = [r["final_eval"] for r in mine if r["final_eval"] is not None]
      finals = [r["final_metric"] for r in mine if r.get("final_metric") is not None]
      table[task][method] = {"final_return": spread([r["final_return"] for r in mine]),
                             "final_eval": spread(evals) if evals else None,
                             "final_metric": spread(finals) if finals else None,
                             "sps": spread([r["sps"] for r in mine]),
                             "env_steps": spread([r["env_steps"] for r in mine]),
                             "early_update": _early(mine)}
  _plot(results, runs)
  return publish.publish(results, {"runs": runs, "table": table, "cleanrl": CLEANRL,
                                   "hosts": hosts}, render_markdown,
                         [(p, b, r) for p, b, r in ((readme, BLOCK, render_summary),
                                                    (docs, DOCS_BLOCK, render_markdown)) if p])


UPDATE_KEYS = (("clip_frac", "clipped", "{:.3f}"), ("approx_kl", "KL", "{:.4f}"),
               ("entropy", "entropy", "{:.2f}"))


def _early(runs: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
  """The PPO update over the first quarter of the budget (`metrics.early_update`), mean [min,
  max] over the seeds that logged it; None where none did."""
  early = [r["early_update"] for r in runs if r.get("early_update")]
  if not early:
    return None
  windows = sorted({e["window_steps"] for e in early})
  return {"window_steps": windows[0] if len(windows) == 1 else windows,
          **{k: spread([e[k] for e in early]) for k, _, _ in UPDATE_KEYS
             if all(k in e for e in early)}}


def _update_cell(t: Dict[str, Any], keys=UPDATE_KEYS) -> str:
  e = t.get("early_update") or {}
  return "; ".join(f"{name} {cell(e[k], fmt)}" for k, name, fmt in keys if k in e)


def render_markdown(out: Dict[str, Any]) -> str:
  """The table (and where it came from) as README and table.md show it."""
  table = out["table"]
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
           f"Source: `{out.get('source', 'results/mujoco/results.json')}`, "
           f"{out['date']}, commit {out['commit'][:12]}; "
           f"{publish.host_note(out)}, each (task, seed) a block of its methods back to back in a random order; "
           f"`{out['command']}`.", "",
           "| task | method | seeds | env steps | final return, mean [min, max] | final "
           "evaluation, mean [min, max] | last 10 evaluations, mean [min, max] | SPS, mean [min, "
           "max] | CleanRL PPO (1M) |",
           "|---|---|---|---|---|---|---|---|---|"]
  for task, methods in table.items():
    for method, t in methods.items():
      lines.append(f"| {task} | {method} | {t['final_return']['n']} | "
                   f"{t['env_steps']['mean']:,.0f} | {cell(t['final_return'])} | "
                   f"{cell(t.get('final_eval'))} | {cell(t.get('final_metric'))} | "
                   f"{cell(t['sps'])} | "
                   f"{CLEANRL['returns'].get(task.replace('-v5', '-v4'), '')} |")
  if any((t.get("early_update") for ms in table.values() for t in ms.values())):
    lines += ["", "**The PPO update over the first quarter of the budget** (each run's "
              "metrics.csv: the mean over its updates of the share of samples whose ratio lies "
              "outside 1 ± clip (0.2) and of the approximate KL, the policy's entropy over the "
              "quarter's last fifth; mean [min, max] over seeds). `behaviour` takes its ratio "
              "against the behaviour policy, one update behind the params its epochs start from; "
              "`delayed` and `none` against the params the epochs start from, as sync PPO does.",
              "", "| task | method | seeds | first env steps | the update |",
              "|---|---|---|---|---|"]
    for task, methods in table.items():
      for method, t in methods.items():
        if t.get("early_update"):
          w = t["early_update"]["window_steps"]
          n = t["early_update"]["clip_frac"]["n"] if "clip_frac" in t["early_update"] else "-"
          lines.append(f"| {task} | {method} | {n} | {w if isinstance(w, list) else f'{w:,}'} | "
                       f"{_update_cell(t)} |")
  return "\n".join(lines) + "\n"


def render_summary(out: Dict[str, Any]) -> str:
  """README's block: each task's final evaluation per method (mean [min, max] over seeds) beside
  CleanRL's published return; docs/results.md has the whole table."""
  methods = [m for m in DEFAULT_METHODS if any(m in t for t in out["table"].values())]
  lines = [f"Final evaluation (10 sampled episodes of the final params; mean [min, max] over "
           f"seeds). Source: `{out.get('source', 'results/mujoco/results.json')}`, "
           f"{out['date']}, commit "
           f"{out['commit'][:12]}; {publish.host_note(out)}; every column in "
           "[docs/results.md](docs/results.md#mujoco).", "",
           "| task | " + " | ".join(methods) + " | CleanRL PPO (1M) |",
           "|---" * (len(methods) + 2) + "|"]
  for task, t in out["table"].items():
    lines.append(f"| {task} | " + " | ".join(cell((t.get(m) or {}).get("final_eval"))
                                             for m in methods)
                 + f" | {CLEANRL['returns'].get(task.replace('-v5', '-v4'), '')} |")
  def clip(t, m):
    return ((t.get(m) or {}).get("early_update") or {}).get("clip_frac")
  clipped = [f"{task} " + " / ".join("-" if not clip(t, m) else f"{clip(t, m)['mean']:.2f}"
                                     for m in methods) for task, t in out["table"].items()]
  if any(clip(t, m) for t in out["table"].values() for m in methods):
    lines += ["", "Share of samples with a clipped ratio over the first quarter of the budget "
              f"(mean over seeds; {' / '.join(methods)}): " + "; ".join(clipped) + "."]
  return "\n".join(lines) + "\n"


def _plot(results: str, runs: List[Dict[str, Any]]) -> None:
  """Training return vs env steps per task: each method's mean over seeds and its 95% band."""
  tasks = sorted({r["task"] for r in runs})
  if not tasks:
    return
  methods = [m for m in METHODS if any(r["method"] == m for r in runs)]
  panels = [(task, {m: [tuple(zip(*r["curve"])) for r in runs
                        if r["task"] == task and r["method"] == m and r["curve"]]
                    for m in methods}) for task in tasks]
  plots.band_figure(os.path.join(results, "curves.png"), panels, xlabel="env steps",
                    ylabel="training return")


# CleanRL's `ppo_continuous_action.py` on MuJoCo v4 at 1M steps (mean ± std over seeds), as its
# PPO page publishes them (the openrlbenchmark table "ppo_continuous_action ({'tag': ['pr-424']})").
CLEANRL = {
    "source": "https://docs.cleanrl.dev/rl-algorithms/ppo/#ppo_continuous_actionpy",
    "returns": {"HalfCheetah-v4": "1442.64 ± 46.03", "Walker2d-v4": "2287.95 ± 571.78",
                "Hopper-v4": "2382.86 ± 271.74", "InvertedPendulum-v4": "963.09 ± 22.20"},
}


def main(argv):
  del argv
  grid.check_methods(FLAGS.methods, METHODS)
  return grid.run_then_report(
      FLAGS.results, lambda: grid.paired_blocks(FLAGS.tasks, FLAGS.methods,
                                                [int(s) for s in FLAGS.seeds],
                                                lambda t, m, s: run_flags(t, m, s, FLAGS.steps)),
      FLAGS.report_only, _report)


def _report() -> Dict[str, Any]:
  readme, docs = grid.doc_paths(METHODS)
  return report(FLAGS.results, readme, FLAGS.mixed_hosts, docs)
