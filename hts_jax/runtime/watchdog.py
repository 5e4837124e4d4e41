"""The supervisor's watchdog (host side): an executor sent GO must keep stepping until its Done,
a part's work in flight (the learner's update) must end within its limit. A stalled run stops
with one line naming the stalled part and what it was waiting on, the last checkpoint kept.

An executor's steps are read from its heartbeat (`beats[k]`, shared memory the executor writes:
segment, step, steps so far, ...). The automatic timeout is WATCHDOG_FACTOR times the longest gap
between two env steps of an executor measured mid-segment so far, at least WATCHDOG_MIN_S
(`--watchdog_s` sets it). An executor waits mid-segment on its actions, so a hung policy call
shows first as an executor that has not stepped: the message names every activity (each actor's
policy call, `ActorStats.in_flight`) that has been running about as long.

Start-up comes before any GO: from its spawn until it reports Started, each stage of an
executor's start-up (`buffers.START_STAGES`: spawn, then env make and first reset of each of its
envs, as its heartbeat says) must end within `--startup_s`.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from hts_jax.runtime.buffers import START_STAGES
from hts_jax.runtime.errors import RunError

WATCHDOG_FACTOR = 50
WATCHDOG_MIN_S = 10.0
CHECK_EVERY_S = 0.05  # how often a caller waiting on another thread's result checks liveness

PartCheck = Callable[[float, float], Optional[str]]  # (now, watchdog_s) -> stall or None
Activity = Callable[[float], Optional[Tuple[float, str]]]  # now -> (seconds, what) or None


class Watchdog:
  """The executors' heartbeats, the parts' stall checks and the activities in flight."""

  def __init__(self, env_ids_of_executor: Callable[[int], List[int]], beats: list,
               watchdog_s: float = 0.0, startup_s: float = 0.0):
    self._env_ids, self.beats, self.watchdog_s = env_ids_of_executor, beats, watchdog_s
    self.startup_s = startup_s
    self._starting: Dict[int, list] = {}  # executor -> [(stage, env) seen, when it changed]
    self._watched: Dict[int, list] = {}  # executor -> [steps seen, when they last changed]
    self._parts: List[PartCheck] = []
    self._activities: List[Activity] = []
    self._longest_gap = 0.0

  def watch(self, executor: int) -> None:
    """Executor `executor` has been sent GO: from now until its Done it must keep stepping."""
    if executor < len(self.beats):
      self._watched[executor] = [self.beats[executor][2], time.monotonic()]

  def starting(self, executor: int) -> None:
    """Executor `executor` is being spawned: each stage of its start-up must end in startup_s."""
    self._starting[executor] = [(0, 0), time.monotonic()]  # a new heartbeat: zeros

  def started(self, executor: int) -> None:
    """Executor `executor` reported Started."""
    self._starting.pop(executor, None)

  def _check_start_up(self, now: float) -> None:
    done = START_STAGES.index("started")
    for k, seen in dict(self._starting).items():
      at = (int(self.beats[k][3]), int(self.beats[k][4]))
      if at != seen[0]:
        seen[0], seen[1] = at, now
      elif self.startup_s and at[0] != done and now - seen[1] > self.startup_s:
        ids = self._env_ids(k)
        stage = START_STAGES[at[0]] + (f", env {at[1]}" if at[0] else "")  # 0: spawn
        raise RunError(f"executor {k} (envs {ids[0]}-{ids[-1]}) stalled in its start-up "
                       f"({stage}) for {now - seen[1]:.1f} s, past the start-up limit of "
                       f"{self.startup_s:.1f} s (--startup_s); nothing was trained or saved")

  def unwatch(self, executor: int) -> None:
    """Executor `executor` reported Done: at the barrier, not stepping, by design."""
    self._watched.pop(executor, None)

  def watch_part(self, stalled: PartCheck) -> None:
    """Adds a part's stall check (`LearnerWorker.stalled`)."""
    self._parts.append(stalled)

  def watch_activity(self, in_flight: Activity) -> None:
    """Adds work an executor may wait on (`ActorStats.in_flight`), named beside a stalled
    executor that has waited about as long."""
    self._activities.append(in_flight)

  def timeout(self) -> float:
    return self.watchdog_s or max(WATCHDOG_MIN_S, WATCHDOG_FACTOR * self._longest_gap)

  def stalled(self, now: float, after_s: float) -> Optional[str]:
    """The watched executor that has not stepped for the longest, if longer than `after_s`, with
    the activities in flight for at least half as long."""
    watched = dict(self._watched)  # actor threads of some modes watch and unwatch (go, Done)
    if not watched:
      return None
    k = min(watched, key=lambda k: watched[k][1])
    idle = now - watched[k][1]
    if idle <= after_s:
      return None
    ids = self._env_ids(k)
    segment, step = self.beats[k][0], self.beats[k][1]
    last = f"segment {segment}, step {step}" if self.beats[k][2] else "none this run"
    busy = sorted((a for a in (fn(now) for fn in list(self._activities))
                   if a is not None and a[0] >= idle / 2), reverse=True)
    return (f"executor {k} (envs {ids[0]}-{ids[-1]}) has not stepped for {idle:.1f} s (its last "
            f"step: {last})" + "".join(f", while {what}" for _, what in busy))

  def check(self, now: float) -> None:
    """Records the executors' progress; raises RunError for a stalled executor (in its start-up
    or mid-segment) or part."""
    self._check_start_up(now)
    for k, seen in dict(self._watched).items():
      steps = self.beats[k][2]
      if steps != seen[0]:
        self._longest_gap = max(self._longest_gap, now - seen[1])
        seen[0], seen[1] = steps, now
    stalled = self.stalled(now, self.timeout())
    if stalled:
      how = "--watchdog_s" if self.watchdog_s else (
          f"automatic: {WATCHDOG_FACTOR} times the longest gap between steps so far, at least "
          f"{WATCHDOG_MIN_S:.0f} s; an env whose steps can take longer needs --watchdog_s=<s>")
      raise RunError(f"{stalled}: stalled past the watchdog's {self.timeout():.1f} s ({how}); "
                     "the last checkpoint is kept")
    for part in self._parts:
      stalled = part(now, self.watchdog_s)
      if stalled:
        raise RunError(f"{stalled} (--watchdog_s); the last checkpoint is kept")


