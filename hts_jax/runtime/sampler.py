"""The sampler (paper Section 4.1): every mode's rollout is one loop, wait, act, post.

  wait  for blocks whose observations are in the storage, either `lockstep` (per step and group,
        every block of the group: the slowest env decides; sync, its alternating groups, an A2C
        agent's executors, an envpool group) or `asynchronous` (whatever blocks are ready, as HTS's
        actor threads take them);
  act   on them in fixed-shape keyed policy calls (`BlockBatcher`: the actions, and a
        recurrent policy's states, written into the storage);
  post  each call's blocks to the env side that steps them: executor processes through their
        action buffers (`ExecutorEnvs`), or an envpool instance stepped in the sampler's own
        thread (`loops.envpool_group.EnvpoolEnvs`).

How blocks wait together and which env side steps them decide no bits: a row's action depends
only on (params, its observation, its seed) under the fixed call shape (below).

Acting: the policy call and its fixed shape (`ActingParts`), the params the actors use
(`ParamsBox`), and the packing of ready blocks into calls (`BlockBatcher`).

Ready blocks are packed, in the order read, into calls of `layout.policy_rows` rows (the fixed
shape: XLA gives a row the same bits wherever it sits in that shape and whatever its neighbours
are, but not across shapes: docs/determinism.md). A row's action therefore depends only on
(params, its observation, its seed = (its env's action stream, its env's global step)), never on
which other envs happened to be ready with it, how many actors there are or which one took it.
The rows of a call that no ready block fills are computed and ignored; `ActorStats` counts them.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Protocol, Sequence, Tuple

import numpy as np

from hts_jax.seeding import global_step
from hts_jax.runtime import buffers, supervisor
from hts_jax.runtime.barrier import AlphaBarrier
from hts_jax.runtime.buffers import BlockLayout, Done
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
  call_s: float = 0.0  # seconds inside policy calls (their mean bounds an actor's wait)
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
  """Packs ready blocks into fixed-shape policy calls and writes the actions back (every
  sampler's act step: `sampler.Sampler`). The per-call host work is a few slice copies: block
  spans are precomputed Python ints."""

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
    policy's log-probs): receives the call's, in call-row order."""
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
    self.inboxes, self.stop = list(inboxes), stop
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
    self.barrier.supervisor.wait_all(buffers.Started, self.executors)

  def wait_done(self, segment: int) -> List[Done]:
    """The executors' reports of `segment` (the one just collected)."""
    return self.barrier.wait_done(segment, self.executors)
