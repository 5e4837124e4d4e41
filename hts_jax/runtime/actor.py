"""Actor threads (paper Section 4.1): take *all* observations that are ready in the state buffer,
run fixed-shape keyed policy calls on them, write the actions into the storage and tell each
block's executor.

Ready blocks are packed, in the order read, into calls of `layout.policy_rows` rows (the fixed
shape: XLA gives a row the same bits wherever it sits in that shape and whatever its neighbours
are, but not across shapes: docs/determinism.md). A row's action therefore depends only on (params, its
observation, its seed = (its env's action stream, its env's global step)), never on which other
envs happened to be ready with it, how many actors there are or which one took it. The rows of a
call that no ready block fills are computed and ignored; `ActorStats` counts them.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from hts_jax.seeding import global_step
from hts_jax.runtime import buffers, supervisor
from hts_jax.runtime.barrier import AlphaBarrier
from hts_jax.runtime.buffers import BlockLayout, Done, Started
from hts_jax.runtime.storage import StorageSpec


@dataclasses.dataclass(frozen=True)
class ActingParts:
  """What acting needs, built once by the runner: the env/row layout, the compiled policy step
  with its fixed call shape (`rows`), the rows' action streams and the storages' spec (the
  segment length `alpha`, the observation's shape and dtype: read from it, held nowhere else).
  `with_extras`: the mode learns from behaviour log-probs."""
  layout: BlockLayout
  policy: Any
  streams: np.ndarray
  storage: StorageSpec
  rows: int
  with_extras: bool = False

  @property
  def alpha(self) -> int:
    return self.storage.alpha

  @property
  def obs_shape(self) -> Tuple[int, ...]:
    return tuple(self.storage.obs_shape)

  @property
  def obs_dtype(self) -> str:
    return self.storage.obs_dtype

  def act(self, params, obs, seeds, state=None) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """One policy call of the mode's kind (`policy_call`)."""
    return policy_call(self.policy, self.with_extras, params, obs, seeds, state)


def policy_call(policy, with_extras: bool, params, obs, seeds,
                state=None) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
  """One fixed-shape policy call: (actions, extras); extras hold the behaviour log-probs and
  values where `with_extras` (a mode that learns from them), and a recurrent policy's next `core`
  states (`state`: the rows' current ones)."""
  if with_extras:
    return policy.run_fixed(params, obs, seeds, state)
  actions, after = policy.run_step(params, obs, seeds, state)
  return actions, {} if after is None else {"core": after}


@dataclasses.dataclass
class ActorStats:
  """Per actor thread: policy calls, rows they carried that were ready, seconds spent waiting,
  and when the policy call in flight began (`time.monotonic()`; None between calls), which the
  supervisor's watchdog names beside an executor left waiting for its actions."""
  calls: int = 0
  ready_rows: int = 0
  idle_s: float = 0.0
  call_s: float = 0.0  # seconds inside policy calls (their mean bounds `actor_loop`'s wait)
  calling_since: Optional[float] = None
  name: str = "actor"
  delay_s: float = 0.0  # testing: a sleep added to every call (`--policy_delay_s`)

  def act(self, batcher: "BlockBatcher", group: Sequence["Record"], version: int, params,
          log_probs: Optional[np.ndarray] = None) -> int:
    """`batcher.act` counted (a call, its ready rows) and timed for the watchdog."""
    self.calling_since = since = time.monotonic()
    try:
      rows = batcher.act(group, version, params, log_probs)
      if self.delay_s:
        time.sleep(self.delay_s)
    finally:
      self.calling_since = None
    self.call_s += time.monotonic() - since
    self.calls += 1
    self.ready_rows += rows
    return rows

  def in_flight(self, now: float) -> Optional[Tuple[float, str]]:
    """(seconds, description) of the policy call running now, or None."""
    since = self.calling_since
    if since is None:
      return None
    return now - since, f"{self.name}'s policy call has run for {now - since:.1f} s"


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

  def __init__(self, layout: BlockLayout, storages, policy, streams: np.ndarray, rows: int):
    spec = storages.spec  # the segment length and the observations' shape: the storages'
    self.layout, self.storages, self.policy, self.alpha = layout, storages, policy, spec.alpha
    self.rows = rows
    self.obs = np.zeros((rows,) + tuple(spec.obs_shape), spec.obs_dtype)
    self.seeds = np.zeros((rows, 2), np.uint32)
    size = spec.core_size
    self.core = np.zeros((rows, size), np.float32) if size else None
    self.streams = streams
    self.spans = [(layout.rows(b).start, layout.rows(b).stop) for b in range(len(layout.blocks))]
    self.owner = layout.owner().tolist()

  @classmethod
  def from_parts(cls, acting: ActingParts, storages) -> "BlockBatcher":
    return cls(acting.layout, storages, acting.policy, acting.streams, acting.rows)

  def ready_rows(self, records: Sequence[Record]) -> int:
    return sum(self.spans[r[0]][1] - self.spans[r[0]][0] for r in records)

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

  def act(self, group: Sequence[Record], version: int, params,
          log_probs: Optional[np.ndarray] = None) -> int:
    """One policy call for the group's blocks: their actions (and recurrent states) written to
    the storage; returns the rows they filled. `log_probs` (a mode that learns from the behaviour
    policy's log-probs): receives the call's, in call-row order. The one act-and-write step of
    every sampler: HTS actors, sync's lockstep loop, the envpool groups, `LockstepSampler`."""
    off, placed = 0, []
    obs, seeds, core = self.obs, self.seeds, self.core
    for b, seg, t in group:
      lo, hi = self.spans[b]
      end = off + hi - lo
      st = self.storages.filling(seg)
      obs[off:end] = st.obs[t, lo:hi]
      seeds[off:end, 0] = self.streams[lo:hi]
      seeds[off:end, 1] = global_step(seg, self.alpha, t)
      if core is not None:
        core[off:end] = st.core[t, lo:hi]
      placed.append((st, t, lo, hi, off, end))
      off = end
    actions, extras = policy_call(self.policy, log_probs is not None, params, obs, seeds, core)
    after = extras.get("core")
    if log_probs is not None:
      log_probs[:off] = extras["log_prob"][:off]
    for st, t, lo, hi, o, end in placed:
      st.actions[t, lo:hi] = actions[o:end]
      st.version[t, lo:hi] = version
      if core is not None:  # before the executor hears of the actions (it may reset them)
        st.core[t + 1, lo:hi] = after[o:end]
    return off

  def post(self, group, inboxes: Sequence[buffers.ActionWriter]) -> None:
    """Tells each block's executor that its actions are in the storage (one write per owner;
    `inboxes`: the barrier's writers)."""
    by_owner: Dict[int, List[int]] = {}
    for r in group:
      by_owner.setdefault(self.owner[r[0]], []).append(r[0])
    for k, blocks in by_owner.items():
      inboxes[k].post_blocks(blocks)


class LockstepSampler:
  """A2C's sampler over whole executors (an IMPALA actor, a GALA or all-reduce agent): per step
  it waits for every block of its executors, makes one `[rows]` policy call (the acting parts'
  fixed shape) for all of them and sends the executors on. Its executors post to their own state
  buffer `reader`. `rollout` collects one `alpha`-step segment in `storages.filling(segment)`."""

  def __init__(self, acting: ActingParts, barrier: AlphaBarrier, storages,
               executors: Sequence[int], reader: buffers.RecordReader, stats: ActorStats):
    self.acting, self.barrier, self.storages = acting, barrier, storages
    self.executors, self.reader, self.stats = list(executors), reader, stats
    layout = acting.layout
    self.blocks_of = {k: layout.blocks_of_executor(k) for k in self.executors}
    self.blocks = [b for k in self.executors for b in self.blocks_of[k]]
    self.span = (layout.rows(self.blocks[0]).start, layout.rows(self.blocks[-1]).stop)
    self.rows = np.arange(*self.span)
    # Its executors' blocks in one call of the acting parts' fixed shape (`acting.rows`).
    assert len(self.rows) == acting.rows, (len(self.rows), acting.rows)
    self.batcher = BlockBatcher.from_parts(acting, storages)

  def rollout(self, segment: int, version: int, params,
              stopped: Callable[[], bool] = lambda: False) -> Optional[np.ndarray]:
    """Collects `segment` with `params` (version `version`); returns the behaviour log-probs
    `[alpha, rows]` (zeros unless the mode acts with extras), None if `stopped()` became true."""
    acting, stats, alpha = self.acting, self.stats, self.acting.alpha
    sup = self.barrier.supervisor
    self.barrier.go(segment, self.executors)
    logp = np.zeros((alpha, len(self.rows)), np.float32)
    for t in range(alpha):
      t0 = time.perf_counter()
      ready = 0
      while ready < len(self.blocks):
        while not self.reader.ready(supervisor.POLL_S):
          if stopped():
            return None
          sup.check()
        ready += len(self.reader.read())
      stats.idle_s += time.perf_counter() - t0
      stats.act(self.batcher, [(b, segment, t) for b in self.blocks], version, params,
                logp[t] if acting.with_extras else None)
      for k in self.executors:
        self.barrier.post_blocks(k, self.blocks_of[k])
    return logp

  def wait_started(self) -> None:
    """Waits until its executors have created their envs."""
    self.barrier.supervisor.wait_all(Started, self.executors)

  def wait_done(self, segment: int) -> List[Done]:
    """The executors' reports of `segment` (the one just collected)."""
    return self.barrier.wait_done(segment, self.executors)


def _split(records: np.ndarray, ready: List[Record]) -> bool:
  """Appends the block records to `ready`; True if a stop record was among them."""
  stop = False
  for r in records.tolist():
    if r[0] >= 0:
      ready.append(r)
    else:
      stop = stop or r[0] == buffers.STOP
  return stop


def actor_loop(batcher: BlockBatcher, reader: buffers.RecordReader,
               state_writer: buffers.StateWriter, inboxes: Sequence[buffers.ActionWriter],
               params: Callable[[], Tuple[int, object]], stats: ActorStats,
               wait: float = 0.0) -> None:
  """The body of one HTS actor thread; returns when it reads a stop record (which it passes on).

  With `wait` > 0 (`--actor_wait`), when the ready blocks fill less than one call, the actor waits
  for more, at most `wait` times the mean seconds of its policy calls: a block arriving within
  that time would otherwise wait for the call in flight and then a call of its own, and a call
  costs the same however many of its rows are ready. Which blocks share a call decides no bits
  (the module's docstring). Only for the state buffer's only reader: another actor could take
  the records between a poll and the read, and this one would block holding its blocks."""
  while True:
    t0 = time.perf_counter()
    records = reader.read()
    if records is None:
      stats.idle_s += time.perf_counter() - t0
      return
    ready: List[Record] = []
    stop, eof = _split(records, ready), False
    if wait and ready and not stop and stats.calls:
      deadline = time.perf_counter() + wait * stats.call_s / stats.calls
      while batcher.ready_rows(ready) < batcher.rows:
        left = deadline - time.perf_counter()
        if left <= 0 or not reader.ready(left):
          break
        more = reader.read()
        eof = more is None
        if eof or _split(more, ready):
          stop = True
          break
    stats.idle_s += time.perf_counter() - t0
    if ready:
      version, p = params()
      for group in batcher.groups(ready):
        stats.act(batcher, group, version, p)
        batcher.post(group, inboxes)
    if stop:
      if not eof:
        state_writer.post_stop()
      return
