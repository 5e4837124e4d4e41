"""The policy outlives the run, however it ends: a finished run leaves a checkpoint at its last
update (that `--resume` with a larger --total_steps continues bit for bit) and `policy/`; a run
stopped by SIGINT or by a failing part leaves `policy/` with the params it had at its last segment
boundary (a SIGINT's: the checkpoint's); `hts-eval --checkpoint=N` evaluates a kept checkpoint."""

import json
import os
import signal
import subprocess
import sys

import pytest

import hts_jax
from hts_jax.config import ConfigError, LearnerConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint, reporting
from tests.support import ROOT
from tests.support.cli import error_lines, start_and_wait_for_rows
from tests.support.runs import small_config

RUN = dict(env="CartPole-v1", alpha=8, num_envs=8, num_executors=2, total_steps=8 * 8 * 4,
           seed=3, eval_episodes=2, learner=LearnerConfig(algo="a2c", unroll_length=8))


def hts_eval(*args):
  return subprocess.run([sys.executable, "-m", "experiments.eval", *args], cwd=ROOT,
                        capture_output=True, text=True, timeout=300)


def _spec(logdir):
  with open(os.path.join(logdir, "policy", "policy.json")) as f:
    return json.load(f)


@pytest.mark.parametrize("mode", ["hts", "sync"])
def test_a_finished_run_checkpoints_its_last_update_and_resumes_bit_for_bit(tmp_path, mode):
  longer = modes.run(small_config(tmp_path, "longer", base=RUN, mode=mode, total_steps=8 * 8 * 6))
  s = modes.run(small_config(tmp_path, "run", base=RUN, mode=mode))  # --checkpoint_every=0
  logdir = str(tmp_path / "run")
  assert checkpoint.steps(logdir) == [s["updates"]] and s["updates"] == 4
  # With periodic ones, the last is kept beside the two newest.
  checkpointed = modes.run(small_config(tmp_path, "every", base=RUN, mode=mode,
                                        checkpoint_every=1))
  kept = checkpoint.steps(str(tmp_path / "every"))
  assert kept[0] == 4 and len(kept) == 3, kept
  assert checkpointed["param_sha256"] == s["param_sha256"]  # a checkpoint writes, never trains
  spec = _spec(logdir)
  assert (spec["updates"], spec["param_sha256"], spec["ended"]) == (4, s["param_sha256"],
                                                                    "finished")
  # The same budget again: nothing left to train, one line.
  with pytest.raises(ConfigError, match=r"^--resume: the checkpoint is the run's end .*"
                                        r"--total_steps"):
    modes.make_runner(small_config(tmp_path, "run", base=RUN, mode=mode), resume=True)
  # A larger one continues from it: the longer run's bits (HTS: its first segment acts with the
  # params one update behind, as the uninterrupted run did).
  resumed = modes.run(small_config(tmp_path, "run", base=RUN, mode=mode,
                                   total_steps=8 * 8 * 6), resume=True)
  assert resumed["resumed_from_update"] == 4
  assert resumed["param_sha256"] == longer["param_sha256"]
  assert resumed["episode_returns"] == longer["episode_returns"]
  assert resumed["policy_lag"]["per_update"] == longer["policy_lag"]["per_update"]


def test_a_run_stopped_by_a_failing_part_exports_its_last_boundary(tmp_path):
  env = "tests.support.fault_envs:CrashingCartPole-v0"
  with pytest.raises(modes.RunError, match="simulator exploded"):
    modes.run(small_config(tmp_path, "crash", base=RUN, env=env, env_kwargs={"crash_at": 36},
                           total_steps=8 * 8 * 8))
  spec = _spec(str(tmp_path / "crash"))
  assert spec["ended"] == "error" and 1 <= spec["updates"] <= 4
  assert spec["env_steps"] == (spec["updates"] + 1) * 64  # HTS: update j at boundary j
  policy = hts_jax.load_policy(str(tmp_path / "crash"))
  assert reporting.param_sha256(policy.params) == spec["param_sha256"]


def test_sigint_exports_the_checkpoints_params_and_hts_eval_reads_any_checkpoint(tmp_path):
  logdir = str(tmp_path / "run")
  flags = ["--env=CartPole-v1", "--alpha=8", "--num_envs=8", "--num_executors=2", "--seed=3",
           "--algo=a2c", "--unroll_length=8", "--total_steps=100000", "--checkpoint_every=2",
           "--eval_episodes=2", "--eval_every=1", "--executor_delay_s=0.004",
           "--log_every_s=1000"]
  proc = start_and_wait_for_rows(logdir, 5, *flags)
  proc.send_signal(signal.SIGINT)
  _, stderr = proc.communicate(timeout=120)
  assert proc.returncode == 130, stderr
  (line,) = error_lines(stderr)
  kept = checkpoint.steps(logdir)
  assert len(kept) == 2, kept
  assert f"checkpoint saved in {logdir}/checkpoints/{kept[0]}; continue with --resume" in line
  spec = _spec(logdir)
  assert (spec["updates"], spec["ended"]) == (kept[0], "interrupted")
  newest, older = (json.loads(hts_eval(logdir, f"--checkpoint={k}", "--episodes=2",
                                       "--json").stdout) for k in kept)
  assert newest["param_sha256"] == spec["param_sha256"] and newest["updates"] == kept[0]
  final = json.loads(hts_eval(logdir, "--episodes=2", "--json").stdout)
  assert final["returns"] == newest["returns"]
  assert older["param_sha256"] != newest["param_sha256"] and older["updates"] == kept[1]
  # Every checkpoint's evaluation plays the episodes after the run's last, as the export's does.
  assert older["eval_index"] == newest["eval_index"] == final["eval_index"] == spec["evaluations"]
  bad = hts_eval(logdir, "--checkpoint=7")
  assert bad.returncode == 2
  assert error_lines(bad.stderr) == [
      f"error: {logdir}: no checkpoint 7 in {logdir}/checkpoints (kept: "
      f"{', '.join(map(str, kept))})"], bad.stderr
