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
from typing import Callable, Dict, List, Sequence, Tuple

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


Record = Sequence[int]  # (block, segment, t)


class BlockBatcher:
  """Packs ready blocks into fixed-shape policy calls and writes the actions back (shared by the
  HTS actor threads, the synchronous baseline's controller and the envpool groups). The per-call
  host work is a few slice copies: block spans and owners are precomputed Python ints."""

  def __init__(self, layout: BlockLayout, storages, policy, streams: np.ndarray, alpha: int,
               obs_shape, obs_dtype, rows: int):
    self.layout, self.storages, self.policy, self.alpha = layout, storages, policy, alpha
    self.rows = rows
    self.obs = np.zeros((rows,) + tuple(obs_shape), obs_dtype)
    self.seeds = np.zeros((rows, 2), np.uint32)
    self.streams = streams
    self.spans = [(layout.rows(b).start, layout.rows(b).stop) for b in range(len(layout.blocks))]
    self.owner = layout.owner().tolist()

  def groups(self, records: Sequence[Record]) -> List[List[Record]]:
    """Splits (block, segment, t) records, in order, into consecutive groups that fit one call."""
    out: List[List[Record]] = [[]]
    used = 0
    for r in records:
      lo, hi = self.spans[r[0]]
      if used + hi - lo > self.rows:
        out.append([])
        used = 0
      out[-1].append(r)
      used += hi - lo
    return out

  def act(self, group: Sequence[Record], version: int, params) -> int:
    """One policy call for the group's blocks; returns the rows they filled."""
    off, placed = 0, []
    obs, seeds = self.obs, self.seeds
    for b, seg, t in group:
      lo, hi = self.spans[b]
      end = off + hi - lo
      st = self.storages.filling(seg)
      obs[off:end] = st.obs[t, lo:hi]
      seeds[off:end, 0] = self.streams[lo:hi]
      seeds[off:end, 1] = seg * self.alpha + t  # the env's global step
      placed.append((st, t, lo, hi, off, end))
      off = end
    actions = self.policy.run_actions(params, obs, seeds)
    for st, t, lo, hi, o, end in placed:
      st.actions[t, lo:hi] = actions[o:end]
      st.version[t, lo:hi] = version
    return off

  def post(self, group, inboxes: Sequence[buffers.ActionWriter]) -> None:
    """Tells each block's executor that its actions are in the storage (one write per owner)."""
    by_owner: Dict[int, List[int]] = {}
    for r in group:
      by_owner.setdefault(self.owner[r[0]], []).append(r[0])
    for k, blocks in by_owner.items():
      inboxes[k].post_blocks(blocks)


def actor_loop(batcher: BlockBatcher, reader: buffers.RecordReader,
               state_writer: buffers.StateWriter, inboxes: Sequence[buffers.ActionWriter],
               params: Callable[[], Tuple[int, object]], stats: ActorStats) -> None:
  """The body of one HTS actor thread; returns when it reads a stop record (which it passes on)."""
  while True:
    t0 = time.perf_counter()
    records = reader.read()
    stats.idle_s += time.perf_counter() - t0
    if records is None:
      return
    ready, stop = [], False
    for r in records.tolist():
      if r[0] >= 0:
        ready.append(r)
      else:
        stop = stop or r[0] == buffers.STOP
    if ready:
      version, p = params()
      for group in batcher.groups(ready):
        stats.ready_rows += batcher.act(group, version, p)
        stats.calls += 1
        batcher.post(group, inboxes)
    if stop:
      state_writer.post_stop()
      return
