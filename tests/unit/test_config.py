"""RunConfig by concern: sections that validate themselves, fields named as their flags, the stored
(flat) form unchanged, each mode's rules."""

import dataclasses

import pytest

from hts_jax import choices, config
from hts_jax.choices import RULES
from hts_jax.config import ConfigError, RunConfig


def test_make_puts_each_flag_in_its_section_and_to_dict_gives_them_back():
  cfg = RunConfig.make(mode="gala", env="CartPole-v1", num_envs=8, num_executors=2,
                       gala_agents=2, gala_gossip="fixed", logdir="runs/x", eval_every=64,
                       learner_devices=(0,), learner={"algo": "a2c", "gamma": 0.9})
  assert (cfg.rollout.num_envs, cfg.gala.agents, cfg.gala.gossip) == (8, 2, "fixed")
  assert (cfg.outputs.logdir, cfg.evaluation.eval_every, cfg.learner.gamma) == ("runs/x", 64, 0.9)
  flat = cfg.to_dict()
  # What summary.json and checkpoints store: one key per flag, as before the sections.
  assert set(flat) == set(config.flag_fields()) | {"mode", "learner"}
  assert flat["gala_agents"] == 2 and flat["learner"]["gamma"] == 0.9
  assert RunConfig.make(**flat).to_dict() == flat and RunConfig.make(**flat) == cfg
  assert cfg.replace(num_envs=4).rollout.num_envs == 4
  assert cfg.replace(seed=3).learner == cfg.learner and cfg.replace(seed=3).rollout.seed == 3


def test_every_flag_name_is_unique_and_sections_are_frozen():
  names = list(config.flag_fields())
  assert len(names) == len(set(names)) == 56  # and mode, and the learner's
  with pytest.raises(dataclasses.FrozenInstanceError):
    RunConfig().rollout.num_envs = 3  # type: ignore[misc]


@pytest.mark.parametrize("values,message", [
    ({"nope": 1}, "unknown config field nope"),
    ({"num_envs": 0}, "num_envs must be >= 1, got 0"),
    ({"eval_episodes": 0}, "eval_episodes must be >= 1"),
    ({"wandb_mode": "x"}, "wandb_mode must be one of"),
    ({"learner_devices": (0, 0)}, "learner_devices must be distinct"),
    ({"process_id": 1}, "process_id must be in [0, num_processes=1)"),
    ({"executor_delay_s": -1.0}, "executor_delay_s must be >= 0"),
    ({"gala_gossip": "x"}, "gala_gossip must be one of"),
    ({"async_batch_unrolls": -1}, "async_batch_unrolls must be >= 0"),
    ({"stop_at_return": 1.0}, "stop_at_return needs eval_every > 0"),
    ({"stop_at_return": 1.0, "eval_every": 20_000, "total_steps": 100_000},
     "--stop_at_return judges the running average over full windows of 10 evaluations, but "
     "--total_steps=100000 with --eval_every=20000 gives 5: evaluate more often"),
    ({"num_envs": 6, "num_executors": 4}, "num_envs (6) must be divisible by num_executors (4)"),
    ({"alternating_groups": True}, "--alternating_groups is an option of --mode=sync"),
    ({"mode": "gala", "gala_agents": 1}, "gala_agents must be >= 2 for --mode=gala"),
    ({"mode": "async", "alpha": 8, "learner": {"algo": "ppo"}}, "--mode=async is IMPALA's"),
])
def test_each_section_checks_its_fields_in_one_line(values, message):
  with pytest.raises(ConfigError) as e:
    RunConfig.make(**values)
  assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_mode_rules_answer_the_modes_questions():
  assert choices.MODES == tuple(RULES) == ("hts", "sync", "async", "gala", "allreduce")
  cfg = RunConfig.make(mode="async", num_envs=8, num_executors=4, num_actors=4, alpha=20,
                       async_batch_unrolls=2, total_steps=1000)
  assert cfg.steps_per_update == 20 * 2 * 2 and cfg.optimizer_steps == cfg.learner_updates
  with pytest.raises(ConfigError, match=r"--correction=truncated_is applies to --mode=hts only.*"
                     r"use one of \('delayed', 'none', 'behaviour', 'decoupled'\)"):
    RunConfig.make(mode="sync", learner={"correction": "truncated_is"})
  # The correction a baseline applies anyway may be named (a preset may name none), and so may
  # behaviour, which is that correction at lag 0 (a preset may name it).
  assert RunConfig.make(mode="sync", learner={"correction": "none"}).mode == "sync"
  behaviour = {"algo": "ppo", "correction": "behaviour"}
  assert RunConfig.make(mode="sync", alpha=8, learner=behaviour).mode == "sync"
  with pytest.raises(ConfigError, match=r"--correction=behaviour does not apply to --algo=a2c.*"
                                        r"use one of \('delayed', 'truncated_is', 'none'\)"):
    RunConfig.make(learner={"algo": "a2c", "correction": "behaviour"})
  assert [RULES[m].reports for m in choices.MODES] == [None, "none", "vtrace", "none", "none"]
  # A mode's rules name its runtime module; those that run in one process refuse more in one line.
  assert [m for m in choices.MODES if RULES[m].multi_process] == ["hts", "sync"]
  for mode in ("async", "gala", "allreduce"):
    with pytest.raises(ConfigError, match="^--num_processes > 1 runs --mode=hts or --mode=sync$"):
      RunConfig.make(mode=mode, num_envs=8, num_executors=2, num_processes=2, gala_agents=2)


def test_config_validation_messages():
  from hts_jax.config import ConfigError
  with pytest.raises(ConfigError, match="alpha must be >= 1"):
    RunConfig.make(alpha=0)
  with pytest.raises(ConfigError, match="must not exceed num_envs"):
    RunConfig.make(num_envs=2, num_executors=4, alpha=5)
  with pytest.raises(ConfigError, match="divisible by num_executors"):
    RunConfig.make(num_envs=6, num_executors=4, alpha=5)
