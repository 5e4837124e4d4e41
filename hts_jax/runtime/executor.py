"""Executor processes (paper Section 4.1): each owns env replicas with global env ids.

An executor steps its envs in blocks (`buffers.BlockLayout`). It blocks (no spinning) on its action
buffer until actors have written the actions of some of its blocks into the filling storage, steps
each such block (`hts_jax.envs.blocks`: gymnasium replicas in turn, or plain CartPole-v1 in one
tight loop), writes `(reward, done, next obs)` at `[t, rows]`, and posts the block to the state
buffer as soon as it is stepped, so an actor can compute its actions while the executor steps the
next block (Sample Factory's double-buffered sampling). After `alpha`
steps of every env it reports `Done` and waits at the barrier for GO. Imports no JAX.

Signals: executors start with SIGINT/SIGTERM blocked (inherited from the supervisor), move into a
process group of their own (a Ctrl-C or a signal to the launcher's group reaches the controller
only, which turns it into a checkpoint and an ordered stop), drop any signal that arrived during
start-up, and then take SIGTERM's default action, so `terminate()` ends them at once. An executor
whose controller has gone reads end-of-file on its action buffer and exits.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing as mp
import os
import pickle
import random
import signal
import time
from typing import Any, Dict, List, Optional

import gymnasium as gym
import numpy as np

from hts_jax import envs, seeding
from hts_jax.envs import blocks as env_blocks
from hts_jax.runtime import buffers
from hts_jax.runtime.buffers import BlockLayout, Done, EnvStates, Failed, Started
from hts_jax.runtime.parent import die_with_parent
from hts_jax.runtime.storage import Storages, StorageSpec, carry_core, reset_core


@dataclasses.dataclass(frozen=True)
class ExecutorSpec:
  index: int
  env: str
  env_kwargs: Dict[str, Any]
  seed: int
  storage: StorageSpec
  layout: BlockLayout
  delay_s: float = 0.0
  jitter_s: float = 0.0
  decorrelate_steps: int = 0
  first_segment: int = 0
  # {env_id: pickled (env, last_obs)} to resume from a checkpoint instead of fresh resets.
  env_states: Optional[Dict[int, bytes]] = None
  # Step plain CartPole-v1 blocks in one tight loop (`envs.blocks.CartPoleBlock`; same bits).
  vectorize: bool = True
  # The process's first global env id (multi-process runs): the layout and the storage rows are
  # the process's own; env ids (seeds, reports) are global.
  env_offset: int = 0

  @property
  def alpha(self) -> int:
    """Steps per env in a segment: the storages' length."""
    return self.storage.alpha

  @property
  def env_ids(self) -> List[int]:
    """This executor's global env ids."""
    per = self.layout.envs_per_executor
    return list(range(self.env_offset + self.index * per,
                      self.env_offset + (self.index + 1) * per))


def executor_specs(cfg, storage: StorageSpec, layout: BlockLayout, first_segment: int,
                   saved_envs: Optional[Dict[int, bytes]] = None) -> List[ExecutorSpec]:
  """The specs of this process's executors for run config `cfg` (`saved_envs`: a checkpoint's
  pickled envs, by global env id)."""
  specs, r = [], cfg.rollout
  for k in range(r.num_executors):
    ids = cfg.env_ids_of_executor(k)
    specs.append(ExecutorSpec(
        index=k, env=r.env, env_kwargs=r.env_kwargs, seed=r.seed,
        storage=storage, layout=layout, delay_s=cfg.testing.executor_delay_s,
        jitter_s=cfg.testing.executor_jitter_s, decorrelate_steps=r.decorrelate_steps,
        first_segment=first_segment, vectorize=r.vector_envs, env_offset=cfg.env_offset,
        env_states=None if saved_envs is None else {e: saved_envs[e] for e in ids}))
  return specs


SIGNALS = (signal.SIGINT, signal.SIGTERM)


