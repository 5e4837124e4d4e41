"""The one way an experiment starts a training run.

- `in_process(**config)`: the runtime in this process, in a temporary logdir, its progress on
  stderr (the benchmark scripts: their stdout is their JSON).
- `run_process(args, logdir)`: one `python -m hts_jax <args>` process (what `hts-train` runs, with
  start-up signals handled), what a user types; its summary.json, or `RunFailed` with the last line
  it wrote to stderr (kept in `<logdir>/stderr.txt`).
- `launch(flag_values, logdir)`: a grid's resumable `run_process`: a run whose summary.json
  reads is finished and never run again (refused when it ran with other settings), an interrupted
  one (no summary.json, or one that does not parse: named in one line) starts over from scratch
  (a run's wall time must come from one sitting).
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

from hts_jax.results import grid
from hts_jax.results.provenance import ROOT


class RunFailed(RuntimeError):
  """A training process that ended without its summary.json (the message: its last error line)."""


# The SIGINTs this program's handler has seen (`catch_sigint`): `launch` starts no further run
# after one, and hts-reproduce ends with its one line and exit 130 even where the handler's
# KeyboardInterrupt did not reach it (a full suite under load once saw a Ctrl-C end as a failed
# run instead).
SIGINTS: List[int] = []


def catch_sigint() -> None:
  """Records every SIGINT in SIGINTS, then raises KeyboardInterrupt as Python's own handler does."""
  def handler(signum, frame):
    del frame
    SIGINTS.append(signum)
    raise KeyboardInterrupt
  signal.signal(signal.SIGINT, handler)


def flag_args(flag_values: Mapping[str, Any]) -> List[str]:
  """`--name=value` for each flag (booleans as true/false)."""
  return [f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in flag_values.items()]


def train_command(args: Sequence[str]) -> List[str]:
  """The training process's command line: this Python, `-m hts_jax`, `args`."""
  return [sys.executable, "-m", "hts_jax", *args]


def _env() -> Dict[str, str]:
  """The child's environment: the checkout on its path (a clone needs no install)."""
  path = os.environ.get("PYTHONPATH", "")
  return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, path]) if path else ROOT)


def in_process(**config) -> Dict[str, Any]:
  """One run of the runtime in this process, in a temporary logdir, its progress lines sent to
  stderr. `config`: RunConfig fields by flag name (`RunConfig.make`); `learner`: a dict of
  LearnerConfig fields or a LearnerConfig. Returns summary.json's dict."""
  from hts_jax import config as hts_config  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime import modes  # pylint: disable=import-outside-toplevel
  with tempfile.TemporaryDirectory() as logdir:
    cfg = hts_config.RunConfig.make(**{"logdir": logdir, "eval_episodes": 1, "log_every_s": 1e9,
                                       **config})
    with contextlib.redirect_stdout(sys.stderr):
      return modes.run(cfg)


def _last_line(text: str, default: str) -> str:
  lines = [line for line in text.splitlines() if line.strip()]
  return lines[-1] if lines else default


def held_by(logdir: str) -> Optional[str]:
  """Who holds the training lock of the run in `logdir` (`pid N`), or None when nobody does: a
  run directory is deleted only then."""
  lock = os.path.join(logdir, ".lock")
  try:
    fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
  except FileNotFoundError:
    return None
  except OSError:
    return "another process (its .lock cannot be opened)"
  try:
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
  except OSError:
    pid = os.read(fd, 32).decode(errors="replace").strip()
    return f"pid {pid}" if pid.isdigit() else "another process"
  finally:
    os.close(fd)
  return None


