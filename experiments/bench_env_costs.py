r"""What one env replica's step and reset cost, under a uniformly random policy, in this process.
Prints one JSON object; `--save` also writes it with its provenance.

  python -m experiments.bench_env_costs --envs=gfootball:academy_empty_goal_close \
      --env_kwargs='{"representation":"simple115v2","stacked":false}' \
      --save=results/gfootball/env_costs.json

Per env: the median and mean milliseconds of a step and of a reset (as training resets: no new
seed after the first), the random policy's mean episode length, and `reset_in_steps`, a reset's
cost in mean steps. A run's steps per second falls as its policy shortens episodes (more resets
per step), and a barrier that waits for the slowest env loses more where resets make step times
vary: the GFootball report reads this file beside the runs' episode lengths.
"""

import json
import statistics
import time

from absl import app
from absl import flags

from hts_jax.results import provenance

flags.DEFINE_list("envs", ["gfootball:academy_empty_goal_close"], "Env names (--env's syntax).")
flags.DEFINE_string("env_kwargs", "{}", "JSON env_kwargs for every env of --envs.")
flags.DEFINE_integer("steps", 3000, "Timed steps per env (resets between them timed apart).")
flags.DEFINE_integer("seed", 0, "Seeds the first reset and the random actions.")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance (date, machine, "
                    "commit, command) here.")
FLAGS = flags.FLAGS


def measure(name: str, env_kwargs, steps: int, seed: int):
  """One replica of `name`: `steps` timed random steps, every episode end a timed reset."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  from hts_jax import envs  # pylint: disable=import-outside-toplevel
  env = envs.make_env(name, env_kwargs, train=True)
  try:
    env.reset(seed=seed)
    env.action_space.seed(seed)
    step_ms, reset_ms, lengths, length = [], [], [], 0
    while len(step_ms) < steps:
      action = env.action_space.sample()
      t = time.perf_counter()
      _, _, terminated, truncated, _ = env.step(action)
      step_ms.append(1e3 * (time.perf_counter() - t))
      length += 1
      if terminated or truncated:
        t = time.perf_counter()
        env.reset()
        reset_ms.append(1e3 * (time.perf_counter() - t))
        lengths.append(length)
        length = 0
  finally:
    env.close()
  mean_step = float(np.mean(step_ms))
  out = {"env": name, "steps": len(step_ms), "resets": len(reset_ms),
         "step_ms": {"median": statistics.median(step_ms), "mean": mean_step},
         "reset_ms": None, "reset_in_steps": None,
         "random_episode_length": float(np.mean(lengths)) if lengths else None}
  if reset_ms:
    out["reset_ms"] = {"median": statistics.median(reset_ms), "mean": float(np.mean(reset_ms))}
    out["reset_in_steps"] = out["reset_ms"]["mean"] / mean_step
  return out


def main(argv):
  del argv
  kwargs = json.loads(FLAGS.env_kwargs)
  out = {"benchmark": "env_costs", "env_kwargs": kwargs,
         "envs": {name: measure(name, kwargs, FLAGS.steps, FLAGS.seed) for name in FLAGS.envs}}
  print(json.dumps(out, indent=1))
  if FLAGS.save:
    provenance.save(FLAGS.save, out)


if __name__ == "__main__":
  app.run(main)
