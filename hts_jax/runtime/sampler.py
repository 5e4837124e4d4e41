"""The sampler (paper Section 4.1): every mode's rollout is one loop, wait, act, post.

  wait  for blocks whose observations are in the storage, either `lockstep` (per step and group,
        every block of the group: the slowest env decides; sync, its alternating groups, an A2C
        agent's executors, an envpool group) or `asynchronous` (whatever blocks are ready, as HTS's
        actor threads take them);
  act   on them in fixed-shape keyed policy calls (`actor.BlockBatcher`: the actions, and a
        recurrent policy's states, written into the storage);
  post  each call's blocks to the env side that steps them: executor processes through their
        action buffers (`ExecutorEnvs`), or an envpool instance stepped in the sampler's own
        thread (`loops.envpool_group.EnvpoolEnvs`).

How blocks wait together and which env side steps them decide no bits: a row's action depends
only on (params, its observation, its seed) under the fixed call shape (`actor`'s docstring).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from hts_jax.runtime import buffers, supervisor
from hts_jax.runtime.actor import ActingParts, ActorStats, BlockBatcher, Record
from hts_jax.runtime.barrier import AlphaBarrier
from hts_jax.runtime.buffers import Done

Params = Callable[[], Tuple[int, Any]]  # () -> (version, params) to act with now


class Envs(Protocol):
  """A sampler's env side: where the ready blocks' records come from and the acted ones go."""

  def ready(self, timeout: float) -> bool:
    """Whether a record is ready to read (waiting at most `timeout` seconds)."""

  def read(self) -> Optional[np.ndarray]:
    """Every ready `(block, segment, t)` record, `[n, 3]` (blocks until one is); None at the
    end (every writer has gone)."""

  def post(self, group: Sequence[Record]) -> None:
    """The actions of the group's blocks are in the storage: step them."""


class ExecutorEnvs:
  """Executor processes as a sampler's env side: the records of state buffer `reader`; the acted
  blocks posted to their executors' action buffers (`inboxes`, by executor: one write per
  owner). `stop`: the state buffer's writer, to pass a stop record on to the next actor."""

  def __init__(self, reader: buffers.RecordReader, inboxes: Sequence[buffers.ActionWriter],
               layout: buffers.BlockLayout, stop: Optional[buffers.StateWriter] = None):
    self.reader, self.inboxes, self.stop = reader, list(inboxes), stop
    self.owner = layout.owner().tolist()
    self.ready, self.read = reader.ready, reader.read

  def post(self, group: Sequence[Record]) -> None:
    by_owner: Dict[int, List[int]] = {}
    for r in group:
      by_owner.setdefault(self.owner[r[0]], []).append(r[0])
    for k, blocks in by_owner.items():
      self.inboxes[k].post_blocks(blocks)


class _Stopped(Exception):
  """A lockstep wait's `stopped()` became true."""


def _split(records: np.ndarray, ready: List[Record]) -> bool:
  """Appends the block records to `ready`; True if a stop record was among them."""
  stop = False
  for r in records.tolist():
    if r[0] >= 0:
      ready.append(r)
    else:
      stop = stop or r[0] == buffers.STOP
  return stop


