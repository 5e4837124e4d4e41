"""The run's outputs, as observers of the controller's decisions.

The controller takes every decision at a segment boundary (`Controller.boundary`: stop, evaluate,
checkpoint, progress, in that order, for every mode) and tells the observers what it decided;
they write. An observer never changes the loop: a run's result is the same with any set of them
(Sample Factory's periodic callbacks and brax's `progress_fn` play this part there).

  on_update(UpdateEvent)      one learner update: metrics.csv's row, the tracker's scalars
  on_evaluation(steps, wall, params), on_video(steps, params, final)
                              an evaluation / a video is due (of the params published now)
  on_checkpoint(Snapshot)     a checkpoint is due; the snapshot is taken, writing it is theirs
  on_progress(...)            the boundary's progress line
  on_finish(env_steps, figures)
  flush()                     everything written (checkpoints in order); raises RunError
  close()                     at the end, in registration order
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from hts_jax.runtime.outputs import checkpoint, reporting, tracking
from hts_jax.runtime.outputs.evaluation import Evaluator
from hts_jax.runtime.errors import RunError, error_line


@dataclasses.dataclass(frozen=True)
class UpdateEvent:
  """One learner update as booked: metrics.csv's `row` (the learner's metrics included under
  their names in `learner_metrics`) and summary.json's idle/efficiency figures so far."""
  env_steps: int
  row: Dict[str, Any]
  learner_metrics: Dict[str, float]
  figures: Dict[str, float]


@dataclasses.dataclass(frozen=True)
class Snapshot:
  """Everything a checkpoint holds, taken at a boundary (the storage copied): written later."""
  updates: int
  state: Any
  storage: Dict[str, Any]
  env_states: Optional[Dict[int, bytes]]
  host: Dict[str, Any]            # segment, learned, book (without evaluations), config
  evaluations: int                # the evaluations submitted so far (recorded in the book)
  process: Optional[int]          # multi-process: this process's part


class Observer:
  """Does nothing; subclasses take the events they write."""

  def on_update(self, event: UpdateEvent) -> None:
    pass

  def on_evaluation(self, env_steps: int, wall: float, params) -> None:
    pass

  def on_video(self, env_steps: int, params, final: bool = False) -> None:
    pass

  def on_checkpoint(self, snapshot: Snapshot) -> None:
    pass

  def on_progress(self, env_steps: int, wall: float, updates: int,
                  train_return: Optional[float], eval_return: Optional[float],
                  force: bool = False) -> None:
    pass

  def on_finish(self, env_steps: int, figures: Dict[str, float]) -> None:
    pass

  def flush(self) -> None:
    pass

  def close(self) -> None:
    pass


class MetricsCsv(Observer):
  """`<logdir>/metrics.csv`: one row per update (a resumed run keeps the rows it had)."""

  def __init__(self, logdir: str, keep_updates: Optional[int] = None):
    try:
      self.writer = reporting.MetricsWriter(logdir, keep_updates=keep_updates)
    except OSError as e:  # a full disk, a link planted after the logdir was checked
      raise RunError(error_line(e, logdir)) from None

  def on_update(self, event: UpdateEvent) -> None:
    self.writer.write(event.row)

  def close(self) -> None:
    self.writer.close()


def tracker_tags(event: UpdateEvent) -> Dict[str, float]:
  """An update's tracker scalars: `train/` (the row but the learner's metrics and the step),
  `learner/` (the learner's metrics), `idle/` and `efficiency/` (the figures)."""
  tags = {f"train/{k}": v for k, v in event.row.items()
          if k != "env_steps" and k not in event.learner_metrics}
  tags.update({f"learner/{k}": v for k, v in event.learner_metrics.items()})
  tags.update(event.figures)
  return tags


class TrackerScalars(Observer):
  """TensorBoard / W&B scalars (the evaluator writes its own results and videos there)."""

  def __init__(self, tracker: tracking.Tracker):
    self.tracker = tracker

  def on_update(self, event: UpdateEvent) -> None:
    self.tracker.scalars(tracker_tags(event), event.env_steps)

  def on_finish(self, env_steps: int, figures: Dict[str, float]) -> None:
    self.tracker.scalars(figures, env_steps)

  def close(self) -> None:  # after the evaluator, which writes to it (`Controller.__exit__`)
    self.tracker.close()


class Evaluations(Observer):
  """Submits the due evaluations and videos to the evaluator (which runs them in its thread)."""

  def __init__(self, evaluator: Evaluator):
    self.evaluator = evaluator

  def on_evaluation(self, env_steps: int, wall: float, params) -> None:
    self.evaluator.submit(env_steps, wall, params)

  def on_video(self, env_steps: int, params, final: bool = False) -> None:
    self.evaluator.submit_video(env_steps, params, final=final)


class ProgressLines(Observer):
  """The progress line on stderr (every `every_s` seconds, and at the end)."""

  def __init__(self, total_steps: int, every_s: float, prefix: str, stream=None):
    self.progress = reporting.Progress(total_steps, every_s, prefix, stream=stream)

  def on_progress(self, env_steps, wall, updates, train_return, eval_return, force=False):
    self.progress.update(env_steps, wall, updates, train_return, eval_return, force=force)


