"""PPO's MuJoCo benchmark under HTS: HTS-PPO against synchronous PPO with the same
hyperparameters (`--preset=mujoco_hts_ppo`, PPO's MuJoCo setup: see `hts_jax/presets.py`), over
tasks and seeds, returns at the end of the budget and SPS side by side.

    hts-reproduce mujoco                       # the grid (resumes: done runs stay)
    hts-reproduce mujoco --tasks=Hopper-v5 --seeds=0 --steps=200000
    hts-reproduce mujoco --report_only          # results.json, tables, plot

(from a clone: `python -m experiments.reproduce mujoco ...`). A grid record (`GRID`, run and
reported by `hts_jax.results.driver`; results/mujoco/PROTOCOL.md is rendered from it): each run
is one training process (logdir `<results>/runs/<task>/<method>/seed<k>`), one at a time, each
(task, seed) a paired block. A run's final return is the mean, over its envs, of each env's last
finished training episode (CleanRL reports training episodes too); its final evaluation is
`eval_episodes` sampled episodes of the final params. CleanRL's published returns for
`ppo_continuous_action.py` (1M steps, MuJoCo v4, the same hyperparameters with one env and
return-based reward scaling) are in `CLEANRL` for comparison, with the page they come from.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional

from hts_jax.analysis import metrics, plots, stats
from hts_jax.results import grid, named, publish, render
from hts_jax.results.record import Column, Grid, Method, Table, Task

TASKS = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5")
# CleanRL's `ppo_continuous_action.py` on MuJoCo v4 at 1M steps (mean ± std over seeds), as its
# PPO page publishes them (the openrlbenchmark table "ppo_continuous_action ({'tag': ['pr-424']})").
CLEANRL = {
    "source": "https://docs.cleanrl.dev/rl-algorithms/ppo/#ppo_continuous_actionpy",
    "returns": {"HalfCheetah-v4": "1442.64 ± 46.03", "Walker2d-v4": "2287.95 ± 571.78",
                "Hopper-v4": "2382.86 ± 271.74", "InvertedPendulum-v4": "963.09 ± 22.20"},
}
UPDATE_KEYS = named.UPDATE_KEYS
final_return = named.final_return
_early = named.early


def _update_cell(c: Dict[str, Any]) -> str:
  return named.update_cell(None, c)


def _run_extra(f: grid.Finished) -> Dict[str, Any]:
  """The final return, the training curve [[env_steps, recent training return]] from metrics.csv
  (none without the file) and the PPO update's first quarter."""
  run = metrics.Run(f.logdir, f.summary, ())
  return {"final_return": final_return(f.summary),
          "curve": [[int(r["env_steps"]), r["train_return"]] for r in run.train_curve()
                    if "train_return" in r],
          "early_update": metrics.early_update(run)}


