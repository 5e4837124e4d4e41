"""The sampler alone (`runtime/sampler.py`), in-process: its one wait-act-post loop over a real
executor (CartPole envs in a thread, real pipes and shared storage) waiting in lockstep, in
alternating groups and asynchronously, and over a scripted env side. A numpy policy whose
actions depend on (observation, seed) only stands in for the network: whatever the wait, the
same segment must come out; and what it fills is what the learner reads. Seconds, not a run."""

import dataclasses
import threading

import numpy as np
import pytest

from hts_jax.runtime.sampler import ActorStats, BlockBatcher, ExecutorEnvs, Sampler
from hts_jax.runtime.barrier import AlphaBarrier
from hts_jax.runtime.buffers import ActionBuffer, BlockLayout, StateBuffer
from hts_jax.runtime.executor import Executor, ExecutorSpec
from hts_jax.runtime.learner_worker import segment_of
from hts_jax.runtime.storage import Storages, StorageSpec, zeros
from hts_jax.runtime.supervisor import Supervisor
from hts_jax.types import Segment

ALPHA, ENVS, SEED = 6, 4, 3
LAYOUT = BlockLayout(ENVS, 1, 2)  # one executor, blocks 0 (envs 0, 1) and 1 (envs 2, 3)


class _Policy:
  """A row's action from its observation and its seed alone; records each call's rows."""

  def __init__(self):
    self.shapes = []

  def run_step(self, params, obs, seeds, state):
    self.shapes.append(obs.shape[0])
    word = seeds[:, 0].astype(np.int64) + seeds[:, 1] + params + (obs[:, 2] > 0)
    return (word % 2).astype(np.int32), None

  def run_fixed(self, params, obs, seeds, state):
    actions, _ = self.run_step(params, obs, seeds, state)
    return actions, {"log_prob": -1.0 - actions.astype(np.float32)}


class _Rig:
  """One executor in a thread, its barrier, its storages and a sampler over it whose calls
  have `rows` rows."""

  def __init__(self, rows: int):
    self.storages = Storages(StorageSpec(ALPHA, ENVS, (4,), "float32"), create=True)
    self.sup = Supervisor(lambda k: list(range(ENVS)))
    inbox, self.sb = ActionBuffer(), StateBuffer()
    ctrl = self.sup.add_thread_executor(inbox)
    spec = ExecutorSpec(index=0, env="CartPole-v1", env_kwargs={}, seed=SEED,
                        storage=self.storages.spec, layout=LAYOUT)
    self.sup.start_thread(
        Executor(spec, inbox.reader, self.sb.writer, ctrl.writer, {"env_id": None}).run,
        "executor-0")
    self.barrier = AlphaBarrier(self.sup, [inbox])
    self.policy, self.stats = _Policy(), ActorStats()
    streams = np.arange(ENVS, dtype=np.uint32) * 7919
    batcher = BlockBatcher(LAYOUT, self.storages, self.policy, streams, rows)
    envs = ExecutorEnvs(self.sb.reader, self.barrier.writers, LAYOUT, self.sb.writer)
    self.sampler = Sampler(batcher, envs, self.stats, self.sup.check)
    self.barrier.wait_started()

  def segment(self, segment: int):
    """A copy of the storage `segment` was collected in."""
    st = self.storages.filling(segment)
    return {k: np.array(getattr(st, k)) for k in ("obs", "actions", "version", "rewards",
                                                   "dones")}

  def close(self) -> None:
    self.sup.shutdown()
    self.sb.close()
    self.storages.close()


def _lockstep(rows: int, groups, segments: int = 2):
  """Segments 0..segments-1 collected in lockstep over `groups`: (storages, call rows, stats)."""
  rig = _Rig(rows)
  try:
    out = []
    for seg in range(segments):
      rig.barrier.go(seg)
      assert rig.sampler.lockstep(seg, groups, lambda: (5, 1))
      assert [r.segment for r in rig.barrier.wait_done(seg)] == [seg]
      out.append(rig.segment(seg))
    return out, rig.policy.shapes, rig.stats
  finally:
    rig.close()


def test_lockstep_makes_one_call_of_the_fixed_shape_per_step():
  (first, second), shapes, stats = _lockstep(ENVS, [[0, 1]])
  assert shapes == [ENVS] * 2 * ALPHA and stats.calls == 2 * ALPHA
  assert stats.ready_rows == 2 * ALPHA * ENVS
  for seg in (first, second):
    assert (seg["version"] == 5).all()
    assert np.isin(seg["actions"], (0, 1)).all() and seg["rewards"].all()
  # The next segment starts where this one ended.
  np.testing.assert_array_equal(second["obs"][0], first["obs"][-1])


