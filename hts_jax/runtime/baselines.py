"""The baselines HTS-RL is compared with, on the same executors, storages, networks and losses.

`SyncRunner` (`--mode=sync`): synchronous A2C/PPO as in OpenAI baselines / Kostrikov's
pytorch-a2c-ppo-acktr: the envs (vectorised in executor processes) step in lockstep, with one
batched inference per step for all of them; after `alpha` steps the learner updates, while
rollout waits; no delayed gradient (policy lag 0). Deterministic like HTS.

`AsyncRunner` (`--mode=async`): IMPALA / GA3C. Each actor thread owns whole executors and runs
`alpha`-step unrolls with whatever params it last received, pushing them into a bounded queue.
The learner takes `async_batch_unrolls` unrolls per update (default `num_actors`: as many samples
as an HTS update), corrects the policy lag with V-trace, and publishes the new params at once. The lag (learner updates between
the params that acted and the params being updated) is measured per unroll and per batch; it
grows with the number of actors. Not deterministic (by design).
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from typing import Any, Dict, List

import jax
import numpy as np

from hts_jax import learner
from hts_jax.config import ConfigError
from hts_jax.runtime import reporting
from hts_jax.runtime.hts import (HTSRunner, Interrupted, _executor_error, _local_devices,
                                 check_finite)
from hts_jax.types import Segment, Unroll


class SyncRunner(HTSRunner):
  """Lockstep rollout with batched inference, then learning: synchronous A2C/PPO."""

  def _start_parts(self, first_segment: int) -> None:
    self._start_executors(first_segment)  # no actor or learner threads: the controller does both

  def _control(self, metrics_writer, evaluator, first_segment: int) -> Dict[str, Any]:
    cfg, book = self.config, self._book
    n_seg = cfg.num_segments
    per_exec = cfg.num_envs // cfg.num_executors
    obs_buf = np.zeros((self.num_rows,) + self.info.obs_shape, self.info.obs_dtype)
    seeds = np.zeros((self.num_rows, 2), np.uint32)
    seeds[:, 0] = self.streams
    progress = reporting.Progress(n_seg * cfg.steps_per_segment, cfg.log_every_s, "sync")
    wall_before = book["wall_time_s"]
    self._release_executors(first_segment)
    t_start = time.perf_counter()
    wall = lambda: wall_before + time.perf_counter() - t_start
    for seg in range(first_segment, n_seg):
      if seg > first_segment:
        for inbox in self._inboxes:
          inbox.put(("go", seg))
      t_roll = time.perf_counter()
      st = self._storages[seg % 2]
      for t in range(cfg.alpha):
        # Wait for every env (the slowest one decides), then one batched inference.
        waiting = time.perf_counter()
        ready = 0
        while ready < cfg.num_envs:
          msg = self._get_simple(self._ready_q)
          assert msg[0] == seg and all(s == t for _, s in msg[1]), msg
          ready += len(msg[1])
        self._actor_idle[0] += time.perf_counter() - waiting
        obs_buf[:] = st.obs[t]
        seeds[:, 1] = seg * cfg.alpha + t
        actions = self.policy.run_actions(self.state.params, obs_buf, seeds)
        st.actions[t] = actions
        st.version[t] = self._num_updates
        self._actor_batches[0] += 1
        for k, inbox in enumerate(self._inboxes):
          inbox.put(list(range(k * per_exec, (k + 1) * per_exec)))
      recent = self._record_reports(self._wait_executors(seg))
      rollout = time.perf_counter() - t_roll
      book["rollout_s"] += rollout
      self._learner_idle += rollout  # the learner waits for the whole rollout
      # Learning, while the envs wait (lag 0: the params that acted are the ones updated).
      t_learn = time.perf_counter()
      metrics, lag = self._learn_storage(seg)
      compute_s = time.perf_counter() - t_learn
      steps = (seg + 1) * cfg.steps_per_segment
      self._log_update(metrics_writer, seg, metrics, lag, compute_s, recent, steps, wall())
      if seg + 1 < n_seg:
        self._maybe_checkpoint(seg, evaluator, wall(), learned=True)
      self._evaluate_and_report(steps, wall(), evaluator, progress)
      if self._target_reached(evaluator):
        break
    return self._final_summary(evaluator, steps, wall(), progress)


class AsyncRunner(HTSRunner):
  """IMPALA-style actors and a V-trace learner around a bounded queue of unrolls."""

  def __init__(self, config, resume: bool = False):
    if resume or config.checkpoint_every:
      raise ConfigError("--mode=async does not checkpoint (unrolls in flight have no "
                        "consistent boundary); use --mode=hts or sync")
    super().__init__(config, resume=False)

  def _act(self, params, obs, seeds):
    return self.policy.run_fixed(params, obs, seeds)  # V-trace needs the behaviour log-probs

  def _make_learner_step(self, lcfg, kind):
    del kind
    devices = _local_devices(self.config.learner_devices, "learner_devices")
    if devices is not None:
      raise ConfigError("--mode=async runs its learner on one device")
    return jax.jit(learner.build_vtrace_update(lcfg, self.network.apply, self.optimizer))

  def _learner_input(self, segment: Segment):
    """Zeros in the learner's batch shape (for compiling ahead): unrolls x rows per actor."""
    cfg = self.config
    cols = cfg.async_unrolls_per_update * self.num_rows // cfg.num_actors
    z = lambda x: np.zeros(x.shape[:1] + (cols,) + x.shape[2:], x.dtype)
    return Unroll(obs=z(segment.obs), actions=z(segment.actions), rewards=z(segment.rewards),
                  dones=z(segment.dones), behaviour_log_probs=z(segment.rewards))

  def _start_parts(self, first_segment: int) -> None:
    cfg = self.config
    ctx = multiprocessing.get_context("spawn")
    per_actor = cfg.num_executors // cfg.num_actors
    # Each actor gets its own ready and control queues, shared by its executors only.
    self._actor_ready = [ctx.SimpleQueue() for _ in range(cfg.num_actors)]
    self._actor_ctrl = [ctx.Queue() for _ in range(cfg.num_actors)]
    owner = [i // per_actor for i in range(cfg.num_executors)]
    self._start_executors(first_segment, ready_qs=[self._actor_ready[a] for a in owner],
                          ctrl_qs=[self._actor_ctrl[a] for a in owner])
    # One finished unroll per actor may wait: with a slow learner, unrolls get staler the more
    # actors there are (paper Claim 2).
    self._unrolls: "queue.Queue" = queue.Queue(
        maxsize=max(cfg.num_actors, cfg.async_unrolls_per_update))
    self._stop_actors = threading.Event()
    self._unroll_lags: List[int] = []
    self._queue_lags: List[int] = []
    for i in range(cfg.num_actors):
      self._start_thread(self._async_actor, f"actor-{i}", i)
    self._start_thread(self._async_learner, "learner")

  def _async_actor(self, index: int) -> None:
    cfg = self.config
    per_exec = cfg.num_envs // cfg.num_executors
    per_actor = cfg.num_executors // cfg.num_actors
    my_execs = list(range(index * per_actor, (index + 1) * per_actor))
    envs = np.arange(my_execs[0] * per_exec, (my_execs[-1] + 1) * per_exec)
    agents = self.num_agents
    rows = (envs[:, None] * agents + np.arange(agents)).ravel()
    obs_buf = np.zeros((self.num_rows,) + self.info.obs_shape, self.info.obs_dtype)
    seeds = np.zeros((self.num_rows, 2), np.uint32)
    seeds[:, 0] = self.streams
    ready_q, ctrl_q = self._actor_ready[index], self._actor_ctrl[index]
    for _ in my_execs:  # its executors have created their envs
      msg = self._poll_until(ctrl_q)
      if msg[0] == "error":
        raise RuntimeError(_executor_error(msg))
    for k in my_execs:
      self._inboxes[k].put(("go", 0))
    seg = 0
    while not self._stop_actors.is_set():
      version, params = self._actor_params  # whatever the learner published last
      st = self._storages[seg % 2]
      logp = np.zeros((cfg.alpha, len(rows)), np.float32)
      for t in range(cfg.alpha):
        ready = 0
        t0 = time.perf_counter()
        while ready < len(envs):
          msg = self._get_simple(ready_q)
          ready += len(msg[1])
        self._actor_idle[index] += time.perf_counter() - t0
        obs_buf[rows] = st.obs[t, rows]
        seeds[rows, 1] = seg * cfg.alpha + t
        actions, extras = self._act(params, obs_buf, seeds)
        st.actions[t, rows] = actions[rows]
        st.version[t, rows] = version
        logp[t] = extras["log_prob"][rows]
        self._actor_batches[index] += 1
        for k in my_execs:
          self._inboxes[k].put(list(range(k * per_exec, (k + 1) * per_exec)))
      returns: Dict[int, List[float]] = {}
      for _ in my_execs:
        msg = self._poll_until(ctrl_q)
        if msg[0] == "error":
          raise RuntimeError(_executor_error(msg))
        returns.update(msg[3])
      unroll = [version, Unroll(obs=st.obs[:, rows].copy(), actions=st.actions[:, rows].copy(),
                                rewards=st.rewards[:, rows].copy(),
                                dones=st.dones[:, rows].copy(), behaviour_log_probs=logp),
                returns, None]
      # Bounded: a full queue holds the actor back. Polled rather than a blocking put so that the
      # stamp (updates done when the unroll joins the queue, Claim 2's L) is taken at joining.
      while not self._stop_actors.is_set():
        unroll[3] = self._num_updates
        try:
          self._unrolls.put_nowait(unroll)
          break
        except queue.Full:
          time.sleep(0.0005)
      seg += 1
      for k in my_execs:
        self._inboxes[k].put(("go", seg))

  def _num_updates_planned(self) -> int:
    cfg = self.config
    return -(-cfg.total_steps // cfg.async_steps_per_update)

  def _async_learner(self) -> None:
    cfg = self.config
    for _ in range(self._num_updates_planned()):
      batch = []
      t0 = time.perf_counter()
      while len(batch) < cfg.async_unrolls_per_update:
        try:
          batch.append(self._unrolls.get(timeout=0.1))
        except queue.Empty:
          if self._stop_actors.is_set():
            return
      self._learner_idle += time.perf_counter() - t0
      t1 = time.perf_counter()
      lags = [self._num_updates - v for v, _, _, _ in batch]
      self._queue_lags.extend(self._num_updates - q for _, _, _, q in batch)
      unroll = jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *[u for _, u, _, _ in batch])
      self.state, metrics = self.learner_step(self.state, unroll)
      metrics = jax.device_get(metrics)
      check_finite(metrics, self._num_updates + 1, None)
      if cfg.learner_delay_s:
        time.sleep(cfg.learner_delay_s)
      self._num_updates += 1
      self._actor_params = (self._num_updates, self.state.params)
      returns: Dict[int, List[float]] = {}
      for _, _, r, _ in batch:
        returns.update(r)
      self._unroll_lags.extend(lags)
      self._learn_out.put((self._num_updates - 1, metrics, float(np.mean(lags)),
                           time.perf_counter() - t1, returns, max(lags)))

  def _control(self, metrics_writer, evaluator, first_segment: int) -> Dict[str, Any]:
    del first_segment
    cfg, book = self.config, self._book
    n_updates = self._num_updates_planned()
    progress = reporting.Progress(n_updates * cfg.async_steps_per_update, cfg.log_every_s,
                                  "async")
    while self._num_updates == 0 and self._learn_out.empty() and not any(self._actor_batches):
      self._check_parts()  # the clock starts when the actors have started acting
      time.sleep(0.001)
    t_start = time.perf_counter()
    wall = lambda: time.perf_counter() - t_start
    max_lags: List[int] = []
    steps = 0
    for j in range(n_updates):
      if self._signal is not None:
        raise Interrupted(f"interrupted at update {self._num_updates}; --mode=async does not "
                          "checkpoint", self._signal)
      seg, metrics, mean_lag, compute_s, returns, max_lag = self._poll_until(self._learn_out)
      recent = []
      for e, rs in returns.items():
        book["returns"][e].extend(rs)
        recent.extend(rs)
      book["lags"].append(mean_lag)
      max_lags.append(max_lag)
      book["learn_s"] += compute_s
      steps = (j + 1) * cfg.async_steps_per_update
      row = {"env_steps": steps, "updates": self._num_updates, "wall_time_s": wall(),
             "sps": steps / wall(), "segment": seg, "lag": mean_lag, "lag_max": max_lag,
             "learn_s": compute_s, "train_return": reporting.mean_or_none(recent)}
      row.update({k: float(v) for k, v in metrics.items()})
      metrics_writer.write(row)
      self._evaluate_and_report(steps, wall(), evaluator, progress)
      if self._target_reached(evaluator):
        break
    self._stop_actors.set()
    summary = self._final_summary(evaluator, steps, wall(), progress)
    lag = reporting.lag_summary(self._unroll_lags)
    lag["per_update"] = book["lags"]  # mean lag of each batch
    lag["per_update_max"] = max_lags
    # The part of each lag spent queued (updates between joining the queue and being learned):
    # the quantity Claim 2's M/M/1 model predicts; the rest accrued while the actor was acting.
    queued = reporting.lag_summary(self._queue_lags)
    lag["queued"] = {k: queued[k] for k in ("min", "mean", "max", "histogram")}
    summary["policy_lag"] = lag
    return summary