class CheckpointWriter(Observer):
  """Writes snapshots in a background thread, in order, each after the evaluations it records
  have finished (so the executors never wait for an evaluation). The queue is bounded: one write
  in flight and one snapshot waiting; a newer snapshot replaces a waiting older one (`skipped`
  counts them), so a writer slower than `--checkpoint_every` updates writes the newest snapshot
  each time it is free and the boundary never waits for it. A write that fails makes the next
  `flush` raise RunError with one line."""

  def __init__(self, logdir: str, evaluator: Evaluator):
    self.logdir, self.evaluator = logdir, evaluator
    self._cond = threading.Condition()
    self._waiting: Optional[Snapshot] = None
    self._writing: Optional[int] = None  # the updates of the snapshot being written
    self._thread: Optional[threading.Thread] = None
    self._abandoned = False
    self.written_params: Optional[tuple] = None  # the newest checkpoint's (updates, state, segment)
    self.last_write_s = 0.0  # the seconds the newest write took
    self.skipped = 0
    self.error: Optional[str] = None

  def on_checkpoint(self, snapshot: Snapshot) -> None:
    with self._cond:
      if self._waiting is not None:
        self.skipped += 1
      self._waiting = snapshot
      if self._thread is None:
        self._thread = threading.Thread(target=self._write_all, name="checkpoint", daemon=True)
        self._thread.start()

  def _write_all(self) -> None:
    while True:
      with self._cond:
        snapshot, self._waiting = self._waiting, None
        self._writing = None if snapshot is None else snapshot.updates
        if snapshot is None:
          self._thread = None
          self._cond.notify_all()
          return
      try:
        book = dict(snapshot.host["book"])
        book["eval"] = [dict(r) for r in self.evaluator.results_upto(snapshot.evaluations,
                                                                     _wait_plain)]
        t0 = time.perf_counter()
        checkpoint.save(self.logdir, snapshot.updates, snapshot.state, snapshot.storage,
                        snapshot.env_states, dict(snapshot.host, book=book),
                        process=snapshot.process)
        self.written_params = (snapshot.updates, snapshot.state, snapshot.host["segment"])
        self.last_write_s = time.perf_counter() - t0
      except Exception as e:  # pylint: disable=broad-except
        if self.error is None:
          self.error = "checkpoint: " + error_line(e, checkpoint.directory(self.logdir))

  def in_flight(self) -> Optional[int]:
    """The updates of the checkpoint being written now, if one is."""
    with self._cond:
      return self._writing

  def finish_in_flight(self, steps_per_segment: int) -> Tuple[int, Any, int]:
    """The write in flight finished, the waiting snapshot dropped (a signal's stop); returns the
    written checkpoint's (updates, params, env steps)."""
    self.drop_waiting()
    self.flush()
    updates, state, segment = self.written_params
    return updates, state.params, (segment + 1) * steps_per_segment

  def drop_waiting(self) -> None:
    """Forgets the snapshot waiting to be written, if any (a signal finishes at most one write)."""
    with self._cond:
      if self._waiting is not None:
        self._waiting = None
        self.skipped += 1

  def abandon(self, wait_s: float) -> None:
    """The run ends now (a second SIGINT): the waiting snapshot is dropped, the write in flight
    gets `wait_s` seconds to finish (orbax cannot stop one; a folder half written when the
    program exits is removed by the launcher, or by the next run in the logdir), then `join` and
    `close` no longer wait."""
    self.drop_waiting()
    deadline = time.monotonic() + wait_s
    with self._cond:
      while self._thread is not None and time.monotonic() < deadline:
        self._cond.wait(0.05)
    self._abandoned = True

  def join(self) -> None:
    with self._cond:
      while self._thread is not None and not self._abandoned:
        self._cond.wait(0.1)

  def flush(self) -> None:
    self.join()
    if self.error:
      raise RunError(self.error)

  def close(self) -> None:
    self.join()


def _wait_plain(predicate, timeout: float = 0.05) -> None:
  while not predicate():
    time.sleep(timeout)


def output_observers(cfg, resumed_updates: Optional[int], total_steps: int) -> List[Observer]:
  """Process 0's outputs that do not depend on the evaluator: metrics.csv, the tracker (first: one
  that cannot start, W&B, stops the run before the rest; what was opened is closed) and the
  progress line over `total_steps`. Other processes write none."""
  if cfg.distributed.process_id != 0:
    return []
  csv = MetricsCsv(cfg.outputs.logdir, keep_updates=resumed_updates)
  out: List[Observer] = [csv]
  try:
    tracker = tracking.open_tracker(cfg, purge_step=(
        None if resumed_updates is None else csv.writer.last_env_steps + 1))
  except BaseException:
    csv.close()
    raise
  if tracker is not None:
    out.append(TrackerScalars(tracker))
  out.append(ProgressLines(total_steps, cfg.outputs.log_every_s, cfg.mode))
  return out


def tracker_of(observers: List[Observer]) -> Optional[tracking.Tracker]:
  for o in observers:
    if isinstance(o, TrackerScalars):
      return o.tracker
  return None
