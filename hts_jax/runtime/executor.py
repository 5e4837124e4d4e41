"""Executor processes (paper Section 4.1): each owns env replicas with global env ids.

An executor blocks (no spinning) on its inbox until actors have written actions for some of its
envs into the current storage, steps those envs, writes `(reward, done, next obs)` at
`[t, env_id]`, and posts the envs that are ready again to the state buffer (the shared ready
queue). After `alpha` steps of every env it reports to the controller and waits at the barrier for
`("go", segment)`. This module imports no JAX: executors are spawned processes.

Messages
  inbox (per executor):  [env_id, ...]           actions for these envs (all their agent rows) are
                                                 in storage.actions
                         ("go", segment)         start the next segment (storage segment % 2)
                         ("save",)               at the barrier: send the envs' states
                         None                    stop
  ready queue (shared):  (segment, [(env_id, t), ...])   obs[t, env_id] is ready for an actor
  control queue:         ("started", index)     envs created; waiting for ("go", first segment)
                         ("done", index, segment, returns, lengths, idle_action_s, idle_barrier_s,
                          busy_s)
                         ("state", index, {env_id: bytes} or None, reason)
                         ("error", index, env_id, "ExcType: message")

Executors ignore SIGINT/SIGTERM (the controller turns them into a checkpoint and a clean stop, and
ends executors itself) and exit by themselves if the controller process disappears.
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
from hts_jax.runtime.storage import Storages, StorageSpec


@dataclasses.dataclass(frozen=True)
class ExecutorSpec:
  index: int
  env_ids: List[int]
  env: str
  env_kwargs: Dict[str, Any]
  seed: int
  alpha: int
  storage: StorageSpec
  delay_s: float = 0.0
  jitter_s: float = 0.0
  decorrelate_steps: int = 0
  first_segment: int = 0
  # {env_id: pickled (env, last_obs)} to resume from a checkpoint instead of fresh resets.
  env_states: Optional[Dict[int, bytes]] = None

_PARENT_CHECK_S = 1.0


def executor_main(spec: ExecutorSpec, ready_q, inbox, ctrl_q) -> None:
  """Process entry point. Any exception is reported to the controller as one line."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  signal.signal(signal.SIGTERM, signal.SIG_IGN)
  state = {"env_id": None}
  try:
    _run(spec, ready_q, inbox, ctrl_q, state)
  except KeyboardInterrupt:
    pass  # the controller handles SIGINT and tells executors to stop
  except BaseException as e:  # pylint: disable=broad-except
    msg = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
    ctrl_q.put(("error", spec.index, state["env_id"], msg))


def _run(spec: ExecutorSpec, ready_q, inbox, ctrl_q, state) -> None:
  storages = Storages(spec.storage, create=False)
  # Step-time noise is deliberately unseeded: determinism must not depend on timing.
  noise = random.Random()
  envs_by_id = {}
  last_obs: Dict[int, np.ndarray] = {}
  for e in spec.env_ids:
    state["env_id"] = e
    if spec.env_states is not None and e in spec.env_states:
      envs_by_id[e], last_obs[e] = pickle.loads(spec.env_states[e])
      continue
    env = envs.make_env(spec.env, spec.env_kwargs, train=True)
    obs, _ = env.reset(seed=seeding.env_seed(spec.seed, e))
    if spec.decorrelate_steps:
      obs = _decorrelate(env, obs, spec.decorrelate_steps, seeding.decorrelation_seed(spec.seed, e))
    envs_by_id[e] = env
    last_obs[e] = obs
  state["env_id"] = None
  parent = os.getppid()

  def receive():
    # Block on the inbox, but give up if the controller died without saying goodbye.
    while not inbox._reader.poll(_PARENT_CHECK_S):  # pylint: disable=protected-access
      if os.getppid() != parent:
        return None
    return inbox.get()

  segment = spec.first_segment
  t = {e: 0 for e in spec.env_ids}
  returns: Dict[int, List[float]] = {e: [] for e in spec.env_ids}
  lengths: Dict[int, List[int]] = {e: [] for e in spec.env_ids}
  idle_action = idle_barrier = busy = 0.0

  agents = spec.storage.num_agents
  rows = {e: slice(e * agents, (e + 1) * agents) for e in spec.env_ids}
  obs_shape = (agents,) + tuple(spec.storage.obs_shape)

  def start_segment():
    st = storages[segment % 2]
    for e in spec.env_ids:
      st.obs[0, rows[e]] = np.reshape(last_obs[e], obs_shape)
      t[e] = 0
    ready_q.put((segment, [(e, 0) for e in spec.env_ids]))

  # Wait at the barrier until the controller has seen every executor start (its clock starts then).
  ctrl_q.put(("started", spec.index))
  finished = 0
  while True:
    t0 = time.perf_counter()
    msg = receive()
    waited = time.perf_counter() - t0
    if msg is None:
      break
    if isinstance(msg, tuple) and msg[0] == "save":
      idle_barrier += waited
      ctrl_q.put(("state", spec.index) + _pickle_envs(envs_by_id, last_obs))
      continue
    if isinstance(msg, tuple):  # ("go", segment): leave the barrier
      idle_barrier += waited
      segment = msg[1]
      start_segment()
      continue
    idle_action += waited
    st = storages[segment % 2]
    ready = []
    t_busy = time.perf_counter()
    for e in msg:
      state["env_id"] = e
      step = t[e]
      actions = st.actions[step, rows[e]]
      obs, reward, terminated, truncated, info = envs_by_id[e].step(
          int(actions[0]) if agents == 1 else actions.tolist())
      if spec.delay_s or spec.jitter_s:
        time.sleep(spec.delay_s + noise.uniform(0.0, spec.jitter_s))
      if "episode_return" in info:  # raw score of a finished episode (a whole game on Atari)
        returns[e].append(float(info["episode_return"]))
        lengths[e].append(int(info["episode_length"]))
      done = terminated or truncated
      if done:
        obs, _ = envs_by_id[e].reset()
      st.rewards[step, rows[e]] = np.reshape(reward, agents)
      st.dones[step, rows[e]] = float(done)
      st.obs[step + 1, rows[e]] = np.reshape(obs, obs_shape)
      last_obs[e] = obs
      t[e] = step + 1
      if t[e] < spec.alpha:
        ready.append((e, t[e]))
      else:
        finished += 1
    state["env_id"] = None
    busy += time.perf_counter() - t_busy
    if ready:
      ready_q.put((segment, ready))
    if finished == len(spec.env_ids):
      ctrl_q.put(("done", spec.index, segment, returns, lengths, idle_action, idle_barrier, busy))
      returns = {e: [] for e in spec.env_ids}
      lengths = {e: [] for e in spec.env_ids}
      idle_action = idle_barrier = busy = 0.0
      finished = 0
  for env in envs_by_id.values():
    env.close()
  storages.close()


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
