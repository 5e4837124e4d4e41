"""Multi-process HTS on `jax.distributed` (two local processes, CPU collectives over gloo), started
by `experiments.launch` as a user would: one hash across actor/executor counts and against one
process with two devices; a killed process stops every process; a signal checkpoints all of them
at one boundary and `--resume` is bit-exact, also when one process's part of the newest checkpoint
is damaged (all fall back to an older one); no process, executor or shared-memory block is left
behind."""

import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from hts_jax.runtime.outputs import checkpoint
from tests.support import ROOT
from tests.support import processes as mp
from tests.support.cli import summary
from tests.support.processes import RUN


def test_two_processes_give_one_hash_across_counts_and_topologies(tmp_path):
  """2 processes x 1 device (2 or 1 executors, 1 or 2 actors per process) and 1 process x 2
  devices compute the same bits: the env slices keep global env ids, seeds and action streams,
  and the learner's global batch is the same [T, 8] array split the same way."""
  runs = {}
  for name, flags in {"a": ["--num_executors=2"], "b": ["--num_executors=1", "--num_actors=2"]
                      }.items():
    logdir = str(tmp_path / name)
    proc = mp.launch(logdir, "--total_steps=800", *flags)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    assert "done:" in out
    runs[name] = summary(logdir)
  one = str(tmp_path / "one")
  proc = subprocess.run([sys.executable, "-m", "experiments.train", *RUN, f"--logdir={one}",
                         "--total_steps=800", "--num_executors=2", "--learner_devices=0,1"],
                        cwd=ROOT, env=mp.env(2), capture_output=True, text=True, timeout=600,
                        check=False)
  assert proc.returncode == 0, proc.stderr[-2000:]
  runs["one"] = summary(one)
  a = runs["a"]
  assert a["param_sha256"] == runs["b"]["param_sha256"] == runs["one"]["param_sha256"]
  assert a["episode_returns"] == runs["b"]["episode_returns"] == runs["one"]["episode_returns"]
  assert len(a["episode_returns"]) == 8 and all(a["episode_returns"])  # every env, globally
  assert a["env_steps"] == 800 and a["updates"] == 20
  assert a["policy_lag"]["histogram"] == {"0": 1, "1": 19}
  assert a["compiled_during_run"] == []
  assert len(a["eval"]) == 1  # process 0 evaluates
  # Each process's machine is recorded (here both on this one), process 0's first.
  others = a["host"]["other_processes"]
  assert len(others) == 1 and others[0]["hostname"] == a["host"]["hostname"]
  assert others[0]["calibration"]["total_ms"] > 0 and "load_end" in others[0]
  assert "other_processes" not in runs["one"]["host"]


def test_two_processes_with_an_lstm_core_give_the_two_device_hash(tmp_path):
  """--core=lstm across processes: each process's rows keep their states in its own storage;
  the learner's global batch (core states included) is split as over two local devices."""
  lstm = ["--env=hts_jax/CartPoleNoVel-v1", "--core=lstm", "--core_size=16", "--alpha=16",
          "--total_steps=1280", "--algo=ppo", "--minibatch=envs", "--num_minibatches=2",
          "--ppo_epochs=2", "--bootstrap_truncation", "--num_executors=2"]
  two = str(tmp_path / "two")
  proc = mp.launch(two, *lstm)
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-2000:]
  one = str(tmp_path / "one")
  proc = subprocess.run([sys.executable, "-m", "experiments.train", *RUN, *lstm,
                         f"--logdir={one}", "--learner_devices=0,1"], cwd=ROOT, env=mp.env(2),
                        capture_output=True, text=True, timeout=600, check=False)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert summary(two)["param_sha256"] == summary(one)["param_sha256"]
  assert summary(two)["updates"] == 10


def _assert_all_stop_after_killing(pid, proc, logdir, code, error_line):
  """SIGKILLs `pid`; the launcher `proc` must end within 20 s (its 5 s grace for process 0 and the
  processes' own shutdown, on a loaded machine) with `code`, its last `error:` line starting with
  `error_line`, and leave no process or shared memory behind (within 15 s: process 0's executors
  first notice their pipes close)."""
  os.kill(pid, signal.SIGKILL)
  t0 = time.monotonic()
  _, err = proc.communicate(timeout=60)
  assert time.monotonic() - t0 < 20
  assert proc.returncode == code, err[-2000:]
  # (process 0's resource tracker may still report the shared memory it cleans up after it)
  errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
  assert errors[-1].startswith(error_line), err[-2000:]
  mp.settle(logdir)


def test_a_killed_process_stops_every_process(tmp_path):
  logdir = str(tmp_path / "kill")
  proc = mp.launch(logdir, "--total_steps=2000000", "--num_executors=2")
  mp.wait_training(logdir)
  pids = mp.pids(f"logdir={logdir}", "process_id=1")
  _assert_all_stop_after_killing(pids[0], proc, logdir, 128 + signal.SIGKILL,
                                 "error: process 1 failed (killed by SIGKILL)")


def test_a_killed_executor_stops_both_processes(tmp_path):
  """Process 1's executor dies: process 1 stops with its one line (executor index and envs), the
  launcher stops process 0 and names process 1; nothing is left behind."""
  logdir = str(tmp_path / "exec")
  proc = mp.launch(logdir, "--total_steps=2000000", "--num_executors=2")
  mp.wait_training(logdir)
  trainer = mp.pids(f"logdir={logdir}", "process_id=1")[0]
  executor = [p for p, (ppid, cmd) in mp.processes().items()
              if ppid == trainer and "spawn_main" in cmd][0]
  _assert_all_stop_after_killing(executor, proc, logdir, 1,
                                 "error: process 1 failed (exit 1): executor")


