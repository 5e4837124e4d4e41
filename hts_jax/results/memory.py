"""A task where memory matters, learned: recurrent HTS-PPO (`--core=lstm`) against the same PPO
with a feed-forward policy, on CartPole without velocities (`hts_jax/CartPoleNoVel-v1`,
`--preset=memory_lstm_ppo`: rl-baselines3-zoo's RecurrentPPO setup for the task), HTS and
synchronous, over seeds.

    hts-reproduce memory                  # the grid (resumes: done runs stay)
    hts-reproduce memory --report_only    # results.json, table.md, curves.png, README's block

(from a clone: `python -m experiments.reproduce memory ...`). A grid record (`GRID`, run and
reported by `hts_jax.results.driver`; results/memory/PROTOCOL.md is rendered from it): each run is
one training process (logdir `<results>/runs/<method>/seed<k>`), one at a time, each seed a
paired block of its methods. The report gives per method the final and best evaluation, the env
steps to 475 (one evaluation's mean: a window of 1), the time ratio against `sync_lstm` and SPS.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List

from hts_jax.analysis import plots
from hts_jax.results import publish, render
from hts_jax.results.record import Column, Grid, Method, Table, Task

ENV = "hts_jax/CartPoleNoVel-v1"
THRESHOLD = 475.0  # CartPole-v1's reward_threshold (gymnasium's registration)

GRID = Grid(
    name="memory", title="Memory: recurrent policies on CartPole without velocities",
    results="results/memory",
    question="Does recurrent HTS-PPO learn a task that needs memory, as synchronous PPO does, "
             "and which policy-lag correction does it need there? A feed-forward policy is the "
             "control: without velocities it cannot balance the pole for long.",
    methods=(
        Method("sync_lstm", {"mode": "sync", "core": "lstm"}, "synchronous PPO, LSTM (lag 0)"),
        Method("hts_lstm", {"mode": "hts", "core": "lstm", "correction": "delayed"},
               "HTS-PPO, LSTM, the paper's delayed gradient (Eq. 6: PPO's epochs at θ_{j-1}, "
               "their sum added to θ_j)"),
        Method("hts_lstm_behaviour", {"mode": "hts", "core": "lstm", "correction": "behaviour"},
               "HTS-PPO, LSTM, the reference code's update (the epochs start at θ_j; the ratio, "
               "old values and GAE are θ_{j-1}'s)"),
        Method("hts_lstm_none", {"mode": "hts", "core": "lstm", "correction": "none"},
               "HTS-PPO, LSTM, the lag ignored (everything at θ_j)"),
        Method("hts_ff", {"mode": "hts", "core": "none", "correction": "delayed"},
               "HTS-PPO, feed-forward (the control)"),
        Method("sync_ff", {"mode": "sync", "core": "none"}, "synchronous PPO, feed-forward")),
    tasks=(Task(None, ENV, {"preset": "memory_lstm_ppo", "tensorboard": False,
                            "log_every_s": 60}, 100_000, (0, 1, 2, 3, 4), 10_000,
                target=THRESHOLD, window=1),),
    reference="sync_lstm",
    tables=(Table(columns=(
             Column("seeds", lambda c: str(len(c["seeds"]))),
             Column("final evaluation", render.spread_cell("final_eval")),
             Column("best evaluation", render.spread_cell("best_eval")),
             Column(f"env steps to {THRESHOLD:.0f} (median)", render.steps_cell),
             Column("time to 475: sync_lstm / method", render.ratio_cell),
             Column("SPS", render.spread_cell("sps"))),
    notes=lambda out: (
        f"**Memory: {ENV}** (`--preset=memory_lstm_ppo`; methods in "
        "results/memory/PROTOCOL.md). Evaluations: 10 greedy episodes every 10k env steps, every "
        "evaluation new episodes; the target is one evaluation's mean (a window of 1, not the "
        "paper's 10). Cells: mean [min, max] over seeds (5 seeds: no interval claimed); env "
        "steps to 475 as the median over seeds, a miss counted at the budget (≥); time ratios as "
        "geometric means over the seeds' blocks."),
    block=publish.Block("memory-results", "memory"), doc="docs/results.md"),),
    fixed="2026-11-26 (the grid's runs; rendered from its record on 2026-11-27)",
    changes=("2026-11-27: the report follows the statistics rules (issue 52): [min, max] "
             "labelled so, env steps to 475 as a censored median instead of a mean over the "
             "seeds that reached it, time ratios against `sync_lstm`; no run or value changed.",
             render.PAIRED_CALIBRATION, render.STOLEN_CPU))


def _plot(results: str, runs: List[Dict[str, Any]]) -> None:
  """Evaluation return vs env steps: each method's mean over seeds and its band ([min, max] below 6 seeds)."""
  methods = [m.name for m in GRID.methods if any(r["method"] == m.name for r in runs)]
  lines = {m: [tuple(zip(*r["evals"])) for r in runs if r["method"] == m and r["evals"]]
           for m in methods}  # a run without evaluations has no curve
  plots.band_figure(os.path.join(results, "curves.png"), [(ENV, lines)], xlabel="env steps",
                    ylabel="evaluation return", hline=THRESHOLD)


GRID = dataclasses.replace(GRID, plot=_plot)
