"""Actor threads (paper Section 4.1): take *all* observations that are ready in the state buffer,
run fixed-shape keyed policy calls on them, write the actions into the storage and tell each
block's executor.

Ready blocks are packed, in the order read, into calls of `layout.policy_rows` rows (the fixed
shape: XLA gives a row the same bits wherever it sits in that shape and whatever its neighbours
are, but not across shapes, FACTS.md). A row's action therefore depends only on (params, its
observation, its seed = (its env's action stream, its env's global step)), never on which other
envs happened to be ready with it, how many actors there are or which one took it. The rows of a
call that no ready block fills are computed and ignored; `ActorStats` counts them.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, List, Sequence, Tuple

import numpy as np

from hts_jax.runtime import buffers
from hts_jax.runtime.buffers import BlockLayout


@dataclasses.dataclass
class ActorStats:
  """Per actor thread: policy calls, rows they carried that were ready, seconds spent waiting."""
  calls: int = 0
  ready_rows: int = 0
  idle_s: float = 0.0


class ParamsBox:
  """The params the actors use: `(version, params)`, replaced whole once per segment by the
  controller (one attribute assignment: actors see the old or the new pair, never a mix)."""

  def __init__(self, version: int, params):
    self.current: Tuple[int, object] = (version, params)

  def publish(self, version: int, params) -> None:
    self.current = (version, params)


class BlockBatcher:
  """Packs ready blocks into fixed-shape policy calls and writes the actions back (shared by the
  HTS actor threads and the synchronous baseline's controller)."""

  def __init__(self, layout: BlockLayout, storages, policy, streams: np.ndarray, alpha: int,
               obs_shape, obs_dtype, rows: int):
    self.layout, self.storages, self.policy, self.alpha = layout, storages, policy, alpha
    self.rows = rows
    self.obs = np.zeros((rows,) + tuple(obs_shape), obs_dtype)
    self.seeds = np.zeros((rows, 2), np.uint32)
    self.streams = streams
    self.slices = [layout.rows(b) for b in range(len(layout.blocks))]

  def groups(self, records: np.ndarray) -> List[np.ndarray]:
    """Splits `[n, 3]` (block, segment, t) records into consecutive groups that fit one call."""
    out, start, used = [], 0, 0
    for i, b in enumerate(records[:, 0].tolist()):
      sl = self.slices[b]
      k = sl.stop - sl.start
      if used + k > self.rows:
        out.append(records[start:i])
        start, used = i, 0
      used += k
    out.append(records[start:])
    return out

  def act(self, group: np.ndarray, version: int, params) -> int:
    """One policy call for the group's blocks; returns the rows they filled."""
    off, placed = 0, []
    for b, seg, t in group.tolist():
      sl = self.slices[b]
      k = sl.stop - sl.start
      st = self.storages.filling(seg)
      self.obs[off:off + k] = st.obs[t, sl]
      self.seeds[off:off + k, 0] = self.streams[sl]
      self.seeds[off:off + k, 1] = seg * self.alpha + t  # the env's global step
      placed.append((st, t, sl, off, k))
      off += k
    actions = self.policy.run_actions(params, self.obs, self.seeds)
    for st, t, sl, o, k in placed:
      st.actions[t, sl] = actions[o:o + k]
      st.version[t, sl] = version
    return off


def actor_loop(batcher: BlockBatcher, reader: buffers.RecordReader,
               state_writer: buffers.StateWriter, inboxes: Sequence[buffers.ActionWriter],
               owner: np.ndarray, params: Callable[[], Tuple[int, object]],
               stats: ActorStats) -> None:
  """The body of one HTS actor thread; returns when it reads a stop record (which it passes on)."""
  while True:
    t0 = time.perf_counter()
    records = reader.read()
    stats.idle_s += time.perf_counter() - t0
    if records is None:
      return
    stop = bool((records[:, 0] == buffers.STOP).any())
    records = records[records[:, 0] >= 0]
    if len(records):
      version, p = params()
      for group in batcher.groups(records):
        stats.ready_rows += batcher.act(group, version, p)
        stats.calls += 1
        blocks = group[:, 0]
        owners = owner[blocks]
        for k in np.unique(owners).tolist():
          inboxes[k].post_blocks(blocks[owners == k])
    if stop:
      state_writer.post_stop()
      return
