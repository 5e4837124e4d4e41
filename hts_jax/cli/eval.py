r"""Evaluates a run's trained policy (`<logdir>/policy/`, which every run writes when it ends, or a
checkpoint it kept): N episodes on fresh replicas of its env, the mean return and [min, max].

  hts-eval runs/quickstart
  hts-eval runs/quickstart --episodes=20 --nogreedy --json
  hts-eval runs/quickstart --video             # also records episode 0 to <logdir>/videos/
  hts-eval runs/quickstart --checkpoint=40     # checkpoint 40 of <logdir>/checkpoints/

Evaluation k plays the episodes that a run's k-th evaluation plays (`seeding.eval_episode_seed`):
by default the k after the run's last evaluation (episodes no evaluation of the run played);
`--eval_index=K` replays the run's evaluation K with the same episodes and actions, so
`--eval_index` of the run's final evaluation, with its episode count, gives its returns back.
`python -m experiments.eval` from a clone. The policy in a script: `hts_jax.load_policy(logdir)`.
"""

import json
import os
import sys

from absl import flags
from absl import logging

from hts_jax.cli import common as cli

flags.DEFINE_integer("episodes", 10, "Episodes to play.", lower_bound=1)
flags.DEFINE_enum("greedy", "run", ["run", "true", "false"], "run: act as the run's evaluations "
                  "did (the env's default or --eval_greedy); true: the head's mode (argmax, the "
                  "Gaussian's mean); false: sampled actions.")
flags.DEFINE_integer("eval_index", -1, "Which evaluation's episodes to play (-1: the one after "
                     "the run's last).", lower_bound=-1)
flags.DEFINE_integer("max_steps", -1, "Steps an episode may take before it is cut (-1: the "
                     "run's --eval_max_steps; 0: the hard cap).", lower_bound=-1)
flags.DEFINE_integer("checkpoint", -1, "Evaluate checkpoint N kept in <logdir>/checkpoints/ (its "
                     "update number) instead of the final export in <logdir>/policy/ (-1).",
                     lower_bound=-1)
flags.DEFINE_bool("video", False, "Also record episode 0 into <logdir>/videos/.")
flags.DEFINE_bool("json", False, "Print one JSON object instead of a line.")
FLAGS = flags.FLAGS


def _played(logdir: str, spec: dict) -> int:
  """The evaluations the run played: a checkpoint's count stops at its boundary and the run went
  on, so its export's count when it wrote one (the later of the two)."""
  from hts_jax import trained  # pylint: disable=import-outside-toplevel
  try:
    final = trained.read_spec(logdir).get("evaluations", 0)
  except trained.PolicyError:
    final = 0
  return max(final, spec.get("evaluations", 0))


def evaluate(path: str) -> dict:
  """The evaluation the flags ask for, of the policy exported at `path`."""
  from hts_jax import networks, trained  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime.outputs import evaluation  # pylint: disable=import-outside-toplevel
  if FLAGS.checkpoint >= 0:
    policy, logdir = trained.load_checkpoint(path, FLAGS.checkpoint), path
  else:
    policy = trained.load_policy(path)
    logdir = os.path.dirname(os.path.abspath(policy.spec["folder"]))
  spec = policy.spec
  greedy = spec["greedy"] if FLAGS.greedy == "run" else FLAGS.greedy == "true"
  index = _played(logdir, spec) if FLAGS.eval_index < 0 else FLAGS.eval_index
  max_steps = spec.get("eval_max_steps", 0) if FLAGS.max_steps < 0 else FLAGS.max_steps
  evaluator = evaluation.Evaluator(
      policy.env, policy.env_kwargs, policy.network.apply, FLAGS.episodes, spec["seed"],
      greedy=greedy, num_agents=policy.num_agents, head=policy.head,
      core_size=networks.state_size(policy.network), max_steps=max_steps,
      video_dir=os.path.join(logdir, "videos"))
  try:
    returns = evaluator.evaluate(policy.params, index=index)
    out = {"policy": spec["folder"], "env": policy.env, "episodes": len(returns),
           "eval_index": index, "greedy": greedy, "mean_return": sum(returns) / len(returns),
           "min_return": min(returns), "max_return": max(returns),
           "returns": [float(r) for r in returns], "cut": evaluator.last_cut,
           "param_sha256": spec["param_sha256"], "env_steps": spec["env_steps"],
           "updates": spec["updates"], "ended": spec.get("ended")}
    if FLAGS.video:
      os.makedirs(evaluator.video_dir, exist_ok=True)
      out["video"] = evaluator.record(policy.params, spec["env_steps"], index=index)
  finally:
    evaluator.close(wait=False)
  return out


def main(argv):
  logging.set_verbosity(logging.WARNING)
  if len(argv) != 2:
    cli.fail("usage: hts-eval LOGDIR [--checkpoint=N] [--episodes=N] [--greedy=run|true|false] "
             "[--video] [--json] (one run's logdir, or its policy/ folder)", 2)
  from hts_jax import trained  # pylint: disable=import-outside-toplevel
  from hts_jax.config import ConfigError  # pylint: disable=import-outside-toplevel
  try:
    out = evaluate(argv[1])
  except (trained.PolicyError, ConfigError) as e:
    cli.fail(str(e), 2)
  if FLAGS.json:
    json.dump(out, sys.stdout, indent=1)
    print()
    return
  cut = f", {out['cut']} cut at the step cap" if out["cut"] else ""
  print(f"{out['env']}: mean return {out['mean_return']:.2f} [{out['min_return']:.2f}, "
        f"{out['max_return']:.2f}] over {out['episodes']} episodes "
        f"({'greedy' if out['greedy'] else 'sampled'}, evaluation {out['eval_index']}{cut}) of "
        f"the policy after {out['env_steps']:,} env steps ({out['updates']} updates"
        f"{', checkpoint' if FLAGS.checkpoint >= 0 else ''})")
  if "video" in out:
    print(f"video: {out['video']['path']}")


def run():
  """The `hts-eval` console command."""
  cli.run_main(main, __name__)


if __name__ == "__main__":
  run()
