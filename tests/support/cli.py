"""The launcher as a user runs it (`python -m experiments.train`), and what its runs leave."""

import json
import os
import subprocess
import sys
import time

import psutil

from hts_jax.runtime.storage import shm_prefix
from tests.support import ROOT


def leftover_shm(tmp_path):
  """The /dev/shm entries of the runs that wrote to `tmp_path` or a folder below it (a run's
  shared memory is named after its logdir: tests running side by side do not see each other's)."""
  prefixes = tuple(shm_prefix(str(d)) for d in [tmp_path, *tmp_path.rglob("*")] if d.is_dir())
  return {n for n in os.listdir("/dev/shm") if n.startswith(prefixes)}


def cmd(logdir, *flags):
  return [sys.executable, "-m", "experiments.train", f"--logdir={logdir}", *flags]


def run_cli(logdir, *flags, timeout=600, env=None):
  return subprocess.run(cmd(logdir, *flags), cwd=ROOT, capture_output=True, text=True,
                        timeout=timeout, env=env)


def metric_rows(logdir):
  path = os.path.join(logdir, "metrics.csv")
  if not os.path.exists(path):
    return 0
  with open(path) as f:
    return max(0, len(f.read().strip().splitlines()) - 1)


def start_and_wait_for_rows(logdir, rows, *flags):
  proc = subprocess.Popen(cmd(logdir, *flags), cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
  deadline = time.monotonic() + 300
  while metric_rows(logdir) < rows:
    assert proc.poll() is None, proc.communicate()
    assert time.monotonic() < deadline
    time.sleep(0.05)
  return proc


def executor_pids(proc):
  """The run's child processes but multiprocessing's resource tracker (a child that has just
  exited, a zombie or gone, is left out)."""
  out = []
  for c in psutil.Process(proc.pid).children(recursive=True):
    try:
      if "resource_tracker" not in " ".join(c.cmdline()):
        out.append(c.pid)
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
      pass
  return out


def error_lines(stderr):
  return [l for l in stderr.strip().splitlines() if l.startswith("error:")]


def summary(logdir):
  with open(os.path.join(logdir, "summary.json")) as f:
    return json.load(f)


def train(logdir, *flags):
  """A whole run through the launcher that must succeed: (its summary, its stdout)."""
  proc = subprocess.run(cmd(logdir, "--log_every_s=1000", *flags), cwd=ROOT,
                        capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stderr[-2000:]
  return summary(logdir), proc.stdout


def launcher_configs(flag_sets):
  """The RunConfigs (as dicts) the launcher builds from these sets of flag values (a grid's
  `run_flags`), parsed as it parses them, in one subprocess."""
  code = ("import sys, json; from absl import flags; from experiments import train\n"
          "out = []\n"
          "for argv in json.loads(sys.argv[1]):\n"
          "  flags.FLAGS.unparse_flags(); flags.FLAGS(['train', *argv])\n"
          "  out.append(train.build_config().to_dict())\n"
          "print(json.dumps(out))")
  from hts_jax.runs import launch  # pylint: disable=import-outside-toplevel
  argvs = [launch.flag_args(f) for f in flag_sets]
  out = subprocess.run([sys.executable, "-c", code, json.dumps(argvs)], cwd=ROOT,
                       capture_output=True, text=True, check=True).stdout
  return json.loads(out)


def run_python(code: str, timeout=300):
  """`code` run by a fresh Python in the repository root (what a new process prints)."""
  return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                        timeout=timeout)
