"""Reliability, for real: checkpoint + resume bit-exactness, signals, killed executors, raising envs,
NaNs, failing actor/learner threads; no leftover processes or shared memory."""

import csv
import os
import re
import shutil
import signal
import subprocess
import time

import psutil
import pytest

from hts_jax.config import ConfigError, LearnerConfig, RunConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint
from tests.support import ROOT
from tests.support.runs import small_config
from tests.support.cli import (cmd, error_lines, executor_pids, leftover_shm, metric_rows, run_cli,
                               start_and_wait_for_rows, summary)

BASE = ["--env=CartPole-v1", "--algo=ppo", "--optimizer=adam", "--lr=1e-3", "--alpha=16",
        "--num_minibatches=4", "--ppo_epochs=2", "--num_envs=8", "--num_executors=2",
        "--seed=5", "--eval_every=512", "--eval_episodes=2", "--log_every_s=1000"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  logdir = str(tmp_path_factory.mktemp("full"))
  proc = run_cli(logdir, *BASE, "--total_steps=1536")
  assert proc.returncode == 0, proc.stderr
  return summary(logdir)


@pytest.mark.smoke
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130),
                                      pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow)])
def test_interrupt_then_resume_ends_bit_identical(tmp_path, uninterrupted, sig, code):
  logdir = str(tmp_path)
  # Slow envs so that the signal lands mid-run; the delay changes timing, never results.
  proc = start_and_wait_for_rows(logdir, 3, *BASE, "--total_steps=1536", "--checkpoint_every=4",
                                 "--executor_delay_s=0.004")
  pids = executor_pids(proc)
  proc.send_signal(sig)
  _, stderr = proc.communicate(timeout=60)
  assert proc.returncode == code, stderr
  (line,) = error_lines(stderr)
  assert re.search(r"interrupted by SIG(INT|TERM) at update \d+; checkpoint saved in .*; "
                   r"continue with --resume", line), line
  assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids)
  assert not leftover_shm(tmp_path)
  step = checkpoint.latest_step(logdir)
  assert step is not None and step < 12
  # Without --resume the logdir is protected; with it, the run continues (other actor count).
  refused = run_cli(logdir, *BASE, "--total_steps=1536")
  assert refused.returncode == 2 and "pass --resume" in refused.stderr
  resumed = run_cli(logdir, *BASE, "--total_steps=1536", "--resume", "--num_actors=2")
  assert resumed.returncode == 0, resumed.stderr
  s = summary(logdir)
  assert s["resumed_from_update"] == step
  for key in ("param_sha256", "episode_returns", "updates", "env_steps"):
    assert s[key] == uninterrupted[key], key
  assert s["policy_lag"]["per_update"] == uninterrupted["policy_lag"]["per_update"]
  assert [e["mean_return"] for e in s["eval"]] == [e["mean_return"] for e in uninterrupted["eval"]]
  with open(os.path.join(logdir, "metrics.csv")) as f:
    assert [int(r["updates"]) for r in csv.DictReader(f)] == list(range(1, 13))


def test_resume_rejects_a_changed_config(tmp_path):
  logdir = str(tmp_path)
  proc = run_cli(logdir, *BASE, "--total_steps=768", "--checkpoint_every=2")
  assert proc.returncode == 0, proc.stderr
  bad = run_cli(logdir, *BASE, "--total_steps=768", "--resume", "--seed=6")
  assert bad.returncode == 2
  assert error_lines(bad.stderr) == ["error: --resume: seed differs from the checkpoint (5 there, "
                                     "6 now)"]
  missing = run_cli(str(tmp_path / "empty"), *BASE, "--resume")
  assert missing.returncode == 2 and "no checkpoint" in missing.stderr


@pytest.mark.smoke
def test_killed_executor_stops_the_run_cleanly(tmp_path):
  logdir = str(tmp_path)
  proc = start_and_wait_for_rows(logdir, 2, *BASE, "--total_steps=100000",
                                 "--checkpoint_every=1", "--executor_delay_s=0.002")
  pids = executor_pids(proc)
  assert len(pids) == 2
  t0 = time.monotonic()
  os.kill(pids[1], signal.SIGKILL)
  _, stderr = proc.communicate(timeout=30)
  assert time.monotonic() - t0 < 10.0  # a run that went on would take minutes
  assert proc.returncode == 1
  assert error_lines(stderr) == ["error: executor 1 (envs 4-7) died with exit code -9"]
  assert "Traceback" not in stderr
  assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids)
  assert not leftover_shm(tmp_path)
  assert checkpoint.latest_step(logdir) is not None  # the last checkpoint is kept


