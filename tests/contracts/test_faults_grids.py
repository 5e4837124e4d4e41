"""Faults of grids, reports, env constructors and the storages' size, as a hostile user meets
them: two `hts-reproduce` on one results directory, a report's crafted or wrong-typed
summary.json, an unwritable output folder, an env whose constructor raises, storages larger than
the machine. Each ends in one line and exit code 2 (or a warning that skips the run), and nothing
already saved is lost.

The envs below are registered on import, for `--env=tests.contracts.test_faults_grids:<Id>`."""

import fcntl
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import gymnasium as gym
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from tests.support import ROOT
from tests.support.cli import error_lines, executor_pids, run_cli, start_and_wait_for_rows


class ValueErrorCartPole(CartPoleEnv):
  """An env whose constructor refuses its argument."""

  def __init__(self, **kwargs):
    raise ValueError("the pole must be longer than zero")


class DictObsCartPole(CartPoleEnv):
  """A Dict observation space, which the storages cannot hold."""

  def __init__(self, **kwargs):
    super().__init__(**kwargs)
    self.observation_space = gym.spaces.Dict({"x": self.observation_space})


gym.register("ValueErrorCartPole-v0", entry_point=ValueErrorCartPole, max_episode_steps=500)
gym.register("DictObsCartPole-v0", entry_point=DictObsCartPole, max_episode_steps=500)
HERE = "tests.contracts.test_faults_grids"
MEMORY_RUN = os.path.join(ROOT, "results", "memory", "runs", "hts_ff", "seed0")


def _command(module, *flags, timeout=300):
  return subprocess.run([sys.executable, "-m", module, *flags], cwd=ROOT, capture_output=True,
                        text=True, timeout=timeout)


def _one_line(proc, *words):
  """Exit code 2, no traceback, one `error:` line holding each of `words`."""
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  lines = error_lines(proc.stderr)
  assert len(lines) == 1, proc.stderr[-3000:]
  for w in words:
    assert w in lines[0], lines[0]
  return lines[0]


def _memory_results(tmp_path, **changes):
  """A memory grid's results folder holding one committed run (hts_ff, seed 0), its summary.json
  changed by `changes` (a value None: the key removed)."""
  run = tmp_path / "g" / "runs" / "hts_ff" / "seed0"
  shutil.copytree(MEMORY_RUN, run)
  with open(run / "summary.json") as f:
    summary = json.load(f)
  for k, v in changes.items():
    if v is None:
      summary.pop(k)
    else:
      summary[k] = v
  with open(run / "summary.json", "w") as f:
    json.dump(summary, f)
  return tmp_path / "g", run


# Two grids on one results directory.

def _hold_flock(path):
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  os.write(fd, f"{os.getpid()}\n".encode())
  return fd


def test_a_run_directory_whose_lock_is_held_is_never_deleted(tmp_path):
  """An unfinished run whose training process still holds its logdir's lock (a grid started
  elsewhere, or killed while its run went on) is left as it is: named in one line, not removed."""
  run = tmp_path / "g" / "runs" / "hts_ff" / "seed0"
  run.mkdir(parents=True)
  (run / "metrics.csv").write_text("updates,env_steps\n1,512\n")
  fd = _hold_flock(run / ".lock")
  try:
    proc = _command("experiments.reproduce", "memory", f"--results={tmp_path / 'g'}",
                    "--seeds=0", "--methods=hts_ff", "--steps=2048", "--noreadme",
                    "--host_probe_s=0")
  finally:
    os.close(fd)
  assert (run / "metrics.csv").read_text() == "updates,env_steps\n1,512\n"
  assert proc.returncode == 1, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr
  assert f"in use by another run (pid {os.getpid()})" in proc.stdout, proc.stdout


