"""The rollout channels of HTS-RL (paper Section 4.1): the state buffer and the action buffer.

Nothing per env step is pickled or locked. Observations, actions, rewards and dones live in the
shared-memory storages (`storage.py`); what crosses a process boundary is a fixed-size record of
int32s written to an OS pipe, and a reader takes every record that is ready in one `read`:

  state buffer  (executors -> actors, one pipe, many writers):  (block, segment, t)
                 "the observations of `block` at step t of `segment` are in the storage"
  action buffer (actors/controller -> one executor, one pipe each):  (code, arg)
                 code >= 0: the actions of block `code` are in the storage;
                 GO (arg = segment), SAVE (send the env states), STOP.

A pipe write of at most PIPE_BUF bytes is atomic, so records from several writers never
interleave, a writer killed mid-run cannot leave half a record or a held lock behind, and a read
whose size is a multiple of the record size returns whole records only. An executor whose
controller has gone sees end-of-file on its action buffer and exits.

The unit of stepping and inference is a *block*: consecutive env ids owned by one executor and
stepped together (`BlockLayout`). Actors run one fixed-shape policy call per group of ready blocks,
so no row is computed that is not needed and every row's bits are independent of its neighbours.

Control messages (executor -> controller, once per segment, not per step) are typed NamedTuples
sent on one pipe per executor (single writer: no lock either). This module imports no JAX.
"""

from __future__ import annotations

import array
import dataclasses
import functools
import multiprocessing as mp
import os
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

GO, SAVE, STOP = -1, -2, -3
_STATE_REC = 3   # int32s per state-buffer record
_ACTION_REC = 2  # int32s per action-buffer record


