"""The segment controller: a run's parts that live as long as it, the verbs a mode's loop calls,
the alpha barrier and every decision taken at a segment boundary.

`Controller(parts, total_steps, checkpoints)` builds what lives as long as the run (storages,
supervisor, barrier, book, observers, evaluator, checkpoint writer) from `assembly.Parts`, and
shuts it down in order when its `with` block ends. A mode's loop asks it, never taking its parts
apart: executors and samplers (`spawn_executors`, `start_actors`, `executor_sampler`,
`lockstep_sampler`), the barrier (`wait_started`, `go`, `wait_done`), the learner (`submit`,
`result`, `learn_now`, waited for under the supervisor's liveness check, which is wired in
here), threads and waits, and the book (`record_rollout`, `record_update`).

Every `alpha` steps per env the executors report `Done` and wait (`barrier.AlphaBarrier`). At
that boundary the controller, and only it, decides what changes the loop, at points fixed by the
segment index and never by thread timing. `boundary()` takes the decisions in one order for every
mode (a failed evaluation, met in the evaluator's thread, stops the run before them):
  1. stop? `--stop_at_return` judged on the evaluation submitted at the *previous* boundary
     (waited for if still running), or a signal (acted on at step 3);
  2. evaluate (and record a video) when due, the params published now;
  3. checkpoint when due or asked for by a signal (the snapshot, a copy of the storage included,
     is taken now; writing it waits for the evaluations it records, in the background);
  4. the progress line.
The observers (`outputs/observers.py`: metrics.csv, TensorBoard/W&B, the evaluator, the
checkpoint writer, the progress line) write what was decided; `finish` checkpoints the last
update and writes `policy/` and summary.json once. A stop (signal, failing part) exports the
params of the last boundary passed (whole: no update is in flight there).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from hts_jax.analysis import metrics as eval_metrics
from hts_jax.runtime import distributed, host
from hts_jax.runtime import logdir as logdir_lib
from hts_jax.runtime.sampler import (ActorStats, BlockBatcher, ExecutorEnvs, LockstepSampler,
                                     ParamsBox, Sampler)
from hts_jax.runtime.barrier import AlphaBarrier
from hts_jax.runtime.buffers import ActionBuffer, Done, StateBuffer
from hts_jax.runtime.executor import executor_specs
from hts_jax.runtime.learner_worker import LearnResult
from hts_jax.runtime.outputs import bookkeeping, checkpoint, export, reporting
from hts_jax.runtime.outputs.bookkeeping import Book, run_summary
from hts_jax.runtime.outputs.evaluation import Evaluator
from hts_jax.runtime.outputs.observers import (CheckpointWriter, Evaluations, Observer, Snapshot,
                                               UpdateEvent, output_observers, tracker_of)
from hts_jax.runtime.placement import COMPILES
from hts_jax.runtime.storage import Storages, shm_prefix
from hts_jax.runtime.errors import (Interrupted, RunError, catch_output_errors, error_line,
                                    interrupted_message, take_output_error)
from hts_jax.runtime.supervisor import Supervisor
from hts_jax.runtime.watchdog import WatchedThread

if TYPE_CHECKING:
  from hts_jax.runtime.assembly import Parts


class Controller:
  """A run's parts that live as long as it, the verbs its loop calls, and the decisions at its
  boundaries (`record_update`, `boundary`, `finish`). Used as a context manager (`with
  Controller(parts, ...) as ctl`, `Runner.run`): leaving it shuts everything down in order (see
  `supervisor`) and, after a stop, exports the params of the last boundary passed. The book
  changes through its methods only: a mode's loop books what it collected with
  `record_rollout` and its updates with `record_update`."""

  def __init__(self, parts: Parts, total_steps: int, checkpoints: bool = True):
    self.parts = parts
    cfg = self.config = parts.config
    restored = parts.restored
    self.checkpoints = checkpoints
    self.primary = cfg.distributed.process_id == 0  # process 0 writes the outputs and evaluates
    self.observers: List[Observer] = output_observers(
        cfg, None if restored is None else parts.learner.version, total_steps)
    self.storages = Storages(parts.shape.storage, create=True,
                             name_prefix=shm_prefix(cfg.outputs.logdir))
    self.supervisor = Supervisor(cfg.env_ids_of_executor, cfg.rollout.watchdog_s,
                                 cfg.rollout.startup_s)
    self.supervisor.watch_part(parts.learner.stalled)
    self.barrier = AlphaBarrier(self.supervisor)
    self.book = (Book.new(cfg.rollout.num_envs, cfg.evaluation.eval_every) if restored is None else
                 Book.from_json(restored["host"]["book"]))
    self.book.hosts.append(parts.host)  # this session's (summary.json's `host`)
    self.first_segment = 0 if restored is None else restored["host"]["segment"] + 1
    # A restored checkpoint holds the segment before first_segment, maybe not yet learned.
    self.restored_unlearned = (restored is not None and not restored["host"].get("learned"))
    if restored is not None:
      self.storages.load(self.first_segment - 1, restored["storage"], restored["envs"] is None)
    self.evaluator = Evaluator(cfg.rollout.env, cfg.rollout.env_kwargs, parts.model.network.apply,
                               cfg.evaluation.eval_episodes, cfg.rollout.seed,
                               greedy=cfg.evaluates_greedy,
                               max_steps=cfg.evaluation.eval_max_steps, results=self.book.eval,
                               num_agents=parts.shape.num_agents, head=parts.model.head,
                               core_size=parts.shape.core_size, tracker=tracker_of(self.observers),
                               sharding=parts.placement.eval_params,
                               video_dir=os.path.join(cfg.outputs.logdir, "videos"))
    if self.primary:  # the one that evaluates
      self.observers.append(Evaluations(self.evaluator))
      self.evaluator.compile(parts.learner.state.params, parts.shape.info.obs_shape,
                             parts.shape.info.obs_dtype)
    self.writer = CheckpointWriter(cfg.outputs.logdir, self.evaluator)
    self.observers.append(self.writer)  # each event has one kind of observer: order is free
    # The idle/efficiency figures per update are the tracker's only: not computed without one.
    self._figures_per_update = tracker_of(self.observers) is not None
    # Videos: one each time the env steps pass a multiple of video_every (counted from the
    # steps a resumed run starts at).
    every = cfg.evaluation.video_every
    self._videos_done = self.first_segment * cfg.rollout.steps_per_segment // every if every else 0
    self.state_buffers: List[StateBuffer] = []
    self.actor_stats: List[ActorStats] = []
    self._t_start, self._cpu0 = time.perf_counter(), time.process_time()
    self._wall_before = self.book.wall_time_s
    # (updates, params, env steps) at the last boundary passed: what a stop exports.
    self._whole: Optional[Tuple[int, Any, int]] = None
    self._exported = False

  def __enter__(self) -> "Controller":
    self.supervisor.install_signal_handlers()
    catch_output_errors(True)
    return self

  def __exit__(self, exc_type, exc, tb) -> None:
    try:
      self._shut_down(exc_type)
    finally:  # a stop exports the params of the last boundary passed, if any (`_whole`)
      if exc_type in (RunError, Interrupted) and self._whole and not self._exported:
        with contextlib.suppress(Exception):  # the run ends with its own line (a full disk)
          self._export(*self._whole, "error" if exc_type is RunError else "interrupted")

  def _shut_down(self, exc_type) -> None:
    """Shuts every part down in order (the supervisor first: see `supervisor`)."""
    self.supervisor.restore_signal_handlers()
    if exc_type is KeyboardInterrupt:  # a second SIGINT: now, no new checkpoint
      self.writer.abandon(wait_s=2.0)
    try:
      self.supervisor.shutdown()
      self.writer.join()
      if exc_type is RunError:  # a failed run (a full disk) keeps only complete checkpoints
        logdir_lib.remove_partial_checkpoints(self.config.outputs.logdir)
    finally:
      self.evaluator.close(wait=exc_type is None)  # before the tracker it writes to
      try:
        for o in self.observers:
          try:
            o.close()
          except OSError as e:  # a full disk: the run already failed, or fails with one line
            if exc_type is None:
              raise RunError(error_line(e, self.config.outputs.logdir)) from None
      finally:
        for sb in self.state_buffers:
          sb.close()
        self.storages.close()
        catch_output_errors(False)

  def _notify(self, event: str, *args, **kwargs) -> None:
    """Sends an event to every observer. An output that fails (a full disk: metrics.csv, the
    tracker, its event-writer thread) stops the run with one line; what was saved is kept."""
    try:
      for o in self.observers:
        getattr(o, event)(*args, **kwargs)
    except OSError as e:
      raise RunError(error_line(e, self.config.outputs.logdir)) from None
    failed = take_output_error()
    if failed is not None:
      raise RunError(error_line(failed, self.config.outputs.logdir))

  # ------------------------------------------------------------ clock and counters
  def wall(self) -> float:
    return self._wall_before + time.perf_counter() - self._t_start

  def start_clock(self) -> None:
    self._t_start = time.perf_counter()
    self._cpu0 = time.process_time()
    COMPILES.start()  # everything is compiled before; `finish` reports what was not

  def stop_clock(self) -> None:
    self.book.main_cpu_s += time.process_time() - self._cpu0
    self._cpu0 = time.process_time()

  def new_actor_stats(self) -> ActorStats:
    """Counters for one actor (thread, sampler or envpool group) of this session."""
    stats = ActorStats(name=f"actor {len(self.actor_stats)}",
                       delay_s=self.config.testing.policy_delay_s)
    self.actor_stats.append(stats)
    self.supervisor.watch_activity(stats.in_flight)
    return stats

  def book_totals(self, copy: bool = True) -> Book:
    """The book with this session's actor and learner counters added: a copy, or with
    `copy=False` one that shares the book's lists (to read at once, not to keep)."""
    extra = bookkeeping.totals(self.actor_stats, self.parts.policy_rows,
                               self.parts.learner.idle_s)
    book = dataclasses.replace(self.book, **{k: getattr(self.book, k) + v
                                             for k, v in extra.items()})
    return Book.from_json(json.loads(json.dumps(book.to_json()))) if copy else book

  def figures(self, env_steps: int) -> Dict[str, float]:
    """summary.json's idle and efficiency figures so far, as tracker tags."""
    return bookkeeping.tags(self.book_totals(copy=False), env_steps, self.parts.shape.num_agents)

  # ------------------------------------------------------------ executors and actors
  def spawn_executors(self, state_buffer_of: Optional[Sequence[int]] = None) -> None:
    """Executor processes for every env, one action buffer each; they post to state buffer
    `state_buffer_of[k]` (default: one state buffer shared by all)."""
    cfg, parts = self.config, self.parts
    owners = ([0] * cfg.rollout.num_executors if state_buffer_of is None
              else list(state_buffer_of))
    self.state_buffers = [StateBuffer() for _ in range(max(owners) + 1)]
    inboxes = [ActionBuffer() for _ in range(cfg.rollout.num_executors)]
    saved = None if parts.restored is None else parts.restored["envs"]
    specs = executor_specs(cfg, self.storages.spec, parts.shape.layout, self.first_segment, saved)
    self.supervisor.spawn_executors(specs, inboxes,
                                    [self.state_buffers[o].writer for o in owners])
    self.barrier.attach(inboxes)

  def start_actors(self, params: ParamsBox) -> None:
    """HTS's `num_actors` actor threads (`Sampler.asynchronous`) on the shared state buffer,
    acting with what `params` holds when they act."""
    n = self.config.rollout.num_actors
    wait = self.config.rollout.actor_wait if n == 1 else 0.0
    for i in range(n):
      self.supervisor.start_thread(self.executor_sampler().asynchronous, f"actor-{i}",
                                   lambda: params.current, wait)
    self.supervisor.on_shutdown(self.state_buffers[0].writer.post_stop)

  def executor_sampler(self, index: int = 0) -> Sampler:
    """A sampler over the executors that post to state buffer `index` (`spawn_executors`), with
    counters of its own."""
    sb = self.state_buffers[index]
    envs = ExecutorEnvs(sb.reader, self.barrier.writers, self.parts.acting.layout, sb.writer)
    return Sampler(self.batcher(), envs, self.new_actor_stats(), self.supervisor.check)

  def lockstep_sampler(self, index: int, executors: Sequence[int]) -> LockstepSampler:
    """A lockstep sampler over `executors`, which post to state buffer `index`."""
    return LockstepSampler(self.parts.acting, self.barrier, self.executor_sampler(index),
                           executors)

  def batcher(self) -> BlockBatcher:
    """A packer of ready blocks into this run's policy calls, writing into the storages."""
    return BlockBatcher.from_parts(self.parts.acting, self.storages)

  def add_executors(self, inboxes: Sequence[ActionBuffer]) -> List:
    """Registers in-process executors (envpool groups) with the supervisor and the barrier, one
    per action buffer of `inboxes`; returns their control channels' writers."""
    writers = [self.supervisor.add_thread_executor(inbox).writer for inbox in inboxes]
    self.barrier.attach(inboxes)
    return writers

  # ------------------------------------------------------------ the barrier and the storages
  def wait_started(self) -> None:
    """Waits until every executor has created its envs (`AlphaBarrier.wait_started`)."""
    self.barrier.wait_started()

  def go(self, segment: int) -> None:
    """Every executor starts `segment` (in storage `filling(segment)`)."""
    self.barrier.go(segment)

  def wait_done(self, segment: int) -> List[Done]:
    """The barrier: every executor has finished `segment`; their reports."""
    return self.barrier.wait_done(segment)

  def filling(self, segment: int):
    """The storage `segment` is collected in."""
    return self.storages.filling(segment)

  # ------------------------------------------------------------ the learner
  def start_learner(self, count_idle: bool = True) -> None:
    """The learner thread (`LearnerWorker.run`), stopped at shutdown: HTS's, where updates
    overlap the rollout, and sync's and all-reduce's, whose updates the rollout waits for but
    the watchdog must still see (`learn_now`)."""
    self.supervisor.start_thread(self.parts.learner.run, "learner", count_idle)
    self.supervisor.on_shutdown(self.parts.learner.stop)

  def submit(self, segment: int) -> None:
    """Queues the update on `segment`'s storage (the learner thread runs it)."""
    self.parts.learner.submit(segment, self.storages.learning(segment))

  def result(self) -> LearnResult:
    """The oldest queued update's result, waited for under the supervisor's liveness check."""
    return self.parts.learner.result(self.supervisor.check)

  def learn_now(self, segment: int) -> LearnResult:
    """A synchronous update on `segment`'s storage (sync, all-reduce: the rollout waits for it),
    run on the learner thread (`start_learner(count_idle=False)`) so that the liveness check
    keeps running while it does: an update that does not end stops the run as it does in HTS."""
    self.submit(segment)
    return self.result()

  # ------------------------------------------------------------ supervision
  def start_thread(self, fn: Callable, name: str, *args) -> None:
    """`fn(*args)` on a thread the supervisor watches (a failure stops the run)."""
    self.supervisor.start_thread(fn, name, *args)

  def on_shutdown(self, fn: Callable[[], None]) -> None:
    self.supervisor.on_shutdown(fn)

  def check(self) -> None:
    """The supervisor's liveness check: raises if a part failed, stalled or a signal came."""
    self.supervisor.check()

  def wait(self, predicate: Callable[[], bool]) -> None:
    """Waits for `predicate()` under the liveness check."""
    self.supervisor.wait(predicate)

  @property
  def signal(self) -> Optional[int]:
    """The signal that asked the run to stop, if any."""
    return self.supervisor.signal

  def watched_thread(self, name: str) -> WatchedThread:
    """A thread for calls the main thread waits for under the liveness check (closed at
    shutdown)."""
    thread = WatchedThread(name, self.supervisor.check)
    self.supervisor.on_shutdown(thread.close)
    return thread

  # ------------------------------------------------------------ what the loops collected
  def record_rollout(self, reports: Sequence[Done], rollout_s: float = 0.0,
                     learner_waited: bool = False, cpu_s: float = 0.0) -> List[float]:
    """Books the executors' reports of a collected segment and the seconds its rollout took
    (`learner_waited`: the learner idled through them, as in sync; `cpu_s`: the CPU seconds the
    run used meanwhile, where no update overlapped); returns the episode returns the reports
    finished."""
    finished = self.book.record_done(reports)
    self.book.rollout_s += rollout_s
    self.book.rollout_cpu_s += cpu_s
    if learner_waited:
      self.book.learner_idle += rollout_s
    return finished

  def evaluate_now(self, params) -> List[float]:
    """The returns of one evaluation of `params`, run now in the calling thread."""
    return self.evaluator.evaluate_now(params)

  def lags(self) -> List[int]:
    """The policy lag of every update booked so far."""
    return self.book.lags

  def booked_returns(self) -> List[float]:
    """The episode returns in the book so far, in env order (a resumed run's: its restored
    book's)."""
    return [r for rs in self.book.returns for r in rs]

  def cpu_s(self) -> float:
    """CPU seconds the run's processes (this one, its executors) have used so far."""
    return host.tree_cpu_s([p.pid for p in self.supervisor.procs if p.pid is not None])

  # ------------------------------------------------------------ updates and boundaries
  def record_update(self, result: LearnResult, recent_returns, env_steps: int,
                    extra: Optional[Dict[str, Any]] = None, cpu_s: float = 0.0) -> None:
    """Books one learner update and tells the observers (metrics.csv's row, the tracker);
    `cpu_s`: the CPU seconds the run used during it, where no rollout overlapped."""
    book, wall = self.book, self.wall()
    book.lags.append(result.lag)
    book.learn_s += result.compute_s
    book.learn_cpu_s += cpu_s
    row = {"env_steps": env_steps, "updates": self.parts.learner.version, "wall_time_s": wall,
           "sps": env_steps / wall, "segment": result.segment, "lag": result.lag,
           "learn_s": result.compute_s, "train_return": reporting.mean_or_none(recent_returns)}
    row.update(extra or {})
    learner_metrics = {k: float(v) for k, v in result.metrics.items()}
    row.update(learner_metrics)
    figures = self.figures(env_steps) if self._figures_per_update else {}
    self._notify("on_update", UpdateEvent(env_steps, row, learner_metrics, figures))

  def learn_serially(self, segment: int, reports, rollout_s: float, cpu_0: float,
                     env_steps: int) -> None:
    """A segment's rollout and then its update while the rollout waits (sync, HTS at
    --policy_lag=0): books the rollout (the learner idled through it), runs the update on the
    learner thread and books it, each with the run's CPU seconds (`cpu_0`: at the rollout's
    start)."""
    cpu_1 = self.cpu_s()
    recent = self.record_rollout(reports, rollout_s, learner_waited=True, cpu_s=cpu_1 - cpu_0)
    result = self.learn_now(segment)
    self.record_update(result, recent, env_steps, cpu_s=self.cpu_s() - cpu_1)

  def boundary(self, segment: int, env_steps: int, params, learned: bool = False) -> bool:
    """The decisions at the boundary after `segment` (`env_steps` collected; `params` the ones
    published now; `learned`: the update on `segment` is done), in their fixed order: stop,
    evaluate, checkpoint, progress. Returns whether the run stops here. The executors must be
    at the barrier (a checkpoint collects their envs)."""
    self.supervisor.boundary_passed()
    learner = self.parts.learner
    self._whole = (learner.version, learner.state.params, env_steps)  # what a stop exports
    if self.evaluator.error is not None:  # before the decisions that would wait for it
      raise RunError(f"{self.evaluator.error}; the last checkpoint is kept")
    stop = self.target_reached()
    if not stop:
      self._evaluate_if_due(env_steps, params)
    if self.checkpoints:
      self._checkpoint_if_due(segment, learned)
    self._notify("on_progress", env_steps, self.wall(), self.parts.learner.version,
                 self.book.recent_return(), self.evaluator.latest())
    return stop

  def _evaluate_if_due(self, env_steps: int, params) -> None:
    cfg, book = self.config, self.book
    # `finish` evaluates the last.
    last = env_steps >= cfg.rollout.num_segments * cfg.rollout.steps_per_segment
    every = cfg.evaluation.video_every
    # The evaluation first: a video at the same boundary replays its episode 0 (`Evaluator`).
    if book.next_eval is not None and env_steps >= book.next_eval and not last:
      self._notify("on_evaluation", env_steps, self.wall(), params)
      book.last_eval = env_steps
      while book.next_eval <= env_steps:
        book.next_eval += cfg.evaluation.eval_every
    if every and env_steps // every > self._videos_done and not last:
      self._videos_done = env_steps // every
      self._notify("on_video", env_steps, params)

  def target_reached(self) -> bool:
    """`--stop_at_return`, judged on the running average of the evaluations (`analysis.metrics.
    first_reached`, the paper's: the mean of the 10 most recent, full windows only) submitted
    before the current boundary (the previous boundary's is waited for if it is still running)."""
    target = self.config.evaluation.stop_at_return
    if target is None:
      return False
    reached = False
    n = self.evaluator.submitted  # this boundary's evaluation is submitted after this call
    if n:
      results = self.evaluator.results_upto(n, self.supervisor.wait)
      reached = eval_metrics.first_reached([r["mean_return"] for r in results],
                                           target) is not None
    # Multi-process: process 0 evaluates and decides; every process stops at this boundary.
    return bool(distributed.allgather_ints([int(reached)])[0, 0])

  def _checkpoint_if_due(self, segment: int, learned: bool) -> None:
    """Saves when due or when a signal asked for it (and then stops the run with Interrupted)."""
    cfg, sup = self.config, self.supervisor
    updates = self.parts.learner.version
    signum, multi = sup.signal, cfg.distributed.num_processes > 1
    if multi:  # a signal in any process: every process saves and stops at this boundary
      signals = distributed.allgather_ints([sup.signal or 0])[:, 0]
      signum = int(signals[np.flatnonzero(signals)[0]]) if signals.any() else None
    due = cfg.outputs.checkpoint_every > 0 and updates % cfg.outputs.checkpoint_every == 0
    if not (due or signum is not None) or segment + 1 >= cfg.rollout.num_segments:
      return  # after the last segment the run finishes (a signal then stops the final evaluation)
    if signum is not None and not multi and self.writer.in_flight() is not None:
      # A signal finishes at most one write: the one in flight is the run's last checkpoint.
      raise self._interrupted(signum, updates,
                              self.writer.finish_in_flight(cfg.rollout.steps_per_segment))
    self._snapshot(segment, learned)
    if signum is not None:
      self.writer.flush()
      raise self._interrupted(signum, updates, self._whole)

  def _snapshot(self, segment: int, learned: bool, wall: Optional[float] = None) -> None:
    """Takes a checkpoint's snapshot now (the executors at the barrier) for the writer."""
    cfg = self.config
    env_states = self.barrier.collect_env_states()
    st = self.storages.filling(segment)
    # A copy: the writer may still be waiting for evaluations when this storage is refilled.
    storage = {name: np.array(getattr(st, name)) for name, _, _ in self.storages.spec.fields()}
    self.stop_clock()
    book = self.book_totals()
    book.wall_time_s = self.wall() if wall is None else wall
    book.hosts[-1] = host.saved_record(book.hosts[-1])  # this session's steal up to here
    saved = {"segment": segment, "learned": learned, "book": book.to_json(),
             "config": json.loads(json.dumps(cfg.to_dict())), **({"final": True} if wall else {})}
    multi = cfg.distributed.num_processes > 1
    self._notify("on_checkpoint", Snapshot(self.parts.learner.version, self.parts.learner.state,
                                           storage, env_states, saved, self.evaluator.submitted,
                                           cfg.distributed.process_id if multi else None))
    if multi:  # every process writes now, together (orbax)
      self.writer.flush()

  # ------------------------------------------------------------ the policy at a stop
  def _export(self, updates: int, params, env_steps: int, ended: str, sha=None) -> None:
    """Writes `<logdir>/policy/` (process 0): `params` after `updates` updates; how the run
    `ended`: finished, interrupted, error."""
    self._exported = True
    if self.primary:
      params = distributed.local_copy(params)
      export.write(self.config.outputs.logdir, params, export.spec_of(
          self.config, self.parts.model.kind, sha or reporting.param_sha256(params), env_steps,
          updates, self.evaluator.submitted, ended))

  def _interrupted(self, signum: int, updates: int, whole) -> Interrupted:
    """A signal's stop at update `updates`, the params of the checkpoint it leaves exported
    (`whole`: its updates, params, env steps; policy.json says the update)."""
    self._export(*whole, "interrupted")
    path = os.path.join(checkpoint.directory(self.config.outputs.logdir), str(whole[0]))
    return Interrupted(interrupted_message(signum, updates, path), signum)

  # ------------------------------------------------------------ the end
  def finish(self, env_steps: int,
             extras: Optional[Callable[[], Dict[str, Any]]] = None) -> Dict[str, Any]:
    """The final evaluation (of the final params, always) and summary.json, written once with
    the mode's `extras()` merged in (skipped if a signal stopped the final evaluation)."""
    cfg, parts = self.config, self.parts
    wall = self.wall()
    self.stop_clock()
    compiled = COMPILES.since_start()
    book = self.book_totals()
    book.wall_time_s = wall
    self._notify("flush")
    self._whole = (parts.learner.version, parts.learner.state.params, env_steps)
    t_save = time.perf_counter()
    if self.checkpoints:  # the last update, a checkpoint as the periodic ones (`--resume`)
      self._snapshot(env_steps // cfg.rollout.steps_per_segment - 1, True, wall)
    t_save = time.perf_counter() - t_save
    params = distributed.local_copy(parts.learner.state.params)
    if cfg.distributed.num_processes > 1:  # every env's episodes, from the process that ran it
      chunks = distributed.allgather_json(book.returns)
      book.returns = [[r for part in chunks for r in part[e]] for e in range(cfg.rollout.num_envs)]
    self._notify("on_evaluation", env_steps, wall, params)
    if cfg.evaluation.video_final:
      self._notify("on_video", env_steps, params, final=True)
    sup = self.supervisor
    wait = lambda p: sup.wait(lambda: p() or sup.signal is not None)
    try:
      self.evaluator.results_upto(self.evaluator.submitted, wait)
      self.evaluator.wait_videos(wait)
    except RuntimeError as e:
      raise RunError(str(e)) from e
    interrupted = (None if self.evaluator.finished(self.evaluator.submitted) else sup.signal)
    self._notify("flush")  # the final checkpoint written (beside the final evaluation)
    self._notify("on_progress", env_steps, wall, parts.learner.version, None,
                 self.evaluator.latest(), force=True)
    out = run_summary(parts, book, self.evaluator, env_steps, wall,
                      reporting.param_sha256(params), compiled)
    if self.checkpoints:  # taking and writing the final checkpoint (the latter in the background)
      out["timing"]["final_checkpoint_s"] = t_save + self.writer.last_write_s
    if interrupted is None and extras is not None:
      out.update(extras())
    self._notify("on_finish", env_steps, self.figures(env_steps))
    if self.primary:  # the policy first: a summary.json means its run's export is whole
      path = os.path.join(cfg.outputs.logdir, "summary.json")
      try:
        self._export(out["updates"], params, env_steps, "finished", out["param_sha256"])
        reporting.write_json_atomic(path, out)
      except OSError as e:
        raise RunError(error_line(e, path)) from None
    if interrupted is not None:
      raise Interrupted(f"interrupted by {signal.Signals(interrupted).name} during the final "
                        f"evaluation; training finished ({parts.learner.version} updates) and "
                        f"{cfg.outputs.logdir}/summary.json holds the run without it", interrupted)
    return out
