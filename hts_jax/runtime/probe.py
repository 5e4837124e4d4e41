"""The planner's probe (`hts-plan`): a few segments of the user's configuration under each
schedule, in this process, timed stage by stage (`analysis.planner`).

HTS at `--policy_lag=0` and sync never overlap their rollout and update, so their runs time each
stage alone: the rollout under HTS's schedule and under sync's lockstep, the update, and the CPU
seconds each uses (every process of the run). A short lag-1 run measures what the model predicts
for it, beside the prediction. Each run compiles before its clock starts (the compile is reported
apart) and evaluates nothing but one short episode at its end.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import os
import sys
import tempfile
import time
from typing import Any, Dict

from hts_jax.analysis import planner
from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime import host

# What a probe run leaves out: outputs, evaluations beyond one short episode, the calibration.
QUIET = dict(checkpoint_every=0, eval_every=0, eval_episodes=1, eval_max_steps=50,
             video_every=0, video_final=False, stop_at_return=None, tensorboard=False,
             wandb_project="", log_every_s=1e9, host_calibration=False, overwrite=True)
MIN_SEGMENTS = 3
MAX_SEGMENTS = 2000


def run_for(config: RunConfig, segments: int, mode: str, policy_lag: int) -> Dict[str, Any]:
  """`config` as `mode` at `policy_lag` (sync: 1 stands for its own lag 0), run for `segments`
  segments in a temporary logdir, its progress lines on stderr; its summary.json, with its first
  segment's excess (`planner.first_segment_excess_s`). Sync and lag 0 run the plain update (what
  they force); lag 1 the configured correction."""
  from hts_jax.runtime import modes  # pylint: disable=import-outside-toplevel
  learner = config.learner
  if mode == "sync" or policy_lag == 0:
    learner = dataclasses.replace(learner, correction="none", acting_extrapolation=0.0)
  with tempfile.TemporaryDirectory() as logdir:
    cfg = config.replace(**{**QUIET, "mode": mode, "policy_lag": policy_lag, "learner": learner,
                            "lagged_acting": False, "alternating_groups": False,
                            "logdir": logdir,
                            "total_steps": segments * config.rollout.steps_per_segment})
    with contextlib.redirect_stdout(sys.stderr):
      out = modes.run(cfg)
    with open(os.path.join(logdir, "metrics.csv"), newline="") as f:
      walls = [float(row["wall_time_s"]) for row in csv.DictReader(f)]
  out["first_segment_excess_s"] = planner.first_segment_excess_s(walls)
  return out


def check_probeable(config: RunConfig) -> None:
  """The planner compares HTS with sync: a one-process HTS or sync configuration."""
  if config.mode not in ("hts", "sync"):
    raise ConfigError(f"hts-plan compares --mode=hts and --mode=sync, got --mode={config.mode}")
  if config.distributed.num_processes > 1:
    raise ConfigError("hts-plan probes one process: plan a multi-process run from one of its "
                      "processes' flags (--num_processes=1, num_envs per process)")


def probe(config: RunConfig, segments: int = 8, budget_s: float = 60.0,
          lag_1: bool = True) -> Dict[str, Any]:
  """Runs lag 0, sync and (with `lag_1`) lag 1 and times their stages. A first lag-0 run of
  `segments` segments sets the pace; where three runs of at least twice as many segments fit in
  what is left of `budget_s` (timed running), lag 0 runs again at that length and so do the
  others (at most MAX_SEGMENTS); else the others run `segments` (fewer, at least MIN_SEGMENTS,
  where they would not fit). Returns the stages, each run's measured SPS and learner busy share,
  and the seconds spent (timed and compiling)."""
  check_probeable(config)
  t0 = time.perf_counter()
  lag_0 = run_for(config, segments, "hts", 0)
  timed, compiled = lag_0["wall_time_s"], lag_0["timing"]["compile_s"]
  per_segment = lag_0["wall_time_s"] / max(lag_0["updates"], 1)
  left = budget_s - lag_0["wall_time_s"]
  runs_left = 3 if lag_1 else 2
  n = min(MAX_SEGMENTS, int(left / (runs_left * per_segment * 1.2)))
  if n >= 2 * segments:
    lag_0 = run_for(config, n, "hts", 0)
    timed, compiled = timed + lag_0["wall_time_s"], compiled + lag_0["timing"]["compile_s"]
  else:
    n = max(MIN_SEGMENTS, min(segments, int(left / ((runs_left - 1) * per_segment * 1.2))))
  runs = {"lag_0": lag_0, "sync": run_for(config, n, "sync", 1)}
  if lag_1:
    runs["lag_1"] = run_for(config, n, "hts", 1)
  for s in list(runs.values())[1:]:
    timed, compiled = timed + s["wall_time_s"], compiled + s["timing"]["compile_s"]
  stages = planner.stages_of(lag_0, runs["sync"], host.usable_cores(), runs.get("lag_1"))
  return {"stages": stages,
          "measured": {m: {"sps": s["sps"], "segments": s["updates"],
                           "learner_busy_share": s["learner_busy_share"],
                           "param_sha256": s["param_sha256"]} for m, s in runs.items()},
          "timed_s": timed, "compile_s": compiled, "probe_s": time.perf_counter() - t0}
