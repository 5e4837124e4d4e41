"""The envpool fast path (`--envpool`) for Atari and MuJoCo: envpool's C++ thread pool plays the
executors.

envpool's `recv()` always waits for a full `batch_size` of envs, so one asynchronous pool would
deadlock at the end of a segment, when fewer envs than a batch are still stepping. Instead each
actor thread drives its own envpool instance over a fixed group of env ids (`num_envs /
num_actors` envs, stepped in parallel by envpool's threads): groups run asynchronously to each
other, rollout still overlaps learning, and the storages, learner and controller are the same.

Determinism: envpool seeds env i of a pool with `seed + i`, so group g gets
`base + g * group_size` and every env's seed is `base + env_id` whatever the grouping (checked by
tests). Actions are keyed by (row, global step) and computed in fixed-shape policy calls (the
actor batch), so the result does not depend on `--num_actors`.

Differences from the ale-py executors: envpool's own Atari pipeline (same protocol: 30 no-ops,
frame skip 4 with max-pooling, 84x84 grayscale, 4 stacked frames, episodic life, reward clipping)
and its auto-reset convention: after an episode ends (a lost life included), the env's next step
is a reset (its action is ignored, reward 0, `elapsed_step` does not advance). That step is stored
with `valid` 0: every loss leaves it out and episode lengths do not count it
(`tests/unit/test_atari_envs.py` checks this against envpool's own counters and the ale-py path). Env
states cannot be checkpointed: a resumed run restarts envpool envs.

MuJoCo (`HalfCheetah-v5`, ...): envpool's port of gymnasium's tasks, the same auto-reset
convention, raw rewards and observations as they come; continuous actions are clipped to the
space's bounds before the pool steps (the storage keeps the unclipped sample), as
`envs.wrappers.ClipAction` does on the executors' path.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

import numpy as np

from hts_jax import seeding
from hts_jax.runtime import buffers
from hts_jax.runtime.sampler import ActingParts, ActorStats, BlockBatcher, ParamsBox, Sampler
from hts_jax.runtime.buffers import Done, EnvStates, Started
from hts_jax.runtime.storage import carry_core, reset_core

if TYPE_CHECKING:
  from hts_jax.runtime.controller import Controller
  from hts_jax.runtime.assembly import Parts


def make_pool(cfg, index: int, m: int):
  """The envpool instance of group `index` (`m` envs, seeds `base + index * m + i`)."""
  import envpool  # pylint: disable=import-outside-toplevel
  threads = max(1, cfg.rollout.num_executors // cfg.rollout.num_actors)
  seed = seeding.envpool_base_seed(cfg.rollout.seed) + index * m
  if not is_atari(cfg.rollout.env):  # a MuJoCo id (choices.ENVPOOL_MUJOCO)
    return envpool.make(cfg.rollout.env, env_type="gymnasium", num_envs=m, batch_size=m,
                        num_threads=threads, seed=seed, **cfg.rollout.env_kwargs)
  # The same env_kwargs as the ale-py path (validated there), in envpool's names.
  kw = dict(cfg.rollout.env_kwargs)
  extra = {}
  if "max_num_frames_per_episode" in kw:
    extra["max_episode_steps"] = int(kw["max_num_frames_per_episode"]) // 4
  return envpool.make(
      f"{cfg.rollout.env.split(':', 1)[1]}-v5", env_type="gymnasium", num_envs=m, batch_size=m,
      num_threads=threads, seed=seed, episodic_life=True, reward_clip=True,
      noop_max=kw.get("noop_max", 30),
      stack_num=kw.get("frame_stack", 4), img_height=84, img_width=84, frame_skip=4,
      repeat_action_probability=0.25 if kw.get("sticky", False) else 0.0, **extra)


def is_atari(env: str) -> bool:
  return env.startswith("atari:")


class StepRecorder:
  """Writes envpool's step results for the envs with global ids `env_ids` into a storage and
  keeps their episode books.

  envpool resets an env on its step *after* an episode ends: that step ignores its action, pays 0
  and does not count (`elapsed_step` stays). It is stored (the layout is fixed) with `valid` 0,
  so no loss learns from it and no episode's length counts it.
  """

  def __init__(self, env_ids: np.ndarray, atari: bool = True):
    self.rows, self.atari = env_ids, atari
    m = len(env_ids)
    self.last_obs: Optional[np.ndarray] = None
    self.after_done = np.zeros(m, bool)
    self.ep_return = np.zeros(m)
    self.ep_length = np.zeros(m, np.int64)
    self.new_report()

  def new_report(self) -> None:
    self.returns: Dict[int, List[float]] = {int(e): [] for e in self.rows}
    self.lengths: Dict[int, List[int]] = {int(e): [] for e in self.rows}

  def reset(self, obs, info) -> None:
    """Takes the observations of the pool's first reset."""
    obs = self._obs(obs)
    self.last_obs = np.empty((len(self.rows),) + obs.shape[1:], obs.dtype)
    self.last_obs[info["env_id"]] = obs

  def _obs(self, obs):
    return np.moveaxis(obs, 1, -1) if self.atari else obs  # Atari: [k, 84, 84] -> [84, 84, k]

  def record(self, st, t: int, obs, reward, terminated, truncated, info) -> None:
    """Writes step `t`'s results (`recv()`'s) into storage `st` and the episode books."""
    local = info["env_id"]
    g_rows = self.rows[local]
    real = ~self.after_done[local]
    done = np.logical_or(terminated, truncated)
    self.after_done[local] = done
    st.rewards[t, g_rows] = reward
    st.dones[t, g_rows] = done
    st.valid[t, g_rows] = real
    cut = np.logical_and(truncated, ~np.asarray(terminated, bool))
    st.truncated[t, g_rows] = cut
    frames = self._obs(obs)
    st.obs[t + 1, g_rows] = frames
    if st.final_obs is not None and cut.any():  # envpool's obs at a cut is the episode's last
      st.final_obs[t, g_rows[cut]] = frames[cut]
    self.last_obs[local] = frames
    self.ep_return[local] += info["reward"] if self.atari else reward  # the raw score
    self.ep_length[local] += real
    # Atari: a game ends with its last life (envpool's `terminated` info), not a lost life.
    game_over = np.logical_or(info["terminated"].astype(bool) if self.atari else terminated,
                              truncated)
    for i in np.flatnonzero(game_over):
      j = local[i]
      self.returns[int(self.rows[j])].append(float(self.ep_return[j]))
      self.lengths[int(self.rows[j])].append(int(self.ep_length[j]))
      self.ep_return[j], self.ep_length[j] = 0.0, 0