@dataclasses.dataclass(frozen=True)
class BlockLayout:
  """Which envs each executor owns and how they are grouped into blocks.

  Executor k owns envs [k * E, (k+1) * E) with E = num_envs / num_executors, in blocks of at most
  `block_envs` consecutive envs (the actor batch: one policy call computes `block_envs * agents`
  rows), and in at least `executor_blocks` blocks (then of sizes 1 apart at most). Block ids are
  global, in env order. The layout decides no result: a row's action depends only on (params, its
  observation, its seed) under the fixed policy shape.
  """
  num_envs: int
  num_executors: int
  block_envs: int
  num_agents: int = 1
  executor_blocks: int = 1

  @property
  def envs_per_executor(self) -> int:
    return self.num_envs // self.num_executors

  @functools.cached_property
  def blocks(self) -> List[Tuple[int, int]]:
    """[(first env id, number of envs)] for every block, in block-id order."""
    per = self.envs_per_executor
    if self.executor_blocks == 1:  # blocks of block_envs, the last one smaller
      sizes = [min(self.block_envs, per - e) for e in range(0, per, self.block_envs)]
    else:  # executor_blocks or more blocks (as many as block_envs needs), sizes 1 apart at most
      n = max(self.executor_blocks, -(-per // self.block_envs))
      sizes = [per // n + (i < per % n) for i in range(n)]
    out = []
    for k in range(self.num_executors):
      starts = k * per + np.cumsum([0] + sizes[:-1])
      out.extend((int(e), size) for e, size in zip(starts, sizes))
    return out

  def blocks_of_executor(self, k: int) -> List[int]:
    return [b for b, (e, _) in enumerate(self.blocks) if e // self.envs_per_executor == k]

  def owner(self) -> np.ndarray:
    """`[num_blocks]` executor index of each block."""
    return np.array([e // self.envs_per_executor for e, _ in self.blocks], np.int64)

  def rows(self, block: int) -> slice:
    """The block's storage rows (row = env_id * agents + agent), contiguous."""
    e, n = self.blocks[block]
    return slice(e * self.num_agents, (e + n) * self.num_agents)

  @property
  def policy_rows(self) -> int:
    """Rows of one actor policy call (the fixed shape)."""
    return self.block_envs * self.num_agents


class RecordReader:
  """The read end of a pipe of int32 records of `width` words (picklable: spawned processes get
  this end only)."""

  def __init__(self, conn, width: int):
    self.conn, self.width = conn, width

  def read(self, max_records: int = 256) -> Optional[np.ndarray]:
    """Blocks until at least one record is ready and returns all that are (up to `max_records`)
    as `[n, width]` int32; None at end-of-file (every writer has gone)."""
    data = os.read(self.conn.fileno(), 4 * self.width * max_records)
    if not data:
      return None
    return np.frombuffer(data, np.int32).reshape(-1, self.width)

  def ready(self, timeout: float) -> bool:
    return self.conn.poll(timeout)


class RecordWriter:
  """The write end of a record pipe (picklable)."""

  def __init__(self, conn, width: int):
    self.conn, self.width = conn, width

  def write(self, records) -> None:
    """Writes `[n, width]` int32 records (an array, or a flat `array('i')`)."""
    data = records.tobytes() if isinstance(records, array.array) else (
        np.ascontiguousarray(records, np.int32).tobytes())
    chunk = (512 // (4 * self.width)) * 4 * self.width  # POSIX: PIPE_BUF >= 512 is atomic
    while data:
      n = os.write(self.conn.fileno(), data[:chunk])
      data = data[n:]


class StateWriter(RecordWriter):
  """Executors' end of the state buffer."""

  def post(self, blocks, segment: int, ts) -> None:
    rec = array.array("i", bytes(4 * _STATE_REC * len(blocks)))
    rec[0::3], rec[1::3], rec[2::3] = (array.array("i", blocks),
                                       array.array("i", [segment] * len(blocks)),
                                       array.array("i", ts))
    self.write(rec)

  def post_stop(self) -> None:
    """One stop record: the actor that reads it posts one again before it exits, so every actor
    stops whatever the number of actors and however their reads split the records."""
    self.write(np.array([[STOP, 0, 0]], np.int32))


class ActionWriter(RecordWriter):
  """Actors' and the controller's end of one executor's action buffer (its inbox)."""

  def post_blocks(self, blocks) -> None:
    rec = array.array("i", bytes(4 * _ACTION_REC * len(blocks)))
    rec[0::2] = array.array("i", blocks)
    self.write(rec)

  def post(self, code: int, arg: int = 0) -> None:
    self.write(np.array([[code, arg]], np.int32))


class _Buffer:
  def close(self) -> None:
    for c in (self.reader.conn, self.writer.conn):
      try:
        c.close()
      except OSError:
        pass


class StateBuffer(_Buffer):
  """Executors post (block, segment, t); actors take all that are ready."""

  def __init__(self):
    r, w = mp.Pipe(duplex=False)
    self.reader, self.writer = RecordReader(r, _STATE_REC), StateWriter(w, _STATE_REC)


class ActionBuffer(_Buffer):
  """One executor's inbox: block ids whose actions are ready, and barrier commands."""

  def __init__(self):
    r, w = mp.Pipe(duplex=False)
    self.reader, self.writer = RecordReader(r, _ACTION_REC), ActionWriter(w, _ACTION_REC)


# ------------------------------------------------------------------ the heartbeat
# An executor's heartbeat: shared int64s it writes and the supervisor's watchdog reads: segment,
# step, block steps so far, its start-up stage (an index of START_STAGES) and the env it is at.
BEAT_SIZE = 5
START_STAGES = ("spawn", "env make", "first reset", "env restore", "started")


# ------------------------------------------------------------------ control messages
class Started(NamedTuple):
  """The executor has created (or restored) its envs and waits for GO."""
  executor: int


class Done(NamedTuple):
  """The executor's envs have taken `alpha` steps of `segment` (it waits at the barrier)."""
  executor: int
  segment: int
  returns: Dict[int, List[float]]   # raw episode returns finished in this segment, by env id
  lengths: Dict[int, List[int]]
  idle_actions_s: float             # waiting for actions
  idle_barrier_s: float             # waiting at the barrier (before this segment's GO)
  busy_s: float                     # stepping envs


class EnvStates(NamedTuple):
  """Answer to SAVE: {env_id: pickled (env, last obs)}, or None and the reason."""
  executor: int
  states: Optional[Dict[int, bytes]]
  reason: str


class Failed(NamedTuple):
  """The executor stopped on an exception (one line), in env `env_id` if stepping one."""
  executor: int
  env_id: Optional[int]
  error: str


class ControlChannel:
  """Executor -> controller: one pipe per executor (a single writer, so no lock), typed messages
  pickled once per segment. `writer` (a Connection) is what the executor gets."""

  def __init__(self):
    self.reader, self.writer = mp.Pipe(duplex=False)

  def close(self) -> None:
    for c in (self.reader, self.writer):
      try:
        c.close()
      except OSError:
        pass