def test_env_exception_names_executor_env_and_exception(tmp_path):
  proc = run_cli(str(tmp_path), "--env=tests.support.fault_envs:CrashingCartPole-v0",
                 '--env_kwargs={"crash_at": 30}', "--num_envs=4", "--num_executors=2",
                 "--alpha=5", "--total_steps=100000")
  assert proc.returncode == 1
  (line,) = error_lines(proc.stderr)
  assert re.fullmatch(r"error: executor [01], env [0-3]: RuntimeError: simulator exploded at "
                      r"step 30", line), line
  assert not leftover_shm(tmp_path)


@pytest.mark.parametrize("env,field,value", [("NaNRewardCartPole-v0", "reward", "nan"),
                                              ("InfObsCartPole-v0", "observation", "inf")])
def test_a_non_finite_reward_or_observation_names_the_executor_env_and_field(tmp_path, env,
                                                                             field, value):
  """A NaN from the env was blamed on the learner ('non-finite loss at
  update 61'); the executor checks the rewards and float observations it writes."""
  logdir = str(tmp_path)
  name = f"tests.support.fault_envs:{env}"
  proc = run_cli(logdir, f"--env={name}", '--env_kwargs={"nan_at": 42}', "--num_envs=4",
                 "--num_executors=2", "--alpha=5", "--total_steps=100000", "--checkpoint_every=1")
  assert proc.returncode == 1
  (line,) = error_lines(proc.stderr)
  assert re.fullmatch(rf"error: executor [01], env [0-3]: FloatingPointError: non-finite {field} "
                      rf"\({value}\) from {re.escape(name)} at segment 8, step 1", line), line
  assert "Traceback" not in proc.stderr
  assert checkpoint.latest_step(logdir) is not None  # the last checkpoint is kept
  assert not leftover_shm(tmp_path)


def _small(tmp_path):
  return small_config(tmp_path, env="CartPole-v1", alpha=5, num_envs=4, num_executors=2,
                      total_steps=4 * 5 * 50, eval_episodes=1, learner=LearnerConfig(algo="a2c"))


@pytest.mark.smoke
@pytest.mark.parametrize("part", ["actor", "learner"])
def test_failing_actor_or_learner_stops_the_run_cleanly(tmp_path, part):
  import multiprocessing as mp
  runner = modes.make_runner(_small(tmp_path))
  calls = {"n": 0}

  def broken(*args, **kwargs):
    calls["n"] += 1
    if calls["n"] >= 3:
      calls["failed_at"] = time.monotonic()
      raise RuntimeError(f"{part} broke")
    return original(*args, **kwargs)

  if part == "actor":
    original = runner.parts.policy.run_actions
    runner.parts.policy.run_actions = broken
  else:
    original = runner.parts.learner.step_fn
    runner.parts.learner.step_fn = broken
  with pytest.raises(modes.RunError, match=rf"^{part}(-0)?: RuntimeError: {part} broke$"):
    runner.run()
  assert time.monotonic() - calls["failed_at"] < 10  # the stop, not the start-up before it
  assert not mp.active_children()
  assert not leftover_shm(tmp_path)


@pytest.mark.parametrize("mode,bootstrap", [("hts", False), ("sync", False), ("hts", True)])
def test_resume_with_a_longer_budget_matches_one_long_run(tmp_path, mode, bootstrap):
  """A run checkpointed mid-way and resumed (with more total_steps) ends bit-identical to a run
  that went straight through, in every checkpointing mode; also with `bootstrap_truncation`
  (the checkpointed storage keeps its truncation flags and final observations)."""
  def cfg(name, segments, **kw):
    base = dict(env="CartPole-v1", mode=mode, alpha=8, num_envs=4, num_executors=2,
                total_steps=4 * 8 * segments, seed=9, logdir=str(tmp_path / name),
                log_every_s=1e9, eval_episodes=1,
                env_kwargs={"max_episode_steps": 6} if bootstrap else {},
                learner=LearnerConfig(algo="a2c", unroll_length=8,
                                      bootstrap_truncation=bootstrap))
    return RunConfig.make(**dict(base, **kw))
  straight = modes.run(cfg("straight", 6))
  modes.run(cfg("split", 4, checkpoint_every=2))
  # A finished run checkpoints its last update too; it is set aside: this resumes mid-way.
  assert checkpoint.steps(str(tmp_path / "split"))[:2] == [4, 2]
  shutil.rmtree(os.path.join(checkpoint.directory(str(tmp_path / "split")), "4"))
  resumed = modes.run(cfg("split", 6, num_executors=4), resume=True)
  assert resumed["resumed_from_update"] == 2
  assert resumed["param_sha256"] == straight["param_sha256"]
  assert resumed["episode_returns"] == straight["episode_returns"]
  assert resumed["policy_lag"]["per_update"] == straight["policy_lag"]["per_update"]
  with pytest.raises(ConfigError, match=r"^--resume: seed differs from the checkpoint \(9 there, 10 "
                     r"now\)$"):
    modes.make_runner(cfg("split", 6, seed=10), resume=True)


