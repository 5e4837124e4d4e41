"""`--mode=async`: IMPALA / GA3C, composed of the same parts as HTS. Each actor thread owns whole
executors (its own state buffer) and runs `alpha`-step unrolls with whatever params it last
received, pushing them into a bounded queue. The learner takes `async_batch_unrolls` unrolls per
update (default `num_actors`: as many samples as an HTS update), corrects the policy lag with
V-trace, and publishes the new params at once. The lag (learner updates between the params that
acted and the params being updated) is measured per unroll and per batch; it grows with the
number of actors (paper Claim 2). Not deterministic (by design); no checkpoints.

Every wait blocks on a pipe, a condition or a sentinel (no sleep loops), so idle actors take no
CPU from the learner.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Dict, List, NamedTuple, Optional

import jax
import numpy as np

from hts_jax import choices, impala
from hts_jax.config import ConfigError
from hts_jax.runtime.errors import Interrupted
from hts_jax.runtime.outputs import reporting
from hts_jax.runtime.sampler import LockstepSampler, ParamsBox
from hts_jax.runtime.buffers import Done
from hts_jax.runtime.controller import Controller
from hts_jax.runtime.learner_worker import LearnResult, segment_of
from hts_jax.runtime.assembly import Mode, Model, Parts, Shape
from hts_jax.types import Unroll


class _Queued(NamedTuple):
  version: int           # params version that acted
  unroll: Unroll
  reports: List[Done]    # its executors' reports (episode returns, idle and busy seconds)
  joined_at: int         # learner updates done when it joined the queue (Claim 2's L)


class UnrollQueue:
  """A bounded FIFO whose `put` stamps the item when it joins (under the lock), blocking on a
  condition while full: with a slow learner, unrolls get staler the more actors there are."""

  def __init__(self, maxsize: int):
    self.maxsize = maxsize
    self._items: "collections.deque" = collections.deque()
    self._cond = threading.Condition()
    self.closed = False

  def put(self, make_item) -> bool:
    """Appends `make_item()` (called when there is room); False if the queue was closed."""
    with self._cond:
      while len(self._items) >= self.maxsize and not self.closed:
        self._cond.wait()
      if self.closed:
        return False
      self._items.append(make_item())
      self._cond.notify_all()
      return True

  def get(self, timeout: float) -> Optional[Any]:
    with self._cond:
      if not self._items and not self.closed:
        self._cond.wait(timeout)
      if not self._items:
        return None
      item = self._items.popleft()
      self._cond.notify_all()
      return item

  def close(self) -> None:
    with self._cond:
      self.closed = True
      self._cond.notify_all()


def _policy_rows(shape: Shape) -> int:
  return shape.num_rows // shape.config.rollout.num_actors


def _learner_step(shape: Shape, model: Model, lcfg):
  if len(shape.config.devices.learner_devices) > 1:
    raise ConfigError("--mode=async runs its learner on one device")
  return jax.jit(impala.build_vtrace_update(lcfg, model.network.apply, model.optimizer,
                                                head=model.head))


def _learner_input(shape: Shape, segment):
  """Zeros in the learner's batch shape (for compiling ahead): unrolls x rows per actor."""
  cfg = shape.config
  cols = cfg.asynchronous.unrolls_per_update(cfg.rollout) * _policy_rows(shape)
  z = lambda x: np.zeros(x.shape[:1] + (cols,) + x.shape[2:], x.dtype)
  return Unroll(segment=jax.tree.map(z, segment), behaviour_log_probs=z(segment.rewards))