def test_sigterm_checkpoints_every_process_and_resume_is_bit_exact(tmp_path):
  """SIGTERM to the launcher (forwarded to both processes) stops them at one boundary, each
  saving its part; `--resume` (with other executor/actor counts) then ends with the bits of a
  run that went straight through."""
  flags = ["--total_steps=2560", "--learner_delay_s=0.05", "--num_executors=2"]
  straight = str(tmp_path / "straight")
  proc = mp.launch(straight, *flags)
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-2000:]
  logdir = str(tmp_path / "term")
  proc = mp.launch(logdir, *flags)
  mp.wait_training(logdir)
  proc.send_signal(signal.SIGTERM)
  _, err = proc.communicate(timeout=120)
  assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
  assert "interrupted by SIGTERM at update" in err and "continue with --resume" in err
  mp.settle(logdir)
  assert sorted(n for n in os.listdir(logdir)
                if not n.startswith(("events.out.tfevents.", ".lock"))) == [
      "checkpoints", "checkpoints-process-0", "checkpoints-process-1", "metrics.csv", "policy"]
  proc = mp.launch(logdir, "--total_steps=2560", "--num_executors=1", "--num_actors=2", "--resume")
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-2000:]
  resumed, want = summary(logdir), summary(straight)
  assert resumed["resumed_from_update"] > 0
  assert resumed["param_sha256"] == want["param_sha256"]
  assert resumed["episode_returns"] == want["episode_returns"]


def _flip_middle(path):
  with open(path, "r+b") as f:
    f.seek(os.path.getsize(path) // 2)
    byte = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([byte[0] ^ 0xFF]))


def _process_1s_part(logdir, step):
  """Process 1's own part of `step` damaged; returns the folder the warning names."""
  folder = os.path.join(checkpoint.process_directory(logdir, 1), str(step))
  _flip_middle(os.path.join(folder, "storage.npz"))
  return folder


def _shared_state_unlisted(logdir, step):
  """The shared state damaged, its files.json gone (an older checkpoint's, or a writer that died
  before writing it): only the collective restore's digest check can see it."""
  folder = os.path.join(checkpoint.directory(logdir), str(step))
  os.remove(os.path.join(folder, "files.json"))
  state = [f for f in glob.glob(os.path.join(folder, "state", "**", "*"), recursive=True)
           if os.path.isfile(f) and "metadata" not in os.path.basename(f).lower()]
  _flip_middle(max(state, key=os.path.getsize))
  return folder


@pytest.fixture(scope="module")
def straight_6(tmp_path_factory):
  logdir = str(tmp_path_factory.mktemp("straight"))
  proc = mp.launch(logdir, "--total_steps=240", "--num_executors=2")
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-2000:]
  return summary(logdir)["param_sha256"]


@pytest.mark.parametrize("damage", [_process_1s_part, _shared_state_unlisted])
def test_a_corrupt_checkpoint_makes_every_process_resume_from_an_older_one(
    tmp_path, straight_6, damage):
  """The newest checkpoint is damaged in one process's own part, or in the shared state where
  only the collective restore can see it. The processes agree: all resume from the older
  checkpoint, process 0 names the damaged one in one line (set aside), and the run ends with the
  straight run's bits. Multi-process resume used to refuse at any corrupt checkpoint."""
  logdir = str(tmp_path)
  proc = mp.launch(logdir, "--total_steps=160", "--checkpoint_every=1", "--num_executors=2")
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-2000:]
  mp.settle(logdir)
  newest, older = checkpoint.steps(logdir)[:2]
  named = damage(logdir, newest)
  proc = mp.launch(logdir, "--total_steps=240", "--resume", "--num_executors=2")
  _, err = proc.communicate(timeout=600)
  assert proc.returncode == 0, err[-2000:]
  assert "Traceback" not in err, err[-2000:]
  (line,) = [l for l in err.splitlines() if l.startswith("warning:")]
  assert line.startswith(f"warning: checkpoint {named}"), line
  assert line.endswith("resuming from the older checkpoint "
                       f"{checkpoint.directory(logdir)}/{older}"), line
  resumed = summary(logdir)
  assert resumed["resumed_from_update"] == older
  assert resumed["param_sha256"] == straight_6
  corrupt = os.path.join(logdir, "checkpoints-corrupt")
  assert os.path.isdir(os.path.join(corrupt, str(newest)))
  assert os.path.isdir(os.path.join(corrupt, "process-1", str(newest)))


@pytest.mark.smoke
def test_multiprocess_config_errors_are_one_line(tmp_path):
  proc = subprocess.run([sys.executable, "-m", "experiments.train", *RUN, "--mode=async",
                         "--num_processes=2", f"--logdir={tmp_path}"], cwd=ROOT, env=mp.env(),
                        capture_output=True, text=True, timeout=300, check=False)
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines()[-1] == (
      "error: --num_processes > 1 runs --mode=hts or --mode=sync")
  proc = subprocess.run([sys.executable, "-m", "experiments.train", *RUN, "--num_processes=3",
                         f"--logdir={tmp_path}"], cwd=ROOT, env=mp.env(), capture_output=True,
                        text=True, timeout=300, check=False)
  assert proc.returncode == 2
  assert "num_envs (8) must be divisible by num_processes (3)" in proc.stderr