@pytest.mark.slow
def test_a_second_reproduce_on_one_results_directory_is_refused_and_the_live_run_goes_on(
    tmp_path):
  results = tmp_path / "g"
  run = results / "runs" / "hts_ff" / "seed0"
  flags = ["memory", f"--results={results}", "--seeds=0", "--methods=hts_ff",
           "--steps=100000", "--noreadme", "--host_probe_s=0"]
  first = subprocess.Popen([sys.executable, "-m", "experiments.reproduce", *flags], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  try:
    deadline = time.monotonic() + 120
    while not (run / "metrics.csv").exists():
      assert first.poll() is None, first.communicate()
      assert time.monotonic() < deadline
      time.sleep(0.2)
    inode = os.stat(run).st_ino
    second = _command("experiments.reproduce", *flags)
    _one_line(second, str(results), f"pid {first.pid}")
    assert os.stat(run).st_ino == inode and (run / ".lock").exists()
    assert first.poll() is None
  finally:
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=120)


# The memory grid's bound.

def test_the_memory_grids_bound_is_the_runs_budget(tmp_path):
  """A run that missed 475 within its --steps is shown as at least its own budget, not the
  protocol's 100,000."""
  evals = [dict(e, mean_return=10.0) for e in json.load(open(
      os.path.join(MEMORY_RUN, "summary.json")))["eval"]]
  summary = json.load(open(os.path.join(MEMORY_RUN, "summary.json")))
  results, _ = _memory_results(tmp_path, eval=evals,
                               config=dict(summary["config"], total_steps=400_000))
  proc = _command("experiments.reproduce", "memory", f"--results={results}", "--methods=hts_ff",
                  "--steps=400000", "--report_only", "--noreadme")
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "≥400,000 (0/1 reached)" in proc.stdout, proc.stdout
  assert "≥100,000" not in proc.stdout


# Wrong-typed or crafted summary.json in reports.

BAD_SUMMARIES = {"string_sps": {"sps": "fast"}, "nan_sps": {"sps": math.nan},
                 "eval_none": {"eval": "none"}, "eval_list_of_lists": {"eval": [[1, 2]]},
                 "no_seed": {"seed": None}, "eval_empty": {"eval": []},
                 "host_text": {"host": "x"}, "config_list": {"config": [1]},
                 "load_number": {"host": {"cpu_model": "x", "load_start": 5}}}


@pytest.mark.parametrize("bad", list(BAD_SUMMARIES))
def test_a_wrong_typed_summary_is_skipped_by_report_only_with_a_warning(tmp_path, bad):
  results, run = _memory_results(tmp_path, **BAD_SUMMARIES[bad])
  before = (run / "summary.json").read_bytes()
  proc = _command("experiments.reproduce", "memory", f"--results={results}", "--report_only",
                  "--noreadme")
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr
  if bad != "eval_empty":  # a run without evaluations counts, with no evaluation figures
    assert f"{run / 'summary.json'}: " in proc.stdout, proc.stdout
    assert "the run counts as unfinished" in proc.stdout or "the run is skipped" in proc.stdout
  assert (run / "summary.json").read_bytes() == before


@pytest.mark.parametrize("bad", list(BAD_SUMMARIES))
def test_a_wrong_typed_summary_is_one_line_in_hts_report(tmp_path, bad):
  _, run = _memory_results(tmp_path, **BAD_SUMMARIES[bad])
  _one_line(_command("hts_jax.cli.report", str(run)), str(run / "summary.json"))


@pytest.mark.parametrize("kind", ["fifo", "symlink_to_dev_zero", "device"])
def test_a_report_never_reads_a_fifo_a_device_or_a_link(tmp_path, kind):
  run = tmp_path / "run"
  run.mkdir()
  target = run / "summary.json"
  if kind == "fifo":
    os.mkfifo(target)
  elif kind == "device":
    os.mknod(target, 0o644 | 0o020000, os.makedev(1, 5))  # /dev/zero's numbers
  else:
    os.symlink("/dev/zero", target)
  _one_line(_command("hts_jax.cli.report", str(run), timeout=30), str(target))
  results = tmp_path / "g"
  (results / "runs" / "hts_ff").mkdir(parents=True)
  os.rename(run, results / "runs" / "hts_ff" / "seed0")
  proc = _command("experiments.reproduce", "memory", f"--results={results}", "--report_only",
                  "--noreadme", timeout=60)
  assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
  assert "not a regular file" in proc.stdout, proc.stdout


# Unwritable outputs.

