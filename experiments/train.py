r"""Train with HTS-RL.

  python -m experiments.train --preset=cartpole_ppo --logdir=runs/cartpole
  python -m experiments.train --env=CartPole-v1 --algo=a2c --alpha=5 --num_envs=16 \
      --num_executors=4 --num_actors=2 --total_steps=200000 --seed=1 --logdir=runs/a2c

Writes <logdir>/metrics.csv (one row per learner update) and <logdir>/summary.json.
Bad flag values fail before anything is spawned, with a one-line reason and exit code 2.
"""

import dataclasses
import json
import sys

from absl import app
from absl import flags
from absl import logging

from experiments import cli
from experiments.presets import PRESETS
from hts_jax import config as hts_config

FLAGS = flags.FLAGS

flags.DEFINE_enum("preset", None, sorted(PRESETS), "Named defaults (explicit flags win).")
flags.DEFINE_string("env", "CartPole-v1",
                    "Env: a gymnasium id (CartPole-v1, module:Id-v0), atari:<Game>, vstep.")
flags.DEFINE_string("env_kwargs", "{}", "JSON object of env constructor kwargs.")
flags.DEFINE_enum("algo", "a2c", list(hts_config.ALGOS), "Learning algorithm.")
flags.DEFINE_enum("mode", "hts", list(hts_config.MODES),
                  "hts (HTS-RL), sync (synchronous A2C/PPO baseline), async (IMPALA, V-trace).")
flags.DEFINE_enum("network", "auto", list(hts_config.NETWORKS),
                  "auto: CNN for images, MLP for vectors.")
flags.DEFINE_integer("alpha", 5, "Synchronization interval: steps per env per segment "
                     "(default 5 with --algo=a2c, 128 with --algo=ppo).")
flags.DEFINE_integer("num_envs", 16, "Env replicas.")
flags.DEFINE_integer("num_executors", 4, "Executor processes (num_envs must divide evenly).")
flags.DEFINE_integer("num_actors", 1, "Actor threads (batched inference).")
flags.DEFINE_integer("actor_batch", 0,
                     "Envs per actor policy call, the fixed shape of bitwise determinism "
                     "(0: num_envs // 2); executors step their envs in blocks of this size.")
flags.DEFINE_integer("total_steps", 100_000, "Env steps (rounded up to whole segments).")
flags.DEFINE_integer("seed", 0, "Run seed: everything random derives from it.")
flags.DEFINE_string("logdir", "runs/default", "Output directory.")
flags.DEFINE_enum("correction", "delayed", list(hts_config.CORRECTIONS),
                  "delayed (one-step delayed gradient), truncated_is, none (paper Table A1).")
flags.DEFINE_integer("eval_every", 0, "Env steps between evaluations (0: only at the end).")
flags.DEFINE_integer("eval_episodes", 10, "Episodes per evaluation.")
flags.DEFINE_bool("eval_greedy", True, "Evaluate the greedy (argmax) policy.")
flags.DEFINE_integer("unroll_length", 5, "A2C n-step horizon (must divide alpha).")
flags.DEFINE_enum("optimizer", "rmsprop", list(hts_config.OPTIMIZERS), "Optimizer.")
flags.DEFINE_float("lr", 7e-4, "Learning rate.")
flags.DEFINE_bool("lr_decay", False, "Decay the learning rate linearly to 0 over the run.")
flags.DEFINE_float("gamma", 0.99, "Discount.")
flags.DEFINE_float("gae_lambda", 0.95, "GAE lambda (PPO).")
flags.DEFINE_float("entropy_coef", 0.01, "Entropy bonus coefficient (positive raises entropy).")
flags.DEFINE_float("value_coef", 0.5, "Value loss coefficient.")
flags.DEFINE_float("max_grad_norm", 0.5, "Global gradient-norm clip.")
flags.DEFINE_integer("ppo_epochs", 4, "PPO epochs per segment.")
flags.DEFINE_integer("num_minibatches", 4, "PPO minibatches per epoch (sets of time steps).")
flags.DEFINE_float("clip_eps", 0.2, "PPO clip epsilon.")
flags.DEFINE_integer("learner_devices", 1, "Local devices the learner is data-parallel over.")
flags.DEFINE_integer("actor_devices", 1, "Local devices the policy step is data-parallel over.")
flags.DEFINE_integer("checkpoint_every", 0,
                     "Learner updates between checkpoints (0: only on SIGINT/SIGTERM).")
flags.DEFINE_integer("decorrelate_steps", 0,
                     "Start-state decorrelation: up to this many random actions per env at start.")
flags.DEFINE_bool("envpool", False,
                  "Atari fast path: envpool's thread pool as the executors (num_actors instances).")
flags.DEFINE_bool("vector_envs", True,
                  "Step plain CartPole-v1 blocks in one tight loop (bit-for-bit gymnasium's).")
flags.DEFINE_float("stop_at_return", None,
                   "End the run once the running average return of the 10 most recent "
                   "evaluations reaches this (the paper's required time metric).")
flags.DEFINE_integer("async_batch_unrolls", 0,
                     "--mode=async: actor unrolls per learner update (0: num_actors).")