def _cell_extra(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
  return {"final_return": stats.spread([r["final_return"] for r in runs]),
          "early_update": _early(runs)}


def _cleanrl(c: Dict[str, Any]) -> str:
  return CLEANRL["returns"].get(c["task"].replace("-v5", "-v4"), "")


_clipped_line = named.clipped_line


METHODS_NOTE = (
    "`--preset=mujoco_hts_ppo`: PPO's MuJoCo setup, 8 envs x 256 steps per update; `sync_ppo` is "
    "`--mode=sync`, the others `--mode=hts` with a correction (results/mujoco/PROTOCOL.md)")

GRID = Grid(
    name="mujoco", title="HTS-PPO vs synchronous PPO on MuJoCo", results="results/mujoco",
    question="Does HTS-PPO, under each policy-lag correction, end where synchronous PPO with the "
             "same hyperparameters ends on PPO's MuJoCo benchmark, at the same budget?",
    methods=(
        Method("sync_ppo", {"mode": "sync"}, "synchronous PPO, the same hyperparameters (lag 0)"),
        Method("hts_ppo", {"mode": "hts", "correction": "delayed"},
               "HTS-PPO, the paper's delayed gradient (Eq. 6: PPO's 320 steps taken at θ_{j-1}, "
               "their sum added to θ_j)"),
        Method("hts_ppo_behaviour", {"mode": "hts", "correction": "behaviour"},
               "HTS-PPO, the reference code's update (the steps start at θ_j; the ratio, old "
               "values and GAE are θ_{j-1}'s)"),
        Method("hts_ppo_none", {"mode": "hts", "correction": "none"},
               "HTS-PPO, the lag ignored (everything at θ_j)"),
        Method("hts_ppo_tis", {"mode": "hts", "correction": "truncated_is"},
               "HTS-PPO, truncated importance sampling (Table A1; opt-in)", default=False)),
    tasks=tuple(Task(t, t, {"preset": "mujoco_hts_ppo", "env": t, "tensorboard": False,
                            "log_every_s": 60}, 1_000_000, (0, 1, 2), 100_000) for t in TASKS),
    reference="sync_ppo",
    tables=(
        Table(columns=(
            Column("seeds", lambda c: str(len(c["seeds"]))),
            Column("env steps", lambda c: f"{c['env_steps']['mean']:,.0f}"),
            Column("final return", render.spread_cell("final_return")),
            Column("final evaluation", render.spread_cell("final_eval")),
            Column("mean of the 10 evaluations", render.spread_cell("final_metric")),
            Column("SPS (runs alone)", render.spread_cell("sps")),
            Column("PPO update, first quarter", _update_cell),
            Column("CleanRL PPO (1M)", _cleanrl)),
            notes=lambda out: (
                f"**HTS-PPO vs synchronous PPO on MuJoCo** ({METHODS_NOTE}). Final return: the "
                "mean over the 8 envs of each one's last training episode; final evaluation: the "
                "last evaluation's 10 sampled episodes; the 10 evaluations are one per 100k env "
                "steps, so their mean is over the whole curve, not the paper's final metric; "
                "cells mean [min, max] over seeds (3 seeds: no interval claimed); SPS over the "
                "runs that did not share the machine; the PPO update: the share of samples whose "
                "ratio lies outside 1 ± 0.2, the approximate KL and the entropy over the first "
                "quarter of the budget (`behaviour` takes its ratio against the behaviour policy, "
                "one update behind); CleanRL's column is its published 1M-step return on the v4 "
                f"task ({CLEANRL['source']})."),
            block=publish.Block("mujoco-tables", "mujoco"), doc="docs/results.md"),
        Table(columns=(Column("final evaluation", render.spread_cell("final_eval")),
                       Column("CleanRL PPO (1M)", _cleanrl)),
              notes=lambda out: ("Final evaluation (10 sampled episodes of the final params; "
                                 "mean [min, max] over seeds); every column in "
                                 "the table below."),
              block=publish.Block("mujoco-results", "mujoco"), doc="docs/results.md", pivot=True,
              tail=_clipped_line)),
    fixed="2026-11-26 (the grid's runs; rendered from its record on 2026-11-27)",
    changes=("2026-11-27: the report follows the statistics rules (issue 52): [min, max] "
             "labelled so; SPS over the runs that did not share the machine (the flag: "
             "`hts_jax/analysis/stats.py`); the column called 'last 10 evaluations' is named for "
             "what it is, the mean of all 10 evaluations; across tasks, the IQM of the final "
             "metric normalised by sync PPO's median and the probability of improvement over "
             "sync PPO; no run or value changed.", render.PAIRED_CALIBRATION,
             render.STOLEN_CPU),
    run_extra=_run_extra, cell_extra=_cell_extra, aggregate="final_metric")


def _plot(results: str, runs: List[Dict[str, Any]]) -> None:
  """Training return vs env steps per task: each method's mean over seeds and its band ([min, max] below 6 seeds)."""
  tasks = sorted({r["task"] for r in runs})
  methods = [m.name for m in GRID.methods if any(r["method"] == m.name for r in runs)]
  panels = [(task, {m: [tuple(zip(*r["curve"])) for r in runs
                        if r["task"] == task and r["method"] == m and r["curve"]]
                    for m in methods}) for task in tasks]
  plots.band_figure(os.path.join(results, "curves.png"), panels, xlabel="env steps",
                    ylabel="training return")


GRID = dataclasses.replace(GRID, plot=_plot)