class EnvpoolEnvs:
  """An envpool instance as a sampler's env side (`sampler.Envs`), stepped in the sampler's own
  thread: its blocks' records of step t are ready once the pool has stepped t - 1 (step 0's at
  `start`), and the pool steps once every block's actions of the step are posted."""

  def __init__(self, pool, recorder: StepRecorder, blocks, alpha: int):
    self.pool, self.recorder, self.blocks, self.alpha = pool, recorder, list(blocks), alpha
    self.rows = recorder.rows
    space = pool.action_space
    self.bounds = (space.low, space.high) if hasattr(space, "low") else None
    self.ids = np.arange(len(self.rows))
    self.st, self.segment, self.posted = None, 0, 0
    self.pending: List[List[int]] = []
    self.busy = 0.0  # seconds stepping the pool this segment

  def start(self, segment: int, st) -> None:
    """Segment `segment` in storage `st`: its first observations are there."""
    self.st, self.segment, self.posted, self.busy = st, segment, 0, 0.0
    self.pending = [[b, segment, 0] for b in self.blocks]

  def ready(self, timeout: float) -> bool:
    return bool(self.pending)

  def read(self) -> np.ndarray:
    out, self.pending = np.array(self.pending, np.int32), []
    return out

  def post(self, group) -> None:
    self.posted += len(group)
    if self.posted < len(self.blocks):
      return
    self.posted = 0
    st, rows, t = self.st, self.rows, group[0][2]
    t0 = time.perf_counter()
    actions = st.actions[t, rows]
    if self.bounds is not None:  # continuous: the env sees the clipped sample
      actions = np.clip(actions, *self.bounds)
    self.pool.send(actions, self.ids)
    out = self.pool.recv()
    self.busy += time.perf_counter() - t0
    self.recorder.record(st, t, *out)
    reset_core(st, t, rows)
    if t + 1 < self.alpha:
      self.pending = [[b, self.segment, t + 1] for b in self.blocks]


