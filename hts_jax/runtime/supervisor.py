"""The supervisor: spawns executors and threads, watches them, shuts everything down in order, and
turns SIGINT/SIGTERM into a request the controller acts on at a segment boundary.

- Liveness: the controller's every wait goes through `wait_message`/`check`, which wakes on an
  executor's control message, its death (the process sentinel) or a thread's failure, so a failing
  part stops the run within one poll interval, with one line naming it.
- Shutdown order: executors first (STOP on their action buffers; SIGTERM after a short grace, which
  ends them at once: see `executor.py`; SIGKILL last), then the stop callbacks of the in-process
  parts (actors, learner, evaluator), then the pipes. Nothing here takes a lock another process
  may hold, so a killed executor cannot block the shutdown.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import threading
import time
from multiprocessing import connection
from typing import Callable, Dict, List, Optional, Sequence

from hts_jax.runtime import storage
from hts_jax.runtime.buffers import BEAT_SIZE, ControlChannel, Done, Failed, Started
from hts_jax.runtime.errors import Interrupted, RunError, failed_message
from hts_jax.runtime.executor import SIGNALS, ExecutorSpec, executor_main
from hts_jax.runtime.watchdog import CHECK_EVERY_S, Activity, PartCheck, Watchdog

# How often a waiting loop wakes to look for a signal, a stall or a failed part: the watchdog's
# liveness check period, one constant for both.
POLL_S = CHECK_EVERY_S
# A signal is acted on at the next segment boundary; if none comes within this (or 1.5 times the
# longest segment so far, whichever is longer), the run stops without a new checkpoint.
SIGNAL_GRACE_S = 5.0
_GRACE_S = 0.5  # executors leave within one env step of STOP; stuck ones get SIGTERM after this


# SIGINT/SIGTERM received after start-up handed signals to the runtime (`defer_signals`) and
# before a supervisor installed its handlers: the first is the run's signal.
_deferred: List[int] = []


def exit_reason(exitcode: Optional[int]) -> str:
  """What an executor's exit code says beyond its number: a SIGBUS is a write to a shared-memory
  page that /dev/shm had no room for (tmpfs allocates on first touch, so the block's creation
  succeeded)."""
  if exitcode != -signal.SIGBUS:
    return ""
  return (f" (SIGBUS: shared memory ran out; /dev/shm has {storage.gib(storage.free_shm())} "
          "free: lower --alpha or --num_envs, or give the machine a larger /dev/shm)")


def defer_signals() -> None:
  """Until a supervisor installs its handlers, SIGINT/SIGTERM are recorded (not acted on): the
  launcher calls this once the runner is built, so a signal while the controller sets up is acted
  on as during start-up (`barrier.wait_started`)."""
  def handler(signum, frame):
    del frame
    _deferred.append(signum)
  for s in SIGNALS:
    signal.signal(s, handler)


class Supervisor:
  """Owns the executor processes, their control channels and the run's threads."""

  def __init__(self, env_ids_of_executor: Callable[[int], List[int]], watchdog_s: float = 0.0,
               startup_s: float = 0.0):
    self._env_ids = env_ids_of_executor
    self.beats: list = []  # executor k's heartbeat (`buffers.BEAT_SIZE`, shared memory)
    self.watchdog = Watchdog(env_ids_of_executor, self.beats, watchdog_s, startup_s)
    self._signal_at = 0.0
    self._boundary_at: Optional[float] = None
    self._longest_segment = 0.0
    self.procs: List[mp.Process] = []
    self.ctrl: List[ControlChannel] = []
    self._ctrl_locks: List[threading.Lock] = []
    self._pending: Dict[int, list] = {}
    self.threads: List[threading.Thread] = []
    self.fault: Optional[str] = None
    self.signal: Optional[int] = None
    self._on_shutdown: List[Callable[[], None]] = []
    self._inboxes: list = []
    self._old_handlers = None

  # ------------------------------------------------------------ spawning
  def spawn_executors(self, specs: Sequence[ExecutorSpec], inboxes, state_writers) -> None:
    """Starts executor k with its action buffer `inboxes[k]` (it gets the read end only) and the
    state buffer `state_writers[k]`. Signals stay blocked while a child starts (see executor)."""
    ctx = mp.get_context("spawn")
    self._inboxes = list(inboxes)
    for spec, inbox, writer in zip(specs, inboxes, state_writers):
      ch = ControlChannel()
      beat = ctx.RawArray("q", BEAT_SIZE)
      self.beats.append(beat)
      self.watchdog.starting(spec.index)
      p = ctx.Process(target=executor_main, args=(spec, inbox.reader, writer, ch.writer, beat),
                      name=f"hts-executor-{spec.index}", daemon=True)
      old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
      try:
        p.start()
      finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
      self.procs.append(p)
      self.ctrl.append(ch)
      self._ctrl_locks.append(threading.Lock())

  def add_thread_executor(self, inbox) -> ControlChannel:
    """Registers an in-process executor (an envpool group thread): its control channel and its
    action buffer take part in messages and shutdown like a process's."""
    ch = ControlChannel()
    self.ctrl.append(ch)
    self._ctrl_locks.append(threading.Lock())
    self._inboxes.append(inbox)
    return ch

  def start_thread(self, fn: Callable, name: str, *args) -> threading.Thread:
    """A daemon thread whose exception becomes the run's fault (`name: Type: message`)."""
    def guarded():
      try:
        fn(*args)
      except RunError as e:  # another part failed, seen from this thread: report that part
        self.report_fault(str(e))
      except Exception as e:  # pylint: disable=broad-except
        self.report_fault(f"{name}: {type(e).__name__}: {e}")
    th = threading.Thread(target=guarded, name=name, daemon=True)
    th.start()
    self.threads.append(th)
    return th

  def report_fault(self, message: str) -> None:
    if self.fault is None:
      self.fault = message.splitlines()[0]

  def on_shutdown(self, fn: Callable[[], None]) -> None:
    """Registers a stop callback for an in-process part (called in registration order)."""
    self._on_shutdown.append(fn)

  # ------------------------------------------------------------ control messages and liveness
  def wait_message(self, executor: int, kind: type):
    """The next control message of `kind` from `executor`; a `Failed` message, a dead executor,
    a failed thread or (outside start-up) nothing else stops the run with RunError."""
    while True:
      msg = self._recv(executor, POLL_S)
      if msg is not None:
        if isinstance(msg, Failed):
          raise RunError(failed_message(msg))
        if not isinstance(msg, kind):
          raise RuntimeError(f"executor {executor}: expected {kind.__name__}, got {msg!r}")
        if isinstance(msg, Done):
          self.watchdog.unwatch(executor)
        elif isinstance(msg, Started):
          self.watchdog.started(executor)
        return msg
      self.check()

  def wait_all(self, kind: type, executors: Optional[Sequence[int]] = None) -> list:
    """One message of `kind` from each executor (all by default), in executor order."""
    return [self.wait_message(k, kind)
            for k in (range(len(self.ctrl)) if executors is None else executors)]

  def _recv(self, k: int, timeout: float):
    with self._ctrl_locks[k]:
      if self.ctrl[k].reader.poll(timeout):
        try:
          return self.ctrl[k].reader.recv()
        except (EOFError, OSError):
          return None
    return None

  # ------------------------------------------------------------ the watchdog
  def watch(self, executor: int) -> None:
    """Executor `executor` has been sent GO: the watchdog expects it to step until its Done."""
    self.watchdog.watch(executor)

  def watch_part(self, stalled: PartCheck) -> None:
    self.watchdog.watch_part(stalled)

  def watch_activity(self, in_flight: Activity) -> None:
    self.watchdog.watch_activity(in_flight)

  def boundary_passed(self) -> None:
    """The controller reached a segment boundary (the signal grace is measured in segments)."""
    now = time.monotonic()
    if self._boundary_at is not None:
      self._longest_segment = max(self._longest_segment, now - self._boundary_at)
    self._boundary_at = now

  def _watchdog(self) -> None:
    now = time.monotonic()
    self.watchdog.check(now)
    if self.signal is not None:
      grace = max(SIGNAL_GRACE_S, 1.5 * self._longest_segment)
      if now - self._signal_at > grace:
        stalled = self.watchdog.stalled(now, 1.0)
        raise Interrupted(
            f"interrupted by {signal.Signals(self.signal).name}: no segment boundary within "
            f"{grace:.1f} s" + (f" ({stalled})" if stalled else "") +
            ", so no new checkpoint; the last one is kept", self.signal)

  def check(self) -> None:
    """Raises RunError if a thread failed, an executor process died or stalled (the watchdog);
    Interrupted if a signal found no segment boundary within its grace."""
    if self.fault is not None:
      raise RunError(self.fault)
    self._watchdog()
    for k, p in enumerate(self.procs):
      if not p.is_alive():
        # Its last words (an env's exception) are in its control pipe, if it said any.
        while True:
          msg = self._recv(k, 0.0)
          if msg is None:
            break
          if isinstance(msg, Failed):
            raise RunError(failed_message(msg))
        ids = self._env_ids(k)
        raise RunError(f"executor {k} (envs {ids[0]}-{ids[-1]}) died with exit code "
                       f"{p.exitcode}{exit_reason(p.exitcode)}")

  def wait(self, predicate: Callable[[], bool], timeout: float = POLL_S) -> None:
    """Waits (sleeping on the executors' sentinels) until `predicate()`, checking liveness."""
    while not predicate():
      sentinels = [p.sentinel for p in self.procs]
      if sentinels:
        connection.wait(sentinels, timeout)
      else:
        time.sleep(timeout)
      self.check()

  # ------------------------------------------------------------ signals
  def install_signal_handlers(self) -> None:
    """SIGINT/SIGTERM set `self.signal` (acted on at the next boundary); a second SIGINT aborts."""
    if threading.current_thread() is not threading.main_thread():
      return

    def handler(signum, frame):
      del frame
      if self.signal is not None and signum == signal.SIGINT:
        raise KeyboardInterrupt
      if self.signal is None:
        self._signal_at = time.monotonic()
      self.signal = signum

    self._old_handlers = {s: signal.signal(s, handler) for s in SIGNALS}
    if _deferred and self.signal is None:
      self.signal, self._signal_at = _deferred[0], time.monotonic()
    _deferred.clear()

  def restore_signal_handlers(self) -> None:
    for s, h in (self._old_handlers or {}).items():
      signal.signal(s, h)
    self._old_handlers = None

  # ------------------------------------------------------------ shutdown
  def shutdown(self) -> None:
    from hts_jax.runtime import buffers  # pylint: disable=import-outside-toplevel
    for inbox in self._inboxes:
      try:
        inbox.writer.post(buffers.STOP)
      except OSError:
        pass
    deadline = time.monotonic() + _GRACE_S
    for p in self.procs:
      p.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in self.procs:
      if p.is_alive():
        p.terminate()
    for p in self.procs:
      p.join(timeout=1.0)
      if p.is_alive():
        p.kill()
        p.join()
    for fn in self._on_shutdown:
      fn()
    for th in self.threads:
      th.join(timeout=5.0)
    for ch in self.ctrl:
      ch.close()
    for inbox in self._inboxes:
      inbox.close()
