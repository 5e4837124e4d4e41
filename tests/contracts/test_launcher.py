"""The launcher: bad flags fail before anything is spawned, with one line and a non-zero exit."""

import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT


def launch(tmp_path, *flags, timeout=300):
  cmd = [sys.executable, "-m", "experiments.train", f"--logdir={tmp_path}/run", *flags]
  return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.smoke
@pytest.mark.parametrize("flags,message", [
    (["--alpha=0"], "alpha must be >= 1"),
    (["--num_envs=4", "--num_executors=8"], "must not exceed num_envs"),
    (["--num_envs=6", "--num_executors=4"], "divisible by num_executors"),
    (["--env=NoSuchEnv-v0"], "unknown env 'NoSuchEnv-v0'"),
    (["--env_kwargs={bad"], "--env_kwargs is not valid JSON"),
    (["--algo=a2c", "--alpha=7", "--unroll_length=5"], "multiple of unroll_length"),
    (["--lr=-1"], "learning_rate must be > 0"),
    # NaN and inf passed the range checks and failed at the first update.
    (["--entropy_coef=nan"], "--entropy_coef must be a finite number, got nan"),
    (["--lr=inf"], "--lr must be a finite number, got inf"),
    (["--log_every_s=0"], "log_every_s must be > 0, got 0.0"),
    (["--env=CartPole-v1", "--env_kwargs={\"nope\": 1}"], "bad env_kwargs"),
    (["--algo=foo"], "value should be one of <a2c|ppo>"),
    (["--nosuchflag"], "Unknown command line flag 'nosuchflag'"),
    (["--num_envs=many"], "flag --num_envs=many"),
    (["--checkpoint_every=-1"], "checkpoint_every must be >= 0"),
    (["--rmsprop_eps=0"], "rmsprop_eps must be > 0"),
    (["--loss_reduction=max"], "value should be one of <mean|sum>"),
    (["--video_every=-5"], "video_every must be >= 0"),
    (["--wandb_project=p", "--wandb_mode=maybe"], "wandb_mode must be one of"),
    (["--env=vstep", "--video_final"], "vstep renders no frames"),
])
def test_bad_input_fails_with_one_line(tmp_path, flags, message):
  proc = launch(tmp_path, *flags)
  assert proc.returncode == 2
  err = [l for l in proc.stderr.strip().splitlines() if l.startswith("error:")]
  assert len(err) == 1 and message in err[0], proc.stderr
  assert "Traceback" not in proc.stderr
  assert not os.path.exists(tmp_path / "run" / "metrics.csv")  # nothing ran


def test_short_run_prints_progress_and_result(tmp_path):
  proc = launch(tmp_path, "--env=CartPole-v1", "--algo=a2c", "--num_envs=4", "--num_executors=2",
                "--total_steps=2000", "--log_every_s=0.001")
  assert proc.returncode == 0, proc.stderr
  assert "[hts]" in proc.stdout and "sps" in proc.stdout
  assert "done: 2,000 env steps" in proc.stdout
  assert os.path.exists(tmp_path / "run" / "summary.json")


def test_ppo_on_its_defaults_runs(tmp_path):
  """`--algo=ppo` alone used to stop with 'alpha (segment length 5) must be a multiple of
  num_minibatches (4)'."""
  proc = launch(tmp_path, "--algo=ppo", "--total_steps=4096", "--num_executors=2")
  assert proc.returncode == 0, proc.stderr
  assert "done: 4,096 env steps" in proc.stdout


@pytest.mark.smoke
def test_ppo_with_async_is_refused_in_one_line(tmp_path):
  proc = launch(tmp_path, "--algo=ppo", "--mode=async")
  assert proc.returncode == 2 and "use --algo=a2c" in proc.stderr


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


@pytest.mark.smoke
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
