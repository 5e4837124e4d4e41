"""A run's session: the parts that live as long as the run (storages, supervisor, barrier, book,
observers, evaluator, checkpoint writer), built from `parts.Parts` and shut down in order when the
`with` block ends; the clock and counters; the verbs a mode's loop calls (executors and actors,
the barrier's `go` / `wait_done`, the learner's `submit` / `result` under the supervisor's
liveness check, threads and waits), so that a loop asks and never takes these parts apart.
`controller.Controller` adds the decisions taken at segment boundaries.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence

from hts_jax.runtime import cpu
from hts_jax.runtime import logdir as logdir_lib
from hts_jax.runtime.actor import (ActorStats, BlockBatcher, LockstepSampler, ParamsBox,
                                   actor_loop)
from hts_jax.runtime.barrier import AlphaBarrier
from hts_jax.runtime.buffers import ActionBuffer, ActionWriter, Done, RecordReader, StateBuffer
from hts_jax.runtime.learner_worker import LearnResult
from hts_jax.runtime.executor import executor_specs
from hts_jax.runtime.outputs import bookkeeping
from hts_jax.runtime.outputs.bookkeeping import Book
from hts_jax.runtime.outputs.evaluation import Evaluator
from hts_jax.runtime.outputs.observers import (CheckpointWriter, Evaluations, Observer,
                                               output_observers, tracker_of)
from hts_jax.runtime.placement import COMPILES
from hts_jax.runtime.storage import Storages, shm_prefix
from hts_jax.runtime.errors import RunError, catch_output_errors, error_line, take_output_error
from hts_jax.runtime.supervisor import Supervisor
from hts_jax.runtime.watchdog import WatchedThread

if TYPE_CHECKING:
  from hts_jax.runtime.parts import Parts


class Session:
  """The parts of one run that live as long as it: storages, supervisor, barrier, book, outputs.
  Used as a context manager: leaving it shuts everything down in order (see `supervisor`). The
  book changes through its methods (and the controller's) only: a mode's loop books what it
  collected with `record_rollout` / `record_returns`."""

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

  def __enter__(self) -> "Session":
    self.supervisor.install_signal_handlers()
    catch_output_errors(True)
    return self

  def __exit__(self, exc_type, exc, tb) -> None:
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

  def start_learner(self, count_idle: bool = True) -> None:
    """The learner thread (`LearnerWorker.run`), stopped at shutdown: HTS's, where updates
    overlap the rollout, and sync's and all-reduce's, whose updates the rollout waits for but
    the watchdog must still see (`LearnerWorker.learn_now`)."""
    self.supervisor.start_thread(self.parts.learner.run, "learner", count_idle)
    self.supervisor.on_shutdown(self.parts.learner.stop)

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

  # ------------------------------------------------------------ executors
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
    """HTS's `num_actors` actor threads (`actor.actor_loop`) on the shared state buffer, acting
    with what `params` holds when they act."""
    sb, n = self.state_buffers[0], self.config.rollout.num_actors
    for i in range(n):
      self.supervisor.start_thread(actor_loop, f"actor-{i}", self.batcher(), sb.reader, sb.writer,
                                   self.barrier.writers, lambda: params.current,
                                   self.new_actor_stats(),
                                   self.config.rollout.actor_wait if n == 1 else 0.0)
    self.supervisor.on_shutdown(sb.writer.post_stop)

  def lockstep_sampler(self, index: int, executors: Sequence[int]) -> LockstepSampler:
    """A lockstep sampler over `executors`, which post to state buffer `index`, with counters of
    its own."""
    return LockstepSampler(self.parts.acting, self.barrier, self.storages, executors,
                           self.state_reader(index), self.new_actor_stats())

  def batcher(self) -> BlockBatcher:
    """A packer of ready blocks into this run's policy calls, writing into the storages."""
    return BlockBatcher.from_parts(self.parts.acting, self.storages)

  def state_reader(self, index: int = 0) -> RecordReader:
    """The actors' end of state buffer `index` (`spawn_executors`)."""
    return self.state_buffers[index].reader

  def action_writers(self) -> List[ActionWriter]:
    """The actors' ends of the executors' action buffers, by executor."""
    return self.barrier.writers

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

  def restored_returns(self) -> List[float]:
    """The episode returns in the book so far (a resumed run's: the restored book's), in env
    order."""
    return [r for rs in self.book.returns for r in rs]

  def cpu_s(self) -> float:
    """CPU seconds the run's processes (this one, its executors) have used so far."""
    return cpu.tree_cpu_s([p.pid for p in self.supervisor.procs if p.pid is not None])
