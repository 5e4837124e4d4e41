r"""Train with HTS-RL.

  hts-train --preset=cartpole_ppo --logdir=runs/cartpole
  hts-train --env=CartPole-v1 --algo=a2c --alpha=5 --num_envs=16 \
      --num_executors=4 --num_actors=2 --total_steps=200000 --seed=1 --logdir=runs/a2c

From a clone without `pip install`, `python -m experiments.train` is the same program.
Writes <logdir>/metrics.csv (one row per learner update) and <logdir>/summary.json.
Bad flag values fail before anything is spawned, with a one-line reason and exit code 2.
"""

import dataclasses
import os

from absl import flags
from absl import logging

from hts_jax import choices
from hts_jax import config as hts_config
from hts_jax.cli import common as cli
from hts_jax.cli import startup
from hts_jax.presets import PRESETS

FLAGS = flags.FLAGS

# Defaults that depend on --algo, for flags given neither on the command line nor by the preset.
# Each algorithm's launcher defaults (its record in `choices.ALGORITHMS`; PPO's 128 steps per
# update as in Kostrikov's PPO, which the paper uses, and the released HTS-RL PPO scripts).
ALGO_DEFAULTS = {name: algo.defaults for name, algo in choices.ALGORITHMS.items()}

# Every RunConfig / LearnerConfig field is a flag of its own name, type, default and help (its
# docstring; the learner's fields are top level), but these:
RENAMED = {"learning_rate": "lr"}
# lr_decay_updates: set by --lr_decay (bool) to the run's optimizer steps, what users mean.
SKIPPED = ("lr_decay_updates",)


cli.define_config_flags(hts_config.RunConfig, RENAMED, SKIPPED)
FLAGS["num_actors"].help += " " + choices.actors_help()
for _name in {name for defaults in ALGO_DEFAULTS.values() for name in defaults}:
  FLAGS[_name].help += " Default: " + ", ".join(
      f"{ALGO_DEFAULTS[algo].get(_name, FLAGS[_name].default)} with --algo={algo}"
      for algo in choices.ALGOS) + "."
flags.DEFINE_enum("preset", None, sorted(PRESETS), "Named defaults (explicit flags win).")
flags.DEFINE_bool("lr_decay", False, "Decay the learning rate linearly to 0 over the run (or "
                  "over --lr_decay_steps).")
flags.DEFINE_integer("lr_decay_steps", 0, "With --lr_decay: the env steps over which the rate "
                     "decays to 0 (0: the run's --total_steps). A horizon beyond the run keeps "
                     "the schedule of a longer run, e.g. the paper's 5M steps in a 1M-step run.",
                     lower_bound=0)
flags.DEFINE_bool("resume", False, "Continue the run in --logdir from its newest checkpoint.")
# What `--help` lists (`--helpfull`: every flag).
COMMON = ("preset", "env", "mode", "policy_lag", "algo", "seed", "total_steps", "num_envs",
          "num_executors", "num_actors", "alpha", "logdir", "eval_every", "eval_episodes",
          "checkpoint_every", "resume", "overwrite", "lr")


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
  # absl keeps the last of a repeated flag; a preset sets many values at once, so a second one
  # silently replacing the first is refused.
  hts_config.check(FLAGS["preset"].present <= 1,
                   "--preset is given more than once; pass one (explicit flags win over it)")
  cfg = cli.config_from_flags(hts_config.RunConfig, _value, RENAMED, SKIPPED)
  _check_typed_mode_options(cfg)
  if _value("lr_decay"):  # to 0 at the last optimizer step of the horizon, whatever the mode
    horizon = cfg
    if _value("lr_decay_steps"):
      horizon = dataclasses.replace(cfg, rollout=dataclasses.replace(
          cfg.rollout, total_steps=_value("lr_decay_steps")))
    # Past the horizon the rate is 0: those updates would change nothing.
    hts_config.check(horizon.optimizer_steps >= cfg.optimizer_steps,
                     f"--lr_decay_steps={_value('lr_decay_steps')} ends the decay before "
                     f"--total_steps={cfg.rollout.total_steps}: updates "
                     f"{horizon.learner_updates + 1}-{cfg.learner_updates} would train at "
                     f"learning rate 0; pass --lr_decay_steps >= {cfg.rollout.total_steps} or "
                     "leave it out (the run's --total_steps)")
    cfg = dataclasses.replace(cfg, learner=dataclasses.replace(
        cfg.learner, lr_decay_updates=horizon.optimizer_steps))
  elif _value("lr_decay_steps"):
    raise hts_config.ConfigError("--lr_decay_steps needs --lr_decay (the horizon of a decay)")
  return cfg


