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

from absl import app
from absl import flags

from hts_jax.envs import costs
from hts_jax.results import provenance

flags.DEFINE_list("envs", ["gfootball:academy_empty_goal_close"], "Env names (--env's syntax).")
flags.DEFINE_string("env_kwargs", "{}", "JSON env_kwargs for every env of --envs.")
flags.DEFINE_integer("steps", 3000, "Timed steps per env (resets between them timed apart).")
flags.DEFINE_integer("seed", 0, "Seeds the first reset and the random actions.")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance (date, machine, "
                    "commit, command) here.")
FLAGS = flags.FLAGS


def main(argv):
  del argv
  kwargs = json.loads(FLAGS.env_kwargs)
  out = {"benchmark": "env_costs", "env_kwargs": kwargs,
         "envs": {name: costs.measure(name, kwargs, FLAGS.steps, FLAGS.seed)
                  for name in FLAGS.envs}}
  print(json.dumps(out, indent=1))
  if FLAGS.save:
    provenance.save(FLAGS.save, out)


if __name__ == "__main__":
  app.run(main)