class EnvpoolGroup:
  """One thread + one envpool instance for env ids [index*m, (index+1)*m): the executor of group
  `index` in `acting.layout`, its blocks' policy calls made in lockstep by a `Sampler` over the
  pool (`EnvpoolEnvs`), packed like an HTS actor's."""

  def __init__(self, index: int, cfg, acting: ActingParts, batcher: BlockBatcher,
               filling: Callable[[int], Any], inbox: buffers.ActionBuffer, ctrl,
               params: ParamsBox, stats: ActorStats):
    self.index, self.alpha = index, acting.alpha
    layout = acting.layout
    self.m = layout.envs_per_executor
    self.env_ids = np.arange(index * self.m, (index + 1) * self.m)
    self.blocks = layout.blocks_of_executor(index)
    # `filling(segment)`: the storage it collects `segment` in; `batcher` writes there too.
    self.filling, self.batcher, self.params, self.stats = filling, batcher, params, stats
    self.inbox, self.ctrl = inbox, ctrl  # its action buffer, its control channel's writer
    self.pool = make_pool(cfg, index, self.m)
    self.atari = is_atari(cfg.rollout.env)

  def run(self) -> None:
    rows = self.env_ids
    rec = StepRecorder(rows, self.atari)
    envs = EnvpoolEnvs(self.pool, rec, self.blocks, self.alpha)
    sampler = Sampler(self.batcher, envs, self.stats)
    self.pool.async_reset()
    obs, _, _, _, info = self.pool.recv()
    rec.reset(obs, info)
    self.ctrl.send(Started(self.index))
    reader = self.inbox.reader
    idle_barrier = 0.0
    try:
      while True:  # the barrier
        t0 = time.perf_counter()
        msg = reader.read()
        idle_barrier += time.perf_counter() - t0
        if msg is None or msg[0, 0] == buffers.STOP:
          return
        if msg[0, 0] == buffers.SAVE:
          self.ctrl.send(EnvStates(self.index, None, "envpool env states cannot be saved"))
          continue
        segment = int(msg[0, 1])
        st = self.filling(segment)
        st.obs[0, rows] = rec.last_obs
        carry_core(self.filling(segment - 1), st, rows)
        envs.start(segment, st)
        sampler.lockstep(segment, [self.blocks], lambda: self.params.current)
        self.ctrl.send(Done(self.index, segment, rec.returns, rec.lengths, 0.0, idle_barrier,
                            envs.busy))
        rec.new_report()
        idle_barrier = 0.0
    finally:
      self.pool.close()


def start_envpool_groups(parts: Parts, ctl: "Controller", params: ParamsBox) -> None:
  """One envpool group thread per actor, registered as the run's executors (their action
  buffers and control channels)."""
  inboxes = [buffers.ActionBuffer() for _ in range(parts.config.rollout.num_actors)]
  for g, ctrl in enumerate(ctl.add_executors(inboxes)):
    group = EnvpoolGroup(g, parts.config, parts.acting, ctl.batcher(), ctl.filling, inboxes[g],
                         ctrl, params, ctl.new_actor_stats())
    ctl.start_thread(group.run, f"envpool-{g}")
