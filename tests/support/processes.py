"""Multi-process runs as `experiments.launch` starts them, and the processes and shared memory
they leave (read from /proc: no procps needed)."""

import os
import subprocess
import sys
import time

from hts_jax.runtime.storage import shm_prefix
from tests.support import ROOT

RUN = ["--env=CartPole-v1", "--num_envs=8", "--alpha=5", "--seed=3", "--log_every_s=1000"]


def env(devices=1):
  return dict(os.environ, JAX_PLATFORMS="cpu",
              XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")


def launch(logdir, *flags, processes=2):
  return subprocess.Popen([sys.executable, "-m", "experiments.launch",
                           f"--num_processes={processes}", "--", *RUN, f"--logdir={logdir}",
                           *flags], cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def processes():
  """{pid: (parent pid, command line)} of the live processes (from /proc: no procps needed)."""
  out = {}
  for d in os.listdir("/proc"):
    if not d.isdigit():
      continue
    try:
      with open(f"/proc/{d}/cmdline", "rb") as f:
        cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
      with open(f"/proc/{d}/stat") as f:
        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
      continue  # gone meanwhile
    out[int(d)] = (ppid, cmd)
  return out


def pids(*parts):
  """Processes whose command line holds every one of `parts`."""
  return [p for p, (_, cmd) in processes().items() if all(x in cmd for x in parts)]


def left_behind(logdir):
  """Processes of the run (trainers) still alive."""
  return pids(f"logdir={logdir}")


def shm(logdir):
  """The /dev/shm entries of the run writing to `logdir` (named after it: other runs, e.g. of tests
  running side by side, are not counted)."""
  return {n for n in os.listdir("/dev/shm") if n.startswith(shm_prefix(logdir))}


def wait_training(logdir, rows=3, timeout=120.0):
  """Until process 0 has logged `rows` learner updates."""
  path, deadline = os.path.join(logdir, "metrics.csv"), time.monotonic() + timeout
  while time.monotonic() < deadline:
    if os.path.exists(path):
      with open(path) as f:
        if len(f.read().splitlines()) > rows:
          return
    time.sleep(0.2)
  raise AssertionError("the run did not start training")


def settle(logdir, timeout=15.0):
  """Waits (up to `timeout`) until the run left no process or shared memory behind, and asserts
  it: a leak never clears, so this still fails for one."""
  deadline = time.monotonic() + timeout
  while (left_behind(logdir) or shm(logdir)) and time.monotonic() < deadline:
    time.sleep(0.2)
  assert left_behind(logdir) == []
  assert not shm(logdir)
