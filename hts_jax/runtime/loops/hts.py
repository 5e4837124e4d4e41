"""The HTS-RL loop (paper Section 4.1, Fig. 1(e), Fig. 2(d)), composed of the runtime's parts.

  executors (processes) ──state buffer: (block, segment, t)──▶ actor threads (fixed-shape keyed
        ▲                                                      │  policy calls on ready blocks)
        └──────────── action buffers: block ids ◀──────────────┘  actions into storage[t, rows]
  storage filling(seg) (executors)          storage learning(seg - 1) (learner thread)

The controller swaps the storages when the executors have finished `alpha` steps per env *and*
the learner has finished its update, so the behaviour policy is exactly one update behind the
learner's target (lag 1; 0 for the very first segment, collected by θ_0 while the learner idles).
Segment k is collected by θ_{max(k-1, 0)} and learned with the delayed gradient at θ_{k-1}
applied to θ_k (with `--acting_extrapolation` β, collected by θ_{k-1} + β(θ_{k-1} − θ_{k-2}), a
prediction of θ_k; docs/modes.md).

`--policy_lag=0` keeps the rollout (asynchronous executors and actors, the alpha barrier) and
drops the overlap: at each barrier the learner updates on the segment just collected while the
executors wait, and segment k is collected by θ_k, as in sync. With the keys and the batch-invariant
policy rows above it is `--mode=sync`'s run bit for bit (batch synchronization without concurrent
learning; docs/modes.md).

Determinism: env ids are global; env seeds and action keys derive from (seed, env_id, step);
transitions are written at [t, row] (row = env_id * agents + agent); actor calls have one fixed
shape with every row's bits independent of its neighbours; the learner consumes whole storages;
every decision that changes the loop is taken at a boundary by the controller. Timing decides
nothing.
"""

from __future__ import annotations

import time
from typing import Any, Dict

import jax

from hts_jax import choices
from hts_jax.corrections import extrapolate
from hts_jax.runtime.sampler import ParamsBox
from hts_jax.runtime.controller import Controller
from hts_jax.runtime.loops.envpool_group import start_envpool_groups
from hts_jax.runtime.assembly import Mode, Parts, Shape


def _policy_rows(shape: Shape) -> int:
  return shape.layout.policy_rows


_extrapolate = jax.jit(extrapolate, static_argnums=2)


def _acting(parts: Parts):
  """What the next segment acts with, on the actor devices: θ_j, or with --acting_extrapolation
  β the prediction θ_j + β(θ_j − θ_{j-1}) of the params that will learn from it (computed from
  the learner state alone, so a resumed run publishes the same)."""
  state, beta = parts.learner.state, parts.config.learner.acting_extrapolation
  params = _extrapolate(state.params, state.behaviour_params, beta) if beta else state.params
  return parts.actor_params(params)


def run_hts(parts: Parts, ctl: Controller) -> Dict[str, Any]:
  cfg, learner = parts.config, parts.learner
  lag_0 = cfg.hts.policy_lag == 0
  params = ParamsBox(learner.version, _acting(parts))
  if parts.restored is not None and not ctl.restored_unlearned and not lag_0:
    # From a finished run's last checkpoint (its last segment learned): the next segment acts
    # with θ_{j-1}, as it did in a run that went on, so the resumed run is that run, bit for bit
    # (with --acting_extrapolation, θ_{j-1} unextrapolated: θ_{j-2} is not kept).
    params = ParamsBox(learner.version - 1, parts.actor_params(learner.state.behaviour_params))
  if cfg.rollout.envpool:
    start_envpool_groups(parts, ctl, params)
  else:
    ctl.spawn_executors()
    ctl.start_actors(params)
  # At lag 0 the loop books the learner's idle time itself: the rollouts it waits through.
  ctl.start_learner(count_idle=not lag_0)
  first, n_seg, per_seg = ctl.first_segment, cfg.rollout.num_segments, cfg.rollout.steps_per_segment
  ctl.wait_started()
  ctl.go(first)
  ctl.start_clock()  # the clock starts when every executor has created its envs
  if lag_0:
    return _run_lag_0(parts, ctl, params)
  pending = ctl.restored_unlearned
  if pending:
    ctl.submit(first - 1)
  # The first row (update 1) holds segments 0 and 1's returns; resumed from checkpoint 0, segment
  # 0's are in the restored book.
  recent = ctl.booked_returns() if pending and first == 1 else []
  last = first
  t_seg = time.perf_counter()
  for seg in range(first, n_seg):
    recent.extend(ctl.record_rollout(ctl.wait_done(seg), time.perf_counter() - t_seg))
    if pending:
      ctl.record_update(ctl.result(), recent, seg * per_seg)
      recent = []
    # The boundary: segment `seg` collected, the update on `seg - 1` done, nothing in flight.
    params.publish(learner.version, _acting(parts))
    # Evaluations are of θ_j (the published params unless they are a prediction).
    evaluated = (parts.actor_params(learner.state.params) if cfg.learner.acting_extrapolation
                 else params.current[1])
    stop = ctl.boundary(seg, (seg + 1) * per_seg, evaluated)
    # Swap: the executors go on in the other storage with θ_seg while the learner takes this one.
    t_seg = time.perf_counter()
    if seg + 1 < n_seg and not stop:
      ctl.go(seg + 1)
    ctl.submit(seg)
    pending, last = True, seg
    if stop:
      break
  steps = (last + 1) * per_seg
  ctl.record_update(ctl.result(), recent, steps)
  return ctl.finish(steps)


def _run_lag_0(parts: Parts, ctl: Controller, params: ParamsBox) -> Dict[str, Any]:
  """`--policy_lag=0` from the first GO on: sync's schedule (`loops/sync.py`: collect, update
  while the executors wait, publish, boundary) over HTS's rollout."""
  cfg, learner = parts.config, parts.learner
  first, n_seg, per_seg = ctl.first_segment, cfg.rollout.num_segments, cfg.rollout.steps_per_segment
  steps = first * per_seg
  t_seg, cpu_0 = time.perf_counter(), ctl.cpu_s()
  for seg in range(first, n_seg):
    # The learner waits for the whole rollout; then the executors wait for the update.
    reports = ctl.wait_done(seg)
    steps = (seg + 1) * per_seg
    ctl.learn_serially(seg, reports, time.perf_counter() - t_seg, cpu_0, steps)
    params.publish(learner.version, _acting(parts))  # θ_{seg+1} collects segment seg + 1
    if ctl.boundary(seg, steps, learner.state.params, learned=True) or seg + 1 == n_seg:
      break
    t_seg, cpu_0 = time.perf_counter(), ctl.cpu_s()
    ctl.go(seg + 1)
  return ctl.finish(steps)


MODE = Mode(choices.HTS, policy_rows=_policy_rows, loop=run_hts)
