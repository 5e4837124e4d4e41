"""The registries a contributor adds to: algorithms (`choices.ALGORITHMS`), env families
(`choices.FAMILIES`) and modes (`choices.RULES`). Each entry is enumerated here, so a
half-registered one (a builder that does not import, a family without `make`, a flag or doc that
does not list it) fails."""

import inspect
import os

import pytest

from hts_jax import choices, config, envs
from hts_jax.choices import ALGORITHMS, CORRECTIONS, RULES
from hts_jax.presets import PRESETS
from tests.support import ROOT



def _read(*path):
  with open(os.path.join(ROOT, *path)) as f:
    return f.read()


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_is_whole(name):
  from hts_jax import learner  # pylint: disable=import-outside-toplevel,unused-import
  algo = ALGORITHMS[name]  # its builder registered by the learner's imports
  assert algo.name == name and name in choices.ALGOS and name in choices.CHOICES["algo"]
  builder = algo.build()
  assert list(inspect.signature(builder).parameters)[:3] == ["config", "apply_fn", "optimizer"]
  assert set(algo.corrections) <= set(CORRECTIONS) and "delayed" in algo.corrections
  lc = config.LearnerConfig(algo=name)
  steps = algo.sgd_steps(lc, algo.defaults.get("alpha", 5) * 4)
  assert steps >= 1
  for flag in algo.defaults:  # launcher defaults are flags of RunConfig's
    assert flag in config.flag_fields(), flag
  assert f"`{name}`" in _read("docs", "modes.md") or name.upper() in _read("docs", "modes.md")
  for correction in set(CORRECTIONS) - set(algo.corrections):  # refused in one line
    with pytest.raises(config.ConfigError, match=f"does not apply to --algo={name}"):
      config.LearnerConfig(algo=name, correction=correction)


@pytest.mark.parametrize("family", choices.FAMILIES, ids=lambda f: f.prefix)
def test_every_env_family_is_whole(family):
  make = choices.registered("env", family.prefix)  # its module's, registered by `envs`' imports
  assert make.__module__ == "hts_jax.envs." + family.prefix[:-1] and make.__name__ == "make"
  first = "game" if "Game" in family.placeholder else "scenario"
  assert list(inspect.signature(make).parameters) == [first, "env_kwargs", "train", "render"]
  assert family.usage in envs.FAMILIES
  assert choices.family_of(family.prefix + "X") is family
  greedy = config.Evaluation().greedy(family.prefix + "X")
  assert greedy == (not family.sampled_evaluation)
  assert f"`{family.prefix}" in _read("docs", "environments.md")
  assert any(str(p.get("env", "")).startswith(family.prefix) for p in PRESETS.values())
  assert family.network in (None, *choices.NETWORK_KINDS)  # --network=auto's pick, if it names one
  if family.envpool:  # --envpool accepts it
    config.RunConfig.make(env=family.prefix + "Pong", envpool=True)
  else:
    with pytest.raises(config.ConfigError, match="--envpool is for"):
      config.RunConfig.make(env=family.prefix + "Breakout", envpool=True)


def test_a_name_without_a_family_is_a_gymnasium_id():
  assert choices.family_of("CartPole-v1") is None
  with pytest.raises(config.ConfigError, match="Other envs: atari:<Game>, gfootball:<scenario>, "
                                               "minatar:<Game>, vstep"):
    envs.make_env("NoSuchEnv-v0", {})


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_mode_is_whole(name):
  from hts_jax.runtime import modes  # pylint: disable=import-outside-toplevel
  assert modes.MODES[name].name == name and name in choices.MODES
  assert f"`{name}`" in _read("docs", "modes.md") or f"--mode={name}" in _read("docs", "modes.md")


def test_every_mode_says_what_its_actors_are_and_the_help_lists_it():
  from hts_jax.choices import RULES, actors_help  # pylint: disable=import-outside-toplevel
  text = actors_help()
  for name, rules in RULES.items():
    assert rules.actors.strip(), name
    assert f"{name}: {rules.actors}" in text
