r"""`hts-plan` past this machine, against the committed H100 run (results/benchmarks/gpu/
h100_2026-11-26/: Atari A2C at 16 envs, PPO at 64 and 256 envs, one run each). Prints one JSON
object.

  python -m experiments.plan_check_gpu --save=results/benchmarks/planner_gpu.json
  python -m experiments.plan_check_gpu --noprobe      # the first reading only (seconds)

Two readings for each pair of an HTS run and the sync run of the same flags and env engine:
1. **composition**: the H100 run's own recorded stage times through the planner's model. Sync's
   update alone U is its learner utilisation x wall time / updates and its rollout R_sync the rest
   of a segment; HTS's update beside the rollout U' likewise, its rollout beside the update
   R' = (wall - U) / updates (the last update runs alone); R_hts is taken as R' (a GPU learner
   takes little CPU from the rollout). Against the measured SPS this checks the composition (the
   first rollout and the last update alone, the overlap's max), not the stage times, which come
   from the same runs; lag 0's SPS is a prediction there (no lag-0 run on the GPU).
2. **from this machine** (`--probe`, Atari A2C only): the probe here on the H100 run's flags,
   rescaled with `--plan_cores` = the H100 host's cores and a learner as much faster as the H100's
   sync update was than the probe's own, against the H100's measured SPS. A PPO update of 8,192
   or 32,768 CNN samples takes tens of seconds on 2 CPU cores: those cases are not probed here.
"""

import json
import os
import sys
import tempfile

from absl import app
from absl import flags

from hts_jax.analysis import planner
from hts_jax.cli import common as cli
from hts_jax.cli import train  # defines the flags the probe's config is read from
from hts_jax.results import provenance

flags.DEFINE_string("gpu_dir", os.path.join(provenance.ROOT, "results", "benchmarks", "gpu",
                                            "h100_2026-11-26"), "The committed GPU run's folder.")
flags.DEFINE_bool("probe", True, "Also probe the Atari A2C case here and rescale it (reading 2).")
flags.DEFINE_float("probe_s", 60.0, "The probe's budget (seconds of timed running).")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance here.")
FLAGS = flags.FLAGS

# (file, part, the HTS run, the sync run): the same flags and env engine (ale-py executors).
PAIRS = [("atari16.json", "atari16", "HTS-A2C, ale-py executors", "sync A2C"),
         ("ppo64.json", "ppo", "HTS-PPO, 64 envs, ale-py executors", "sync PPO, 64 envs"),
         ("ppo256.json", "ppo", "HTS-PPO, 256 envs, ale-py executors", "sync PPO, 256 envs")]


def _rows(path, part):
  with open(path) as f:
    data = json.load(f)
  return {r["run"]: r for r in data["parts"][part]["rows"]}, data.get("cpu_count")


def recorded_stages(hts, sync, cores):
  """The planner's stages from an H100 pair's recorded figures (the module doc, reading 1)."""
  n = sync["updates"]
  assert hts["updates"] == n and hts["env_steps"] == sync["env_steps"], (hts["run"], sync["run"])
  update = sync["learner_utilisation"] * sync["wall_time_s"] / n
  update_beside = hts["learner_utilisation"] * hts["wall_time_s"] / n
  rollout_beside = (hts["wall_time_s"] - update) / n
  return planner.Stages(steps_per_segment=sync["env_steps"] // n, rollout_hts_s=rollout_beside,
                        rollout_sync_s=sync["wall_time_s"] / n - update, update_s=update,
                        rollout_cpu_s=0.0, update_cpu_s=0.0, cores=cores,
                        rollout_beside_s=rollout_beside, update_beside_s=update_beside)


def composition(cores):
  out = []
  for name, part, hts_run, sync_run in PAIRS:
    rows, cpu_count = _rows(os.path.join(FLAGS.gpu_dir, name), part)
    hts, sync = rows[hts_run], rows[sync_run]
    stages = recorded_stages(hts, sync, cpu_count or cores)
    n = sync["updates"]
    predicted = stages.sps(n)
    measured = {"sync": sync["sps"], "lag_1": hts["sps"]}
    out.append({"case": name, "hts": hts_run, "sync": sync_run, "segments": n,
                "stages": stages.to_json(), "predicted_sps": predicted, "measured_sps": measured,
                "predicted_over_measured": {m: predicted[m] / v for m, v in measured.items()}})
  return out


def from_this_machine():
  """Reading 2: the probe here on the H100 Atari A2C run's flags, rescaled."""
  from hts_jax.runtime import probe  # pylint: disable=import-outside-toplevel
  rows, cpu_count = _rows(os.path.join(FLAGS.gpu_dir, "atari16.json"), "atari16")
  hts, sync = rows["HTS-A2C, ale-py executors"], rows["sync A2C"]
  with tempfile.TemporaryDirectory() as logdir:
    flags.FLAGS(["plan_check_gpu", *hts["argv"], f"--logdir={logdir}"], known_only=True)
    cfg = train.build_config()
    found = probe.probe(cfg, budget_s=FLAGS.probe_s)
  here = found.pop("stages")
  gpu_update = sync["learner_utilisation"] * sync["wall_time_s"] / sync["updates"]
  speedup = here.update_s / gpu_update
  there = here.scaled(cores=cpu_count, learner_speedup=speedup)
  n = sync["updates"]
  predicted = there.sps(n)
  measured = {"sync": sync["sps"], "lag_1": hts["sps"]}
  return {"argv": hts["argv"], "probe": found, "stages_here": here.to_json(),
          "cores_there": cpu_count, "learner_speedup": speedup,
          "stages_there": there.to_json(), "predicted_sps": predicted, "measured_sps": measured,
          "predicted_over_measured": {m: predicted[m] / v for m, v in measured.items()}}


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  out = {"gpu_dir": os.path.relpath(FLAGS.gpu_dir, provenance.ROOT),
         "composition": composition(16)}
  if FLAGS.probe:
    out["from_this_machine"] = from_this_machine()
  if FLAGS.save:
    provenance.save(FLAGS.save, dict(out, benchmark="planner_gpu"))
  json.dump(out, sys.stdout, indent=1)
  print()


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
