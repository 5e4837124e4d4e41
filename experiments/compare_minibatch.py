r"""PPO's minibatches as shuffled transitions vs whole time steps, measured on CartPole.

  python -m experiments.compare_minibatch --seeds=3 --logroot=runs/minibatch

For each seed, runs the `cartpole_ppo` preset (HTS-PPO) with `--minibatch=transitions` (each
env's steps shuffled on their own, the default) and `--minibatch=time_steps` (all envs of the
chosen steps), evaluating every 10k steps, and prints JSON: per run the final metric (mean of the
last 3 evaluations) and the env steps at which the running average of 3 evaluations first reached
475; then the means per setting.
"""

import json

import numpy as np
from absl import app
from absl import flags

from hts_jax.results import sweeps
from hts_jax.analysis import metrics

flags.DEFINE_integer("seeds", 3, "Seeds per setting.")
flags.DEFINE_integer("total_steps", 100_000, "Env steps per run.")
flags.DEFINE_string("logroot", "runs/minibatch", "Where the runs go.")
FLAGS = flags.FLAGS

TARGET, WINDOW = 475.0, 3


def main(_):
  rows = []
  for seed in range(FLAGS.seeds):
    base = {"preset": "cartpole_ppo", "seed": seed, "total_steps": FLAGS.total_steps,
            "eval_every": 10_000, "log_every_s": 1000}
    for r in sweeps.run_sweep("minibatch", ["transitions", "time_steps"], base,
                              f"{FLAGS.logroot}/seed{seed}", last=WINDOW):
      run = metrics.load_run(r["logdir"])
      reached = metrics.required_time_metric(run, TARGET, WINDOW)["env_steps"]
      rows.append({"minibatch": r["minibatch"], "seed": seed, "final_metric": r["final_metric"],
                   "steps_to_475": reached, "sps": r["sps"]})
      print(json.dumps(rows[-1]), flush=True)
  summary = {}
  for mode in ("transitions", "time_steps"):
    mine = [r for r in rows if r["minibatch"] == mode]
    summary[mode] = {
        "final_metric_mean": float(np.mean([r["final_metric"] for r in mine])),
        "runs_reaching_475": int(sum(np.isfinite(r["steps_to_475"]) for r in mine)),
        "steps_to_475_median": float(np.median([r["steps_to_475"] for r in mine])),
        "sps_median": float(np.median([r["sps"] for r in mine]))}
  print(json.dumps({"runs": rows, "summary": summary}, indent=1))


if __name__ == "__main__":
  app.run(main)
