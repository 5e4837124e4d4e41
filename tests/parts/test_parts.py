"""The runtime's parts alone, in-process (no whole run): the executor and the alpha barrier with
real envs, pipes and shared storage; the learner worker; the observers; the modes' refusals."""

import os
import threading
import time

import gymnasium as gym
import numpy as np
import pytest

from hts_jax import seeding
from hts_jax.choices import RULES
from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime.outputs import observers
from hts_jax.runtime.barrier import AlphaBarrier
from hts_jax.runtime.buffers import ActionBuffer, BlockLayout, StateBuffer
from hts_jax.runtime.executor import Executor, ExecutorSpec
from hts_jax.runtime.learner_worker import LearnerWorker
from hts_jax.runtime.modes import MODES
from hts_jax.runtime.storage import Storages, StorageSpec, shm_prefix
from hts_jax.runtime.errors import RunError
from hts_jax.runtime.supervisor import Supervisor

ALPHA, ENVS, SEED = 5, 3, 7


class _Parts:
  """One executor (3 CartPole envs in blocks of 1) in a thread, its barrier and its storage; the
  test plays the actors."""

  def __init__(self, vectorize: bool):
    self.layout = BlockLayout(ENVS, 1, 1)
    self.storages = Storages(StorageSpec(ALPHA, ENVS, (4,), "float32"), create=True)
    self.sup = Supervisor(lambda k: list(range(ENVS)))
    inbox, self.sb = ActionBuffer(), StateBuffer()
    ctrl = self.sup.add_thread_executor(inbox)
    spec = ExecutorSpec(index=0, env="CartPole-v1", env_kwargs={}, seed=SEED,
                        storage=self.storages.spec, layout=self.layout, vectorize=vectorize)
    # Started as the runtime starts its in-process executors (envpool groups): the supervisor's
    # shutdown sends STOP and joins the thread before it closes the thread's inbox.
    self.sup.start_thread(
        Executor(spec, inbox.reader, self.sb.writer, ctrl.writer, {"env_id": None}).run,
        "executor-0")
    self.barrier = AlphaBarrier(self.sup, [inbox])

  def act(self, segment: int, actions) -> None:
    """Plays the actors for one segment: waits for each block's observation at step t, writes
    `actions[t, env]` and releases the block."""
    st = self.storages.filling(segment)
    pending = {}
    for t in range(ALPHA):
      while len(pending.get(t, ())) < ENVS:
        for b, seg, step in self.sb.reader.read().tolist():
          assert seg == segment
          pending.setdefault(step, []).append(b)
      st.actions[t] = actions[t]
      self.barrier.writers[0].post_blocks(pending.pop(t))

  def close(self) -> None:
    self.sup.shutdown()
    self.sb.close()
    self.storages.close()


@pytest.mark.parametrize("vectorize", [True, False])
def test_executor_behind_the_barrier_steps_like_gymnasium(vectorize):
  parts = _Parts(vectorize)
  try:
    parts.barrier.wait_started()
    parts.barrier.go(0)
    actions = np.random.default_rng(0).integers(0, 2, (ALPHA, ENVS)).astype(np.int32)
    parts.act(0, actions)
    (done,) = parts.barrier.wait_done(0)
    assert done.segment == 0 and done.executor == 0
    st = parts.storages.filling(0)
    for e in range(ENVS):
      env = gym.make("CartPole-v1")
      obs, _ = env.reset(seed=seeding.env_seed(SEED, e))
      np.testing.assert_array_equal(st.obs[0, e], obs)
      for t in range(ALPHA):
        obs, r, term, trunc, _ = env.step(int(actions[t, e]))
        np.testing.assert_array_equal(st.obs[t + 1, e], obs)
        assert st.rewards[t, e] == r and st.dones[t, e] == float(term or trunc)
  finally:
    parts.close()


def test_barrier_refuses_a_report_of_another_segment():
  parts = _Parts(True)
  try:
    parts.barrier.wait_started()
    parts.barrier.go(0)
    parts.act(0, np.zeros((ALPHA, ENVS), np.int32))
    with pytest.raises(RuntimeError, match="reported segment 0, not 1"):
      parts.barrier.wait_done(1)
  finally:
    parts.close()


def test_global_step_is_the_action_seed_word():
  assert seeding.global_step(0, 16, 3) == 3
  assert seeding.global_step(4, 16, 3) == 67


class _State:
  """A TrainState stand-in: what the learner worker reads (update_count, params, replace)."""

  def __init__(self, params, update_count=0):
    self.params, self.update_count = params, update_count

  def replace(self, params):
    return _State(params, self.update_count)


def test_learner_worker_is_the_one_that_changes_the_state():
  def step(state, data):
    return _State(state.params + data), {"loss": np.float32(data), "params_finite": True}

  worker = LearnerWorker(step, _State(1.0))
  worker.step(2.0)
  assert (worker.state.params, worker.version) == (3.0, 1)
  worker.set_params(10.0)
  assert (worker.state.params, worker.version) == (10.0, 1)
  worker.set_params(0.5, new_version=True)
  assert worker.version == 2
  with pytest.raises(FloatingPointError, match="non-finite loss at update 3"):
    worker.step(np.nan)
  assert (worker.state.params, worker.version) == (0.5, 2)  # a failed update changes nothing