def executor_main(spec: ExecutorSpec, inbox: buffers.RecordReader, state: buffers.StateWriter,
                  ctrl, beat=None) -> None:
  """Process entry point. Any exception is reported to the controller as one line (`Failed`).
  `beat`: a shared int64 array (`buffers.BEAT_SIZE`: segment, step, block steps so far, start-up
  stage and env) the executor updates at each stage of its start-up and after every block it
  steps (the supervisor's watchdog reads it)."""
  os.setpgrp()
  parent = mp.parent_process()
  if parent is not None:  # a worker killed with SIGKILL cannot stop its executors: the kernel does
    die_with_parent(parent.pid)
  # Executors step envs only; should anything here touch JAX, it must not claim the accelerator
  # (sixteen processes each preallocating most of a GPU's memory).
  os.environ["JAX_PLATFORMS"] = "cpu"
  for s in SIGNALS:
    signal.signal(s, signal.SIG_IGN)  # discards a signal pending since start-up
  signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
  signal.signal(signal.SIGTERM, signal.SIG_DFL)
  where = {"env_id": None}
  try:
    Executor(spec, inbox, state, ctrl, where, beat).run()
  except BaseException as e:  # pylint: disable=broad-except
    msg = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
    try:
      ctrl.send(Failed(spec.index, where["env_id"], msg))
    except OSError:
      pass  # the controller has gone


