r"""Which policy lag reaches a score sooner: a probe of at most --probe_s seconds on your flags,
then the SPS of sync, HTS at --policy_lag=0 (sync's run, bit for bit) and HTS at --policy_lag=1 (the
paper's), and a recommendation.

  hts-plan --preset=gfootball_ppo
  hts-plan --preset=atari_a2c --plan_learner_speedup=20 --plan_cores=16   # another machine
  hts-plan --stages=stages.json --json                                    # no probe

Takes every flag of `hts-train` (`python -m experiments.plan` from a clone). The probe runs a few
segments of lag 0, sync and lag 1 in this process (each compiled first) and times each stage:
the rollout under HTS's schedule and under sync's lockstep, the update alone, and the CPU seconds
of each (`hts_jax/analysis/planner.py` is the model). Where a grid has measured lag 1's sample
cost on the env's task (results/headline.json), the recommendation is by time to that target;
elsewhere by SPS, and lag 1's score is then not assured to be sync's.
"""

import json
import math
import os
import sys
from typing import Any, Dict, Optional

from absl import flags
from absl import logging

from hts_jax import config as hts_config
from hts_jax.analysis import planner
from hts_jax.cli import common as cli
from hts_jax.cli import train

flags.DEFINE_integer("probe_segments", 8, "Segments per probe run (fewer where the runs would "
                     "take more than --probe_s).", lower_bound=3)
flags.DEFINE_float("probe_s", 60.0, "Seconds of timed running the probe may take (its three "
                   "runs together; compiling is extra).", lower_bound=1.0)
flags.DEFINE_bool("probe_lag_1", True, "Also run lag 1 in the probe, to show its measured SPS "
                  "beside the prediction.")
flags.DEFINE_string("stages", None, "Plan from these stage times (a JSON file of "
                    "hts_jax.analysis.planner.Stages' fields, as --json prints) instead of a "
                    "probe.")
flags.DEFINE_float("plan_cores", None, "Plan for this many cores (default: the probe's).")
flags.DEFINE_float("plan_learner_speedup", 1.0, "Plan for a learner this many times faster (an "
                   "accelerator).", lower_bound=1e-6)
flags.DEFINE_string("plan_step_times", None, "Plan for env step times from this file (seconds "
                    "per env step: a JSON list, or one number per line); their mean against the "
                    "probe's sets how much faster the envs step.")
flags.DEFINE_integer("plan_segments", 0, "Predict for a run of this many segments (0: the "
                     "configured --total_steps').", lower_bound=0)
flags.DEFINE_bool("json", False, "Print one JSON object instead of a table.")
FLAGS = flags.FLAGS


def _step_times(path: str) -> float:
  """The mean of the step times in `path`."""
  try:
    with open(path) as f:
      text = f.read()
  except OSError as e:
    raise hts_config.ConfigError(f"--plan_step_times: cannot read {path}: {e.strerror}") from None
  try:
    values = json.loads(text) if text.lstrip().startswith("[") else [
        float(x) for x in text.split()]
    values = [float(v) for v in values]
  except (ValueError, TypeError):
    raise hts_config.ConfigError(f"--plan_step_times: {path} holds no list of seconds") from None
  if not values or not all(math.isfinite(v) and v > 0 for v in values):
    raise hts_config.ConfigError(f"--plan_step_times: {path} needs positive finite seconds")
  return sum(values) / len(values)


def _stages_file(path: str) -> planner.Stages:
  try:
    with open(path) as f:
      return planner.Stages(**json.load(f))
  except OSError as e:
    raise hts_config.ConfigError(f"--stages: cannot read {path}: {e.strerror}") from None
  except (ValueError, TypeError) as e:
    raise hts_config.ConfigError(f"--stages: {path} is not a Stages JSON object: "
                                 f"{str(e).splitlines()[0]}") from None


