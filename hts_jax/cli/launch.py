r"""Starts a multi-process HTS-RL run on this machine: N processes of `hts-train` joined by
`jax.distributed` on a free local port.

  hts-launch --num_processes=2 -- --env=CartPole-v1 --num_envs=16 \
      --total_steps=200000 --logdir=runs/two

Process i gets `--num_processes=N --process_id=i --coordinator_address=127.0.0.1:<port>
--job_token=<random>` (a free port, and the next one free for the job check); each
runs the executors and actors of its N-th of the envs, the learner spans all of them, process 0
writes the outputs. Process 0's output is shown as it comes; the others' stderr is kept (in a
temporary folder) to report a failure.
If any process fails (exits with an error, is killed) or stalls (is stopped, e.g. by SIGSTOP, for
more than a second), the others are stopped quietly (SIGTERM, then SIGKILL after a grace period;
their output is no longer shown) and the launcher exits with the failed process's code after one
line naming the first process that failed and its cause. SIGINT/SIGTERM are forwarded to every
process. The processes die with the launcher (`PR_SET_PDEATHSIG`), even when it is killed with
SIGKILL, and their executors with them.

On several machines, run `hts-train ... --num_processes=N --process_id=i
--coordinator_address=<host of process 0>:<port>` once per machine (under SLURM, i is
`$SLURM_PROCID`).
"""

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import List, Optional

from absl import flags

from hts_jax.cli import common as cli
from hts_jax.runtime.parent import die_with_parent

flags.DEFINE_integer("num_processes", 2, "Processes to start on this machine.")
flags.DEFINE_float("grace_s", 5.0, "Seconds a process gets to stop after SIGTERM before SIGKILL.")
flags.DEFINE_string("module", "hts_jax.cli.train",
                    "What each process runs (`python -m <module> <flags> --num_processes=N "
                    "--process_id=i --coordinator_address=...`).")
flags.DEFINE_bool("pin_cores", False,
                  "Pin process i (and its executors) to CPU core i mod the core count.")
FLAGS = flags.FLAGS

# The folder holding the `hts_jax` package (a clone's root, or site-packages): put first on the
# processes' PYTHONPATH so that `-m <module>` finds this very copy from any working directory.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env() -> dict:
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
  return env


def free_port() -> int:
  """A free port P whose next port is free too (P + 1 is the job check beside the coordinator,
  `job_check`)."""
  while True:
    with socket.socket() as s:
      s.bind(("127.0.0.1", 0))
      port = s.getsockname()[1]
    with socket.socket() as s:
      try:
        s.bind(("", port + 1))
        return port
      except OSError:
        continue


def _last_line(path) -> Optional[str]:
  """The process's error line: its last `error:` line, else its last exception line (None if it
  wrote neither: a warning or a dump is not a cause)."""
  with open(path, errors="replace") as f:
    lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
  for ln in reversed(lines):
    if ln.startswith("error:"):
      return ln[len("error:"):].strip()
  for ln in reversed(lines):
    if re.match(r"^[\w.]*(Error|Exception)\b", ln):
      return ln
  return None


# Native logging and dumps, which a process's stderr may hold: glog lines of JAX's C++ runtime
# (`E1127 22:11:12.115354 32328 file.cc:518] message`), and the dumps of a native abort (a glog
# fatal line, absl's check-failure stack, Python's faulthandler over every thread): pages that
# the launcher keeps to its log file and sums up in its one line.
_GLOG = re.compile(r"^[EWIF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]]*\] ?(.*)$")
_DUMP = re.compile(r"^(F\d{4} \d\d:|\*\*\* Check failure|Fatal Python error)")


def _fatal(path) -> Optional[str]:
  """A natively aborted process's own reason: its glog fatal line's message, else Python's
  `Fatal Python error: ...`."""
  with open(path, errors="replace") as f:
    lines = f.read().splitlines()
  for ln in lines:
    m = _GLOG.match(ln)
    if m and ln.startswith("F"):
      return m.group(1).strip()
  return next((ln.strip() for ln in lines if ln.startswith("Fatal Python error")), None)


def _stopped(pid: int) -> bool:
  """Whether the process is stopped (SIGSTOP, SIGTSTP): state T in /proc/<pid>/stat."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
  except (OSError, IndexError):
    return False


def _cause(code: Optional[int], err: str) -> str:
  """Why a process failed: `(how)`, then its own error line if it wrote one."""
  if code is None:
    return "(stalled: stopped by a signal for more than 1 s)"
  if code < 0:
    fatal = _fatal(err) if code == -signal.SIGABRT else None
    return f"(killed by {signal.Signals(-code).name})" + (f": {fatal}" if fatal else "")
  line = _last_line(err)
  return f"(exit {code})" + (f": {line}" if line else "")


class _Forward(threading.Thread):
  """Copies a process's stderr to ours (and to a file, to name its error) until `quiet`; native
  log lines, and everything from a native abort's first dump line on, go to the file only."""

  def __init__(self, stream, path):
    super().__init__(daemon=True)
    self.stream, self.path, self.quiet, self.dumping = stream, path, False, False

  def run(self):
    with open(self.path, "w") as f:
      for line in iter(self.stream.readline, ""):
        f.write(line)
        f.flush()
        self.dumping = self.dumping or bool(_DUMP.match(line))
        if not (self.quiet or self.dumping or _GLOG.match(line)):
          sys.stderr.write(line)
          sys.stderr.flush()


