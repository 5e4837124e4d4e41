"""`--mode=sync`: synchronous A2C/PPO as in OpenAI baselines / Kostrikov's pytorch-a2c-ppo-acktr,
composed of the same parts as HTS: the envs (stepped in blocks by executor processes) step in
lockstep, with one batched inference per step for all of them on a fixed `[num_rows]` shape;
after `alpha` steps the learner updates while the rollout waits; no delayed gradient (policy lag
0). Deterministic like HTS. `--lagged_acting` acts with the params before the last update (lag
1): HTS's `--correction=none` through this loop, the same bits, a control that isolates HTS's lag
from its runtime. `--alternating_groups` alternates two groups of envs per executor
(Stooke & Abbeel 2018, Section 4.1): one steps while the other's inference runs. With
`--envpool` the envpool groups of the HTS fast path collect the segment instead (same env engine
as HTS-with-envpool; `--num_actors=1` is one lockstep pool).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List

from hts_jax import choices
from hts_jax.runtime.sampler import ParamsBox
from hts_jax.runtime.buffers import Done
from hts_jax.runtime.controller import Controller
from hts_jax.runtime.loops.envpool_group import start_envpool_groups
from hts_jax.runtime.assembly import Mode, Parts, Shape

Rollout = Callable[[int], List[Done]]  # segment -> the executors' reports


def _policy_rows(shape: Shape) -> int:
  return shape.num_rows


def _published(parts: Parts):
  """The params the next segment acts with and their version: θ_j, or with --lagged_acting
  θ_{j-1} (the learner state's `behaviour_params`; θ_0 for the first segment), what HTS
  publishes at the same boundary (and so evaluates there)."""
  learner = parts.learner
  if not parts.config.sync.lagged_acting:
    return learner.version, learner.state.params
  return max(learner.version - 1, 0), learner.state.behaviour_params


def _acting(parts: Parts):
  """`_published` on the actor devices."""
  version, params = _published(parts)
  return version, parts.actor_params(params)


def _groups(parts: Parts) -> List[List[int]]:
  """The blocks stepped together: all of them, or with --alternating_groups each executor's
  first block (group 0) and second block (group 1)."""
  layout = parts.shape.layout
  if not parts.config.sync.alternating_groups:
    return [list(range(len(layout.blocks)))]
  per = [layout.blocks_of_executor(k) for k in range(layout.num_executors)]
  return [[b[g] for b in per] for g in (0, 1)]


def _executor_rollout(parts: Parts, ctl: Controller) -> Rollout:
  """Executor processes in lockstep (`Sampler.lockstep`): per step and group, wait for every
  block of the group (the slowest env decides), then one batched inference for all of them. With
  two groups (Stooke & Abbeel's alternation) one group's envs step while the other's actions are
  computed; each call keeps the [num_rows] shape (the other group's rows computed and ignored),
  so a row's action has the same bits as in plain sync."""
  ctl.spawn_executors()
  sampler = ctl.executor_sampler()
  groups = _groups(parts)

  def rollout(seg: int) -> List[Done]:
    acting = _acting(parts)  # copied to the actor devices once
    ctl.go(seg)
    sampler.lockstep(seg, groups, lambda: acting)
    return ctl.wait_done(seg)

  # The rollout's policy calls run on a thread of their own, so that the main thread keeps
  # running the watchdog while they do (one hand-over per segment, not per call).
  actor = ctl.watched_thread("actor-0")
  return lambda seg: actor.call(rollout, seg)


def _envpool_rollout(parts: Parts, ctl: Controller) -> Rollout:
  """`--envpool`: envpool groups (one per actor, `envpool_group.py`) step `alpha` steps with the
  params published at the boundary, each group in lockstep over its envs."""
  params = ParamsBox(*_acting(parts))
  start_envpool_groups(parts, ctl, params)

  def rollout(seg: int) -> List[Done]:
    params.publish(*_acting(parts))
    ctl.go(seg)
    return ctl.wait_done(seg)

  return rollout


def run_sync(parts: Parts, ctl: Controller) -> Dict[str, Any]:
  cfg = parts.config
  rollout = (_envpool_rollout if cfg.rollout.envpool else _executor_rollout)(parts, ctl)
  ctl.start_learner(count_idle=False)  # the rollout's time is the learner's idle time
  first, n_seg, per_seg = ctl.first_segment, cfg.rollout.num_segments, cfg.rollout.steps_per_segment
  ctl.wait_started()
  ctl.start_clock()
  steps = first * per_seg
  for seg in range(first, n_seg):
    t_roll, cpu_0 = time.perf_counter(), ctl.cpu_s()
    reports = rollout(seg)
    # The learner waits for the whole rollout, then learns while the envs wait (lag 0: the params
    # that acted are the ones updated; with --lagged_acting the next segment acts with the params
    # before this update, as HTS's does).
    steps = (seg + 1) * per_seg
    ctl.learn_serially(seg, reports, time.perf_counter() - t_roll, cpu_0, steps)
    if ctl.boundary(seg, steps, _published(parts)[1], learned=True):
      break
  return ctl.finish(steps)


MODE = Mode(choices.SYNC, policy_rows=_policy_rows, loop=run_sync)