def _wait_for(pred, proc, timeout=300):
  deadline = time.monotonic() + timeout
  while not pred():
    assert proc.poll() is None, proc.communicate()
    assert time.monotonic() < deadline
    time.sleep(0.05)


def test_signal_during_executor_start_up_stops_cleanly(tmp_path):
  """Defect: a signal during start-up was swallowed or reported as an executor death."""
  proc = subprocess.Popen(cmd(str(tmp_path), "--env=tests.support.fault_envs:SlowStartCartPole-v0",
                              '--env_kwargs={"start_s": 4}', "--num_envs=4",
                              "--num_executors=2", "--alpha=5", "--total_steps=1000"),
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  _wait_for(lambda: len(executor_pids(proc)) == 2, proc)
  pids = executor_pids(proc)
  time.sleep(0.5)
  proc.send_signal(signal.SIGINT)
  _, stderr = proc.communicate(timeout=60)
  assert proc.returncode == 130, stderr
  assert error_lines(stderr) == ["error: interrupted by SIGINT during start-up; nothing was "
                                 "trained or saved"], stderr
  assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids)
  assert not leftover_shm(tmp_path)


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_the_final_evaluation_stops_and_keeps_the_summary(tmp_path, sig, code):
  """Defect: a signal during the final evaluation was swallowed (exit 0). Ctrl-C (SIGINT) there
  keeps what training produced as SIGTERM does."""
  logdir = str(tmp_path)
  proc = subprocess.Popen(cmd(logdir, "--env=tests.support.fault_envs:SlowCartPole-v0",
                              '--env_kwargs={"step_s": 0.05}', "--num_envs=2",
                              "--num_executors=2", "--alpha=4", "--unroll_length=4",
                              "--total_steps=16", "--eval_episodes=4"),
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  _wait_for(lambda: metric_rows(logdir) >= 2, proc)  # the last update is logged: evaluating
  time.sleep(0.3)
  proc.send_signal(sig)
  _, stderr = proc.communicate(timeout=60)
  assert proc.returncode == code, stderr
  (line,) = error_lines(stderr)
  assert line.startswith(f"error: interrupted by {sig.name} during the final evaluation; training "
                         "finished (2 updates)"), line
  assert summary(logdir)["updates"] == 2


def test_checkpoints_do_not_hold_executors_at_the_barrier_for_evaluations(tmp_path, monkeypatch):
  """Defect: a checkpoint waited for pending evaluations while the executors sat at the barrier.
  With evaluations that take 0.6 s each, checkpoints at every update must not add them to the
  executors' barrier time, and the run's results are unchanged."""
  from hts_jax.runtime.outputs import evaluation
  cfg = dict(env="CartPole-v1", alpha=8, num_envs=4, num_executors=2, total_steps=4 * 8 * 6,
             seed=9, log_every_s=1e9, eval_episodes=1, eval_every=32, checkpoint_every=1,
             learner=LearnerConfig(algo="a2c", unroll_length=8))
  plain = modes.run(RunConfig.make(logdir=str(tmp_path / "plain"), **cfg))
  original = evaluation.Evaluator.evaluate

  def slow(self, params, **kw):
    time.sleep(0.6)
    return original(self, params, **kw)

  monkeypatch.setattr(evaluation.Evaluator, "evaluate", slow)
  s = modes.run(RunConfig.make(logdir=str(tmp_path / "slow"), **cfg))
  assert s["param_sha256"] == plain["param_sha256"]
  assert [e["returns"] for e in s["eval"]] == [e["returns"] for e in plain["eval"]]
  # 5 checkpoints x 0.6 s of evaluation would be >= 3 s at the barrier per executor (2 of them:
  # >= 6 s in all); without them the executors wait for start-up, the boundaries and the saves.
  assert s["idle"]["executors_at_barrier"] < 3.0, s["idle"]
  # The newest periodic checkpoint (the finished run's last one, newer, records the boundaries'
  # evaluations, not the final one), restored into a fresh runner's state (its tree).
  fresh = modes.make_runner(RunConfig.make(logdir=str(tmp_path / "tree"), **cfg))
  ckpt = checkpoint.restore(str(tmp_path / "slow"), fresh.parts.learner.state,
                            step=checkpoint.steps(str(tmp_path / "slow"))[1])
  assert len(ckpt["host"]["book"]["eval"]) == ckpt["host"]["segment"] + 1
