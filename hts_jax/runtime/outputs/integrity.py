"""A checkpoint's integrity, beside `checkpoint` (which writes and reads it with orbax): the
digest of each part recorded when it is written and verified when it is read, the size and sha256
of each file of a finished checkpoint folder (`files.json`) checked before orbax reads any, one
line for a failed read, and the quieting of orbax's own copies of a failure it reports (its
threads' logged tracebacks, and the aftermath of its abandoned concurrent reads and writes)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import sys
from typing import Any, Dict, List

from absl import logging as absl_logging

from hts_jax.runtime.errors import error_line
from hts_jax.runtime.outputs import files
from hts_jax.runtime.outputs.reporting import param_sha256


def _through_orbax(exc) -> bool:
  """Whether an exception was raised in or through orbax's code (a frame of its traceback)."""
  tb = getattr(exc, "__traceback__", None)
  while tb is not None:
    if f"{os.sep}orbax{os.sep}" in tb.tb_frame.f_code.co_filename:
      return True
    tb = tb.tb_next
  return False


class _QuietOrbaxErrors(logging.Filter):
  """Orbax logs a failed write's traceback on its own threads before the error reaches `save`,
  which reports it in one line (a full disk: `no space left on <dir>`): drop orbax's copy. On
  the asyncio logger: a future of orbax's event loop whose exception (raised through orbax) was
  never retrieved, because orbax ended the loop at the first failure of its concurrent writes."""

  def filter(self, record: logging.LogRecord) -> bool:
    if record.name == "asyncio":
      return not (record.exc_info and "exception was never retrieved" in record.getMessage()
                  and _through_orbax(record.exc_info[1]))
    return not (record.levelno >= logging.ERROR and f"{os.sep}orbax{os.sep}" in record.pathname)


_QUIET = _QuietOrbaxErrors()
absl_logging.get_absl_logger().addFilter(_QUIET)
logging.getLogger("asyncio").addFilter(_QUIET)


def _orbax_aftermath(unraisable) -> bool:
  """Whether an unraisable exception is the aftermath of an orbax read or write that already
  failed (and was reported in one line by `save` or `restore`). Orbax runs a checkpoint's array
  reads and writes concurrently on its own event loop; when one fails (a full disk, a truncated
  file), orbax ends the loop while the others are still going, and they end later, at any moment:
  tensorstore's callbacks into the closed loop raise "Event loop is closed" (with no object), and
  orbax's suspended reads, when collected, turn the GeneratorExit that closes them into a new
  Exception. Python can only print those, as tracebacks. The project runs no event loop of its
  own, so a closed loop is always orbax's."""
  exc = unraisable.exc_value
  if getattr(unraisable.object, "__qualname__", None) == "_read_array_index_and_device_put":
    return isinstance(exc, Exception)
  return (unraisable.object is None and isinstance(exc, RuntimeError)
          and str(exc) == "Event loop is closed")


def _quiet_orbax_aftermath(previous):
  def hook(unraisable):
    if not _orbax_aftermath(unraisable):
      previous(unraisable)
  hook.quiets_orbax = True
  return hook


if not getattr(sys.unraisablehook, "quiets_orbax", False):
  sys.unraisablehook = _quiet_orbax_aftermath(sys.unraisablehook)


def read_error(e: BaseException) -> str:
  """A failed read as one line. Orbax's message for a failed array read is followed by the whole
  TensorStore spec (a page of JSON); keep its first sentence and the cause's first line."""
  line = error_line(e)
  if "See full TensorStore details" in line:
    line = line.split(" See full TensorStore details")[0]
    if e.__cause__ is not None:
      line += f" ({error_line(e.__cause__)})"
  return line


class CorruptCheckpoint(Exception):
  """A checkpoint that cannot be read or does not match its digest (the message is one line)."""


def sha256_json(obj) -> str:
  """The sha256 of `obj` as sorted-key JSON (one helper: checkpoints, runs' episode returns)."""
  return hashlib.sha256(json.dumps(json.loads(json.dumps(obj)), sort_keys=True).encode()
                        ).hexdigest()


def digest(train_state=None, storage=None, envs=None, host=None) -> Dict[str, str]:
  """The sha256 of each given part of a checkpoint (and the params' param_sha256)."""
  out = {}
  if train_state is not None:
    out["state"] = param_sha256(train_state)
    out["param_sha256"] = param_sha256(train_state.params)
  for name, part in (("storage", storage), ("envs", envs)):
    if part is not None:
      out[name] = param_sha256(dict(part))
  if host is not None:
    out["host"] = sha256_json(host)
  return out


