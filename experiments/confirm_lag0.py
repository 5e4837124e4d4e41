r"""Confirmation runs for `--policy_lag=0`: a committed grid run's exact
configuration (its summary.json's `config`) run again as sync and as HTS at lag 0, back to back on
one host, each in a fresh process; then one JSON with both runs' wall times, SPS, hosts and
`param_sha256`s, which must be equal.

  python -m experiments.confirm_lag0 \
      --run=results/gfootball/runs/academy_empty_goal_close/sync_ppo/seed4 \
      --out=results/policy_lag/close_seed4
  python -m experiments.confirm_lag0 --run=... --out=... --report_only   # the JSON again

Each run goes to `<out>/<sync|lag0>/` (summary.json, metrics.csv); `<out>/confirmation.json` holds
the comparison. A finished run is not run again. For an identical run the time to a target is
sync's env steps to it over each schedule's speed: the JSON gives lag 0's wall time over sync's.
"""

import json
import os
import subprocess
import sys

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.results import provenance

flags.DEFINE_string("run", None, "A committed run's folder (its summary.json's config is run).")
flags.DEFINE_string("out", None, "Where the two runs and confirmation.json go.")
flags.DEFINE_enum("only", None, ["sync", "lag0"], "Run this one schedule in this process "
                  "(what the driver starts; not for users).")
flags.DEFINE_bool("report_only", False, "Only write confirmation.json from finished runs.")
FLAGS = flags.FLAGS
SCHEDULES = {"sync": dict(mode="sync", policy_lag=1), "lag0": dict(mode="hts", policy_lag=0)}


def _config(run: str, logdir: str, schedule: str):
  from hts_jax.config import LearnerConfig, RunConfig  # pylint: disable=import-outside-toplevel
  with open(os.path.join(run, "summary.json")) as f:
    saved = dict(json.load(f)["config"])
  learner = dict(saved.pop("learner"))
  learner["correction"] = "none"  # what both schedules run (they force it)
  saved.update(SCHEDULES[schedule], logdir=logdir, overwrite=True, lagged_acting=False)
  saved = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}  # JSON's lists
  return RunConfig.make(learner=LearnerConfig(**learner), **saved)


def _summary(path):
  try:
    with open(os.path.join(path, "summary.json")) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def report(out: str, run: str) -> dict:
  runs = {s: _summary(os.path.join(out, s)) for s in SCHEDULES}
  committed = _summary(run)
  row = {"run": run, "committed_param_sha256": committed and committed["param_sha256"]}
  for name, s in runs.items():
    if s is None:
      continue
    row[name] = {"wall_time_s": s["wall_time_s"], "sps": s["sps"], "env_steps": s["env_steps"],
                 "param_sha256": s["param_sha256"], "final_eval": s["eval"][-1]["mean_return"],
                 "cpu_model": s["host"]["cpu_model"],
                 "calibration_ms": (s["host"].get("calibration") or {}).get("total_ms"),
                 "cpu_steal_share": s["host"].get("cpu_steal_share"),
                 "learner_busy_share": s["learner_busy_share"]}
  if runs["sync"] and runs["lag0"]:
    row["same_param_sha256"] = runs["sync"]["param_sha256"] == runs["lag0"]["param_sha256"]
    row["same_eval"] = ([e["returns"] for e in runs["sync"]["eval"]]
                        == [e["returns"] for e in runs["lag0"]["eval"]])
    row["lag0_time_over_sync"] = runs["lag0"]["wall_time_s"] / runs["sync"]["wall_time_s"]
    row["lag0_sps_over_sync"] = runs["lag0"]["sps"] / runs["sync"]["sps"]
  return provenance.save(os.path.join(out, "confirmation.json"),
                         dict(row, benchmark="confirm_lag0"))


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  if not FLAGS.run or not FLAGS.out:
    cli.fail("--run and --out are required")
  if not os.path.isfile(os.path.join(FLAGS.run, "summary.json")):
    cli.fail(f"--run: no summary.json in {FLAGS.run}")
  if FLAGS.only:
    from hts_jax.runtime import modes  # pylint: disable=import-outside-toplevel
    modes.run(_config(FLAGS.run, os.path.join(FLAGS.out, FLAGS.only), FLAGS.only))
    return
  if not FLAGS.report_only:
    for name in SCHEDULES:  # back to back, each in a fresh process
      if _summary(os.path.join(FLAGS.out, name)) is None:
        subprocess.run([sys.executable, "-m", "experiments.confirm_lag0", f"--run={FLAGS.run}",
                        f"--out={FLAGS.out}", f"--only={name}"], cwd=provenance.ROOT,
                       check=True)
  print(json.dumps(report(FLAGS.out, FLAGS.run), indent=1))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