def test_tracker_tags_split_the_row():
  event = observers.UpdateEvent(100, {"env_steps": 100, "sps": 5.0, "loss": 1.0},
                                {"loss": 1.0}, {"idle/learner": 0.5})
  assert observers.tracker_tags(event) == {"train/sps": 5.0, "learner/loss": 1.0,
                                           "idle/learner": 0.5}


class _Evaluator:
  """Results that arrive when the test says so (what the checkpoint writer waits for)."""

  def __init__(self):
    self.results, self.ready = [], threading.Event()

  def results_upto(self, n, wait):
    wait(self.ready.is_set)
    return self.results[:n]


def _snapshot(updates, evaluations=1):
  return observers.Snapshot(updates, None, {}, None, {"segment": updates, "book": {}}, evaluations,
                            None)


def test_checkpoints_are_written_in_order_after_the_evaluations_they_record(monkeypatch):
  written = []
  monkeypatch.setattr(observers.checkpoint, "save",
                      lambda logdir, step, state, storage, envs, host, process: written.append(
                          (step, host["book"]["eval"])))
  ev = _Evaluator()
  writer = observers.CheckpointWriter("unused", ev)
  writer.on_checkpoint(_snapshot(1))
  while writer.in_flight() != 1:
    time.sleep(0.01)
  writer.on_checkpoint(_snapshot(2, evaluations=2))
  # The queue is bounded: one write in flight, one waiting; a newer snapshot replaces a waiting one.
  writer.on_checkpoint(_snapshot(3, evaluations=2))
  assert written == []  # they wait for the evaluations they record
  ev.results = [{"mean_return": 1.0}, {"mean_return": 2.0}]
  ev.ready.set()
  writer.flush()
  assert written == [(1, [{"mean_return": 1.0}]), (3, ev.results)] and writer.skipped == 1


def test_a_failed_checkpoint_write_stops_the_run_with_one_line(monkeypatch):
  def fail(*args, **kwargs):
    raise OSError("disk full\nsecond line")
  monkeypatch.setattr(observers.checkpoint, "save", fail)
  ev = _Evaluator()
  ev.ready.set()
  writer = observers.CheckpointWriter("unused", ev)
  writer.on_checkpoint(_snapshot(1, evaluations=0))
  with pytest.raises(RunError, match=r"^checkpoint: OSError: disk full$"):
    writer.flush()


@pytest.mark.parametrize("mode", ["async", "gala", "allreduce"])
def test_modes_without_checkpoints_refuse_them_in_one_line(tmp_path, mode):
  cfg = RunConfig.make(env="CartPole-v1", mode=mode, checkpoint_every=2, logdir=str(tmp_path),
                  num_envs=8, num_executors=2, num_actors=2 if mode == "async" else 1,
                  gala_agents=2)
  with pytest.raises(ConfigError, match=f"--mode={mode} does not checkpoint"):
    MODES[mode].check(cfg, resume=False)
  MODES["hts"].check(cfg, resume=True)
  MODES["sync"].check(cfg, resume=True)


def test_every_mode_holds_its_rules_and_its_loop():
  assert tuple(MODES) == tuple(RULES)
  for name, mode in MODES.items():
    assert mode.name == name and mode.rules is RULES[name]
    assert mode.loop.__module__.startswith("hts_jax.runtime.loops.")


def test_every_mode_reports_its_env_steps_per_update():
  cfg = RunConfig.make(env="CartPole-v1", mode="async", num_envs=8, num_executors=4, num_actors=4,
                  alpha=20, total_steps=1000, async_batch_unrolls=2)
  # async: an update takes 2 unrolls of 20 steps of an actor's 2 envs.
  assert cfg.steps_per_update == 20 * 2 * 2 and cfg.optimizer_steps == cfg.learner_updates
  assert MODES["async"].total_steps(cfg) == cfg.learner_updates * 20 * 2 * 2
  hts = RunConfig.make(env="CartPole-v1", num_envs=8, alpha=20, total_steps=1000)
  assert MODES["hts"].total_steps(hts) == hts.rollout.num_segments * 20 * 8 == 1120  # 7 segments
  assert hts.optimizer_steps == hts.rollout.num_segments * 4  # A2C: alpha / unroll_length 5


def test_a_runs_shared_memory_is_named_after_its_logdir(tmp_path):
  """What lets the leak checks of tests that run side by side (pytest-xdist) look at their own
  run's blocks only: the block carries its logdir's prefix and is gone after close."""
  prefix = shm_prefix(str(tmp_path))
  assert prefix != shm_prefix(str(tmp_path / "other")) and prefix == shm_prefix(f"{tmp_path}/.")
  mine = lambda: [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]
  created = Storages(StorageSpec(ALPHA, ENVS, (4,), "float32"), create=True, name_prefix=prefix)
  attached = Storages(created.spec, create=False)
  created[0].rewards[1, 2] = 5.0
  assert mine() == [created.spec.shm_name] and attached[0].rewards[1, 2] == 5.0
  attached.close()
  assert mine() == [created.spec.shm_name]  # only the creator unlinks
  created.close()
  assert mine() == []
