r"""GFootball required-time benchmark (the paper's metric): env steps and wall time until HTS-PPO
reaches a running-average evaluation score >= --target on a scenario (the paper's average over
the 10 most recent evaluations, full windows only, `hts_jax.analysis.metrics.first_reached`).
Prints JSON.

  python -m experiments.bench_gfootball                                  # empty_goal_close
  python -m experiments.bench_gfootball --representation=extracted --num_envs=16

The paper reports 2.0 minutes for academy_empty_goal_close on its 4-GPU desktop (extracted maps,
CNN). On a 2-core CPU the CNN learner dominates, so the default here is the simple115v2 vector
representation with the MLP; pass --representation=extracted for the paper's setting.
"""

import json

from absl import app
from absl import flags

from hts_jax.runs import launch

flags.DEFINE_string("scenario", "academy_empty_goal_close", "GFootball scenario.")
flags.DEFINE_string("representation", "simple115v2", "extracted | simple115v2 | ...")
flags.DEFINE_float("target", 0.8, "Mean evaluation score to reach.")
flags.DEFINE_integer("num_envs", 8, "Env replicas.")
flags.DEFINE_integer("num_executors", 2, "Executor processes.")
flags.DEFINE_integer("alpha", 128, "Segment length.")
flags.DEFINE_integer("max_steps", 400_000, "Give up after this many env steps.")
flags.DEFINE_integer("eval_every", 10_240, "Env steps between evaluations.")
flags.DEFINE_integer("eval_episodes", 10, "Episodes per evaluation.")
flags.DEFINE_integer("seed", 0, "Seed.")
FLAGS = flags.FLAGS


def main(argv):
  del argv
  stacked = FLAGS.representation == "extracted" or FLAGS.representation.startswith("pixels")
  summary = launch.in_process(
      env=f"gfootball:{FLAGS.scenario}",
      env_kwargs={"representation": FLAGS.representation, "stacked": stacked},
      alpha=FLAGS.alpha, num_envs=FLAGS.num_envs, num_executors=FLAGS.num_executors,
      num_actors=1, total_steps=FLAGS.max_steps, seed=FLAGS.seed,
      eval_every=FLAGS.eval_every, eval_episodes=FLAGS.eval_episodes, log_every_s=30,
      stop_at_return=FLAGS.target,
      learner=dict(algo="ppo", optimizer="adam", learning_rate=3e-4, ppo_epochs=4,
                   num_minibatches=4, clip_eps=0.2, entropy_coef=0.01, gamma=0.993,
                   gae_lambda=0.95, max_grad_norm=0.64))
  evals = [(e["env_steps"], round(e["wall_time_s"], 1), e["mean_return"]) for e in summary["eval"]]
  from hts_jax.analysis import metrics  # pylint: disable=import-outside-toplevel
  i = metrics.first_reached([e["mean_return"] for e in summary["eval"]], FLAGS.target)
  hit = None if i is None else summary["eval"][i]
  print(json.dumps({
      "scenario": FLAGS.scenario, "representation": FLAGS.representation,
      "target": FLAGS.target, "reached": hit is not None,
      "env_steps_to_target": hit and hit["env_steps"],
      "wall_time_s_to_target": hit and round(hit["wall_time_s"], 1),
      "sps": round(summary["sps"], 1), "num_envs": FLAGS.num_envs, "alpha": FLAGS.alpha,
      "evals": evals}, indent=1))


if __name__ == "__main__":
  app.run(main)