def within(seconds: float, fn: Callable[[], Any], error: Callable[[float], Exception]) -> Any:
  """`fn()`, which must return within `seconds` (0: no limit), else `error(seconds)` is raised:
  the start-up's bound on a read that a stalled file system could hold (the restore of a
  checkpoint, before the supervisor exists); `fn` runs on a daemon thread left behind then."""
  if not seconds:
    return fn()
  out: Dict[str, Any] = {}

  def call():
    try:
      out["value"] = fn()
    except BaseException as e:  # pylint: disable=broad-except
      out["error"] = e
  thread = threading.Thread(target=call, name="start-up read", daemon=True)
  thread.start()
  thread.join(seconds)
  if thread.is_alive():
    raise error(seconds)
  if "error" in out:
    raise out["error"]
  return out["value"]


def get_checked(results: "queue.Queue", check: Callable[[], None],
                every_s: float = CHECK_EVERY_S) -> Any:
  """The next item of `results` as soon as another thread puts it (a queue wait, not a poll: a
  poll's interval would be idle time every call), running `check()` every `every_s` meanwhile."""
  while True:
    try:
      return results.get(timeout=every_s)
    except queue.Empty:
      check()


class WatchedThread:
  """Runs the calls it is given, one at a time, on a daemon thread of its own while the caller
  waits, running `check` (the supervisor's) every `every_s`: work the main thread would do
  itself (sync's rollout with its policy calls) stays in sight of the watchdog, which runs on the
  main thread. A call's exception is raised in the caller, as if the call had run there."""

  def __init__(self, name: str, check: Callable[[], None], every_s: float = CHECK_EVERY_S):
    self._check, self._every_s = check, every_s
    self._jobs: "queue.Queue" = queue.Queue()
    self._out: "queue.Queue" = queue.Queue()
    threading.Thread(target=self._loop, name=name, daemon=True).start()

  def _loop(self) -> None:
    while True:
      job = self._jobs.get()
      if job is None:
        return
      fn, args = job
      try:
        self._out.put((True, fn(*args)))
      except BaseException as e:  # pylint: disable=broad-except  (raised in the caller)
        self._out.put((False, e))

  def call(self, fn: Callable[..., Any], *args) -> Any:
    """`fn(*args)` on the thread; the caller's `check` runs while it does."""
    self._jobs.put((fn, args))
    ok, value = get_checked(self._out, self._check, self._every_s)
    if ok:
      return value
    raise value

  def close(self) -> None:
    self._jobs.put(None)
