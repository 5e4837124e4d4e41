"""How a run opens the files of its logdir (host side): never through a link, never a FIFO or a
device.

Whoever may write into a shared logdir could plant a symlink where a run writes (`.lock`,
`metrics.csv`, a temporary file) and have the run truncate or fill the file it points to, or a FIFO
or a link to `/dev/zero` where it reads (a checkpoint's files) and hang it. So every file a run
writes is opened with O_NOFOLLOW, or written whole to a temporary file that is then renamed into
place (a rename replaces a link, it never follows one); appends (metrics.csv) go through
`open_append` or keep the descriptor of such a temporary file. Every file it reads is opened with
O_NOFOLLOW | O_NONBLOCK and checked to be a regular file before a byte is read. A path that is
not a regular file raises `NotRegular`, whose message is one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Callable, IO, Optional

_KINDS = ((stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class NotRegular(OSError):
  """A path a run will not open: a symlink, a FIFO, a device, a socket or a folder."""

  def __init__(self, path: str, kind: str):
    super().__init__(errno.EINVAL, f"{path} is {kind}, not a regular file: a run never makes one "
                     "and neither writes nor reads through it (remove it)", path)

  def __str__(self) -> str:
    return self.strerror


def kind(mode: int) -> Optional[str]:
  """What a file of `mode` (an lstat's st_mode) is, if not a regular file; None if it is one."""
  return None if stat.S_ISREG(mode) else next(
      (name for test, name in _KINDS if test(mode)), "not a regular file")


def check_regular(path: str) -> None:
  """Raises NotRegular if `path` exists and is not a regular file (a link is not followed)."""
  try:
    what = kind(os.lstat(path).st_mode)
  except FileNotFoundError:
    return
  if what:
    raise NotRegular(path, what)


def open_fd(path: str, flags: int, perm: int = 0o644) -> int:
  """`os.open` that follows no link and returns a descriptor of a regular file only (a FIFO is
  opened without blocking, then refused): NotRegular otherwise."""
  try:
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, perm)
  except OSError as e:
    if e.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a link; a FIFO without a reader
      check_regular(path)
    raise
  what = kind(os.fstat(fd).st_mode)
  if what:
    os.close(fd)
    raise NotRegular(path, what)
  os.set_blocking(fd, True)
  return fd


def open_read(path: str, mode: str = "rb", **kw) -> IO:
  """A regular file opened for reading (`mode` "rb" or "r"), NotRegular otherwise."""
  return os.fdopen(open_fd(path, os.O_RDONLY), mode, **kw)


def open_append(path: str, **kw) -> IO:
  """A text file opened to append (made if missing), never through a link."""
  return os.fdopen(open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", **kw)


def open_temporary(path: str, mode: str = "w", **kw) -> IO:
  """`<path>.tmp`, new (a file or link left there is removed first, not followed)."""
  tmp = f"{path}.tmp"
  with contextlib.suppress(FileNotFoundError):
    os.remove(tmp)
  return os.fdopen(open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), mode, **kw)


def replace_from_temporary(f: IO, path: str) -> None:
  """Renames the temporary file `f` (from `open_temporary(path)`, flushed) onto `path`."""
  f.flush()
  os.fsync(f.fileno())
  os.replace(f"{path}.tmp", path)


def write_atomic(path: str, write: Callable[[IO], None], mode: str = "w") -> None:
  """Writes `path` whole or not at all: `write(f)` into `<path>.tmp`, renamed onto `path`; a
  failed write (a full disk) removes the temporary file before the error goes on."""
  try:
    with open_temporary(path, mode) as f:
      write(f)
      replace_from_temporary(f, path)
  except BaseException:
    with contextlib.suppress(OSError):
      os.remove(f"{path}.tmp")  # a link there goes, not what it points to
    raise
