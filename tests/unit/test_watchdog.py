"""The watchdog (hts_jax/runtime/watchdog.py) without processes: heartbeats as plain lists, time
passed in. A stalled executor is named with the policy calls it may be waiting on; a watched
thread's caller keeps checking while the call runs."""

import re
import time

import pytest

from hts_jax.runtime.sampler import ActorStats
from hts_jax.runtime.errors import RunError
from hts_jax.runtime.watchdog import WatchedThread, Watchdog, within


def _dog(watchdog_s=1.0):
  beats = [[3, 2, 100], [3, 4, 50]]  # per executor: segment, step, steps so far
  return Watchdog(lambda k: [2 * k, 2 * k + 1], beats, watchdog_s), beats


def test_a_stalled_executor_is_named_with_the_policy_call_it_waits_on():
  dog, _ = _dog()
  hung, idle, short = (ActorStats(name=f"actor {i}") for i in range(3))
  for a in (hung, idle, short):
    dog.watch_activity(a.in_flight)
  dog.watch(0)
  t0 = time.monotonic()  # after watch(): the executor's wait is 5 s and a little more
  hung.calling_since = t0          # in flight since the executor's last step
  short.calling_since = t0 + 4.0   # 1 s of 5: not what the executor waits on
  with pytest.raises(RunError) as e:
    dog.check(t0 + 5.0)
  line = str(e.value)
  assert re.fullmatch(
      r"executor 0 \(envs 0-1\) has not stepped for 5\.\d s \(its last step: segment 3, step 2\), "
      r"while actor 0's policy call has run for 5\.0 s: stalled past the watchdog's 1\.0 s "
      r"\(--watchdog_s\); the last checkpoint is kept", line), line
  assert "actor 1" not in line and "actor 2" not in line


def test_each_stage_of_an_executors_start_up_has_the_start_up_limit():
  """Start-up had no limit; the clock restarts at each stage the heartbeat
  shows (spawn, then env make and first reset per env), and a started executor is not watched."""
  beats = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]  # + start-up stage, env
  dog = Watchdog(lambda k: [2 * k, 2 * k + 1], beats, 0.0, startup_s=3.0)
  dog.starting(0)
  dog.starting(1)
  t0 = time.monotonic()
  beats[0][3:] = [1, 0]  # env make, env 0
  beats[1][3:] = [4, 0]  # started
  dog.check(t0 + 2.0)
  beats[0][3:] = [2, 0]  # first reset, env 0
  dog.check(t0 + 4.0)  # 2 s in this stage
  with pytest.raises(RunError, match=r"^executor 0 \(envs 0-1\) stalled in its start-up \(first "
                     r"reset, env 0\) for 3\.5 s, past the start-up limit of 3\.0 s "
                     r"\(--startup_s\); nothing was trained or saved$"):
    dog.check(t0 + 7.5)
  dog.started(0)
  dog.check(t0 + 100.0)


def test_an_executor_that_steps_or_reports_done_is_not_stalled():
  dog, beats = _dog()
  dog.watch(0)
  dog.watch(1)
  t0 = time.monotonic()
  beats[0][2] += 1  # executor 0 stepped
  dog.unwatch(1)    # executor 1 reached the barrier
  dog.check(t0 + 0.5)
  dog.check(t0 + 1.2)  # 0.7 s since executor 0's step was seen: within 1 s
  with pytest.raises(RunError, match=r"^executor 0 \(envs 0-1\) has not stepped for 1\.\d s "
                     r"\(its last step: segment 3, step 2\): stalled"):
    dog.check(t0 + 2.0)


def test_the_automatic_timeout_follows_the_longest_gap_between_steps():
  dog, beats = _dog(watchdog_s=0.0)
  assert dog.timeout() == 10.0  # WATCHDOG_MIN_S before any gap is measured
  dog.watch(0)
  t0 = time.monotonic()
  beats[0][2] += 1
  dog.check(t0 + 0.5)  # a gap of 0.5 s (and the moment since watch()): 50 x 0.5 = 25 s
  assert dog.timeout() == pytest.approx(25.0, abs=0.5)
  dog.check(t0 + 20.0)
  with pytest.raises(RunError, match=r"watchdog's 25\.\d s"):
    dog.check(t0 + 26.0)


def test_a_part_check_stops_the_run_in_its_own_words():
  dog, _ = _dog()
  dog.watch_part(lambda now, s: "learner: update 7 has run for 130.0 s, past the watchdog's "
                 "120.0 s")
  with pytest.raises(RunError, match=r"^learner: update 7 .* \(--watchdog_s\); the last "
                     r"checkpoint is kept$"):
    dog.check(time.monotonic())


def test_a_watched_thread_returns_raises_and_keeps_its_caller_checking():
  checks = []
  worker = WatchedThread("w", lambda: checks.append(1), every_s=0.01)
  assert worker.call(lambda a, b: a + b, 2, 3) == 5
  with pytest.raises(ValueError, match="bad"):
    worker.call(lambda: (_ for _ in ()).throw(ValueError("bad")))
  assert worker.call(time.sleep, 0.2) is None and len(checks) >= 5  # checked while it slept

  def stall():
    raise RunError("stalled")
  stuck = WatchedThread("s", stall, every_s=0.01)
  with pytest.raises(RunError, match="stalled"):  # the check's error ends the wait
    stuck.call(time.sleep, 60)
  worker.close()


def test_the_automatic_timeout_says_how_to_raise_it():
  """One 30 s env step (a slow simulator) is stopped by the automatic
  timeout's 10 s minimum; its line now says how that limit is made and which flag raises it."""
  beats = [[3, 2, 7, 4, 0]]
  dog = Watchdog(lambda k: [0, 1], beats, 0.0)
  dog.watch(0)
  t0 = time.monotonic()
  with pytest.raises(RunError) as e:
    dog.check(t0 + 30.0)
  assert str(e.value).endswith(
      "stalled past the watchdog's 10.0 s (automatic: 50 times the longest gap between steps so "
      "far, at least 10 s; an env whose steps can take longer needs --watchdog_s=<s>); the last "
      "checkpoint is kept"), str(e.value)
  slow = Watchdog(lambda k: [0, 1], beats, 60.0)
  slow.watch(0)
  slow.check(t0 + 30.0)  # a set --watchdog_s of 60 s lets the 30 s step through


def test_a_start_up_read_is_bounded_by_startup_s():
  """`within`: a checkpoint read that a stalled file system holds ends the start-up in one line
  after --startup_s; one that returns or raises in time is passed through."""
  assert within(5.0, lambda: 7, ValueError) == 7 and within(0, lambda: 8, ValueError) == 8
  t0 = time.monotonic()
  with pytest.raises(TimeoutError, match="0.2 s"):
    within(0.2, lambda: time.sleep(5), lambda s: TimeoutError(f"took more than {s} s"))
  assert time.monotonic() - t0 < 2
  with pytest.raises(KeyError):
    within(5.0, lambda: {}["x"], ValueError)
