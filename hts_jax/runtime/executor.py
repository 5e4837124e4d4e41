"""Executor processes (paper Section 4.1): each owns env replicas with global env ids.

An executor steps its envs in blocks (`buffers.BlockLayout`). It blocks (no spinning) on its action
buffer until actors have written the actions of some of its blocks into the filling storage, steps
each such block's envs, writes `(reward, done, next obs)` at `[t, rows]`, and posts the blocks that
are ready again to the state buffer, all in one record write. While an actor computes one block's
actions the executor steps another (Sample Factory's double-buffered sampling). After `alpha`
steps of every env it reports `Done` and waits at the barrier for GO. Imports no JAX.

Signals: executors start with SIGINT/SIGTERM blocked (inherited from the supervisor), move into a
process group of their own (a Ctrl-C or a signal to the launcher's group reaches the controller
only, which turns it into a checkpoint and an ordered stop), drop any signal that arrived during
start-up, and then take SIGTERM's default action, so `terminate()` ends them at once. An executor
whose controller has gone reads end-of-file on its action buffer and exits.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import random
import signal
import time
from typing import Any, Dict, List, Optional

import numpy as np

from hts_jax import envs, seeding
from hts_jax.runtime import buffers
from hts_jax.runtime.buffers import BlockLayout, Done, EnvStates, Failed, Started
from hts_jax.runtime.storage import Storages, StorageSpec


@dataclasses.dataclass(frozen=True)
class ExecutorSpec:
  index: int
  env: str
  env_kwargs: Dict[str, Any]
  seed: int
  alpha: int
  storage: StorageSpec
  layout: BlockLayout
  delay_s: float = 0.0
  jitter_s: float = 0.0
  decorrelate_steps: int = 0
  first_segment: int = 0
  # {env_id: pickled (env, last_obs)} to resume from a checkpoint instead of fresh resets.
  env_states: Optional[Dict[int, bytes]] = None

  @property
  def env_ids(self) -> List[int]:
    per = self.layout.envs_per_executor
    return list(range(self.index * per, (self.index + 1) * per))


SIGNALS = (signal.SIGINT, signal.SIGTERM)


def executor_main(spec: ExecutorSpec, inbox: buffers.RecordReader, state: buffers.StateWriter,
                  ctrl) -> None:
  """Process entry point. Any exception is reported to the controller as one line (`Failed`)."""
  os.setpgrp()
  for s in SIGNALS:
    signal.signal(s, signal.SIG_IGN)  # discards a signal pending since start-up
  signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
  signal.signal(signal.SIGTERM, signal.SIG_DFL)
  where = {"env_id": None}
  try:
    _Executor(spec, inbox, state, ctrl, where).run()
  except BaseException as e:  # pylint: disable=broad-except
    msg = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
    try:
      ctrl.send(Failed(spec.index, where["env_id"], msg))
    except OSError:
      pass  # the controller has gone


class _Executor:

  def __init__(self, spec: ExecutorSpec, inbox, state, ctrl, where):
    self.spec, self.inbox, self.state, self.ctrl, self.where = spec, inbox, state, ctrl, where
    self.storages = Storages(spec.storage, create=False)
    self.noise = random.Random()  # step-time noise is unseeded: results must not depend on it
    self.agents = spec.storage.num_agents
    layout = spec.layout
    self.blocks = layout.blocks_of_executor(spec.index)
    self.block_envs = {b: list(range(layout.blocks[b][0], sum(layout.blocks[b])))
                       for b in self.blocks}
    self.block_rows = {b: layout.rows(b) for b in self.blocks}
    self.envs: Dict[int, Any] = {}
    self.last_obs: Dict[int, Any] = {}
    for e in spec.env_ids:
      where["env_id"] = e
      if spec.env_states is not None and e in spec.env_states:
        self.envs[e], self.last_obs[e] = pickle.loads(spec.env_states[e])
        continue
      env = envs.make_env(spec.env, spec.env_kwargs, train=True)
      obs, _ = env.reset(seed=seeding.env_seed(spec.seed, e))
      if spec.decorrelate_steps:
        obs = _decorrelate(env, obs, spec.decorrelate_steps,
                           seeding.decorrelation_seed(spec.seed, e))
      self.envs[e], self.last_obs[e] = env, obs
    where["env_id"] = None

  def run(self) -> None:
    spec = self.spec
    segment = spec.first_segment
    t = {b: 0 for b in self.blocks}
    self._new_report()
    finished = 0
    self.ctrl.send(Started(spec.index))
    while True:
      t0 = time.perf_counter()
      records = self.inbox.read()
      waited = time.perf_counter() - t0
      if records is None:
        break  # the controller has gone
      codes = records[:, 0]
      if (codes == buffers.STOP).any():
        break
      if codes[0] < 0:  # GO and SAVE come alone: the executor is at the barrier
        code, arg = int(codes[0]), int(records[0, 1])
        self.idle_barrier += waited
        if code == buffers.SAVE:
          self.ctrl.send(EnvStates(spec.index, *_pickle_envs(self.envs, self.last_obs)))
        elif code == buffers.GO:
          segment = arg
          self._start_segment(segment, t)
        continue
      self.idle_actions += waited
      t_busy = time.perf_counter()
      st = self.storages.filling(segment)
      ready = []
      for b in codes.tolist():
        self._step_block(st, b, t[b])
        t[b] += 1
        if t[b] < spec.alpha:
          ready.append(b)
        else:
          finished += 1
      self.busy += time.perf_counter() - t_busy
      if ready:
        self.state.post(ready, segment, [t[b] for b in ready])
      if finished == len(self.blocks):
        finished = 0
        self.ctrl.send(Done(spec.index, segment, self.returns, self.lengths, self.idle_actions,
                            self.idle_barrier, self.busy))
        self._new_report()
    for env in self.envs.values():
      env.close()
    self.storages.close()

  def _new_report(self) -> None:
    self.returns: Dict[int, List[float]] = {e: [] for e in self.spec.env_ids}
    self.lengths: Dict[int, List[int]] = {e: [] for e in self.spec.env_ids}
    self.idle_actions = self.idle_barrier = self.busy = 0.0

  def _start_segment(self, segment: int, t: Dict[int, int]) -> None:
    st = self.storages.filling(segment)
    a = self.agents
    for b in self.blocks:
      t[b] = 0
      dst = st.obs[0, self.block_rows[b]]
      for i, e in enumerate(self.block_envs[b]):
        dst[i * a:(i + 1) * a] = np.reshape(self.last_obs[e], dst.shape[1:] if a == 1 else
                                            (a,) + dst.shape[1:])
    self.state.post(self.blocks, segment, [0] * len(self.blocks))

  def _step_block(self, st, b: int, step: int) -> None:
    """Steps the block's envs with the actions at [step, rows]; writes step+1's data."""
    spec, a = self.spec, self.agents
    rows = self.block_rows[b]
    actions = st.actions[step, rows]
    rewards = st.rewards[step, rows]
    dones = st.dones[step, rows]
    next_obs = st.obs[step + 1, rows]
    for i, e in enumerate(self.block_envs[b]):
      self.where["env_id"] = e
      act = int(actions[i]) if a == 1 else actions[i * a:(i + 1) * a].tolist()
      obs, reward, terminated, truncated, info = self.envs[e].step(act)
      if spec.delay_s or spec.jitter_s:
        time.sleep(spec.delay_s + self.noise.uniform(0.0, spec.jitter_s))
      if "episode_return" in info:  # raw score of a finished episode (a whole game on Atari)
        self.returns[e].append(float(info["episode_return"]))
        self.lengths[e].append(int(info["episode_length"]))
      done = terminated or truncated
      if done:
        obs, _ = self.envs[e].reset()
      if a == 1:
        rewards[i], dones[i], next_obs[i] = reward, done, obs
      else:
        rewards[i * a:(i + 1) * a] = np.reshape(reward, a)
        dones[i * a:(i + 1) * a] = float(done)
        next_obs[i * a:(i + 1) * a] = np.reshape(obs, (a,) + next_obs.shape[1:])
      self.last_obs[e] = obs
    self.where["env_id"] = None


def _pickle_envs(envs_by_id, last_obs):
  """({env_id: pickled (env, last_obs)}, "") or (None, reason) if some env cannot be pickled."""
  try:
    return {e: pickle.dumps((env, last_obs[e])) for e, env in envs_by_id.items()}, ""
  except Exception as e:  # pylint: disable=broad-except
    return None, f"{type(e).__name__}: {e}"


def _decorrelate(env, obs, max_steps: int, seed: int):
  """Takes a random number in [0, max_steps] of uniform-random actions (Stooke & Abbeel 2018)."""
  rng = np.random.default_rng(seed)
  for _ in range(int(rng.integers(0, max_steps + 1))):
    obs, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
    if terminated or truncated:
      obs, _ = env.reset()
  return obs