def test_alternating_groups_and_half_calls_collect_the_same_segments():
  """Which blocks wait together and how many rows a call has decide no bits."""
  plain, _, _ = _lockstep(ENVS, [[0, 1]])
  groups, shapes, _ = _lockstep(ENVS, [[0], [1]])
  assert shapes == [ENVS] * 2 * 2 * ALPHA  # each group's call keeps the fixed shape
  halves, shapes, _ = _lockstep(ENVS // 2, [[0, 1]])
  assert shapes == [ENVS // 2] * 2 * 2 * ALPHA  # two calls a step, one per block
  for other in (groups, halves):
    for a, b in zip(plain, other):
      for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("actors", [1, 2])
def test_asynchronous_actors_collect_the_lockstep_segment(actors):
  """HTS's actor threads on the shared state buffer, stopped by one stop record."""
  (plain,), _, _ = _lockstep(ENVS // 2, [[0, 1]], segments=1)
  rig = _Rig(ENVS // 2)
  try:
    threads = [threading.Thread(target=rig.sampler.asynchronous, args=(lambda: (5, 1),))
               for _ in range(actors)]
    for th in threads:
      th.start()
    rig.barrier.go(0)
    rig.barrier.wait_done(0)
    rig.sb.writer.post_stop()
    for th in threads:
      th.join(timeout=10)
      assert not th.is_alive()  # each actor passed the stop record on
    assert set(rig.policy.shapes) == {ENVS // 2}
    got = rig.segment(0)
    for k in plain:
      np.testing.assert_array_equal(plain[k], got[k], err_msg=k)
  finally:
    rig.close()


class _Scripted:
  """An env side that steps nothing: the records it is given to read, the groups posted."""

  def __init__(self, records):
    self.records, self.posted = [np.array(r, np.int32) for r in records], []

  def ready(self, timeout):
    return bool(self.records)

  def read(self):
    return self.records.pop(0)

  def post(self, group):
    self.posted.append([r[0] for r in group])


def _scripted(records, rows=ENVS):
  storages = Storages(StorageSpec(2, ENVS, (4,), "float32"), create=True)
  envs = _Scripted(records)
  batcher = BlockBatcher(LAYOUT, storages, _Policy(), np.zeros(ENVS, np.uint32), rows)
  return Sampler(batcher, envs, ActorStats()), envs, storages


def test_lockstep_waits_for_every_block_and_acts_in_block_order():
  sampler, envs, storages = _scripted([[[1, 0, 0]], [[0, 0, 0]], [[1, 0, 1], [0, 0, 1]]])
  try:
    logp = np.zeros((2, ENVS), np.float32)
    assert sampler.lockstep(0, [[0, 1]], lambda: (2, 0), logp)
    assert envs.posted == [[0, 1], [0, 1]]  # one call and one post a step, in block order
    assert (storages.filling(0).version == 2).all()
    np.testing.assert_array_equal(logp, -1.0 - storages.filling(0).actions)
  finally:
    storages.close()


def test_lockstep_refuses_a_record_of_another_step():
  sampler, _, storages = _scripted([[[0, 0, 0], [1, 0, 1]]])
  try:
    with pytest.raises(RuntimeError, match="lockstep broken at segment 0, step 0"):
      sampler.lockstep(0, [[0, 1]], lambda: (0, 0))
  finally:
    storages.close()


def test_lockstep_stops_when_asked_while_it_waits():
  sampler, envs, storages = _scripted([[[0, 0, 0]]])
  try:
    assert not sampler.lockstep(0, [[0, 1]], lambda: (0, 0), stopped=lambda: True)
    assert envs.posted == []
  finally:
    storages.close()


def test_the_learners_segment_is_the_storages_fields_by_name():
  spec = StorageSpec(ALPHA, ENVS, (4,), "float32", final_obs=True, core_size=3)
  st = zeros(spec)
  shapes = {name: shape for name, shape, _ in spec.fields()}
  seg = segment_of(st)
  for f in dataclasses.fields(Segment):
    value = getattr(seg, f.name)
    assert value is getattr(st, f.name) or f.name == "core", f.name  # views, not copies
    assert value.shape == (shapes[f.name] if f.name != "core" else (1, ENVS, 3)), f.name
  bare = segment_of(zeros(StorageSpec(ALPHA, ENVS, (4,), "float32")))
  assert bare.final_obs is None and bare.core is None
