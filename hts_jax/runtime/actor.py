"""Acting (paper Section 4.1): the policy call and its fixed shape, the params the actors use,
and the packing of ready blocks into calls that every sampler (`sampler.py`) runs.

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
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from hts_jax.seeding import global_step
from hts_jax.runtime.buffers import BlockLayout
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
