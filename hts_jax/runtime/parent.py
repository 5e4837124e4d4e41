"""A child process dies with its parent (Linux `PR_SET_PDEATHSIG`): a launcher's workers with the
launcher, a worker's executors with the worker, even when the parent is killed with SIGKILL and
cannot stop them. Imports nothing heavy (the launcher and the executors use it)."""

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
  """Asks the kernel to send `sig` to this process when the thread that started it ends; if the
  parent (`parent_pid`) has already gone, ends now. Does nothing where prctl is missing."""
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
  except (OSError, AttributeError):
    return
  if os.getppid() != parent_pid:  # the parent died before prctl took effect
    os.kill(os.getpid(), sig)