class _Async:
  """The actors (each over its own executors) and the learner, joined by the unroll queue."""

  def __init__(self, parts: Parts, ctl: Controller):
    self.parts, self.ctl, self.cfg = parts, ctl, parts.config
    cfg = self.cfg
    self.worker = parts.learner
    self.params = ParamsBox(self.worker.version, parts.actor_params(self.worker.state.params))
    self.unrolls = UnrollQueue(max(cfg.rollout.num_actors,
                                   cfg.asynchronous.unrolls_per_update(cfg.rollout)))
    self.acting = threading.Event()
    self.results: "collections.deque" = collections.deque()
    self.unroll_lags: List[int] = []
    self.queue_lags: List[int] = []

  def actor(self, sampler: LockstepSampler) -> None:
    sampler.wait_started()  # a signal meanwhile: the main thread's
    seg = 0
    while not self.unrolls.closed:
      version, params = self.params.current  # whatever the learner published last
      self.acting.set()  # the executors have started: the clock may run
      logp = sampler.rollout(seg, version, params, stopped=lambda: self.unrolls.closed)
      if logp is None:
        return
      reports = sampler.wait_done(seg)
      rows = sampler.rows
      unroll = Unroll(segment=jax.tree.map(lambda x: x[:, rows].copy(),
                                           segment_of(self.ctl.filling(seg))),
                      behaviour_log_probs=logp)
      if not self.unrolls.put(lambda: _Queued(version, unroll, reports, self.worker.version)):
        return
      seg += 1

  def learner(self) -> None:
    cfg, worker = self.cfg, self.worker
    for _ in range(cfg.learner_updates):
      batch = []
      t0 = time.perf_counter()
      while len(batch) < cfg.asynchronous.unrolls_per_update(cfg.rollout):
        item = self.unrolls.get(timeout=0.1)
        if item is None and self.unrolls.closed:
          return
        if item is not None:
          batch.append(item)
      worker.add_idle(time.perf_counter() - t0)
      t1 = time.perf_counter()
      lags = [worker.version - q.version for q in batch]
      self.queue_lags.extend(worker.version - q.joined_at for q in batch)
      unroll = jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *[q.unroll for q in batch])
      metrics = worker.step(unroll)
      self.params.publish(worker.version, self.parts.actor_params(worker.state.params))
      self.unroll_lags.extend(lags)
      self.results.append((LearnResult(worker.version - 1, metrics, float(np.mean(lags)),
                                       time.perf_counter() - t1),
                           [r for q in batch for r in q.reports], max(lags)))

  def lag_summary(self, per_update: List[float], per_update_max: List[int]) -> Dict[str, Any]:
    """summary.json's `policy_lag`: per unroll, per batch (mean and max) and the part queued."""
    lag = reporting.lag_summary(self.unroll_lags)
    lag["per_update"] = per_update  # mean lag of each batch
    lag["per_update_max"] = per_update_max
    # The part of each lag spent queued (updates between joining the queue and being learned):
    # the quantity Claim 2's M/M/1 model predicts; the rest accrued while the actor was acting.
    queued = reporting.lag_summary(self.queue_lags)
    lag["queued"] = {k: queued[k] for k in ("min", "mean", "max", "histogram")}
    return lag


def run_async(parts: Parts, ctl: Controller) -> Dict[str, Any]:
  cfg, per = parts.config, parts.config.rollout.num_executors // parts.config.rollout.num_actors
  a = _Async(parts, ctl)
  ctl.spawn_executors(state_buffer_of=[k // per for k in range(cfg.rollout.num_executors)])
  for i in range(cfg.rollout.num_actors):
    executors = range(i * per, (i + 1) * per)  # its own, posting to state buffer i
    ctl.start_thread(a.actor, f"actor-{i}", ctl.lockstep_sampler(i, executors))
  ctl.start_thread(a.learner, "learner")
  ctl.on_shutdown(a.unrolls.close)
  ctl.wait(a.acting.is_set)  # the clock starts when the actors have started acting
  ctl.start_clock()
  max_lags: List[int] = []
  steps = 0
  for j in range(cfg.learner_updates):
    if ctl.signal is not None:
      raise Interrupted(f"interrupted at update {parts.learner.version}; "
                        "--mode=async does not checkpoint", ctl.signal)
    ctl.wait(lambda: bool(a.results) or ctl.signal is not None)
    if not a.results:
      continue
    result, reports, max_lag = a.results.popleft()
    recent = ctl.record_rollout(reports)
    max_lags.append(max_lag)
    steps = (j + 1) * cfg.steps_per_update
    ctl.record_update(result, recent, steps, extra={"lag_max": max_lag})
    # An update is async's boundary (it has no segments: `j` stands for one; no checkpoints).
    if ctl.boundary(j, steps, a.params.current[1]):
      break
  a.unrolls.close()
  return ctl.finish(steps, extras=lambda: {"policy_lag": a.lag_summary(ctl.lags(), max_lags)})


MODE = Mode(choices.ASYNC, policy_rows=_policy_rows, loop=run_async,
            learner_step=_learner_step, learner_input=_learner_input, acts_with_extras=True,
            no_checkpoints="unrolls in flight have no consistent boundary")
