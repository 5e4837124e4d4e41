"""The controller alone, on a real run's parts (CartPole, one small MLP), outside any loop: the
boundary's decisions in their fixed order (stop, evaluate, checkpoint, progress) as its observers
see them, and the verbs a loop calls: the learner's (with the supervisor's liveness check wired
in) and the rollout's (one executor, one segment). Seconds, not a run."""

import functools

import numpy as np
import pytest

from hts_jax.config import LearnerConfig
from hts_jax.runtime import modes
from hts_jax.runtime.sampler import ParamsBox
from hts_jax.runtime.controller import Controller
from hts_jax.runtime.errors import RunError
from hts_jax.runtime.outputs.observers import Observer
from tests.support.runs import small_config

# 4 segments of 8 steps of 4 envs; an evaluation and a checkpoint due at every boundary.
RUN = dict(env="CartPole-v1", num_envs=4, num_executors=1, alpha=8, total_steps=4 * 8 * 4,
           eval_every=32, eval_episodes=1, checkpoint_every=1, host_calibration=False,
           learner=LearnerConfig(algo="a2c", unroll_length=8))
_cfg = functools.partial(small_config, base=RUN)


class _Log(Observer):
  """Records the events it is sent, in order."""

  def __init__(self, log):
    self.log = log

  def on_update(self, event):
    self.log.append("update")

  def on_evaluation(self, env_steps, wall, params):
    self.log.append("evaluate")

  def on_video(self, env_steps, params, final=False):
    self.log.append("video")

  def on_checkpoint(self, snapshot):
    self.log.append("checkpoint")

  def on_progress(self, env_steps, wall, updates, train_return, eval_return, force=False):
    self.log.append("progress")


@pytest.fixture(name="runner", scope="module")
def _runner(tmp_path_factory):
  runner = modes.make_runner(_cfg(tmp_path_factory.mktemp("controller")))
  yield runner
  runner.lock.release()


def _controller(runner, log, stop=False):
  """A controller over the runner's parts whose observers are `_Log(log)` only; the executors'
  env states (collected for a checkpoint) are None, and `stop`: the stop decision's answer."""
  ctl = Controller(runner.parts, modes.MODES["hts"].total_steps(runner.config))
  ctl.observers[:] = [_Log(log)]
  ctl.barrier.collect_env_states = lambda: None  # no executors: envs restart on a resume

  def target_reached():
    log.append("stop?")
    return stop

  ctl.target_reached = target_reached
  return ctl


def test_the_boundary_decides_stop_evaluate_checkpoint_progress_in_that_order(runner):
  log = []
  with _controller(runner, log) as ctl:
    params = runner.parts.learner.state.params
    assert not ctl.boundary(0, 32, params)
    assert log == ["stop?", "evaluate", "checkpoint", "progress"]


def test_a_stop_skips_the_evaluation_and_still_checkpoints_and_reports(runner):
  log = []
  with _controller(runner, log, stop=True) as ctl:
    assert ctl.boundary(0, 32, runner.parts.learner.state.params)
    assert log == ["stop?", "checkpoint", "progress"]


def test_no_checkpoint_at_the_last_boundary_finish_writes_it(runner):
  log = []
  with _controller(runner, log) as ctl:
    last = runner.config.rollout.num_segments - 1
    ctl.boundary(last, (last + 1) * 32, runner.parts.learner.state.params)
    assert log == ["stop?", "progress"]  # nor an evaluation: `finish` evaluates the last


def test_learn_now_runs_the_update_on_the_learner_thread_and_books_nothing(runner):
  log = []
  with _controller(runner, log) as ctl:
    ctl.start_learner(count_idle=False)
    ctl.filling(0).valid[:] = True
    before = runner.parts.learner.version
    result = ctl.learn_now(0)
    assert runner.parts.learner.version == before + 1 and result.segment == 0
    assert np.isfinite(result.metrics["loss"]) and ctl.lags() == [] and log == []
    ctl.record_update(result, [], 32)
    assert ctl.lags() == [result.lag] and log == ["update"]


def test_waiting_for_the_learner_runs_the_supervisors_liveness_check(runner):
  """The loop only asks for the result: a part that failed meanwhile stops the wait."""
  with _controller(runner, []) as ctl:
    ctl.supervisor.report_fault("a part failed")
    with pytest.raises(RunError, match="a part failed"):
      ctl.result()  # nothing submitted, no learner thread: only the check ends the wait


def test_the_rollout_verbs_collect_one_segment(runner):
  """spawn_executors, start_actors, wait_started, go, wait_done: segment 0 in storage 0, every
  step of every env acted on by the published params' version."""
  parts = runner.parts
  with _controller(runner, []) as ctl:
    ctl.spawn_executors()
    ctl.start_actors(ParamsBox(7, parts.actor_params(parts.learner.state.params)))
    ctl.wait_started()
    ctl.go(0)
    reports = ctl.wait_done(0)
    assert [r.segment for r in reports] == [0]
    st = ctl.filling(0)
    assert st.valid.all() and (st.version == 7).all()
    finished = ctl.record_rollout(reports)  # the episodes the segment ended, booked
    assert sorted(finished) == sorted(ctl.booked_returns())
