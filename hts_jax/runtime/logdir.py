"""One logdir, one run: the logdir is made, locked and checked before anything is spawned,
compiled or written (host side).

- The logdir must be (or become) a directory we can write: a file, a path under a file or under
  /proc is refused in one line.
- A lock file (`fcntl.flock` on `<logdir>/.lock`, `.lock-process-<p>` for process p > 0 of a
  multi-process run) is held for the life of the run; a second run in the same logdir is refused
  in one line naming the holder's pid. The kernel drops a flock when its holder dies, so a lock
  left by a killed run is simply taken over.
- A logdir holding an earlier run's `summary.json` or `metrics.csv` (with rows) is refused unless
  the run resumes it (`--resume`) or replaces it (`--overwrite`, which deletes that run's outputs:
  metrics.csv, summary.json, checkpoints, TensorBoard event files, videos, the exported policy; a
  linked folder among them is emptied and the link kept, after every folder was checked, before
  anything is deleted).
- Links and FIFOs planted in a shared logdir are not followed (`outputs.files`): the lock file,
  metrics.csv and summary.json must be regular files (or absent), else the run is refused in one
  line; and a checkpoint key kept inside the logdir, or readable by others, is refused
  (`signing.check_key`).
- Partial checkpoint folders (orbax's `*.orbax-checkpoint-tmp*`, a process's `.<step>.tmp`) left by
  a run that was killed while writing are removed: under the lock nothing else writes them.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import os
import shutil
import threading
from typing import Dict, Optional

from hts_jax.config import ConfigError
from hts_jax.runtime.outputs import files, signing

# Held locks by path, so that a process may prepare the same logdir again (a test that runs twice
# in one logdir, a runner built and then resumed): flock would refuse a second open file.
_HELD: Dict[str, "Lock"] = {}
_HELD_LOCK = threading.Lock()

# What a run writes into its logdir, deleted by --overwrite.
_OUTPUTS = ("metrics.csv", "metrics.csv.tmp", "summary.json", "summary.json.tmp", "checkpoints",
            "checkpoints-process-*", "checkpoints-corrupt", "events.out.tfevents.*", "videos",
            "policy")
# The files a run writes by name in its logdir: each a regular file or absent.
_RUN_FILES = ("metrics.csv", "summary.json")


class Lock:
  """An exclusive `flock` on a file in the logdir, released by `release()` or the process's end."""

  def __init__(self, path: str, fd: int):
    self.path, self._fd = path, fd

  def release(self) -> None:
    """Removes the lock file, then drops the flock: a run leaves no `.lock` behind. A process
    that opened the file meanwhile finds, once it has the flock, that the path no longer names
    that file (`acquire`), and takes a new one."""
    with _HELD_LOCK:
      if self._fd is not None:
        _HELD.pop(self.path, None)
        if _names(self.path, self._fd):
          try:
            os.unlink(self.path)
          except OSError:
            pass  # a read-only folder, say: the flock still goes with the descriptor
        os.close(self._fd)  # closing the only descriptor drops the flock
        self._fd = None


def _names(path: str, fd: int) -> bool:
  """Whether `path` is still the file open at `fd` (not removed, nor replaced)."""
  try:
    st, at = os.stat(path, follow_symlinks=False), os.fstat(fd)
  except OSError:
    return False
  return (st.st_dev, st.st_ino) == (at.st_dev, at.st_ino)


def lock_path(logdir: str, process: int = 0) -> str:
  return os.path.join(os.path.abspath(logdir), ".lock" if process == 0
                      else f".lock-process-{process}")


def _holder(path: str) -> str:
  try:
    with files.open_read(path, "r") as f:
      pid = f.read(32).strip()
  except OSError:
    pid = ""
  return f"pid {pid}" if pid.isdigit() else "another process"


def acquire(logdir: str, process: int = 0) -> Lock:
  """Locks `logdir` for this process (ConfigError naming the holder when another has it)."""
  path = lock_path(logdir, process)
  with _HELD_LOCK:
    if path in _HELD:
      return _HELD[path]
    for _ in range(100):  # a holder that ends removes the file: then lock the new one
      fd = files.open_fd(path, os.O_RDWR | os.O_CREAT)  # a planted link is refused, not truncated
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
          raise ConfigError(f"{os.path.abspath(logdir)} is in use by another run "
                            f"({_holder(path)}): wait for it to end or choose another "
                            "--logdir") from None
        raise
      if _names(path, fd):
        break
      os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    lock = _HELD[path] = Lock(path, fd)
    return lock


