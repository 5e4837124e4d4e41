"""`--mode=sync`: synchronous A2C/PPO as in OpenAI baselines / Kostrikov's pytorch-a2c-ppo-acktr,
composed of the same parts as HTS: the envs (stepped in blocks by executor processes) step in
lockstep, with one batched inference per step for all of them on a fixed `[num_rows]` shape;
after `alpha` steps the learner updates while the rollout waits; no delayed gradient (policy lag
0). Deterministic like HTS.
"""

from __future__ import annotations

import time
from typing import Any, Dict

import numpy as np

from hts_jax.runtime import reporting, supervisor
from hts_jax.runtime.actor import ActorStats, BlockBatcher
from hts_jax.runtime.runner import Mode


def _policy_rows(runner) -> int:
  return runner.num_rows


def run_sync(runner, ctl) -> Dict[str, Any]:
  cfg, book, learner, sup = runner.config, ctl.book, runner.learner, ctl.supervisor
  ctl.spawn_executors()
  reader = ctl.state_buffers[0].reader
  layout = runner.layout
  num_blocks = len(layout.blocks)
  batcher = BlockBatcher(layout, ctl.storages, runner.policy, runner.streams, cfg.alpha,
                         runner.info.obs_shape, runner.info.obs_dtype, runner.policy_rows)
  stats = ActorStats()
  ctl.actor_stats.append(stats)
  first, n_seg, per_seg = ctl.first_segment, cfg.num_segments, cfg.steps_per_segment
  progress = reporting.Progress(n_seg * per_seg, cfg.log_every_s, "sync")
  ctl.wait_started()
  ctl.start_clock()
  steps = first * per_seg
  for seg in range(first, n_seg):
    ctl.go(seg)
    t_roll = time.perf_counter()
    for t in range(cfg.alpha):
      # Wait for every block (the slowest env decides), then one batched inference for all.
      t0 = time.perf_counter()
      got = []
      while sum(len(r) for r in got) < num_blocks:
        while not reader.ready(supervisor.POLL_S):
          sup.check()
        got.append(reader.read())
      records = np.concatenate(got)
      stats.idle_s += time.perf_counter() - t0
      if not (records[:, 1] == seg).all() or not (records[:, 2] == t).all():
        raise RuntimeError(f"lockstep broken at segment {seg}, step {t}: {records.tolist()}")
      records = records[np.argsort(records[:, 0])]
      stats.ready_rows += batcher.act(records, learner.version, learner.state.params)
      stats.calls += 1
      batcher.post(records.tolist(), [ib.writer for ib in ctl.inboxes])
    recent = book.record_done(ctl.wait_done(seg))
    rollout = time.perf_counter() - t_roll
    book.rollout_s += rollout
    book.learner_idle += rollout  # the learner waits for the whole rollout
    # Learning, while the envs wait (lag 0: the params that acted are the ones updated).
    steps = (seg + 1) * per_seg
    ctl.log_update(learner.learn_now(seg, ctl.storages.learning(seg)), recent, steps)
    stop = ctl.target_reached()
    if not stop:
      ctl.evaluate_if_due(steps, learner.state.params)
    ctl.checkpoint_if_due(seg, learned=True)
    ctl.progress(progress, steps)
    if stop:
      break
  return ctl.finish(steps, progress)


MODE = Mode(name="sync", policy_rows=_policy_rows, loop=run_sync, correction="none")
