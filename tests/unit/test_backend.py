"""XLA's GPU determinism flag (`--xla_deterministic`, `hts_jax.runtime.backend`) and summary.json's
`backend`. The GPU itself is checked by `experiments/bench_gpu.py` on a GPU machine; here: the
flag reaches XLA_FLAGS before JAX starts, keeps the user's other XLA flags, changes no bits on CPU,
and a GPU backend started with the other setting is refused with one line."""

import types

import pytest

from hts_jax.config import ConfigError, RunConfig, incompatible_changes
from hts_jax.runtime import backend


@pytest.mark.parametrize("flags,want", [("", False), ("--xla_gpu_deterministic_ops", True),
                                        ("--xla_gpu_deterministic_ops=true", True),
                                        ("--xla_gpu_deterministic_ops=1 "
                                         "--xla_gpu_deterministic_ops=false", False)])
def test_gpu_deterministic_ops_reads_the_last_mention(monkeypatch, flags, want):
  monkeypatch.setenv("XLA_FLAGS", flags)
  assert backend.gpu_deterministic_ops() is want


def test_a_gpu_backend_started_with_the_other_setting_is_refused(monkeypatch):
  gpu = types.SimpleNamespace(platform="gpu")
  monkeypatch.setattr(backend, "_backends_started", lambda: True)
  monkeypatch.setattr(backend.jax, "devices", lambda: [gpu])
  monkeypatch.setenv("XLA_FLAGS", "")
  with pytest.raises(ConfigError, match="started already: run in a fresh process") as e:
    backend.configure(True)
  assert "\n" not in str(e.value)
  backend.configure(False)  # the setting it started with: fine
  monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_deterministic_ops=true")
  backend.configure(True)
  with pytest.raises(ConfigError, match="--xla_deterministic=False"):
    backend.configure(False)


def test_default_is_deterministic():
  assert RunConfig().devices.xla_deterministic is True


def test_a_checkpoint_written_before_a_field_existed_resumes_as_its_default():
  current = RunConfig().to_dict()
  old = dict(current)
  del old["xla_deterministic"]  # written before the field existed
  old["learner"] = dict(current["learner"])
  del old["learner"]["rmsprop_decay"]
  assert incompatible_changes(old, current) == {}
  changed = dict(current, xla_deterministic=False)
  assert incompatible_changes(old, changed) == {"xla_deterministic": (True, False)}
  assert incompatible_changes(dict(current, xla_deterministic=False), current) == {
      "xla_deterministic": (False, True)}


def test_a_derived_default_is_compared_as_resolved_on_resume():
  """`--resume --actor_batch=4` at 8 envs, equal to the effective default
  (0: num_envs // 2), was refused ("0 there, 4 now")."""
  saved = RunConfig.make(num_envs=8).to_dict()
  assert saved["actor_batch"] == 0
  assert incompatible_changes(saved, RunConfig.make(num_envs=8, actor_batch=4).to_dict()) == {}
  assert incompatible_changes(RunConfig.make(num_envs=8, actor_batch=4).to_dict(), saved) == {}
  assert incompatible_changes(saved, RunConfig.make(num_envs=8, actor_batch=2).to_dict()) == {
      "actor_batch": (4, 2)}
