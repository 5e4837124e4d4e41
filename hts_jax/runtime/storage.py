"""The two storages of HTS-RL, preallocated in shared memory (host side, numpy only).

Executors fill one storage while the learner consumes the other; roles swap every `alpha` steps
(paper Section 4.1). One storage holds, in fixed `[t, env_id]` order (N = num_envs * num_agents rows; row = env_id * num_agents + agent):

  obs      [alpha+1, N, ...]  obs[t, e] is what the actor sees at env e's step t; obs[alpha] bootstraps
  actions  [alpha, N, *A]     written by actors: int32 `[alpha, N]` (discrete), float32
                              `[alpha, N, D]` (continuous, the unclipped sample)
  version  [alpha, N]         int32, the params version (learner updates) that chose the action
  rewards  [alpha, N]         float32, written by executors
  dones    [alpha, N]         float32, 1 where the episode ended after the step
  valid    [alpha, N]         float32, 1 for a real transition (0: envpool's auto-reset step)
  truncated [alpha, N]        float32, 1 where a time limit cut the episode (not terminal)
  final_obs [alpha, N, ...]   only with `final_obs`: the observation a truncated episode ended on
                              (obs[t+1] holds the next episode's first one; envpool's
                              obs[t+1] is the last one itself), for
                              `--bootstrap_truncation`
  core     [alpha+1, N, S]    only with `core_size` S > 0 (`--core=lstm`): the recurrent state
                              each row's step t starts from, written by the actor that took step
                              t - 1 and zeroed by the row's executor where that step ended an
                              episode (`reset_core`); core[0] is the previous segment's
                              core[alpha] (copied at GO, like obs[0]) and what the learner unrolls
                              from

All arrays of both storages live in one shared-memory block; `StorageSpec` (picklable) lets another
process attach to it. The block is named after the run's logdir (`shm_prefix`), so that a test or an
operator can tell which run a /dev/shm entry belongs to.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import secrets
from multiprocessing import shared_memory
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

_ALIGN = 64


@dataclasses.dataclass(frozen=True)
class StorageSpec:
  alpha: int
  num_envs: int
  obs_shape: Tuple[int, ...]  # per agent
  obs_dtype: str
  num_agents: int = 1
  shm_name: Optional[str] = None
  final_obs: bool = False
  action_shape: Tuple[int, ...] = ()
  action_dtype: str = "int32"
  core_size: int = 0

  def __post_init__(self):
    # A spec without a block yet is about to be allocated (the compile's zeros, then the shared
    # block): its size is checked first, so that a too-large --alpha is one line instead of a
    # numpy MemoryError, the OOM killer or a SIGBUS when an executor first touches a page that
    # /dev/shm has no room for. A spec naming its block is attached to, not allocated.
    if self.shm_name is None:
      check_fits(self)

  @property
  def num_rows(self) -> int:
    """Storage columns: one per agent of each env, row = env_id * num_agents + agent."""
    return self.num_envs * self.num_agents

  def fields(self) -> List[Tuple[str, Tuple[int, ...], str]]:
    a, n = self.alpha, self.num_rows
    out = [("obs", (a + 1, n) + tuple(self.obs_shape), self.obs_dtype),
           ("actions", (a, n) + tuple(self.action_shape), self.action_dtype),
           ("version", (a, n), "int32"),
           ("rewards", (a, n), "float32"), ("dones", (a, n), "float32"),
           ("valid", (a, n), "float32"), ("truncated", (a, n), "float32")]
    if self.final_obs:
      out.append(("final_obs", (a, n) + tuple(self.obs_shape), self.obs_dtype))
    if self.core_size:
      out.append(("core", (a + 1, n, self.core_size), "float32"))
    return out

  def layout(self):
    """[(storage, field, shape, dtype, offset)], total bytes."""
    out, offset = [], 0
    for s in range(2):
      for name, shape, dtype in self.fields():
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        out.append((s, name, shape, dtype, offset))
        offset += -(-nbytes // _ALIGN) * _ALIGN
    return out, max(offset, _ALIGN)


class Storages:
  """Both storages as numpy views of one shared-memory block. `storages[s].obs` etc."""

  def __init__(self, spec: StorageSpec, create: bool, name_prefix: Optional[str] = None):
    """`create`: make the block (named `<name_prefix>_<random>`, or Python's default name), else
    attach to `spec.shm_name`."""
    layout, size = spec.layout()
    if create:
      name = None if name_prefix is None else f"{name_prefix}_{secrets.token_hex(4)}"
      self._shm = shared_memory.SharedMemory(name=name, create=True, size=size)
      spec = dataclasses.replace(spec, shm_name=self._shm.name)
    else:
      self._shm = _attach(spec.shm_name)
    self.spec = spec
    self._owner = create
    views: List[Dict[str, np.ndarray]] = [{}, {}]
    for s, name, shape, dtype, offset in layout:
      views[s][name] = np.ndarray(shape, dtype, buffer=self._shm.buf, offset=offset)
    self._views = [_Storage(**v) for v in views]
    if create:
      for st in self._views:
        st.valid[:] = 1.0  # only envpool's groups write it

  def __getitem__(self, s: int) -> "_Storage":
    return self._views[s]

  def filling(self, segment: int) -> "_Storage":
    """The storage that segment `segment` is collected into (the two alternate)."""
    return self._views[segment % 2]

  def learning(self, segment: int) -> "_Storage":
    """The storage the learner consumes for segment `segment` (the one it was collected into;
    the executors meanwhile fill the other)."""
    return self._views[segment % 2]

  def load(self, segment: int, fields: Dict[str, Any], envs_restart: bool = False) -> None:
    """Copies a checkpoint's storage (`{field: array}`) into `filling(segment)`. `envs_restart`:
    the envs restart from a reset (their states were not saved), so do their core states."""
    st = self.filling(segment)
    for name, value in fields.items():
      getattr(st, name)[...] = value
    if envs_restart and st.core is not None:
      st.core[-1] = 0.0

  def close(self):
    """Detaches; the creating process also unlinks the block (no /dev/shm leftovers)."""
    if self._shm is None:
      return
    self._views = []
    try:
      self._shm.close()
    except BufferError:
      pass  # a view is still referenced somewhere; the mapping goes with the process
    if self._owner:
      try:
        self._shm.unlink()
      except FileNotFoundError:
        pass
    self._shm = None


@dataclasses.dataclass
class _Storage:
  obs: np.ndarray
  actions: np.ndarray
  version: np.ndarray
  rewards: np.ndarray
  dones: np.ndarray
  valid: np.ndarray
  truncated: np.ndarray
  final_obs: Optional[np.ndarray] = None
  core: Optional[np.ndarray] = None


def carry_core(previous: _Storage, st: _Storage, rows) -> None:
  """At a segment's start: `rows` start from the state they ended the previous segment with."""
  if st.core is not None:
    st.core[0, rows] = previous.core[-1, rows]


def reset_core(st: _Storage, t: int, rows) -> None:
  """After step `t` of `rows`: a row whose episode ended there (or whose step was envpool's
  reset step, `valid` 0) starts step t + 1 from a zero state. The learner resets at the same
  steps (`sequences.core_resets`)."""
  if st.core is not None:
    ended = (st.dones[t, rows] > 0) | (st.valid[t, rows] == 0)
    if ended.any():
      st.core[t + 1, rows] = np.where(ended[:, None], np.float32(0.0), st.core[t + 1, rows])


def gib(n: Optional[float]) -> str:
  return "an unknown amount" if n is None else f"{n / 2**30:,.2f} GiB"


def free_shm(path: str = "/dev/shm") -> Optional[int]:
  """Bytes /dev/shm can still hold (None where there is no such mount)."""
  try:
    st = os.statvfs(path)
  except OSError:
    return None
  return st.f_bavail * st.f_frsize


def available_ram() -> Optional[int]:
  """The kernel's estimate of the bytes allocatable without swapping (None where unknown)."""
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024
  except (OSError, ValueError, IndexError):
    pass
  return None


def check_fits(spec: StorageSpec) -> None:
  """ConfigError (one line, both figures) unless the two storages fit in free /dev/shm, and
  they plus one storage of zeros (what the learner is compiled with) in available RAM."""
  from hts_jax.config import ConfigError  # pylint: disable=import-outside-toplevel
  _, size = spec.layout()
  shm, ram = free_shm(), available_ram()
  need_ram = size + size // 2
  if (shm is None or size <= shm) and (ram is None or need_ram <= ram):
    return
  raise ConfigError(
      f"the storages need {gib(size)} of shared memory and {gib(need_ram)} of RAM "
      f"(--alpha={spec.alpha} steps x {spec.num_rows} env rows x 2 storages, observations "
      f"{tuple(spec.obs_shape)} {spec.obs_dtype}); /dev/shm has {gib(shm)} free and RAM "
      f"{gib(ram)} available: lower --alpha or --num_envs")


def zeros(spec: StorageSpec) -> _Storage:
  """One storage's arrays as zeros in ordinary memory (for compiling ahead)."""
  return _Storage(**{name: np.zeros(shape, dtype) for name, shape, dtype in spec.fields()})


def shm_prefix(logdir: str) -> str:
  """The prefix of the shared-memory names of the run writing to `logdir` (every process of it)."""
  return "hts" + hashlib.sha1(os.path.realpath(logdir).encode()).hexdigest()[:10]


def _attach(name: str) -> shared_memory.SharedMemory:
  # Spawned executors share the creator's resource tracker (its fd is inherited), where the block
  # is registered once (a set): attaching re-registers idempotently, the creator's unlink
  # unregisters it, and if the creator dies first the tracker unlinks it. So no /dev/shm leftovers.
  return shared_memory.SharedMemory(name=name)
