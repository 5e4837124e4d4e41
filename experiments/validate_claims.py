r"""The paper's two claims against the real runtime. Prints one JSON object; draws Fig. 3(c) with
the measured async lag overlaid.

  python -m experiments.validate_claims --quick        # about a minute
  python -m experiments.validate_claims --out=runs/claims

Claim 1 (Eq. 7): HTS runs (A2C, MLP, one executor per env) on the variable-step env with
exponential step times of mean m; the measured wall time against Eq. 7 with beta = 1/m and c = 0
("nominal"), and against Eq. 7 with the step time the envs actually took (sleep overshoot
included) and c = the time an env waited for its action per step, both measured in the same run
("calibrated"). `ratio` = measured / predicted.

Claim 2: `--mode=async` runs (one unroll per V-trace update, a learner slowed by
--learner_delay_s) with 1..8 actors. The model's L is the number of updates between an unroll
joining the queue and its own update (`lag_queued`), predicted as rho / (1 - rho) with rho = the
learner's measured busy fraction (the M/M/1 load n lambda0 / mu). `lag` is the full policy lag
IMPALA learns with: it also counts the updates made while the actor was acting, about n - 1 more.
Our actors are a closed system (an actor waits while its unroll is queued, the queue holds at most
n unrolls), so the queued lag stays below the open-queue prediction at high load.
"""

import json
import os
import sys

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.runs import launch

flags.DEFINE_bool("quick", False, "Reduced settings (about a minute).")
flags.DEFINE_string("out", "runs/validate_claims", "Where fig3c_measured.png and rows go.")
flags.DEFINE_float("seconds", 3.0, "Approximate duration of each measured run.")
flags.DEFINE_float("learner_delay_s", 0.001, "Claim 2: added time per async learner update.")
FLAGS = flags.FLAGS

_LEARNER = {"algo": "a2c", "unroll_length": 4}


def _hts(num_envs, alpha, mean_s, steps):
  steps = max(alpha * num_envs, steps // (alpha * num_envs) * alpha * num_envs)
  return launch.in_process(env="vstep", env_kwargs={"dist": "exponential", "mean_s": mean_s},
                       mode="hts", alpha=alpha, num_envs=num_envs, num_executors=num_envs,
                       num_actors=1, total_steps=steps, seed=0, learner=_LEARNER)


def claim1_row(num_envs, alpha, mean_s, seconds):
  from hts_jax.analysis import runtime_model  # pylint: disable=import-outside-toplevel
  s = _hts(num_envs, alpha, mean_s, int(seconds * num_envs / mean_s))
  K, wall = s["env_steps"], s["wall_time_s"]
  step_s = s["timing"]["env_busy_s"] / K  # what a step really took (sleep overshoot included)
  c = s["idle"]["executors_waiting_for_actions"] / K  # an env's wait for its action, per step
  nominal = runtime_model.expected_runtime(K, num_envs, alpha, 1.0 / mean_s, 0.0)
  calibrated = runtime_model.expected_runtime(K, num_envs, alpha, 1.0 / step_s, c)
  row = {"num_envs": num_envs, "alpha": alpha, "step_time_mean_s": mean_s, "env_steps": K,
         "measured_s": round(wall, 4), "predicted_nominal_s": round(nominal, 4),
         "ratio_nominal": round(wall / nominal, 3), "measured_step_s": step_s,
         "actor_c_s": c, "predicted_calibrated_s": round(calibrated, 4),
         "ratio_calibrated": round(wall / calibrated, 3),
         "sync_predicted_s": round(runtime_model.expected_runtime(
             K, num_envs, 1, 1.0 / step_s, c), 4)}
  print(json.dumps(row), file=sys.stderr, flush=True)
  return row


def claim2_row(actors, mean_s, seconds):
  from hts_jax.analysis import lag_model  # pylint: disable=import-outside-toplevel
  alpha = _LEARNER["unroll_length"]  # one unroll = one update's worth per actor
  steps = int(seconds * actors / (alpha * mean_s)) * alpha
  s = launch.in_process(env="vstep", env_kwargs={"dist": "exponential", "mean_s": mean_s},
                    mode="async", alpha=alpha, num_envs=actors, num_executors=actors,
                    num_actors=actors, total_steps=max(steps, 20 * alpha * actors), seed=0,
                    async_batch_unrolls=1, learner_delay_s=FLAGS.learner_delay_s,
                    learner=_LEARNER)
  rho = s["timing"]["learn_s"] / s["wall_time_s"]
  row = {"actors": actors, "step_time_mean_s": mean_s, "updates": s["updates"],
         "rho": round(rho, 3), "lag_queued": s["policy_lag"]["queued"]["mean"],
         "predicted_lag": round(lag_model.lag_from_utilization(min(rho, 0.999)), 3),
         "lag": s["policy_lag"]["mean"], "lag_max": s["policy_lag"]["max"]}
  print(json.dumps(row), file=sys.stderr, flush=True)
  return row


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  from hts_jax.analysis import plots  # pylint: disable=import-outside-toplevel
  seconds = min(FLAGS.seconds, 1.5) if FLAGS.quick else FLAGS.seconds
  c1 = [(16, 4, 4e-3), (16, 32, 4e-3)] if FLAGS.quick else [
      (n, a, m) for n in (4, 16) for a in (4, 32) for m in (2e-3, 8e-3)]
  claim1 = [claim1_row(n, a, m, seconds) for n, a, m in c1]
  claim2 = [claim2_row(k, 4e-3, seconds) for k in ((1, 2, 4) if FLAGS.quick else (1, 2, 4, 6, 8))]
  os.makedirs(FLAGS.out, exist_ok=True)
  fig = plots.fig3c(os.path.join(FLAGS.out, "fig3c_measured.png"), measured=claim2)
  out = {"claim1": claim1, "claim2": claim2, "plots": [fig]}
  with open(os.path.join(FLAGS.out, "rows.json"), "w") as f:
    json.dump(out, f, indent=1)
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
