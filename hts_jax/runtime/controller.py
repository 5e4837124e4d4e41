"""The segment controller: the alpha barrier and everything decided at segment boundaries.

Every `alpha` steps per env the executors report `Done` and wait (the barrier). At that boundary
the controller, and only it, decides what changes the loop, at points fixed by the segment index
and never by thread timing:
  - the params the actors use next (published with their version),
  - evaluations (of those published params) and whether `--stop_at_return` is met (judged on the
    evaluation submitted at the *previous* boundary, waited for if still running),
  - checkpoints (the snapshot, a copy of the storage included, is taken at the boundary; writing
    it, and waiting for the evaluations it records, happens in the background while the
    executors go on),
  - a stop on SIGINT/SIGTERM (checkpoint first).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from hts_jax.analysis import metrics as eval_metrics
from hts_jax.runtime import (backend, bookkeeping, buffers, checkpoint, distributed, reporting,
                             tracking)
from hts_jax.runtime.bookkeeping import Book, summary
from hts_jax.runtime.buffers import ActionBuffer, Done, EnvStates, StateBuffer, Started
from hts_jax.runtime.evaluation import Evaluator
from hts_jax.runtime.executor import ExecutorSpec
from hts_jax.runtime.learner_worker import LearnResult
from hts_jax.runtime.placement import COMPILES
from hts_jax.runtime.storage import Storages, StorageSpec
from hts_jax.runtime.supervisor import Interrupted, RunError, Supervisor, interrupted_message


class Controller:
  """The parts of one run that live as long as it: storages, supervisor, book, outputs. Used as a
  context manager: leaving it shuts everything down in order (see `supervisor`)."""

  def __init__(self, runner):
    self.runner = runner
    cfg = self.config = runner.config
    restored = runner.restored
    # In a multi-process run process 0 writes the outputs and evaluates.
    self.primary = cfg.process_id == 0
    self.metrics: Optional[reporting.MetricsWriter] = None
    self.tracker: Optional[tracking.Tracker] = None
    if self.primary:  # first: a tracker that cannot start (W&B) stops the run before the rest
      self.metrics = reporting.MetricsWriter(cfg.logdir, keep_updates=(
          None if restored is None else runner.learner.version))
      try:
        self.tracker = tracking.open_tracker(cfg, purge_step=(
            None if restored is None else self.metrics.last_env_steps + 1))
      except BaseException:
        self.metrics.close()
        raise
    self.storages = Storages(StorageSpec(cfg.alpha, cfg.local_envs, runner.info.obs_shape,
                                         runner.info.obs_dtype, runner.num_agents,
                                         final_obs=cfg.learner.bootstrap_truncation),
                             create=True)
    self.supervisor = Supervisor(cfg.env_ids_of_executor)
    self.book = (Book.new(cfg.num_envs, cfg.eval_every) if restored is None else
                 Book.from_json(restored["host"]["book"]))
    self.first_segment = 0 if restored is None else restored["host"]["segment"] + 1
    # A restored checkpoint holds the segment before first_segment, maybe not yet learned.
    self.restored_unlearned = (restored is not None and not restored["host"].get("learned"))
    if restored is not None:
      st = self.storages.filling(self.first_segment - 1)
      for name, value in restored["storage"].items():
        getattr(st, name)[...] = value
    self.evaluator = Evaluator(cfg.env, cfg.env_kwargs, runner.network.apply, cfg.eval_episodes,
                               cfg.seed, greedy=cfg.evaluates_greedy,
                               max_steps=cfg.eval_max_steps, results=self.book.eval,
                               num_agents=runner.num_agents,
                               sharding=runner.placement.eval_params, tracker=self.tracker,
                               video_dir=os.path.join(cfg.logdir, "videos"))
    # Videos: one each time the env steps pass a multiple of video_every (counted from the
    # steps a resumed run starts at).
    self._videos_done = (self.first_segment * cfg.steps_per_segment // cfg.video_every
                         if cfg.video_every else 0)
    if self.primary:  # the one that evaluates
      self.evaluator.compile(runner.learner.state.params, runner.info.obs_shape,
                             runner.info.obs_dtype)
    self.inboxes: List[ActionBuffer] = []
    self.state_buffers: List[StateBuffer] = []
    self.actor_stats: List = []  # ActorStats of this session's actors (the mode appends)
    self._writer: Optional[threading.Thread] = None
    self._writer_error: Optional[str] = None
    self._t_start = time.perf_counter()
    self._wall_before = self.book.wall_time_s
    self._cpu0 = time.process_time()

  def __enter__(self) -> "Controller":
    self.supervisor.install_signal_handlers()
    return self

  def __exit__(self, exc_type, exc, tb) -> None:
    self.supervisor.restore_signal_handlers()
    try:
      self.supervisor.shutdown()
      self.join_checkpoint_writer(raise_errors=False)
    finally:
      self.evaluator.close(wait=exc_type is None)  # before the tracker it writes to
      if self.tracker is not None:
        self.tracker.close()
      if self.metrics is not None:
        self.metrics.close()
      for sb in self.state_buffers:
        sb.close()
      self.storages.close()

  # ------------------------------------------------------------ clock
  def wall(self) -> float:
    return self._wall_before + time.perf_counter() - self._t_start

  def start_clock(self) -> None:
    self._t_start = time.perf_counter()
    self._cpu0 = time.process_time()
    COMPILES.start()  # everything is compiled before; `finish` reports what was not

  def book_totals(self, copy: bool = True) -> Book:
    """The book with this session's actor and learner counters added: a copy, or with
    `copy=False` one that shares the book's lists (to read at once, not to keep)."""
    book = dataclasses.replace(self.book, **{k: getattr(self.book, k) + v
                                             for k, v in self.session_stats().items()})
    return Book.from_json(json.loads(json.dumps(book.to_json()))) if copy else book

  def session_stats(self) -> Dict[str, float]:
    """This session's counters that live in the parts (actors, learner) rather than the book."""
    stats = {"actor_calls": 0, "ready_rows": 0, "computed_rows": 0, "actor_idle": 0.0,
             "learner_idle": self.runner.learner.idle_s}
    rows = self.runner.policy_rows
    for a in self.actor_stats:
      stats["actor_calls"] += a.calls
      stats["ready_rows"] += a.ready_rows
      stats["computed_rows"] += a.calls * rows
      stats["actor_idle"] += a.idle_s
    return stats

  def stop_clock(self) -> None:
    self.book.main_cpu_s += time.process_time() - self._cpu0
    self._cpu0 = time.process_time()

  # ------------------------------------------------------------ executors and the barrier
  def spawn_executors(self, state_buffer_of: Optional[Sequence[int]] = None) -> None:
    """Executor processes for every env, one action buffer each; they post to state buffer
    `state_buffer_of[k]` (default: one state buffer shared by all)."""
    cfg, runner = self.config, self.runner
    owners = list(state_buffer_of) if state_buffer_of is not None else [0] * cfg.num_executors
    self.state_buffers = [StateBuffer() for _ in range(max(owners) + 1)]
    self.inboxes = [ActionBuffer() for _ in range(cfg.num_executors)]
    saved = None if runner.restored is None else runner.restored["envs"]
    specs = []
    for k in range(cfg.num_executors):
      ids = cfg.env_ids_of_executor(k)
      specs.append(ExecutorSpec(
          index=k, env=cfg.env, env_kwargs=cfg.env_kwargs, seed=cfg.seed, alpha=cfg.alpha,
          storage=self.storages.spec, layout=runner.layout, delay_s=cfg.executor_delay_s,
          jitter_s=cfg.executor_jitter_s, decorrelate_steps=cfg.decorrelate_steps,
          first_segment=self.first_segment, vectorize=cfg.vector_envs, env_offset=cfg.env_offset,
          env_states=None if saved is None else {e: saved[e] for e in ids}))
    self.supervisor.spawn_executors(specs, self.inboxes,
                                    [self.state_buffers[o].writer for o in owners])

  def wait_started(self, executors: Optional[Sequence[int]] = None) -> None:
    """Waits until the executors have created their envs; a signal meanwhile stops the run."""
    for k in (range(len(self.inboxes)) if executors is None else executors):
      while not self.supervisor.ctrl[k].reader.poll(0.0):
        self.check_start_up_signal()
        self.supervisor.wait(lambda k=k: self.supervisor.ctrl[k].reader.poll(0.0) or
                             self.supervisor.signal is not None)
      self.supervisor.wait_message(k, Started)

  def check_start_up_signal(self) -> None:
    signum = self.supervisor.signal
    if signum is not None:
      raise Interrupted(f"interrupted by {signal.Signals(signum).name} during start-up; nothing "
                        "was trained or saved", signum)

  def go(self, segment: int, executors: Optional[Sequence[int]] = None) -> None:
    """Leaves the barrier: the executors start `segment` in storage `filling(segment)`."""
    for k in (range(len(self.inboxes)) if executors is None else executors):
      self.inboxes[k].writer.post(buffers.GO, segment)

  def wait_done(self, segment: int) -> List[Done]:
    """The alpha barrier: every executor has finished `segment`."""
    reports = self.supervisor.wait_all(Done)
    for r in reports:
      if r.segment != segment:
        raise RuntimeError(f"executor {r.executor} reported segment {r.segment}, not {segment}")
    return reports

  # ------------------------------------------------------------ updates and boundaries
  def wait_learner(self) -> LearnResult:
    return self.runner.learner.result(self.supervisor.wait)

  def log_update(self, result: LearnResult, recent_returns, env_steps: int,
                 extra: Optional[Dict[str, Any]] = None) -> None:
    """Books one learner update and writes its metrics.csv row."""
    book, wall = self.book, self.wall()
    book.lags.append(result.lag)
    book.learn_s += result.compute_s
    row = {"env_steps": env_steps, "updates": self.runner.learner.version, "wall_time_s": wall,
           "sps": env_steps / wall, "segment": result.segment, "lag": result.lag,
           "learn_s": result.compute_s, "train_return": reporting.mean_or_none(recent_returns)}
    row.update(extra or {})
    learner_metrics = {k: float(v) for k, v in result.metrics.items()}
    row.update(learner_metrics)
    if self.metrics is not None:
      self.metrics.write(row)
    if self.tracker is not None:
      tags = {f"train/{k}": v for k, v in row.items()
              if k != "env_steps" and k not in learner_metrics}
      tags.update({f"learner/{k}": v for k, v in learner_metrics.items()})
      tags.update(self.figures(env_steps))
      self.tracker.scalars(tags, env_steps)

  def figures(self, env_steps: int) -> Dict[str, float]:
    """summary.json's idle and efficiency figures so far, as tracker tags."""
    book = self.book_totals(copy=False)
    out = {f"idle/{k}": v for k, v in bookkeeping.idle(book).items()}
    out.update({f"efficiency/{k}": v for k, v in bookkeeping.efficiency(
        book, env_steps, self.runner.num_agents).items()})
    return out

  def evaluate_if_due(self, env_steps: int, params) -> None:
    """Submits an evaluation of `params` when one is due, and a video (the final ones are
    `finish`'s)."""
    cfg = self.config
    if cfg.video_every and env_steps // cfg.video_every > self._videos_done and \
        env_steps < cfg.num_segments * cfg.steps_per_segment:
      self._videos_done = env_steps // cfg.video_every
      if self.primary:
        self.evaluator.submit_video(env_steps, params)
    book = self.book
    if book.next_eval is not None and env_steps >= book.next_eval and \
        env_steps < self.config.num_segments * self.config.steps_per_segment:
      if self.primary:
        self.evaluator.submit(env_steps, self.wall(), params)
      book.last_eval = env_steps
      while book.next_eval <= env_steps:
        book.next_eval += self.config.eval_every

  def target_reached(self) -> bool:
    """`--stop_at_return`, judged on the running average of the evaluations (`analysis.metrics.
    running_averages`) submitted before the current boundary (the
    previous boundary's is waited for if it is still running): a deterministic point."""
    target = self.config.stop_at_return
    if target is None:
      return False
    reached = False
    n = self.evaluator.submitted  # this boundary's evaluation is submitted after this call
    if n:
      results = self.evaluator.results_upto(n, self.supervisor.wait)
      # The paper's required-time average: the running mean of the 10 most recent evaluations.
      reached = any(avg >= target for avg in eval_metrics.running_averages(
          [r["mean_return"] for r in results]))
    # Multi-process: process 0 evaluates and decides; every process stops at this boundary.
    return bool(distributed.allgather_ints([int(reached)])[0, 0])

  def progress(self, progress: reporting.Progress, env_steps: int) -> None:
    progress.update(env_steps, self.wall(), self.runner.learner.version,
                    self.book.recent_return(), self.evaluator.latest())

  def checkpoint_if_due(self, segment: int, learned: bool = False) -> None:
    """At the boundary after `segment` (collected; learned too if `learned`): saves when due or
    when a signal asked for it (and then stops the run). The executors must be at the barrier.
    The snapshot is taken now; it is written in the background (after the evaluations it records
    have finished) unless a signal asked for it, so the executors do not wait for evaluations."""
    cfg, sup = self.config, self.supervisor
    updates = self.runner.learner.version
    signum, multi = sup.signal, cfg.num_processes > 1
    if multi:  # a signal in any process: every process saves and stops at this boundary
      signals = distributed.allgather_ints([sup.signal or 0])[:, 0]
      signum = int(signals[np.flatnonzero(signals)[0]]) if signals.any() else None
    due = cfg.checkpoint_every > 0 and updates % cfg.checkpoint_every == 0
    if not (due or signum is not None) or segment + 1 >= cfg.num_segments:
      return  # after the last segment the run finishes (a signal then stops the final evaluation)
    env_states = self.collect_env_states()
    st = self.storages.filling(segment)
    # A copy: the writer may still be waiting for evaluations when this storage is refilled.
    storage = {name: np.array(getattr(st, name)) for name, _, _ in self.storages.spec.fields()}
    self.stop_clock()
    book = self.book_totals()
    book.wall_time_s = self.wall()
    state, n_evals = self.runner.learner.state, self.evaluator.submitted
    host_cfg = json.loads(json.dumps(cfg.to_dict()))
    path = os.path.join(checkpoint.directory(cfg.logdir), str(updates))

    def write():
      book.eval = [dict(r) for r in self.evaluator.results_upto(
          n_evals, _wait_plain)]
      host = {"segment": segment, "learned": learned, "book": book.to_json(), "config": host_cfg}
      checkpoint.save(cfg.logdir, updates, state, storage, env_states, host,
                      process=cfg.process_id if multi else None)

    previous = self._writer

    def guarded():
      try:
        if previous is not None:
          previous.join()  # checkpoints are written in order
        write()
      except Exception as e:  # pylint: disable=broad-except
        self._writer_error = f"checkpoint: {type(e).__name__}: {e}".splitlines()[0]

    self._writer = threading.Thread(target=guarded, name="checkpoint", daemon=True)
    self._writer.start()
    if multi or signum is not None:  # multi: every process writes now, together (orbax)
      self.join_checkpoint_writer()
    if signum is not None:
      raise Interrupted(interrupted_message(signum, updates, path), signum)

  def join_checkpoint_writer(self, raise_errors: bool = True) -> None:
    """Waits for the checkpoints being written (at the end, and before a signal's stop)."""
    if self._writer is not None:
      self._writer.join()
      self._writer = None
    if raise_errors and self._writer_error:
      raise RunError(self._writer_error)

  def collect_env_states(self) -> Optional[Dict[int, bytes]]:
    for inbox in self.inboxes:
      inbox.writer.post(buffers.SAVE)
    env_states: Optional[Dict[int, bytes]] = {}
    for msg in self.supervisor.wait_all(EnvStates):
      if msg.states is None or env_states is None:
        env_states = None  # some env cannot be pickled: a resume re-creates the envs
      else:
        env_states.update(msg.states)
    return env_states

  def finish(self, env_steps: int, progress: reporting.Progress) -> Dict[str, Any]:
    """The final evaluation (of the final params, always) and summary.json."""
    cfg, runner = self.config, self.runner
    wall = self.wall()
    self.stop_clock()
    compiled = COMPILES.since_start()
    book = self.book_totals()
    book.wall_time_s = wall
    self.join_checkpoint_writer()
    params = distributed.local_copy(runner.learner.state.params)
    if cfg.num_processes > 1:  # every env's episodes, from the process that ran it
      parts = distributed.allgather_json(book.returns)
      book.returns = [[r for part in parts for r in part[e]] for e in range(cfg.num_envs)]
    if self.primary:
      self.evaluator.submit(env_steps, wall, params)
      if cfg.video_final:
        self.evaluator.submit_video(env_steps, params, final=True)
    sup = self.supervisor
    interrupted = None
    wait = lambda p: sup.wait(lambda: p() or sup.signal is not None)
    try:
      self.evaluator.results_upto(self.evaluator.submitted, wait)
      self.evaluator.wait_videos(wait)
    except RuntimeError as e:
      raise RunError(str(e)) from e
    if not self.evaluator.finished(self.evaluator.submitted):
      interrupted = sup.signal
    progress.update(env_steps, wall, runner.learner.version, None, self.evaluator.latest(),
                    force=True)
    out = summary(cfg, book, env_steps, runner.learner.version, wall,
                  reporting.param_sha256(params), runner.network_kind,
                  runner.compile_s, None if runner.restored is None else runner.restored["step"],
                  runner.num_agents)
    out["backend"] = backend.describe(runner.placement.learner, runner.placement.actor)
    out["eval"] = [{k: r[k] for k in ("env_steps", "wall_time_s", "mean_return", "returns")
                    if k in r} for r in self.evaluator.results]
    # XLA compilations inside the timed run (functions' names): none is expected.
    out["compiled_during_run"] = compiled
    if self.evaluator.videos:
      out["videos"] = [dict(v) for v in self.evaluator.videos]
    if self.tracker is not None:
      self.tracker.scalars(self.figures(env_steps), env_steps)
    if self.primary:
      reporting.write_json_atomic(os.path.join(cfg.logdir, "summary.json"), out)
    if interrupted is not None:
      raise Interrupted(f"interrupted by {signal.Signals(interrupted).name} during the final "
                        f"evaluation; training finished ({runner.learner.version} updates) and "
                        f"{cfg.logdir}/summary.json holds the run without it", interrupted)
    return out


def _wait_plain(predicate, timeout: float = 0.05) -> None:
  while not predicate():
    time.sleep(timeout)