@pytest.mark.parametrize("where", ["/proc/version/x", "/proc/hts_results"])
def test_an_unwritable_results_or_out_is_one_line(tmp_path, where):
  _one_line(_command("experiments.reproduce", "memory", f"--results={where}", "--report_only",
                     "--noreadme"), where)
  _one_line(_command("hts_jax.cli.report", MEMORY_RUN, f"--out={where}"), where)


# Env constructors.

ENV_CASES = {
    "negative_max_episode_steps": (["--env=CartPole-v1", '--env_kwargs={"max_episode_steps": -5}'],
                                   ["CartPole-v1", "max_episode_steps"]),
    "vstep_mean_s_text": (["--env=vstep", '--env_kwargs={"mean_s": "abc"}'],
                          ["vstep", "mean_s"]),
    "envpool_noop_max": (["--env=atari:Pong", "--envpool", '--env_kwargs={"noop_max": -3}'],
                         ["atari:Pong", "noop_max"]),
    "no_such_module": (["--env=nosuchmodule:Foo-v0"], ["nosuchmodule:Foo-v0"]),
    "constructor_value_error": ([f"--env={HERE}:ValueErrorCartPole-v0"],
                                ["ValueErrorCartPole-v0", "ValueError",
                                 "the pole must be longer than zero"]),
    "dict_observations": ([f"--env={HERE}:DictObsCartPole-v0"],
                          ["DictObsCartPole-v0", "Dict"]),
}


@pytest.mark.parametrize("case", list(ENV_CASES))
def test_every_env_constructor_exception_is_one_line_naming_the_env(tmp_path, case):
  flags, words = ENV_CASES[case]
  _one_line(run_cli(tmp_path / "run", "--total_steps=1024", *flags, timeout=300), *words)


# Resources before allocation.

def test_storages_larger_than_memory_are_refused_before_allocation(tmp_path):
  line = _one_line(run_cli(tmp_path / "run", "--preset=cartpole_ppo", "--total_steps=1024",
                           "--alpha=100000000", timeout=120), "/dev/shm", "--alpha")
  assert "GiB" in line


def test_an_executor_killed_by_sigbus_is_named_as_shared_memory_running_out(tmp_path):
  """What a full /dev/shm does to an executor that touches a page of the storages there."""
  proc = start_and_wait_for_rows(
      str(tmp_path), 2, "--env=CartPole-v1", "--algo=a2c", "--num_envs=8", "--num_executors=2",
      "--alpha=5", "--notensorboard", "--total_steps=100000", "--executor_delay_s=0.002")
  pids = executor_pids(proc)
  os.kill(pids[1], signal.SIGBUS)
  _, stderr = proc.communicate(timeout=60)
  assert proc.returncode == 1 and "Traceback" not in stderr, stderr[-3000:]
  lines = error_lines(stderr)
  assert len(lines) == 1 and lines[0].startswith(
      "error: executor 1 (envs 4-7) died with exit code -7 (SIGBUS: shared memory ran out; "
      "/dev/shm has "), stderr[-3000:]


def test_storages_that_fit_in_ram_but_not_in_dev_shm_are_refused(monkeypatch):
  """Docker's default 64 MB /dev/shm: GFootball's stacked storages would be created anyway and an
  executor killed by SIGBUS at its first write past the room there."""
  from hts_jax.config import ConfigError  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime import storage  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(storage, "free_shm", lambda path="/dev/shm": 64 * 2**20)
  with pytest.raises(ConfigError, match=r"/dev/shm has 0.06 GiB free and RAM .* available"):
    storage.StorageSpec(512, 16, (72, 96, 16), "uint8")
  small = storage.StorageSpec(8, 2, (4,), "float32")  # a CartPole run's fits
  attached = storage.StorageSpec(512, 16, (72, 96, 16), "uint8", shm_name="hts_x")  # not allocated
  assert small.alpha == 8 and attached.shm_name == "hts_x"


def test_a_grids_report_never_reads_a_fifo_beside_its_runs(tmp_path):
  """A paper-style grid's report reads <results>/throughput.json: a FIFO there is one line, not a
  report that waits forever."""
  os.mkfifo(tmp_path / "throughput.json")
  _one_line(_command("experiments.reproduce", "minatar", f"--results={tmp_path}", "--report_only",
                     "--noreadme", timeout=60), str(tmp_path / "throughput.json"),
            "not a regular file")
