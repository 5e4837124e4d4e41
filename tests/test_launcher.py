"""The launcher: bad flags fail before anything is spawned, with one line and a non-zero exit."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch(tmp_path, *flags, timeout=300):
  cmd = [sys.executable, "-m", "experiments.train", f"--logdir={tmp_path}/run", *flags]
  return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("flags,message", [
    (["--alpha=0"], "alpha must be >= 1"),
    (["--num_envs=4", "--num_executors=8"], "must not exceed num_envs"),
    (["--num_envs=6", "--num_executors=4"], "divisible by num_executors"),
    (["--env=NoSuchEnv-v0"], "unknown env 'NoSuchEnv-v0'"),
    (["--env_kwargs={bad"], "--env_kwargs is not valid JSON"),
    (["--algo=a2c", "--alpha=7", "--unroll_length=5"], "multiple of unroll_length"),
    (["--lr=-1"], "learning_rate must be > 0"),
    (["--env=CartPole-v1", "--env_kwargs={\"nope\": 1}"], "bad env_kwargs"),
    (["--algo=foo"], "value should be one of <a2c|ppo>"),
    (["--nosuchflag"], "Unknown command line flag 'nosuchflag'"),
    (["--num_envs=many"], "flag --num_envs=many"),
    (["--checkpoint_every=-1"], "checkpoint_every must be >= 0"),
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
                "--total_steps=2000", "--log_every_s=0")
  assert proc.returncode == 0, proc.stderr
  assert "[hts]" in proc.stdout and "sps" in proc.stdout
  assert "done: 2,000 env steps" in proc.stdout
  assert os.path.exists(tmp_path / "run" / "summary.json")
