"""The learner worker (paper Section 4.1): owns the TrainState, runs the delayed-gradient update
(Eq. 6) on each finished storage, in its own thread, while the executors fill the other one.

Its input is placed on the learner's devices with the learner's sharding (the env axis split over
`DATA_AXIS`) by `prepare`, which the controller calls at the swap: the transfer is dispatched
before the update is queued and overlaps the rollout that the swap has just restarted.
"""

from __future__ import annotations

import dataclasses
import queue
import time
from typing import Any, Callable, Dict, NamedTuple, Optional

import jax
import numpy as np

from hts_jax.runtime.watchdog import get_checked
from hts_jax.types import Segment


class LearnResult(NamedTuple):
  segment: int
  metrics: Dict[str, Any]
  lag: int            # learner updates between the params that collected the segment and now
  compute_s: float


def check_finite(metrics, update: int, seg: Optional[int]) -> None:
  """Raises FloatingPointError naming the update if the loss or the new params are not finite."""
  if not (np.isfinite(metrics["loss"]) and metrics["params_finite"]):
    what = "loss" if not np.isfinite(metrics["loss"]) else "params"
    where = "" if seg is None else f" (segment {seg})"
    raise FloatingPointError(f"non-finite {what} at update {update}{where}; the last checkpoint "
                             "is kept")


def behaviour_version(storage, segment: int) -> int:
  """The one params version that collected the storage (several would break Eq. 6)."""
  versions = np.unique(storage.version)
  if len(versions) != 1:
    raise RuntimeError(f"segment {segment} mixes policy versions {versions.tolist()}")
  return int(versions[0])


def segment_of(storage) -> Segment:
  """A storage's learner fields (`Segment`'s, read by name from the storage's) as a (host)
  Segment; `final_obs` and the core state entering step 0 only where the storage has them."""
  fields = {f.name: getattr(storage, f.name) for f in dataclasses.fields(Segment)}
  if fields["core"] is not None:
    fields["core"] = fields["core"][:1]
  return Segment(**fields)


# The learner's watchdog (`LearnerWorker.stalled`) without --watchdog_s: this many times its
# longest update so far, and at least this many seconds.
WATCHDOG_FACTOR = 50
LEARNER_WATCHDOG_MIN_S = 120.0


class LearnerWorker:
  """`submit(seg, storage)` queues an update; `result()` waits for the oldest one."""

  def __init__(self, step_fn, state, sharding=None, delay_s: float = 0.0):
    self.step_fn = step_fn
    self.state = state
    self.version = int(state.update_count)  # learner updates so far: the params' version
    self.sharding = sharding
    self.delay_s = delay_s
    self.idle_s = 0.0
    self.busy_since: Optional[float] = None  # when the update in progress began (monotonic)
    self.longest_step_s = 0.0
    self._jobs: "queue.Queue" = queue.Queue()
    self._out: "queue.Queue" = queue.Queue()

  def prepare(self, storage) -> Segment:
    """The storage as a Segment on the learner's devices (dispatched, not waited for)."""
    host = segment_of(storage)
    if self.sharding is None:
      return jax.device_put(host)
    if not self.sharding.is_fully_addressable:  # this process's columns of the global batch
      return jax.tree.map(
          lambda x: jax.make_array_from_process_local_data(self.sharding, x), host)
    return jax.device_put(host, self.sharding)

  def submit(self, segment: int, storage) -> None:
    self._jobs.put((segment, self.prepare(storage), behaviour_version(storage, segment)))

  def learn(self, segment: int, data: Segment, behaviour: int) -> LearnResult:
    """One update, in the calling thread; the params change only if it is finite."""
    lag = self.version - behaviour
    t0 = time.perf_counter()
    metrics = self.step(data, segment)  # one host sync per segment (its metrics)
    return LearnResult(segment, metrics, lag, time.perf_counter() - t0)

  def step(self, data, segment: Optional[int] = None) -> Dict[str, Any]:
    """One update on `data` (any batch the step takes: a V-trace batch of unrolls), in the
    calling thread; returns its metrics. The state and version change only if it is finite."""
    self.busy_since = t0 = time.monotonic()
    try:
      state, metrics = self.step_fn(self.state, data)
      metrics = jax.device_get(metrics)
      check_finite(metrics, self.version + 1, segment)
      if self.delay_s:
        time.sleep(self.delay_s)
    finally:
      self.busy_since = None
    self.longest_step_s = max(self.longest_step_s, time.monotonic() - t0)
    self.state = state
    self.version += 1
    return metrics

  def stalled(self, now: float, watchdog_s: float) -> Optional[str]:
    """The learner's stall for the supervisor's watchdog: an update running for longer than
    `watchdog_s` (0: WATCHDOG_FACTOR times the longest update so far, at least
    LEARNER_WATCHDOG_MIN_S: a CNN learner's update on CPU takes seconds), or None."""
    since = self.busy_since
    if since is None:
      return None
    limit = watchdog_s or max(LEARNER_WATCHDOG_MIN_S, WATCHDOG_FACTOR * self.longest_step_s)
    if now - since <= limit:
      return None
    return (f"learner: update {self.version + 1} has run for {now - since:.1f} s, past the "
            f"watchdog's {limit:.1f} s")

  def set_params(self, params, new_version: bool = False) -> None:
    """Replaces the params (GALA's gossip mix, its agents' average); `new_version`: counts as
    an update (the average published as the run's params)."""
    self.state = self.state.replace(params=params)
    if new_version:
      self.version += 1

  def add_idle(self, seconds: float) -> None:
    """Seconds the learner waited for data outside `run` (async's unroll queue)."""
    self.idle_s += seconds

  def run(self, count_idle: bool = True) -> None:
    """The learner thread's body; `count_idle`: add its waits for a job to `idle_s` (not where
    the loop books the learner's idle time itself, as sync does)."""
    first = True
    while True:
      t0 = time.perf_counter()
      job = self._jobs.get()
      if job is None:
        return
      if count_idle and not first:  # the wait for the very first segment is inherent
        self.idle_s += time.perf_counter() - t0
      first = False
      self._out.put(self.learn(*job))

  def result(self, check: Callable[[], None]) -> LearnResult:
    """The oldest finished update, as soon as it is put (a poll's interval would be time the
    learner and, in HTS, the executors at the barrier idle every segment); `check()`, the
    supervisor's liveness check, runs while it waits (`watchdog.get_checked`)."""
    return get_checked(self._out, check)

  def stop(self) -> None:
    self._jobs.put(None)
