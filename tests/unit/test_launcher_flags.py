"""The launcher's flags without a run: every config field is a flag with its default and docstring,
presets and every algorithm and mode build, the learning-rate horizon."""

import dataclasses
import json
import typing

import pytest

from hts_jax import choices, config
from hts_jax.presets import PRESETS


def _build_config(*flags):
  from absl import flags as absl_flags  # pylint: disable=import-outside-toplevel
  from experiments import train  # pylint: disable=import-outside-toplevel
  absl_flags.FLAGS.unparse_flags()
  absl_flags.FLAGS(["train", *flags])
  try:
    return train.build_config()
  finally:
    absl_flags.FLAGS.unparse_flags()


def test_every_config_field_is_a_flag_with_its_default_and_docstring():
  """The flags are generated from RunConfig's and LearnerConfig's fields; train.RENAMED and
  train.SKIPPED list the exceptions."""
  from absl import flags as absl_flags  # pylint: disable=import-outside-toplevel
  from experiments import train  # pylint: disable=import-outside-toplevel
  from hts_jax.cli import common as cli  # pylint: disable=import-outside-toplevel
  sections = [t for t in typing.get_type_hints(config.RunConfig).values()
              if dataclasses.is_dataclass(t)]
  assert len(sections) == 11  # rollout ... testing, the learner
  for cls in (config.RunConfig, *sections):
    docs = cli.field_docs(cls)
    for field in dataclasses.fields(cls):
      assert docs.get(field.name), f"{cls.__name__}.{field.name} has no docstring"
      if field.name in train.SKIPPED or dataclasses.is_dataclass(field.default_factory):
        continue
      name = train.RENAMED.get(field.name, getattr(cls, "FLAG_PREFIX", "") + field.name)
      flag = absl_flags.FLAGS[name]
      default = (field.default if field.default_factory is dataclasses.MISSING
                 else field.default_factory())
      if isinstance(default, dict):
        default = json.dumps(default)
      elif isinstance(default, tuple):  # a comma-separated list flag
        default = [str(x) for x in default]
      assert flag.default == default
      assert docs[field.name] in flag.help
      if name in choices.CHOICES:
        assert flag.parser.enum_values == list(choices.CHOICES[name])


def test_learner_flags_reach_the_config():
  cfg = _build_config("--rmsprop_eps=0.01", "--loss_reduction=sum", "--bootstrap_truncation",
                      "--lr=3e-4", "--env_kwargs={\"repeat_action_probability\": 0.25}",
                      "--eval_every=100", "--stop_at_return=195")
  assert cfg.learner.rmsprop_eps == 0.01 and cfg.learner.loss_reduction == "sum"
  assert cfg.learner.bootstrap_truncation and cfg.learner.learning_rate == 3e-4
  assert cfg.rollout.env_kwargs == {"repeat_action_probability": 0.25}
  assert cfg.evaluation.stop_at_return == 195
  assert _build_config() == config.RunConfig()  # the flags' defaults are the fields'


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_builds(preset):
  cfg = _build_config(f"--preset={preset}")
  values = dict(PRESETS[preset])
  assert values.pop("lr") == cfg.learner.learning_rate
  assert (cfg.learner.lr_decay_updates == cfg.optimizer_steps) == values.pop("lr_decay", False)
  flat = {**cfg.to_dict(), **cfg.to_dict()["learner"]}
  for name, value in values.items():
    assert flat[name] == (tuple(value) if isinstance(value, list) else value), name


@pytest.mark.parametrize("mode,expected", [("hts", 200), ("sync", 200), ("async", 800)])
def test_lr_decay_spans_the_whole_run_in_every_mode(mode, expected):
  """--lr_decay reaches 0 at the run's last optimizer step: async with 4 actors and one unroll per
  update takes 4x as many updates as segments (it used to decay over the segment count)."""
  cfg = _build_config(f"--mode={mode}", "--num_actors=4", "--num_envs=16", "--num_executors=4",
                      "--alpha=5", "--unroll_length=5", "--total_steps=16000", "--lr_decay",
                      *(["--async_batch_unrolls=1"] if mode == "async" else []))
  assert cfg.learner_updates == expected
  assert cfg.learner.lr_decay_updates == expected  # one optimizer step per update here
  ppo_mode = "hts" if mode == "async" else mode
  ppo = _build_config("--algo=ppo", "--alpha=128", "--num_envs=16", "--num_executors=4",
                      "--total_steps=20480", "--lr_decay", f"--mode={ppo_mode}")
  assert ppo.learner.lr_decay_updates == 10 * 4 * 4  # segments x epochs x minibatches


def test_lr_decay_steps_sets_the_horizon_beyond_the_run():
  """--lr_decay_steps: the decay of a 5x longer run (the paper's 5M-step schedule in a 1M-step
  run) ends at 4/5 of the initial rate; without --lr_decay it is refused in one line."""
  base = ("--mode=async", "--num_actors=4", "--num_envs=16", "--num_executors=4", "--alpha=5",
          "--unroll_length=5", "--async_batch_unrolls=1", "--total_steps=16000", "--lr_decay")
  cfg = _build_config(*base, "--lr_decay_steps=80000")
  assert cfg.learner_updates == 800 and cfg.learner.lr_decay_updates == 5 * 800
  assert _build_config(*base, "--lr_decay_steps=0").learner.lr_decay_updates == 800
  with pytest.raises(config.ConfigError, match="needs --lr_decay"):
    _build_config(*base[:-1], "--lr_decay_steps=80000")


@pytest.mark.parametrize("algo,mode", [("a2c", "hts"), ("a2c", "sync"), ("a2c", "async"),
                                       ("ppo", "hts"), ("ppo", "sync")])
def test_every_algo_and_mode_builds_on_its_defaults(algo, mode):
  cfg = _build_config(f"--algo={algo}", f"--mode={mode}")
  assert cfg.rollout.alpha == {"a2c": 5, "ppo": 128}[algo]
  assert _build_config(f"--algo={algo}", f"--mode={mode}", "--alpha=320").rollout.alpha == 320


def _float_flags():
  """Every float flag the launcher generates from a config field (Optional[float] included)."""
  from experiments import train  # pylint: disable=import-outside-toplevel
  sections = [t for t in typing.get_type_hints(config.RunConfig).values()
              if dataclasses.is_dataclass(t)]
  return sorted(train.RENAMED.get(f.name, config.flag_name(cls, f.name))
                for cls in sections for f in dataclasses.fields(cls)
                if typing.get_type_hints(cls)[f.name] in (float, typing.Optional[float]))


def test_every_float_flag_refuses_nan_and_inf_naming_the_flag():
  """--entropy_coef=nan, --value_coef=nan and --lr=inf failed at the first
  update about 16 s later naming no flag; --stop_at_return=nan and --log_every_s=nan (and 0) were
  accepted."""
  names = _float_flags()
  assert {"lr", "entropy_coef", "value_coef", "stop_at_return", "log_every_s"} <= set(names)
  for name in names:
    for value in ("nan", "inf", "-inf"):
      with pytest.raises(config.ConfigError) as e:
        _build_config(f"--{name}={value}")
      assert str(e.value) == f"--{name} must be a finite number, got {float(value)}"
  with pytest.raises(config.ConfigError, match="^log_every_s must be > 0, got 0.0$"):
    _build_config("--log_every_s=0")
  with pytest.raises(config.ConfigError, match="^--log_every_s must be a finite number, got nan"):
    config.RunConfig.make(log_every_s=float("nan"))  # a section checks its own fields too