def verify(path: str, saved: Dict[str, str], computed: Dict[str, str]) -> None:
  for part, value in computed.items():
    if part in saved and saved[part] != value:
      raise CorruptCheckpoint(f"checkpoint {path}: its {part} does not match the digest recorded "
                              "when it was written")


# Each file of a finished checkpoint folder, with its size and sha256 (see `check_files`).
FILES = "files.json"
_FILES_TMP = f"{FILES}.tmp"  # `files.write_atomic`'s


def check_tree(path: str) -> None:
  """Refuses (CorruptCheckpoint) a checkpoint folder that is, or holds, anything but folders and
  regular files: orbax, and the checks here, would read a FIFO or a link to /dev/zero without
  end. Only names are looked at (lstat), nothing is opened."""
  def refuse(full: str, what: str) -> None:
    raise CorruptCheckpoint(f"checkpoint {path}: its file {os.path.relpath(full, path)} is "
                            f"{what}, not a regular file or folder "
                            "(a checkpoint holds nothing else, and links, FIFOs and devices are "
                            "not read)")
  try:
    mode = os.lstat(path).st_mode
  except FileNotFoundError:
    raise CorruptCheckpoint(f"checkpoint {path} is missing") from None
  if not stat.S_ISDIR(mode):
    raise CorruptCheckpoint(f"checkpoint {path} is {files.kind(mode) or 'a file'}, not a folder")
  for root, dirs, names in os.walk(path):  # a link to a folder is listed, never entered
    for name in dirs + names:
      full = os.path.join(root, name)
      try:
        mode = os.lstat(full).st_mode
      except FileNotFoundError:  # deleted meanwhile (another process's orbax keeps two)
        continue
      if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        refuse(full, files.kind(mode))


def _sha256(f) -> str:
  h = hashlib.sha256()
  for chunk in iter(lambda: f.read(1 << 20), b""):
    h.update(chunk)
  return h.hexdigest()


def file_sums(path: str) -> Dict[str, List]:
  sums = {}
  for root, _, names in os.walk(path):
    for name in names:
      full = os.path.join(root, name)
      rel = os.path.relpath(full, path)
      if rel not in (FILES, _FILES_TMP):
        with files.open_read(full) as f:
          sums[rel] = [os.fstat(f.fileno()).st_size, _sha256(f)]
  return sums


def write_files(path: str) -> None:
  sums = file_sums(path)  # before its temporary file exists
  files.write_atomic(os.path.join(path, FILES), lambda f: json.dump(sums, f))


def check_files(path: str) -> None:
  """Checks a checkpoint's files against the sizes and sha256 recorded when it was written,
  before orbax reads them. Orbax reads the arrays of a truncated file concurrently: the first
  failure ends the restore while the other reads are still going, and those print tracebacks
  (abandoned coroutines, callbacks into a closed event loop) at whatever moment they end. A
  checkpoint written before `files.json` existed (or whose writer died before writing it) is read
  by orbax as it is; the digest still checks what it reads. Either way the folder must hold only
  folders and regular files (`check_tree`), and each file is read at most to its recorded size:
  nothing here can read without end."""
  check_tree(path)
  if not os.path.exists(os.path.join(path, FILES)):
    return
  with files.open_read(os.path.join(path, FILES), "r") as f:
    recorded = json.load(f)
  for rel, (size, sha) in sorted(recorded.items()):
    if os.path.isabs(rel) or os.path.normpath(rel).startswith(os.pardir):
      raise CorruptCheckpoint(f"checkpoint {path}: its {FILES} names {rel}, outside it")
    try:
      f = files.open_read(os.path.join(path, rel))
    except FileNotFoundError:
      raise CorruptCheckpoint(f"checkpoint {path}: its file {rel} is missing") from None
    with f:
      now = os.fstat(f.fileno()).st_size
      if now != size:
        raise CorruptCheckpoint(f"checkpoint {path}: its file {rel} is {now} bytes, {size} "
                                "when it was written")
      if _sha256(f) != sha:
        raise CorruptCheckpoint(f"checkpoint {path}: its file {rel} does not match the sha256 "
                                "recorded when it was written")


def check_host(path: str, host: Dict[str, Any]) -> None:
  """The host record's segment is where every action stream resumes: one that is not a segment
  index (a crafted record, its digest rebuilt to match) is refused here, in one line, not met
  later as an overflow in an actor."""
  segment = host.get("segment")
  if isinstance(segment, bool) or not isinstance(segment, int) or segment < 0:
    raise CorruptCheckpoint(f"checkpoint {path}: its host record's segment is {segment!r}, not a "
                            "segment index (an integer >= 0)")
