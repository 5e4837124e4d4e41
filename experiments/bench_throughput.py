r"""Throughput of the HTS runtime (env steps per second, SPS), printed as JSON.

  python -m experiments.bench_throughput            # CartPole (MLP) and Atari Breakout (CNN)
  python -m experiments.bench_throughput --cases=cartpole --steps_scale=0.5

CartPole with an MLP measures the runtime's own overhead (tiny env, tiny network, one A2C step per
128-step segment). Atari uses the paper's CNN and A2C (alpha = unroll = 5, RMSProp) through the
ale-py executors and through envpool (`atari_envpool`): on a CPU the learner bounds it (one
Nature-CNN update per 80 env steps). GFootball (academy_3_vs_1_with_keeper, extracted maps, one
controlled player) uses HTS-PPO. Each row is one real run with summary
fields (SPS, idle seconds of executors, actors and learner).
"""

import json
import os
import sys

from absl import app
from absl import flags

from hts_jax.runs import launch

flags.DEFINE_list("cases", ["cartpole", "atari", "atari_envpool", "gfootball"],
                  "Which cases to run.")
flags.DEFINE_string("atari_game", "Breakout", "Atari game for the CNN case.")
flags.DEFINE_float("steps_scale", 1.0, "Scales every run's env steps.")
flags.DEFINE_list("atari_settings", ["16x4x1", "16x4x2", "16x8x2"],
                  "num_envs x num_executors x num_actors for the Atari case.")
FLAGS = flags.FLAGS

CARTPOLE = [(16, 2, 1), (32, 2, 1), (64, 2, 1), (64, 4, 2)]


def _run(env, network, num_envs, num_executors, num_actors, alpha, steps, envpool=False,
         env_kwargs=None, algo="a2c"):
  learner = (dict(algo="a2c", unroll_length=alpha) if algo == "a2c" else
             dict(algo="ppo", ppo_epochs=2, num_minibatches=4, optimizer="adam",
                  learning_rate=3.43e-4))
  s = launch.in_process(env=env, env_kwargs=env_kwargs or {}, network=network, alpha=alpha,
                        num_envs=num_envs, num_executors=num_executors, num_actors=num_actors,
                        total_steps=steps, envpool=envpool, learner=learner)
  return {"env": env + (" (envpool)" if envpool else ""), "algo": algo, "network": network,
          "num_envs": num_envs, "num_executors": num_executors,
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
      print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
  if "atari" in FLAGS.cases:
    for setting in FLAGS.atari_settings:
      n, e, a = (int(x) for x in setting.split("x"))
      rows.append(_run(f"atari:{FLAGS.atari_game}", "cnn", n, e, a, 5,
                       int(6_000 * FLAGS.steps_scale)))
      print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
  if "atari_envpool" in FLAGS.cases:
    for setting in FLAGS.atari_settings:
      n, e, a = (int(x) for x in setting.split("x"))
      rows.append(_run(f"atari:{FLAGS.atari_game}", "cnn", n, e, a, 5,
                       int(6_000 * FLAGS.steps_scale), envpool=True))
      print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
  if "gfootball" in FLAGS.cases:
    for n, e, a in [(4, 2, 1), (8, 4, 2)]:
      rows.append(_run("gfootball:academy_3_vs_1_with_keeper", "cnn", n, e, a, 32,
                       int(4_096 * FLAGS.steps_scale), algo="ppo"))
      print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
  print(json.dumps({"device": str(jax.devices()[0]), "cpu_count": os.cpu_count(), "rows": rows},
                   indent=1))


if __name__ == "__main__":
  app.run(main)
