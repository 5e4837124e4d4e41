"""The envpool fast path for Atari (`--envpool`): envpool's C++ thread pool plays the executors.

envpool's `recv()` always waits for a full `batch_size` of envs, so one asynchronous pool would
deadlock at the end of a segment, when fewer envs than a batch are still stepping. Instead each
actor thread drives its own envpool instance over a fixed group of env ids (`num_envs /
num_actors` envs, stepped in parallel by envpool's threads): groups run asynchronously to each
other, rollout still overlaps learning, and the storages, learner and controller are the same.

Determinism: envpool seeds env i of a pool with `seed + i`, so group g gets
`base + g * group_size` and every env's seed is `base + env_id` whatever the grouping (checked by
tests). Actions are keyed by (row, global step) and computed on the fixed `[num_envs, ...]` policy
shape with each env at its own row, so the result does not depend on `--num_actors`.

Differences from the ale-py executors: envpool's own Atari pipeline (same protocol: 30 no-ops,
frame skip 4 with max-pooling, 84x84 grayscale, 4 stacked frames, episodic life, reward clipping)
and its auto-reset convention: after an episode ends, the env's next step is a reset (its action is
ignored, reward 0). Env states cannot be checkpointed: a resumed run restarts envpool envs.
"""

from __future__ import annotations

import queue
import time
from typing import Any, Callable, Dict, List

import numpy as np

from hts_jax import seeding


class EnvpoolGroup:
  """One actor thread + one envpool instance for env ids [index*m, (index+1)*m)."""

  def __init__(self, index: int, group_size: int, game: str, env_kwargs: Dict[str, Any],
               seed: int, alpha: int, num_threads: int, storages, policy, streams: np.ndarray,
               get_params: Callable, ctrl_q, first_segment: int):
    self.index, self.m, self.alpha = index, group_size, alpha
    self.env_ids = np.arange(index * group_size, (index + 1) * group_size)
    self.storages, self.policy, self.get_params = storages, policy, get_params
    self.ctrl_q = ctrl_q
    self.inbox: "queue.Queue" = queue.Queue()
    self.first_segment = first_segment
    self.streams = streams
    import envpool  # pylint: disable=import-outside-toplevel
    # The same env_kwargs as the ale-py path (validated there), in envpool's names.
    kw = dict(env_kwargs)
    extra = {}
    if "max_num_frames_per_episode" in kw:
      extra["max_episode_steps"] = int(kw["max_num_frames_per_episode"]) // 4
    self.pool = envpool.make(
        f"{game}-v5", env_type="gymnasium", num_envs=group_size, batch_size=group_size,
        num_threads=num_threads, seed=seeding.envpool_base_seed(seed) + index * group_size,
        episodic_life=True, reward_clip=True, noop_max=kw.get("noop_max", 30),
        stack_num=kw.get("frame_stack", 4), img_height=84, img_width=84, frame_skip=4,
        repeat_action_probability=0.25 if kw.get("sticky", False) else 0.0, **extra)

  def run(self) -> None:
    st_obs_shape = self.storages.spec.obs_shape
    rows = self.env_ids
    obs_buf = np.zeros((self.storages.spec.num_rows,) + tuple(st_obs_shape),
                       self.storages.spec.obs_dtype)
    seeds = np.zeros((self.storages.spec.num_rows, 2), np.uint32)
    seeds[:, 0] = self.streams
    returns: Dict[int, List[float]] = {int(e): [] for e in rows}
    lengths: Dict[int, List[int]] = {int(e): [] for e in rows}
    ep_return = np.zeros(self.m)
    ep_length = np.zeros(self.m, np.int64)
    segment = self.first_segment
    self.pool.async_reset()
    obs, _, _, _, info = self.pool.recv()
    last_obs = np.empty((self.m,) + tuple(st_obs_shape), obs.dtype)
    last_obs[info["env_id"]] = np.moveaxis(obs, 1, -1)  # [k, 84, 84] -> [84, 84, k]
    idle_barrier = 0.0
    try:
      while True:
        st = self.storages[segment % 2]
        st.obs[0, rows] = last_obs
        busy = 0.0
        for t in range(self.alpha):
          version, params = self.get_params()
          obs_buf[rows] = st.obs[t, rows]
          seeds[rows, 1] = segment * self.alpha + t
          actions = self.policy.run_actions(params, obs_buf, seeds)[rows]
          st.actions[t, rows] = actions
          st.version[t, rows] = version
          t0 = time.perf_counter()
          self.pool.send(actions, np.arange(self.m))
          obs, reward, terminated, truncated, info = self.pool.recv()
          busy += time.perf_counter() - t0
          local = info["env_id"]
          g_rows = rows[local]
          done = np.logical_or(terminated, truncated)
          st.rewards[t, g_rows] = reward
          st.dones[t, g_rows] = done
          frames = np.moveaxis(obs, 1, -1)
          st.obs[t + 1, g_rows] = frames
          last_obs[local] = frames
          ep_return[local] += info["reward"]  # raw score
          ep_length[local] += 1
          game_over = np.logical_or(info["terminated"].astype(bool), truncated)
          for i in np.flatnonzero(game_over):
            e = int(rows[local[i]])
            returns[e].append(float(ep_return[local[i]]))
            lengths[e].append(int(ep_length[local[i]]))
            ep_return[local[i]], ep_length[local[i]] = 0.0, 0
        self.ctrl_q.put(("done", self.index, segment, returns, lengths, 0.0, idle_barrier, busy))
        returns = {int(e): [] for e in rows}
        lengths = {int(e): [] for e in rows}
        idle_barrier = 0.0
        while True:  # the barrier
          t0 = time.perf_counter()
          msg = self.inbox.get()
          idle_barrier += time.perf_counter() - t0
          if msg is None:
            return
          if msg[0] == "save":
            self.ctrl_q.put(("state", self.index, None, "envpool env states cannot be saved"))
            continue
          segment = msg[1]
          break
    finally:
      self.pool.close()