def _holds_a_run(logdir: str) -> Optional[str]:
  """The earlier run's output in `logdir` (summary.json, or metrics.csv with rows), if any."""
  if os.path.exists(os.path.join(logdir, "summary.json")):
    return "summary.json"
  try:
    with files.open_read(os.path.join(logdir, "metrics.csv"), "r") as f:
      rows = sum(1 for line in f if line.strip())
  except OSError:
    return None
  return "metrics.csv" if rows > 1 else None


def _check_run_files(logdir: str) -> None:
  """Refuses (one line) a link, FIFO or device where the run writes its files by name."""
  for name in _RUN_FILES:
    try:
      files.check_regular(os.path.join(logdir, name))
    except files.NotRegular as e:
      raise ConfigError(f"{e}; nothing was written") from None


def remove_partial_checkpoints(logdir: str) -> None:
  """Removes checkpoint folders a killed writer left half written (only under the lock)."""
  logdir = os.path.abspath(logdir)
  for path in (glob.glob(os.path.join(logdir, "checkpoints", "*.orbax-checkpoint-tmp*")) +
               glob.glob(os.path.join(logdir, "checkpoints-process-*", ".*.tmp"))):
    shutil.rmtree(path, ignore_errors=True)


def _linked_folder(path: str) -> bool:
  return os.path.islink(path) and os.path.isdir(path)


def remove_outputs(logdir: str) -> None:
  """Deletes an earlier run's outputs (`--overwrite`). A symlinked folder among them (checkpoints
  kept on another disk) is emptied and the link kept; links met inside are removed, never
  followed. Every folder an entry would be deleted from is checked first: one that cannot be
  written is refused in one line before anything is deleted (a logdir half deleted holds neither
  the earlier run nor a new one)."""
  paths = sorted(path for pattern in _OUTPUTS
                 for path in glob.glob(os.path.join(os.path.abspath(logdir), pattern)))
  folders = {os.path.abspath(logdir)}
  for path in paths:
    if _linked_folder(path) or (os.path.isdir(path) and not os.path.islink(path)):
      folders.update(root for root, _, _ in os.walk(path))  # os.walk follows no link below
  for folder in sorted(folders):
    if not os.access(folder, os.W_OK | os.X_OK):
      raise ConfigError(f"--overwrite: {folder} cannot be written, so the earlier run's outputs "
                        "cannot be deleted (nothing was deleted)")
  for path in paths:
    try:
      if _linked_folder(path):
        for entry in os.scandir(path):
          if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
          else:
            os.remove(entry.path)
      elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)  # removes the links inside, does not follow them
      else:
        os.remove(path)
    except OSError as e:
      raise ConfigError(f"--overwrite: {path} cannot be deleted: {e.strerror or e}") from None


def prepare(logdir: str, resume: bool, overwrite: bool, process: int = 0) -> Lock:
  """Makes and locks `logdir` and checks what it holds, before anything is spawned or written;
  raises ConfigError with one line. Returns the lock (held until `release` or the process ends)."""
  if resume and overwrite:
    raise ConfigError("--resume continues the run in --logdir, --overwrite replaces it: pass one")
  try:
    os.makedirs(logdir, exist_ok=True)
    if not os.access(logdir, os.W_OK | os.X_OK):
      raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    signing.check_key(logdir)
    lock = acquire(logdir, process)
  except files.NotRegular as e:
    raise ConfigError(f"{e}; nothing was written") from None
  except OSError as e:
    raise ConfigError(f"--logdir={logdir} cannot be a directory to write: "
                      f"{e.strerror or e}") from None
  try:
    if process == 0:
      if not overwrite:  # --overwrite deletes them (a link goes, not what it points to)
        _check_run_files(logdir)
      earlier = _holds_a_run(logdir)
      if overwrite:
        remove_outputs(logdir)
      elif earlier and not resume:
        resumable = glob.glob(os.path.join(logdir, "checkpoints", "[0-9]*"))
        raise ConfigError(f"{os.path.join(logdir, earlier)} holds an earlier run: "
                          + ("pass --resume to continue it (from its checkpoint), "
                             if resumable else "it has no checkpoint to --resume from; pass ")
                          + "--overwrite to replace it, or choose another --logdir")
    remove_partial_checkpoints(logdir)
  except BaseException:
    lock.release()
    raise
  return lock