class Sampler:
  """The one wait-act-post loop (`run`) over an env side `envs`, its policy calls packed by
  `batcher` and counted in `stats`; `lockstep` and `asynchronous` are its two waits. `check`:
  the supervisor's liveness check, run while a lockstep wait polls."""

  def __init__(self, batcher: BlockBatcher, envs: Envs, stats: ActorStats,
               check: Callable[[], None] = lambda: None):
    self.batcher, self.envs, self.stats, self.check = batcher, envs, stats, check

  def run(self, waits: Iterator[List[Record]], params: Params,
          log_probs: Optional[np.ndarray] = None) -> None:
    """For each batch of ready records `waits` yields: one policy call per group that fits the
    call's shape, with what `params()` returns then, and the group's blocks posted after it.
    `log_probs` `[alpha, rows]`: row t receives step t's behaviour log-probs (one call a step)."""
    batcher, stats, post = self.batcher, self.stats, self.envs.post
    for records in waits:
      version, p = params()
      for group in batcher.groups(records):
        stats.act(batcher, group, version, p, None if log_probs is None else log_probs[group[0][2]])
        post(group)

  def lockstep(self, segment: int, groups: Sequence[Sequence[int]], params: Params,
               log_probs: Optional[np.ndarray] = None,
               stopped: Callable[[], bool] = lambda: False) -> bool:
    """Collects `segment` in lockstep: per step and group (block ids), waits for every block of
    the group, then acts on them in block order. Returns False if `stopped()` became true while
    it waited."""
    try:
      self.run(self._lockstep(segment, groups, stopped), params, log_probs)
    except _Stopped:
      return False
    return True

  def _lockstep(self, segment: int, groups: Sequence[Sequence[int]],
                stopped: Callable[[], bool]) -> Iterator[List[Record]]:
    envs, stats = self.envs, self.stats
    group_of = {b: g for g, blocks in enumerate(groups) for b in blocks}
    waiting: List[List[Record]] = [[] for _ in groups]  # records read, by group
    for t in range(self.batcher.alpha):
      for g, blocks in enumerate(groups):
        t0 = time.perf_counter()
        while len(waiting[g]) < len(blocks):
          while not envs.ready(supervisor.POLL_S):
            if stopped():
              raise _Stopped
            self.check()
          for r in envs.read().tolist():
            waiting[group_of[r[0]]].append(r)
        stats.idle_s += time.perf_counter() - t0
        records = sorted(waiting[g])
        waiting[g] = []
        if any(r[1] != segment or r[2] != t for r in records):
          raise RuntimeError(f"lockstep broken at segment {segment}, step {t}: {records}")
        yield records

  def asynchronous(self, params: Params, wait: float = 0.0) -> None:
    """HTS's actor thread: acts on whatever blocks are ready until it reads a stop record (which
    it passes on: `ExecutorEnvs.stop`).

    With `wait` > 0 (`--actor_wait`), when the ready blocks fill less than one call, it waits
    for more, at most `wait` times the mean seconds of its policy calls: a block arriving within
    that time would otherwise wait for the call in flight and then a call of its own, and a call
    costs the same however many of its rows are ready. Which blocks share a call decides no bits.
    Only for the state buffer's only reader: another actor could take the records between a poll
    and the read, and this one would block holding its blocks."""
    self.run(self._asynchronous(wait), params)

  def _asynchronous(self, wait: float) -> Iterator[List[Record]]:
    envs, stats, batcher = self.envs, self.stats, self.batcher
    while True:
      t0 = time.perf_counter()
      records = envs.read()
      if records is None:
        stats.idle_s += time.perf_counter() - t0
        return
      ready: List[Record] = []
      stop, eof = _split(records, ready), False
      if wait and ready and not stop and stats.calls:
        deadline = time.perf_counter() + wait * stats.call_s / stats.calls
        while batcher.ready_rows(ready) < batcher.rows:
          left = deadline - time.perf_counter()
          if left <= 0 or not envs.ready(left):
            break
          more = envs.read()
          eof = more is None
          if eof or _split(more, ready):
            stop = True
            break
      stats.idle_s += time.perf_counter() - t0
      if ready:
        yield ready
      if stop:
        if not eof:
          envs.stop.post_stop()
        return


class LockstepSampler:
  """A2C's sampler over whole executors (an IMPALA actor, a GALA or all-reduce agent): per step
  it waits for every block of its executors, makes one `[rows]` policy call (the acting parts'
  fixed shape) for all of them and sends the executors on (`Sampler.lockstep` with one group).
  `rollout` collects one `alpha`-step segment in the storage `filling(segment)`."""

  def __init__(self, acting: ActingParts, barrier: AlphaBarrier, sampler: Sampler,
               executors: Sequence[int]):
    self.acting, self.barrier, self.sampler = acting, barrier, sampler
    self.executors = list(executors)
    layout = acting.layout
    self.blocks = [b for k in self.executors for b in layout.blocks_of_executor(k)]
    self.span = (layout.rows(self.blocks[0]).start, layout.rows(self.blocks[-1]).stop)
    self.rows = np.arange(*self.span)
    # Its executors' blocks in one call of the acting parts' fixed shape (`acting.rows`).
    assert len(self.rows) == acting.rows, (len(self.rows), acting.rows)

  def rollout(self, segment: int, version: int, params,
              stopped: Callable[[], bool] = lambda: False) -> Optional[np.ndarray]:
    """Collects `segment` with `params` (version `version`); returns the behaviour log-probs
    `[alpha, rows]` (zeros unless the mode acts with extras), None if `stopped()` became true."""
    self.barrier.go(segment, self.executors)
    logp = np.zeros((self.acting.alpha, len(self.rows)), np.float32)
    if not self.sampler.lockstep(segment, [self.blocks], lambda: (version, params),
                                 logp if self.acting.with_extras else None, stopped):
      return None
    return logp

  def wait_started(self) -> None:
    """Waits until its executors have created their envs (a signal is the main thread's)."""
    self.barrier.wait_started(self.executors, main=False)

  def wait_done(self, segment: int) -> List[Done]:
    """The executors' reports of `segment` (the one just collected)."""
    return self.barrier.wait_done(segment, self.executors)
