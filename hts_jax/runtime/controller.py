"""The segment controller: the alpha barrier and every decision taken at a segment boundary.

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
What the controller holds and how it shuts down is its `session.Session`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from hts_jax.analysis import metrics as eval_metrics
from hts_jax.runtime import distributed, host
from hts_jax.runtime.learner_worker import LearnResult
from hts_jax.runtime.outputs import checkpoint, export, reporting
from hts_jax.runtime.outputs.bookkeeping import run_summary
from hts_jax.runtime.outputs.observers import Snapshot, UpdateEvent
from hts_jax.runtime.placement import COMPILES
from hts_jax.runtime.session import Session
from hts_jax.runtime.errors import Interrupted, RunError, error_line, interrupted_message


class Controller(Session):
  """A run's session and the decisions at its boundaries: `record_update`, `boundary`, `finish`.
  A mode's loop runs inside it (`with Controller(parts, ...) as ctl`, `Runner.run`)."""
  # (updates, params, env steps) at the last boundary passed: what a stop exports.
  _whole: Optional[Tuple[int, Any, int]] = None
  _exported = False

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
  def __exit__(self, exc_type, exc, tb) -> None:
    try:
      super().__exit__(exc_type, exc, tb)
    finally:  # a stop exports the params of the last boundary passed, if any (`_whole`)
      if exc_type in (RunError, Interrupted) and self._whole and not self._exported:
        with contextlib.suppress(Exception):  # the run ends with its own line (a full disk)
          self._export(*self._whole, "error" if exc_type is RunError else "interrupted")

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