def family_sample_cost(env: str, root: Optional[str] = None) -> Optional[Dict[str, Any]]:
  """Lag 1's measured sample cost on `env`'s task, from the grids' headline
  (results/headline.json): sync's env steps to the task's target over HTS's at lag 1 (with the
  presets' correction; a bound where a run missed the target), over how many paired blocks;
  None where no grid measured it."""
  from hts_jax.results import provenance  # pylint: disable=import-outside-toplevel
  path = os.path.join(root or provenance.ROOT, "results", "headline.json")
  try:
    with open(path) as f:
      tasks = json.load(f)["tasks"]
  except (OSError, ValueError, KeyError):
    return None
  name = env.split(":", 1)[-1]
  for task in tasks:
    if task["task"] != name:
      continue
    sync_key = next((k for k in task["methods"] if k in ("sync_ppo", "a2c")), None)
    ratio = sync_key and task["methods"][sync_key]["steps"]
    if not ratio or not ratio.get("mean"):
      return None
    return {"task": name, "target": task["target"], "grid": task["grid"],
            "sync_over_hts_steps": ratio["mean"], "bound": ratio.get("bound"),
            "blocks": ratio["n"]}
  return None


def plan(cfg: hts_config.RunConfig) -> dict:
  """The probe (or --stages), the scaled stages and the predictions, as one JSON-able dict."""
  from hts_jax.runtime import probe  # pylint: disable=import-outside-toplevel
  out = {"env": cfg.rollout.env, "algo": cfg.learner.algo}
  if FLAGS.stages:
    stages = _stages_file(FLAGS.stages)
  else:
    probe.check_probeable(cfg)
    found = probe.probe(cfg, FLAGS.probe_segments, FLAGS.probe_s, FLAGS.probe_lag_1)
    stages = found.pop("stages")
    out["probe"] = found
  env_speedup = 1.0
  if FLAGS.plan_step_times:
    measured = stages.env_hts_s / stages.steps_per_segment  # seconds per env step
    env_speedup = measured / _step_times(FLAGS.plan_step_times)
  scaled = stages.scaled(FLAGS.plan_cores, FLAGS.plan_learner_speedup, env_speedup)
  segments = FLAGS.plan_segments or cfg.rollout.num_segments
  sps = scaled.sps(segments)
  out.update(stages=stages.to_json(), planned_stages=scaled.to_json(), segments=segments,
             predicted_sps=sps,
             learner_busy_share={m: scaled.learner_share(m, segments) for m in planner.MODES},
             bound={m: scaled.bound(m) for m in planner.MODES})
  cost = family_sample_cost(cfg.rollout.env)
  if cost is not None:
    out["sample_cost"] = cost
  ratio = None if cost is None else 1.0 / cost["sync_over_hts_steps"]
  out["recommendation"] = planner.recommend(sps, ratio)
  return out


def _print(out: dict) -> None:
  names = {"sync": "sync", "lag_0": "HTS --policy_lag=0", "lag_1": "HTS --policy_lag=1"}
  measured = out.get("probe", {}).get("measured", {})
  print(f"{'schedule':<20} {'predicted SPS':>14} {'probe SPS':>10} {'learner busy':>13}  bound")
  for m in planner.MODES:
    got = measured.get(m, {}).get("sps")
    print(f"{names[m]:<20} {out['predicted_sps'][m]:>14,.0f} "
          f"{'-' if got is None else f'{got:,.0f}':>10} {out['learner_busy_share'][m]:>13.0%}  "
          f"{out['bound'][m]}")
  rec = out["recommendation"]
  cost = out.get("sample_cost")
  if cost:
    print(f"lag 1's sample cost on {cost['task']} (target {cost['target']}, {cost['grid']} grid): "
          f"sync needs {cost['sync_over_hts_steps']:.2f}x lag 1's env steps")
  lag_0 = "sync's run, bit for bit" if rec["policy_lag"] == 0 else "its own learning"
  print(f"recommended: --policy_lag={rec['policy_lag']} ({lag_0}); lag 1 takes "
        f"{rec['lag_1_time_over_lag_0']:.2f}x lag 0's time, by {rec['basis']}")
  if "probe" in out:
    p = out["probe"]
    print(f"probe: {p['timed_s']:.1f} s timed, {p['compile_s']:.1f} s compiling, "
          f"{p['probe_s']:.1f} s in all")


def main(argv):
  logging.set_verbosity(logging.WARNING)
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}", 2)
  from hts_jax.runtime import errors  # pylint: disable=import-outside-toplevel
  try:
    cfg = train.build_config()
    out = plan(cfg)
  except hts_config.ConfigError as e:
    cli.fail(str(e), 2)
  except errors.RunError as e:
    cli.fail(f"the probe failed: {e}", 1)
  if FLAGS.json:
    json.dump(out, sys.stdout, indent=1)
    print()
  else:
    _print(out)


def run():
  """The `hts-plan` console command."""
  cli.run_main(main, __name__)


if __name__ == "__main__":
  run()