def _check_typed_mode_options(cfg: hts_config.RunConfig) -> None:
  """Options typed on the command line that the chosen mode does not run are refused in one line
  (a preset's are not: a preset made for one mode may be run in another): another mode's own
  options (`choices.RULES`), and a --correction the mode replaces by its own update."""
  rules = choices.RULES
  for name, (section, _) in hts_config.flag_fields().items():
    users = [m for m, r in rules.items() if r.options == section]
    hts_config.check(not users or section == rules[cfg.mode].options or not FLAGS[name].present,
                     f"--{name} is an option of " + " or ".join(f"--mode={m}" for m in users)
                     + f": it changes nothing with --mode={cfg.mode}")
  if FLAGS["correction"].present:
    rules[cfg.mode].check_given_correction(cfg)


def _checkpoint_note(message: str, logdir: str) -> str:
  """A failure's line as the run left it: the runtime says "the last checkpoint is kept", which
  is only true once one was written (none with --checkpoint_every=0, or before the first)."""
  from hts_jax.runtime.outputs import checkpoint  # pylint: disable=import-outside-toplevel
  kept = "the last checkpoint is kept"
  if kept not in message or checkpoint.steps(logdir):
    return message
  return message.replace(kept, "no checkpoint was written (nothing to --resume from)")


def _process_s():
  """Seconds since this process started (Linux's /proc; None elsewhere)."""
  try:
    with open("/proc/self/stat") as f:
      start = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime, in ticks
    with open("/proc/uptime") as f:
      return float(f.read().split()[0]) - start / os.sysconf("SC_CLK_TCK")
  except (OSError, ValueError, IndexError):
    return None


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
  # From here a signal is the controller's: recorded until it installs its handlers, then acted
  # on at the next segment boundary (or during start-up, at once).
  modes.defer_signals()
  # A failed process of a multi-process run exits at once: jax.distributed's shutdown barrier
  # would wait for the peers, which are still running (the launcher or the coordination service
  # stops them). Its own children and shared memory are cleaned up before that.
  fail = cli.fail if cfg.distributed.num_processes == 1 else cli.fail_now
  try:
    summary = runner.run()
  except modes.RunError as e:
    fail(_checkpoint_note(str(e), cfg.outputs.logdir), 1)
  except modes.Interrupted as e:
    fail(str(e), 128 + e.signum)
  except KeyboardInterrupt:
    # The checkpoint writer may be mid-write: its partial folder goes, and the program ends at
    # once (exit handlers would wait for the writer's threads, which then fail noisily).
    from hts_jax.runtime import logdir  # pylint: disable=import-outside-toplevel
    logdir.remove_partial_checkpoints(cfg.outputs.logdir)
    cli.fail_now("interrupted (second SIGINT): stopped without a new checkpoint", 130)
  final = summary["eval"][-1]["mean_return"] if summary["eval"] else float("nan")
  setting = ("" if summary.get("policy_lag_setting") is None
             else f" (--policy_lag={summary['policy_lag_setting']})" if cfg.mode == "hts"
             else f" (set: {summary['policy_lag_setting']})")
  whole = _process_s()
  whole = "" if whole is None else f"; {whole:.1f}s in all, start-up and compile included"
  print(f"done: {summary['env_steps']:,} env steps in {summary['wall_time_s']:.1f}s of training "
        f"({summary['sps']:,.0f} sps{whole}), {summary['updates']} updates, final eval return "
        f"{final:.1f}, policy lag {summary['policy_lag']['histogram']}{setting}, learner busy "
        f"{summary['learner_busy_share']:.0%}, param_sha256 {summary['param_sha256'][:16]}..., "
        f"summary: {cfg.outputs.logdir}/summary.json")
  if summary.get("lag_note"):
    print(f"note: {summary['lag_note']}")


def run():
  """The `hts-train` console command."""
  # Until the runner is built a signal ends the program at once, from the handler itself: raising
  # from it instead was lost when it landed in JAX's garbage-collector callback ("Exception
  # ignored") and became an ImportError inside a C extension's import. Nothing has been spawned,
  # trained or saved by then, and the logdir's flock goes with the process.
  startup.handle_signals()
  cli.run_main(main, __name__, COMMON)


if __name__ == "__main__":
  run()
