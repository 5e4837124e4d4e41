"""What a grid or a report trusts of a results directory: it reads only regular files (a FIFO
would block it, a device or a link to one read forever, a planted link show another file), takes
only summary.json files of the expected types, and holds the results directory for the whole
`hts-reproduce` call, so that a second call on it never deletes a run under a live one (nor does
a call delete a run directory whose training process still holds its lock: `hts_jax.runs`)."""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import stat
from typing import Any, Dict, List, Optional

# The largest summary.json read (a real one is well under 1 MB; a crafted huge one is refused
# instead of filling memory).
MAX_BYTES = 256 * 2**20


class Refused(ValueError):
  """A results directory this call cannot have (held by another call, or not writable)."""


class UnsafeFile(OSError):
  """A path that is not a regular file (a FIFO, a device, a link, a directory)."""


def read_regular(path: str, limit: int = MAX_BYTES) -> str:
  """The text of `path`, opened without following a link and without blocking on a FIFO, and
  only when it is a regular file (UnsafeFile otherwise)."""
  try:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
  except OSError as e:
    if e.errno == errno.ELOOP:
      raise UnsafeFile(errno.ELOOP, "a link, not a regular file", path) from None
    raise
  with os.fdopen(fd, "rb") as f:
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
      raise UnsafeFile(errno.EINVAL, "not a regular file", path)
    data = f.read(limit + 1)
  if len(data) > limit:
    raise UnsafeFile(errno.EFBIG, f"larger than {limit:,} bytes", path)
  return data.decode("utf-8", errors="replace")


def _number(v: Any) -> bool:
  return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# summary.json's fields that reports compute with, and what each must be.
_NUMBERS = ("sps", "wall_time_s", "env_steps")
_EVAL_NUMBERS = ("env_steps", "wall_time_s", "mean_return")


def _dict(v: Any) -> bool:
  """an object"""
  return isinstance(v, dict)


def _text(v: Any) -> bool:
  """a string"""
  return isinstance(v, str)


def _listed(v: Any) -> bool:
  """a non-empty list"""
  return isinstance(v, list) and bool(v)


def _finite(v: Any) -> bool:
  """a finite number"""
  return _number(v)


# Nested fields the reports read (the host block's figures, the config), each where present.
_TYPED = ((("config",), _dict), (("param_sha256",), _text), (("host",), _dict),
          (("host", "calibration"), _dict), (("host", "calibration", "total_ms"), _finite),
          (("host", "calibration_end"), _dict), (("host", "calibration_end", "total_ms"), _finite),
          (("host", "cpu_steal_share"), _finite), (("host", "cpu_model"), _text),
          (("host", "load_start"), _listed), (("host", "load_end"), _listed))


def summary_problem(summary: Any, evaluated: bool = False) -> Optional[str]:
  """Why `summary` (a parsed summary.json) cannot be reported (None: it can): each field a
  report computes with, where present, must have its type, numbers finite; `evaluated` (a
  report of evaluations): a seed and at least one evaluation (a grid's run without them still
  counts as finished)."""
  if not isinstance(summary, dict):
    return "not a JSON object"
  for key in _NUMBERS:
    if key in summary and not _number(summary[key]):
      return f"{key} is {summary[key]!r}, not a finite number"
  for path, kind in _TYPED:
    where, value = summary, None
    for key in path:
      value = where.get(key) if isinstance(where, dict) else None
      where = value
    if value is not None and not kind(value):
      return f"{'.'.join(path)} is {value!r}, not {kind.__doc__}"
  seed = summary.get("seed")
  if ("seed" in summary or evaluated) and (not isinstance(seed, int) or isinstance(seed, bool)):
    return f"seed is {seed!r}, not an integer"
  evals = summary.get("eval", [])
  if not isinstance(evals, list) or (evaluated and not evals):
    return f"eval is {evals!r}, not a list of evaluations"
  for e in evals:
    if not isinstance(e, dict) or not all(_number(e.get(k)) for k in _EVAL_NUMBERS):
      return f"eval holds {e!r}, not an evaluation (finite {', '.join(_EVAL_NUMBERS)})"
    returns = e.get("returns")
    if returns is not None and not (isinstance(returns, list) and all(map(_number, returns))):
      return f"an evaluation's returns are {returns!r}, not a list of finite numbers"
  return None


def load_summary(path: str, evaluated: bool = False) -> Dict[str, Any]:
  """summary.json at `path`, read safely (`read_regular`) and checked (`summary_problem`);
  ValueError (one line naming `path`) otherwise."""
  try:
    summary = json.loads(read_regular(path))
  except OSError as e:
    raise ValueError(f"{path}: {e.strerror or e}") from None
  except ValueError as e:
    raise ValueError(f"{path} does not parse ({e})") from None
  problem = summary_problem(summary, evaluated)
  if problem:
    raise ValueError(f"{path}: {problem}")
  return summary


# The descriptors of the results directories this process holds (one per directory, for the
# process's life: the kernel drops the lock when the process ends, however it ends).
_HELD: Dict[str, int] = {}


def _lock_holders(st: os.stat_result) -> List[str]:
  """The pids /proc/locks names for a FLOCK on the inode `st` (empty where it cannot tell)."""
  key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
  try:
    with open("/proc/locks") as f:
      rows = [line.split() for line in f]
  except OSError:
    return []
  return [r[4] for r in rows if len(r) > 5 and r[1] == "FLOCK" and r[5] == key]


def lock_results(results: str) -> None:
  """Holds `results` (created if missing) for this process; Refused (one line naming the
  holder) when another process holds it, or when it cannot be created or written."""
  path = os.path.abspath(results)
  if path in _HELD:
    return
  try:
    os.makedirs(path, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
  except OSError as e:
    raise Refused(f"--results={results}: cannot create or open it ({e.strerror or e})"
                     ) from None
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except OSError as e:
    holders = _lock_holders(os.fstat(fd))
    os.close(fd)
    if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
      who = f"pid {', '.join(holders)}" if holders else "another process"
      raise Refused(f"{path} is in use by another hts-reproduce ({who}): wait for it to end "
                       "or choose another --results") from None
    raise
  if not os.access(path, os.W_OK):
    os.close(fd)
    raise Refused(f"--results={results}: not writable")
  _HELD[path] = fd