def _stop(procs: List[subprocess.Popen], grace_s: float) -> None:
  for p in procs:
    if p.poll() is None:
      p.send_signal(signal.SIGTERM)
      if _stopped(p.pid):
        p.kill()  # a stopped process would hold SIGTERM until continued
  deadline = time.monotonic() + grace_s
  for p in procs:
    try:
      p.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
      p.kill()
      p.wait()


def launch(num_processes: int, train_flags: List[str], grace_s: float = 5.0,
           pin_cores: bool = False, module: str = "hts_jax.cli.train") -> int:
  """Runs the processes (`python -m <module> <flags> --num_processes ...`) to the end; returns
  the exit code (0, or the first failure's)."""
  if num_processes < 1:
    cli.fail(f"num_processes must be >= 1, got {num_processes}")
  logs = tempfile.mkdtemp(prefix="hts_launch_")  # the other processes' stderr
  try:
    return _run(num_processes, train_flags, grace_s, pin_cores, module, logs)
  finally:
    shutil.rmtree(logs, ignore_errors=True)


def _run(num_processes, train_flags, grace_s, pin_cores, module, logs) -> int:
  address = f"127.0.0.1:{free_port()}"
  # One process joins nothing: it is given neither an address nor a token (it would refuse them).
  if num_processes > 1 and not any(f.startswith("--job_token=") for f in train_flags):
    train_flags = [*train_flags, f"--job_token={secrets.token_hex(16)}"]
  env = _env()
  launcher = os.getpid()
  procs, errs, forwards = [], [], []
  for i in range(num_processes):
    cmd = [sys.executable, "-m", module, *train_flags,
           f"--num_processes={num_processes}", f"--process_id={i}",
           *([f"--coordinator_address={address}"] if num_processes > 1 else [])]

    def start(core=i % os.cpu_count() if pin_cores else None):
      die_with_parent(launcher)  # a launcher killed with SIGKILL takes its processes along
      if core is not None:
        os.sched_setaffinity(0, {core})

    err = os.path.join(logs, f"process-{i}.stderr")
    errs.append(err)
    if i == 0:  # process 0's output is the run's: shown as it comes (until another fails)
      procs.append(subprocess.Popen(cmd, env=env, preexec_fn=start, start_new_session=True,
                                    stderr=subprocess.PIPE, text=True, errors="replace"))
      forwards.append(_Forward(procs[0].stderr, err))
      forwards[0].start()
      continue
    with open(err, "w") as f:
      procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=f,
                                    preexec_fn=start, start_new_session=True))

  forwarded = []

  def forward(signum, _frame):
    forwarded.append(signum)
    for p in procs:
      if p.poll() is None:
        p.send_signal(signum)

  signal.signal(signal.SIGINT, forward)
  signal.signal(signal.SIGTERM, forward)
  stopped_since = {}
  while True:
    codes = [p.poll() for p in procs]
    if forwarded and any(c is not None for c in codes):
      # Asked to stop: the processes stop together at a segment boundary; give them the time.
      try:
        for p in procs:
          p.wait(grace_s + 30.0)
      except subprocess.TimeoutExpired:
        pass
      codes = [p.poll() for p in procs]
      if all(c == 128 + forwarded[0] for c in codes):
        return _finish(forwards, codes[0])
    now = time.monotonic()
    for i, p in enumerate(procs):
      if codes[i] is None and _stopped(p.pid):
        stopped_since.setdefault(i, now)
      else:
        stopped_since.pop(i, None)
    stalled = [i for i, t in stopped_since.items() if now - t > 1.0]
    failed = [i for i, c in enumerate(codes) if c not in (None, 0)] + stalled
    if failed:
      # The first seen is the cause: its peers then fail in their collectives. Seen together, a
      # stopped or killed process is the cause rather than one that exited with an error.
      i = min(failed, key=lambda i: (codes[i] is not None and codes[i] > 0, i))
      for f in forwards:
        f.quiet = True  # the others stop quietly
      _stop(procs, grace_s)
      print(f"error: process {i} failed {_cause(codes[i], errs[i])}", file=sys.stderr)
      code = codes[i] if codes[i] is not None else -signal.SIGSTOP
      return _finish(forwards, code if code > 0 else 128 - code)
    if all(c == 0 for c in codes):
      return _finish(forwards, 0)
    time.sleep(0.05)


def _finish(forwards, code: int) -> int:
  for f in forwards:
    f.join(timeout=5.0)  # the last of process 0's output
  return code


def main(argv):
  sys.exit(launch(FLAGS.num_processes, argv[1:], FLAGS.grace_s, FLAGS.pin_cores, FLAGS.module))


def run():
  """The `hts-launch` console command."""
  cli.run_main(main, __name__)


if __name__ == "__main__":
  run()