class Executor:
  """One executor's envs and loop (`run`), in its process: `inbox` is its action buffer's read
  end, `state` the state buffer's writer, `ctrl` its control channel's writer (Started, Done,
  EnvStates). `where["env_id"]` names the env being created or stepped, for a failure's line.
  Tests run one in a thread against a real storage and pipes."""

  def __init__(self, spec: ExecutorSpec, inbox, state, ctrl, where, beat=None):
    self.spec, self.inbox, self.state, self.ctrl, self.where = spec, inbox, state, ctrl, where
    self.beat = beat
    self.storages = Storages(spec.storage, create=False)
    self.noise = random.Random()  # step-time noise is unseeded: results must not depend on it
    self.agents = spec.storage.num_agents
    self.int_obs = not np.issubdtype(self.storages.filling(0).obs.dtype, np.floating)  # uint8
    layout = spec.layout
    self.blocks = layout.blocks_of_executor(spec.index)
    self.block_envs = {b: list(range(spec.env_offset + layout.blocks[b][0],
                                     spec.env_offset + sum(layout.blocks[b])))
                       for b in self.blocks}
    self.block_rows = {b: layout.rows(b) for b in self.blocks}
    replicas: Dict[int, Any] = {}
    last_obs: Dict[int, Any] = {}
    for e in spec.env_ids:
      where["env_id"] = e
      if spec.env_states is not None and e in spec.env_states:
        self._stage("env restore", e)
        replicas[e], last_obs[e] = pickle.loads(spec.env_states[e])
        continue
      self._stage("env make", e)
      env = envs.make_env(spec.env, spec.env_kwargs, train=True)
      self._stage("first reset", e)
      obs, _ = env.reset(seed=seeding.env_seed(spec.seed, e))
      if spec.decorrelate_steps:
        obs = _decorrelate(env, obs, spec.decorrelate_steps,
                           seeding.decorrelation_seed(spec.seed, e))
      replicas[e], last_obs[e] = env, obs
    where["env_id"] = None
    self.env_blocks = {
        b: env_blocks.make_block(ids, [replicas[e] for e in ids], [last_obs[e] for e in ids],
                                 self.agents, where, vectorize=spec.vectorize)
        for b, ids in self.block_envs.items()}
    self._new_report()

  def _stage(self, stage: str, env_id: int = -1) -> None:
    """Where its start-up is, for the watchdog (`--startup_s`)."""
    if self.beat is not None:
      self.beat[3], self.beat[4] = buffers.START_STAGES.index(stage), env_id

  def run(self) -> None:
    spec = self.spec
    segment = spec.first_segment
    t = {b: 0 for b in self.blocks}
    self._new_report()
    finished = 0
    self._stage("started")
    self.ctrl.send(Started(spec.index))
    while True:
      t0 = time.perf_counter()
      records = self.inbox.read()
      waited = time.perf_counter() - t0
      if records is None:
        break  # the controller has gone
      codes = records[:, 0].tolist()
      if buffers.STOP in codes:
        break
      if codes[0] < 0:  # GO and SAVE come alone: the executor is at the barrier
        code, arg = codes[0], int(records[0, 1])
        self.idle_barrier += waited
        if code == buffers.SAVE:
          self.ctrl.send(EnvStates(spec.index, *_pickle_envs(self.env_blocks.values())))
        elif code == buffers.GO:
          segment = arg
          self._start_segment(segment, t)
        continue
      self.idle_actions += waited
      t_busy = time.perf_counter()
      st = self.storages.filling(segment)
      for b in codes:  # each block goes back to the actors as soon as it is stepped
        self.step_block(st, b, t[b], segment)
        t[b] += 1
        if self.beat is not None:
          self.beat[0], self.beat[1] = segment, t[b]
          self.beat[2] += 1
        if t[b] < spec.alpha:
          self.state.post((b,), segment, (t[b],))
        else:
          finished += 1
      self.busy += time.perf_counter() - t_busy
      if finished == len(self.blocks):
        finished = 0
        self.ctrl.send(Done(spec.index, segment, self.returns, self.lengths, self.idle_actions,
                            self.idle_barrier, self.busy))
        self._new_report()
    for block in self.env_blocks.values():
      block.close()
    self.storages.close()

  def _non_finite(self, b: int, rewards: np.ndarray, obs: np.ndarray, step: int,
                  segment: int) -> None:
    """Names the first env of block `b` whose reward or observation is not finite."""
    for field, values in (("reward", rewards), ("observation", obs)):
      bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
      if bad.any():
        row = int(np.flatnonzero(bad)[0])
        self.where["env_id"] = self.block_envs[b][row // self.agents]
        value = np.asarray(values[row]).ravel()
        raise FloatingPointError(
            f"non-finite {field} ({value[~np.isfinite(value)][0]}) from {self.spec.env} at "
            f"segment {segment}, step {step}")

  def _new_report(self) -> None:
    self.returns: Dict[int, List[float]] = {e: [] for e in self.spec.env_ids}
    self.lengths: Dict[int, List[int]] = {e: [] for e in self.spec.env_ids}
    self.idle_actions = self.idle_barrier = self.busy = 0.0

  def _start_segment(self, segment: int, t: Dict[int, int]) -> None:
    st, previous = self.storages.filling(segment), self.storages.filling(segment - 1)
    for b in self.blocks:
      t[b] = 0
      self.env_blocks[b].observations(st.obs[0, self.block_rows[b]])
      carry_core(previous, st, self.block_rows[b])
    self.state.post(self.blocks, segment, [0] * len(self.blocks))

  def step_block(self, st, b: int, step: int, segment: int) -> None:
    """Steps the block's envs with the actions at [step, rows]; writes step+1's data and checks
    that its rewards and float observations are finite."""
    spec, rows = self.spec, self.block_rows[b]
    finished: List[env_blocks.Finished] = []
    rewards, obs = st.rewards[step, rows], st.obs[step + 1, rows]
    self.env_blocks[b].step(st.actions[step, rows], rewards, st.dones[step, rows],
                            st.truncated[step, rows], obs,
                            None if st.final_obs is None else st.final_obs[step, rows], finished)
    # A NaN or inf from the env is named here, not in the learner's loss.
    if not (_all_finite(rewards) and (self.int_obs or _all_finite(obs))):
      self._non_finite(b, rewards, obs, step, segment)
    reset_core(st, step, rows)
    for e, ret, length in finished:
      self.returns[e].append(ret)
      self.lengths[e].append(length)
    if spec.delay_s or spec.jitter_s:
      n = len(self.block_envs[b])
      time.sleep(n * spec.delay_s + sum(self.noise.uniform(0.0, spec.jitter_s) for _ in range(n)))


def _all_finite(x: np.ndarray) -> bool:
  """Whether float32 `x` holds no NaN or inf: whether their sum as doubles is finite (float32
  values cannot overflow it; NaN and inf propagate, inf - inf is NaN). A few values (a block's
  rewards, CartPole's observations) sum as a Python list: ~1.7 us for 8 CartPoles' rewards and
  observations together, against ~3.7 us for two np.isfinite(...).all(); numpy past 256 values."""
  if x.size <= 256:
    return math.isfinite(sum(x.ravel().tolist()))
  return bool(np.isfinite(x).all())


def _pickle_envs(blocks):
  """({env_id: pickled (env, last_obs)}, "") or (None, reason) if some env cannot be pickled."""
  try:
    return {e: pickle.dumps(pair) for block in blocks for e, pair in block.replicas().items()}, ""
  except Exception as e:  # pylint: disable=broad-except
    return None, f"{type(e).__name__}: {e}"


def _decorrelate(env, obs, max_steps: int, seed: int):
  """Takes a random number in [0, max_steps] of uniform-random actions (Stooke & Abbeel 2018)."""
  rng = np.random.default_rng(seed)
  for _ in range(int(rng.integers(0, max_steps + 1))):
    space = env.action_space
    action = (rng.uniform(space.low, space.high).astype(space.dtype)
              if isinstance(space, gym.spaces.Box) else int(rng.integers(space.n)))
    obs, _, terminated, truncated, _ = env.step(action)
    if terminated or truncated:
      obs, _ = env.reset()
  return obs
