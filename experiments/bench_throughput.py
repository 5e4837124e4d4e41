r"""Throughput of the HTS runtime (env steps per second, SPS), printed as JSON.

  python -m experiments.bench_throughput            # CartPole (MLP) and Atari Breakout (CNN)
  python -m experiments.bench_throughput --cases=cartpole --steps_scale=0.5

CartPole with an MLP measures the runtime's own overhead (tiny env, tiny network, one A2C step per
128-step segment). Atari uses the paper's CNN and A2C (alpha = unroll = 5, RMSProp): on a CPU the
learner bounds it (one Nature-CNN update per 80 env steps). Each row is one real run with summary
fields (SPS, idle seconds of executors, actors and learner).
"""

import contextlib
import json
import os
import sys
import tempfile

from absl import app
from absl import flags

flags.DEFINE_list("cases", ["cartpole", "atari"], "Which cases to run.")
flags.DEFINE_string("atari_game", "Breakout", "Atari game for the CNN case.")
flags.DEFINE_float("steps_scale", 1.0, "Scales every run's env steps.")
flags.DEFINE_list("atari_settings", ["16x4x1", "16x4x2", "16x8x2"],
                  "num_envs x num_executors x num_actors for the Atari case.")
FLAGS = flags.FLAGS

CARTPOLE = [(16, 2, 1), (32, 2, 1), (64, 2, 1), (64, 4, 2)]


def _run(env, network, num_envs, num_executors, num_actors, alpha, steps):
  from hts_jax.config import LearnerConfig, RunConfig  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime import hts  # pylint: disable=import-outside-toplevel
  with tempfile.TemporaryDirectory() as logdir:
    cfg = RunConfig(env=env, network=network, alpha=alpha, num_envs=num_envs,
                    num_executors=num_executors, num_actors=num_actors, total_steps=steps,
                    logdir=logdir, eval_episodes=1, log_every_s=1e9,
                    learner=LearnerConfig(algo="a2c", unroll_length=alpha))
    with contextlib.redirect_stdout(sys.stderr):
      s = hts.run(cfg)
  return {"env": env, "network": network, "num_envs": num_envs, "num_executors": num_executors,
          "num_actors": num_actors, "alpha": alpha, "env_steps": s["env_steps"],
          "wall_time_s": round(s["wall_time_s"], 3), "sps": round(s["sps"], 1),
          "learn_s": round(s["timing"]["learn_s"], 3),
          "idle_s": {k: round(v, 3) for k, v in s["idle"].items()}}


def main(argv):
  del argv
  import jax  # pylint: disable=import-outside-toplevel
  rows = []
  if "cartpole" in FLAGS.cases:
    for n, e, a in CARTPOLE:
      rows.append(_run("CartPole-v1", "mlp", n, e, a, 128, int(200_000 * FLAGS.steps_scale)))
      print(json.dumps(rows[-1]), flush=True)
  if "atari" in FLAGS.cases:
    for setting in FLAGS.atari_settings:
      n, e, a = (int(x) for x in setting.split("x"))
      rows.append(_run(f"atari:{FLAGS.atari_game}", "cnn", n, e, a, 5,
                       int(6_000 * FLAGS.steps_scale)))
      print(json.dumps(rows[-1]), flush=True)
  print(json.dumps({"device": str(jax.devices()[0]), "cpu_count": os.cpu_count(), "rows": rows},
                   indent=1))


if __name__ == "__main__":
  app.run(main)
