"""Who may have written a checkpoint's env states, host side: an HMAC key kept outside the logdir.

A checkpoint's env replicas are pickles (`checkpoint`: CartPole's, ALE's and MuJoCo's states with
their RNGs, so a resumed run continues bit for bit), and unpickling runs whatever code the pickle
names. The digests beside them (`integrity`) are stored in the checkpoint they protect: they catch
corruption, not tampering. So a checkpoint's env states are signed when they are written, with
HMAC-SHA256 under a key that lives outside every logdir (`key_path`: `$HTS_JAX_KEY_FILE`, else
`$XDG_CONFIG_HOME/hts_jax/checkpoint.key`, else `~/.config/hts_jax/checkpoint.key`; 32 random
bytes, mode 0600, made on the first save), the way Jupyter signs the notebooks its user wrote. A
resume unpickles only env states whose signature this key verifies: a checkpoint written by this
user on this machine (or one sharing the key's home, as a cluster's). Any other (copied from
elsewhere, crafted, written before signatures, or written where the key could not be made) is
refused in one line unless `--resume_unsigned` says it is trusted (docs/determinism.md).

Nothing else in a checkpoint is unpickled: arrays are read by orbax and numpy without pickles,
the host record is JSON."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import sys
from typing import Dict, Optional

import numpy as np

from hts_jax.choices import ConfigError

KEY_BYTES = 32
_warned = []


def key_path() -> str:
  explicit = os.environ.get("HTS_JAX_KEY_FILE")
  if explicit:
    return os.path.abspath(os.path.expanduser(explicit))
  config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
  return os.path.join(config, "hts_jax", "checkpoint.key")


def check_key(logdir: str) -> None:
  """Refuses (ConfigError, one line) a key inside `logdir` (whoever is given the folder, or may
  write in it, could sign checkpoints; `--overwrite` keeps it) or one that group or others may
  read or change (they could sign checkpoints that this user's resume unpickles)."""
  path = key_path()
  for key, folder in ((path, os.path.abspath(logdir)),
                      (os.path.realpath(path), os.path.realpath(logdir))):
    if os.path.commonpath([key, folder]) == folder:
      raise ConfigError(f"the checkpoint key {path} is inside --logdir={logdir}: whoever is given "
                        "the folder could sign checkpoints with it; keep it outside every logdir "
                        "(HTS_JAX_KEY_FILE, default ~/.config/hts_jax/checkpoint.key)")
  try:
    mode = os.stat(path).st_mode
  except OSError:
    return  # none yet: made with mode 0600 on the first save
  if mode & 0o077:
    raise ConfigError(f"the checkpoint key {path} may be read or changed by others (mode "
                      f"{stat.S_IMODE(mode):04o}): they could sign checkpoints that a resume "
                      f"unpickles; chmod 600 {path}")


def _read(path: str) -> bytes:
  if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or device would be read without end
    raise OSError(f"{path} is not a regular file")
  with open(path, "rb") as f:
    key = f.read(4096)
  if len(key) < KEY_BYTES:
    raise OSError(f"{path} holds {len(key)} bytes, not a key of {KEY_BYTES}")
  return key


def load_key(create: bool) -> Optional[bytes]:
  """The key, made (atomically, mode 0600) if `create` and there is none; None if there is none
  or it cannot be read or made."""
  path = key_path()
  try:
    return _read(path)
  except FileNotFoundError:
    if not create:
      return None
  except OSError:
    return None
  try:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
  except FileExistsError:  # another process made it first: use theirs
    try:
      return _read(path)
    except OSError:
      return None
  except OSError:
    return None
  with os.fdopen(fd, "wb") as f:
    f.write(os.urandom(KEY_BYTES))
  return _read(path)


def _mac(key: bytes, envs: Dict[str, np.ndarray]) -> str:
  mac = hmac.new(key, digestmod=hashlib.sha256)
  for name in sorted(envs):
    data = np.ascontiguousarray(envs[name]).view(np.uint8).tobytes()
    mac.update(f"{name}:{len(data)}:".encode())
    mac.update(data)
  return mac.hexdigest()


def sign(envs: Dict[str, np.ndarray]) -> Optional[str]:
  """The signature of a checkpoint's env states (name -> bytes as uint8), or None (with one
  warning per process) where no key can be read or made: such a checkpoint resumes only with
  --resume_unsigned."""
  key = load_key(create=True)
  if key is None:
    if not _warned:
      _warned.append(True)
      print(f"warning: no checkpoint key at {key_path()} and none can be made: checkpoints are "
            "written unsigned (a resume needs --resume_unsigned; set HTS_JAX_KEY_FILE to a "
            "writable path outside the logdir)", file=sys.stderr, flush=True)
    return None
  return _mac(key, envs)


def verifies(envs: Dict[str, np.ndarray], signature: Optional[str]) -> bool:
  """Whether `signature` is this key's signature of `envs` (False without one or without a key)."""
  key = load_key(create=False)
  if key is None or not isinstance(signature, str):
    return False
  return hmac.compare_digest(_mac(key, envs), signature)
