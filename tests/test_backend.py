"""XLA's GPU determinism flag (`--xla_deterministic`, `hts_jax.runtime.backend`) and summary.json's
`backend`. The GPU itself is checked by `experiments/bench_gpu.py` on a GPU machine; here: the
flag reaches XLA_FLAGS before JAX starts, keeps the user's other XLA flags, changes no bits on CPU,
and a GPU backend started with the other setting is refused with one line."""

import json
import os
import subprocess
import sys
import types

import pytest

from hts_jax.config import ConfigError, RunConfig, incompatible_changes
from hts_jax.runtime import backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_configure_sets_xla_flags_before_jax_starts_and_keeps_the_users_flags():
  script = r"""
import json, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2 --xla_gpu_deterministic_ops=false"
from hts_jax.runtime import backend
out = {"off_before": backend.gpu_deterministic_ops()}
backend.configure(True)
out["on"] = os.environ["XLA_FLAGS"]
backend.configure(False)
out["off"] = os.environ["XLA_FLAGS"]
backend.configure(True)
import jax
out["devices"] = len(jax.devices())  # the user's flag reached XLA
backend.configure(False)  # CPU backend started: nothing to change, no error
out["after_start"] = os.environ["XLA_FLAGS"]
print(json.dumps(out))
"""
  env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
  out = json.loads(subprocess.run([sys.executable, "-c", script], env=env, check=True,
                                  capture_output=True, text=True).stdout.splitlines()[-1])
  assert out == {
      "off_before": False,
      "on": "--xla_force_host_platform_device_count=2 --xla_gpu_deterministic_ops=true",
      "off": "--xla_force_host_platform_device_count=2",
      "devices": 2,
      "after_start": "--xla_force_host_platform_device_count=2 --xla_gpu_deterministic_ops=true"}


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


def _launch(tmp_path, name, *extra):
  logdir = tmp_path / name
  cmd = [sys.executable, "-m", "experiments.train", "--env=CartPole-v1", "--algo=a2c",
         "--alpha=16", "--unroll_length=16", "--num_envs=4", "--num_executors=2", "--total_steps=640", "--seed=5",
         "--eval_episodes=1", f"--logdir={logdir}", *extra]
  env = dict(os.environ, PYTHONPATH=ROOT)
  env.pop("XLA_FLAGS", None)
  subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=ROOT)
  with open(logdir / "summary.json") as f:
    return json.load(f)


@pytest.mark.slow  # a launcher subprocess; test_placement keeps the in-process runs
def test_launcher_sets_the_flag_by_default_and_it_changes_no_bits_on_cpu(tmp_path):
  on = _launch(tmp_path, "on")
  off = _launch(tmp_path, "off", "--noxla_deterministic")
  assert on["backend"]["xla_gpu_deterministic_ops"] is True
  assert off["backend"]["xla_gpu_deterministic_ops"] is False
  assert on["config"]["xla_deterministic"] is True and off["config"]["xla_deterministic"] is False
  for s in (on, off):
    assert s["backend"]["platform"] == "cpu" and s["backend"]["deterministic"] is True
    assert s["backend"]["learner_devices"] == s["backend"]["actor_devices"] == ["cpu:0"]
  assert on["param_sha256"] == off["param_sha256"]


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