def run_process(args: Sequence[str], logdir: str, *, timeout_s: Optional[float] = None,
                echo: bool = False) -> Dict[str, Any]:
  """Runs `python -m hts_jax <args> --logdir=<logdir>` (a fresh `logdir`: an old one is removed)
  in the checkout's root. Returns its summary.json; raises RunFailed when it fails or outlives
  `timeout_s`, or when a live run holds `logdir`'s lock (the folder is then left as it is). Its
  stderr stays in `<logdir>/stderr.txt` when it failed."""
  logdir = os.path.abspath(logdir)
  holder = held_by(logdir)
  if holder:  # a live training process writes there: its folder is never deleted under it
    raise RunFailed(f"{logdir} is in use by another run ({holder}): left as it is")
  shutil.rmtree(logdir, ignore_errors=True)
  os.makedirs(logdir)
  cmd = train_command([*args, f"--logdir={logdir}"])
  if echo:
    print("$ python " + " ".join(cmd[1:]), flush=True)
  err_path = os.path.join(logdir, "stderr.txt")
  summary = os.path.join(logdir, "summary.json")
  with open(err_path, "w") as err:
    try:
      proc = subprocess.run(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=err,
                            text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
      raise RunFailed(f"stopped after {timeout_s:g} s") from None
  if proc.returncode != 0 and os.path.exists(summary):  # e.g. a signal in the final evaluation
    os.remove(summary)
  if proc.returncode != 0 or not os.path.exists(summary):
    with open(err_path) as f:
      raise RunFailed(f"exit {proc.returncode}: {_last_line(f.read(), '(no output)')}")
  os.remove(err_path)
  if echo:
    print(f"  {_last_line(proc.stdout, '(no output)')}", flush=True)
  with open(summary) as f:
    return json.load(f)


# The flags that a finished run's config must match for a grid to take it as done.
CHECKED = ("env", "env_kwargs", "mode", "core", "correction", "num_envs", "num_executors",
           "num_actors", "total_steps", "seed", "eval_every", "async_batch_unrolls",
           "lagged_acting")


def settings_mismatch(flag_values: Mapping[str, Any], logdir: str,
                      summary: Optional[Mapping[str, Any]] = None) -> List[str]:
  """`name: ran X, grid wants Y` for each CHECKED flag in which the finished run in `logdir` (its
  `summary`, read if not given) differs from `flag_values` (a grid resumed with other budgets,
  envs, ...)."""
  summary = grid.read_summary(logdir) if summary is None else summary
  config = (summary or {}).get("config") or {}
  config = {**config, **(config.get("learner") or {})}
  out = []
  for name in CHECKED:
    if name not in flag_values or name not in config:
      continue
    want = flag_values[name]
    want = json.loads(want) if name == "env_kwargs" else type(config[name])(want)
    if config[name] != want:
      out.append(f"{name}: ran {config[name]!r}, grid wants {want!r}")
  return out


def launch(flag_values: Mapping[str, Any], logdir: str, *, dry_run: bool = False) -> bool:
  """Runs one training process with `flag_values` into `logdir` unless it finished before. True
  when it ran and finished (or had finished); False when it failed (its stderr.txt says why),
  when a finished run there has other settings, or with `dry_run` (the command printed).
  KeyboardInterrupt after a SIGINT (`catch_sigint`), even one whose exception was lost."""
  if SIGINTS:
    raise KeyboardInterrupt
  summary = grid.read_summary(logdir)
  if summary is not None:
    differ = settings_mismatch(flag_values, logdir, summary)
    if differ:
      print(f"  {logdir} finished with other settings ({'; '.join(differ)}): delete it to run "
            "it again with these", flush=True)
      return False
    print(f"done before: {logdir}", flush=True)
    return True
  args = flag_args(flag_values)
  if dry_run:
    cmd = train_command([*args, f"--logdir={os.path.abspath(logdir)}"])
    print("$ python " + " ".join(cmd[1:]), flush=True)
    return False
  if os.path.exists(logdir) and not held_by(logdir):  # an interrupted run: its wall
    # time cannot be continued (a held one is named by `run_process` and left as it is)
    print(f"  removing the unfinished run in {logdir}", flush=True)
  start = time.time()
  try:
    run_process(args, logdir, echo=True)
  except RunFailed as e:
    print(f"  FAILED after {time.time() - start:.0f} s: {e}", flush=True)
    return False
  return True
