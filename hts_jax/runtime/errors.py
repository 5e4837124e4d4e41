"""How a run ends when something goes wrong, as one line: `RunError` (a failing part),
`Interrupted` (SIGINT/SIGTERM, stopped cleanly), `error_line` (an exception as one line; a full
disk as "no space left on <file>"), and the output failures met on threads the run does not own
(recorded, then raised by the controller at its next output). No runtime imports: the outputs
and the core both use it.
"""

from __future__ import annotations

import errno
import signal
import threading
from typing import List, Optional


class RunError(RuntimeError):
  """A run stopped by a failing part (executor, actor, learner); the message is one line."""


class Interrupted(RuntimeError):
  """SIGINT/SIGTERM: the run stopped cleanly (checkpointing at a segment boundary if it could)."""

  def __init__(self, message: str, signum: int):
    super().__init__(message)
    self.signum = signum


def interrupted_message(signum: int, updates: int, path: str) -> str:
  return (f"interrupted by {signal.Signals(signum).name} at update {updates}; checkpoint saved in "
          f"{path}; continue with --resume")


def is_full_disk(e: BaseException) -> bool:
  return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "No space left" in str(e)


# Output failures (a full disk) met on threads the run does not own (tensorboardX's event writer)
# or that only log (the tracker's): recorded here by `record_output_error` and raised as one
# `RunError` line by the controller at its next output (`Controller._notify`), instead of a
# thread's traceback.
_OUTPUT_ERRORS: List[BaseException] = []


def record_output_error(e: BaseException) -> None:
  _OUTPUT_ERRORS.append(e)


def take_output_error() -> Optional[BaseException]:
  return _OUTPUT_ERRORS.pop(0) if _OUTPUT_ERRORS else None


def _thread_excepthook(args) -> None:
  if args.exc_value is not None and is_full_disk(args.exc_value):
    record_output_error(args.exc_value)
    return
  threading.__excepthook__(args)


def catch_output_errors(on: bool) -> None:
  """Routes a full disk met on any thread to `record_output_error` (on) or restores Python's
  default thread excepthook (off); other thread exceptions print as before."""
  threading.excepthook = _thread_excepthook if on else threading.__excepthook__
  if not on:
    _OUTPUT_ERRORS.clear()


def error_line(e: BaseException, path: Optional[str] = None) -> str:
  """An exception as one line: `Type: its first line`; a full disk (ENOSPC, or a library's
  message saying so) as `no space left on <the file, or path>`."""
  text = str(e)
  if is_full_disk(e):
    return f"no space left on {getattr(e, 'filename', None) or path or 'the device'}"
  lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
  return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def failed_message(msg) -> str:
  """An executor's `Failed` report as one line."""
  return (f"executor {msg.executor}" + (f", env {msg.env_id}" if msg.env_id is not None else "")
          + f": {msg.error}")
