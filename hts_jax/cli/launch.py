r"""Starts a multi-process HTS-RL run on this machine: N processes of `hts-train` joined by
`jax.distributed` on a free local port.

  hts-launch --num_processes=2 -- --env=CartPole-v1 --num_envs=16 \
      --total_steps=200000 --logdir=runs/two

Process i gets `--num_processes=N --process_id=i --coordinator_address=127.0.0.1:<port>`; each
runs the executors and actors of its N-th of the envs, the learner spans all of them, process 0
writes the outputs. Process 0's output is shown as it comes; the others' stderr is kept (in a
temporary folder) to report a failure.
If any process fails, the others are stopped (SIGTERM, then SIGKILL after a grace period) and the
launcher exits with the failed process's code after one line naming it. SIGINT/SIGTERM are
forwarded to every process.

On several machines, run `hts-train ... --num_processes=N --process_id=i
--coordinator_address=<host of process 0>:<port>` once per machine (under SLURM, i is
`$SLURM_PROCID`).
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import List

from absl import flags

from hts_jax.cli import common as cli

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
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _last_line(path) -> str:
  """The process's error line: its last `error:` line, else its last exception line, else its
  last line (process 0's went to our stderr: see above)."""
  if path is None:
    return "see its error above"
  with open(path, errors="replace") as f:
    lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
  for pick in (lambda ln: ln.startswith("error:"),
               lambda ln: re.match(r"^[\w.]*(Error|Exception)\b", ln) is not None):
    found = [ln for ln in lines if pick(ln)]
    if found:
      return found[-1][len("error:"):].strip() if found[-1].startswith("error:") else found[-1]
  return lines[-1] if lines else "(no output)"


def _stop(procs: List[subprocess.Popen], grace_s: float) -> None:
  for p in procs:
    if p.poll() is None:
      p.send_signal(signal.SIGTERM)
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
  env = _env()
  procs, errs = [], []
  for i in range(num_processes):
    cmd = [sys.executable, "-m", module, *train_flags,
           f"--num_processes={num_processes}", f"--process_id={i}",
           f"--coordinator_address={address}"]
    pin = None
    if pin_cores:
      core = i % os.cpu_count()
      pin = lambda core=core: os.sched_setaffinity(0, {core})
    if i == 0:  # process 0's output is the run's: shown as it comes
      errs.append(None)
      procs.append(subprocess.Popen(cmd, env=env, preexec_fn=pin, start_new_session=True))
      continue
    err = os.path.join(logs, f"process-{i}.stderr")
    errs.append(err)
    with open(err, "w") as f:
      procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=f,
                                    preexec_fn=pin, start_new_session=True))

  forwarded = []

  def forward(signum, _frame):
    forwarded.append(signum)
    for p in procs:
      if p.poll() is None:
        p.send_signal(signum)

  signal.signal(signal.SIGINT, forward)
  signal.signal(signal.SIGTERM, forward)
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
        return codes[0]
    failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
    if failed:
      # Seen together, a process killed by a signal is the cause: its peers then fail in their
      # collectives.
      i = min(failed, key=lambda i: (codes[i] > 0, i))
      _stop(procs, grace_s)
      how = (f"killed by {signal.Signals(-codes[i]).name}" if codes[i] < 0
             else f"exit {codes[i]}")
      print(f"error: process {i} failed ({how}): {_last_line(errs[i])}", file=sys.stderr)
      return codes[i] if codes[i] > 0 else 128 - codes[i]
    if all(c == 0 for c in codes):
      return 0
    time.sleep(0.05)



def main(argv):
  sys.exit(launch(FLAGS.num_processes, argv[1:], FLAGS.grace_s, FLAGS.pin_cores, FLAGS.module))


def run():
  """The `hts-launch` console command."""
  cli.run_main(main, __name__)


if __name__ == "__main__":
  run()