flags.DEFINE_bool("resume", False, "Continue the run in --logdir from its newest checkpoint.")
flags.DEFINE_float("log_every_s", 5.0, "Seconds between progress lines.")
flags.DEFINE_float("executor_delay_s", 0.0, "Testing: sleep added to every env step.")
flags.DEFINE_float("executor_jitter_s", 0.0,
                   "Testing: uniform random (unseeded) sleep up to this, added to every env step.")
flags.DEFINE_float("learner_delay_s", 0.0, "Testing: sleep added to every learner update.")


# Defaults that depend on --algo, for flags given neither on the command line nor by the preset.
# PPO's segment must hold whole minibatches of time steps: 128 steps per update as in Kostrikov's
# PPO (which the paper uses) and the released HTS-RL PPO scripts.
ALGO_DEFAULTS = {"a2c": {}, "ppo": {"alpha": 128}}


def _value(name):
  """The flag's value, or the preset's when the flag was not given on the command line, or the
  algorithm's default (ALGO_DEFAULTS)."""
  if FLAGS[name].present:
    return FLAGS[name].value
  if FLAGS.preset and name in PRESETS[FLAGS.preset]:
    return PRESETS[FLAGS.preset][name]
  if name != "algo" and name in ALGO_DEFAULTS.get(_value("algo"), {}):
    return ALGO_DEFAULTS[_value("algo")][name]
  return FLAGS[name].value


def build_config() -> hts_config.RunConfig:
  """Reads the flags once into a validated RunConfig (raises ConfigError with one line)."""
  v = _value
  try:
    env_kwargs = json.loads(v("env_kwargs"))
  except json.JSONDecodeError as e:
    raise hts_config.ConfigError(f"--env_kwargs is not valid JSON: {e}") from None
  if not isinstance(env_kwargs, dict):
    raise hts_config.ConfigError("--env_kwargs must be a JSON object")
  total_steps = v("total_steps")
  learner_cfg = hts_config.LearnerConfig(
      algo=v("algo"), correction=v("correction"), optimizer=v("optimizer"), learning_rate=v("lr"),
      max_grad_norm=v("max_grad_norm"), gamma=v("gamma"), gae_lambda=v("gae_lambda"),
      value_coef=v("value_coef"), entropy_coef=v("entropy_coef"),
      unroll_length=v("unroll_length"), ppo_epochs=v("ppo_epochs"),
      num_minibatches=v("num_minibatches"), clip_eps=v("clip_eps"),
      lr_decay_updates=0)
  cfg = hts_config.RunConfig(
      env=v("env"), env_kwargs=env_kwargs, mode=v("mode"), network=v("network"), alpha=v("alpha"),
      num_envs=v("num_envs"), num_executors=v("num_executors"), num_actors=v("num_actors"),
      actor_batch=v("actor_batch"), total_steps=total_steps, seed=v("seed"),
      logdir=v("logdir"), eval_every=v("eval_every"),
      eval_episodes=v("eval_episodes"), eval_greedy=v("eval_greedy"),
      log_every_s=v("log_every_s"), executor_delay_s=v("executor_delay_s"),
      executor_jitter_s=v("executor_jitter_s"), learner_delay_s=v("learner_delay_s"),
      learner_devices=v("learner_devices"), actor_devices=v("actor_devices"),
      checkpoint_every=v("checkpoint_every"), decorrelate_steps=v("decorrelate_steps"),
      envpool=v("envpool"), vector_envs=v("vector_envs"), stop_at_return=v("stop_at_return"),
      async_batch_unrolls=v("async_batch_unrolls"),
      learner=learner_cfg)
  if v("lr_decay"):  # to 0 at the run's last optimizer step, whatever the mode
    cfg = dataclasses.replace(cfg, learner=dataclasses.replace(
        learner_cfg, lr_decay_updates=cfg.optimizer_steps))
  return cfg


def main(argv):
  logging.set_verbosity(logging.WARNING)  # JAX's backend probing is not news to users
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}", 2)
  try:
    cfg = build_config()
    from hts_jax.runtime import modes  # pylint: disable=import-outside-toplevel
    # Validates the env (one instance) and any checkpoint before anything is spawned.
    runner = modes.make_runner(cfg, resume=FLAGS.resume)
  except hts_config.ConfigError as e:
    cli.fail(str(e), 2)
  try:
    summary = runner.run()
  except modes.RunError as e:
    cli.fail(str(e), 1)
  except modes.Interrupted as e:
    cli.fail(str(e), 128 + e.signum)
  except KeyboardInterrupt:
    cli.fail("interrupted (second SIGINT): stopped without a new checkpoint", 130)
  final = summary["eval"][-1]["mean_return"] if summary["eval"] else float("nan")
  print(f"done: {summary['env_steps']:,} env steps in {summary['wall_time_s']:.1f}s "
        f"({summary['sps']:,.0f} sps), {summary['updates']} updates, final eval return "
        f"{final:.1f}, policy lag {summary['policy_lag']['histogram']}, "
        f"param_sha256 {summary['param_sha256'][:16]}..., summary: {cfg.logdir}/summary.json")


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
