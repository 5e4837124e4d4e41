r"""The planner's model (`hts-plan`): what each schedule costs per segment, from the run's stage
times, and so the SPS of sync, HTS at `--policy_lag=0` and HTS at `--policy_lag=1`. Pure (no JAX):
the stage times come from the probe (`hts_jax.runtime.probe`), from another machine's recorded
runs, or from a file.

Stages, per segment of S = alpha x num_envs env steps (seconds; CPU seconds are every process of
the run together, on C cores):

  R_h   the rollout under HTS's schedule (asynchronous executors and actors, one barrier per
        segment) with the learner idle; r_h its CPU seconds
  R_s   the rollout under sync's lockstep (every step waits for the slowest env, one batched
        policy call per step)
  U     one learner update, alone; u its CPU seconds
  b     what a boundary costs besides (publishing the params, bookkeeping, the decisions)

Over n segments (the paper's Section 4.1: batch synchronization makes R_h < R_s, concurrent
learning overlaps U with the next rollout):

  sync        n (R_s + U + b)
  HTS lag 0   n (R_h + U + b)                            the update between segments, as sync
  HTS lag 1   R_h + (n - 1) T + U + n b,  T = max(R_h', U')
              segment k+1 is collected while update k runs (the first rollout and the last update
              run alone). R_h' and U' are the rollout and the update *beside each other*, as the
              probe's lag-1 run times them: on a small CPU they slow each other down (the cores,
              and the main process's interpreter lock that actors and the learner's dispatch
              share), which CPU seconds alone do not tell (CartPole on 2 cores: the CPU seconds
              promised 1.33x lag 0's SPS, lag 1 ran at 0.83x). Where they were not measured, T is
              max(R_h, U, (r_h + u) / C): the CPU both need over the cores.

A run's first segment costs more than the others (the executors' and the actors' first steps, first
touches of the storages): a_h, a_s, its seconds above the median segment in the probe's lag-0 and
sync runs. The rollout means above leave it out (steady state), and a run of n segments pays it
once: a_s / n more per segment in sync, a_h / n in HTS at either lag (on these 2 cores a CartPole
run of 49 segments ran 10-17% below the probe's run of 477 segments).

Past the probe's machine (`Stages.scaled`), to first order: a learner N times faster divides U,
u and the slowdowns the learner and the rollout cause each other (R_h' - R_h, U' - U); env steps
k times faster shrink each rollout's env-stepping share (e_h, e_s: the executors' stepping
seconds per segment, over their number); C' cores shrink the part of each rollout that was
CPU-bound (its CPU seconds over C x its time), and the slowdowns, by C / C'.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Any, Dict, Optional, Sequence

MODES = ("sync", "lag_0", "lag_1")


@dataclasses.dataclass(frozen=True)
class Stages:
  """A run's stage costs per segment (the module doc); `executors` the env-stepping processes
  (their stepping seconds `env_h`, `env_s` are summed over them)."""
  steps_per_segment: int
  rollout_hts_s: float
  rollout_sync_s: float
  update_s: float
  rollout_cpu_s: float
  update_cpu_s: float
  cores: float
  boundary_s: float = 0.0
  env_hts_s: float = 0.0
  env_sync_s: float = 0.0
  executors: int = 1
  rollout_sync_cpu_s: float = 0.0
  rollout_beside_s: float = 0.0
  update_beside_s: float = 0.0
  start_hts_s: float = 0.0
  start_sync_s: float = 0.0

  @property
  def measured_beside(self) -> bool:
    return self.rollout_beside_s > 0 and self.update_beside_s > 0

  def overlap_s(self) -> float:
    """T, lag 1's segment with its rollout and update beside each other (the module doc)."""
    if self.measured_beside:
      return max(self.rollout_beside_s, self.update_beside_s)
    return max(self.rollout_hts_s, self.update_s,
               (self.rollout_cpu_s + self.update_cpu_s) / self.cores)

  def segment_s(self, mode: str, segments: Optional[int] = None) -> float:
    """The mean wall seconds per segment of `mode` over `segments` segments (None: steady
    state, as segments grow)."""
    if mode not in MODES:
      raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    start = self.start_sync_s if mode == "sync" else self.start_hts_s
    first = start / segments if segments else 0.0
    if mode == "sync":
      return self.rollout_sync_s + self.update_s + self.boundary_s + first
    if mode == "lag_0":
      return self.rollout_hts_s + self.update_s + self.boundary_s + first
    overlap = self.overlap_s()
    if segments is None:
      return overlap + self.boundary_s
    n = segments
    return (self.rollout_hts_s + (n - 1) * overlap + self.update_s) / n + self.boundary_s + first

  def sps(self, segments: Optional[int] = None) -> Dict[str, float]:
    """Predicted env steps per second of each schedule."""
    return {m: self.steps_per_segment / self.segment_s(m, segments) for m in MODES}

  def learner_share(self, mode: str, segments: Optional[int] = None) -> float:
    """The share of `mode`'s wall time the learner is busy (alone: U; beside the rollout at lag
    1, at least U)."""
    update = self.update_beside_s if mode == "lag_1" and self.measured_beside else self.update_s
    return update / self.segment_s(mode, segments)

  def bound(self, mode: str) -> str:
    """What bounds `mode`'s segment: the rollout, the learner, or (lag 1) the cores they share."""
    if mode in ("sync", "lag_0"):
      rollout = self.rollout_sync_s if mode == "sync" else self.rollout_hts_s
      return "rollout" if rollout >= self.update_s else "learner"
    if self.measured_beside:
      return "rollout" if self.rollout_beside_s >= self.update_beside_s else "learner"
    parts = {"rollout": self.rollout_hts_s, "learner": self.update_s,
             "cores": (self.rollout_cpu_s + self.update_cpu_s) / self.cores}
    return max(parts, key=parts.get)

  def scaled(self, cores: Optional[float] = None, learner_speedup: float = 1.0,
             env_speedup: float = 1.0) -> "Stages":
    """These stages on another machine, to first order (the module doc)."""
    env_h, env_s = self.env_hts_s / max(self.executors, 1), self.env_sync_s / max(self.executors, 1)
    roll_h = self.rollout_hts_s - env_h * (1 - 1 / env_speedup)
    roll_s = self.rollout_sync_s - env_s * (1 - 1 / env_speedup)
    cpu_h = self.rollout_cpu_s - self.env_hts_s * (1 - 1 / env_speedup)
    cpu_s = (self.rollout_sync_cpu_s or self.rollout_cpu_s) - self.env_sync_s * (1 - 1 / env_speedup)
    # The slowdowns the rollout and the learner cause each other, scaled with the learner.
    slow_r = max(self.rollout_beside_s - self.rollout_hts_s, 0.0) / learner_speedup
    slow_u = max(self.update_beside_s - self.update_s, 0.0) / learner_speedup
    if cores is not None and cores != self.cores:
      # The CPU-bound share q of a rollout (its CPU seconds over what C cores give in its time)
      # runs C / C' as long; the rest (latency: waits, the barrier) stays.
      q_h = min(1.0, cpu_h / (self.cores * roll_h)) if roll_h > 0 else 0.0
      roll_h *= (1 - q_h) + q_h * self.cores / cores
      q_s = min(1.0, cpu_s / (self.cores * roll_s)) if roll_s > 0 else 0.0
      roll_s *= (1 - q_s) + q_s * self.cores / cores
      slow_r, slow_u = slow_r * self.cores / cores, slow_u * self.cores / cores
    update = self.update_s / learner_speedup
    beside = self.measured_beside
    return dataclasses.replace(
        self, rollout_hts_s=roll_h, rollout_sync_s=roll_s, rollout_cpu_s=cpu_h,
        rollout_sync_cpu_s=cpu_s, update_s=update,
        update_cpu_s=self.update_cpu_s / learner_speedup,
        cores=self.cores if cores is None else cores, env_hts_s=self.env_hts_s / env_speedup,
        env_sync_s=self.env_sync_s / env_speedup,
        rollout_beside_s=roll_h + slow_r if beside else 0.0,
        update_beside_s=update + slow_u if beside else 0.0)

  def to_json(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


def first_segment_excess_s(walls: Sequence[float]) -> float:
  """A run's first segment's seconds above its median segment (0 if not above), from metrics.csv's
  `wall_time_s` per update (the clock starts at 0 before the first segment)."""
  steps = [b - a for a, b in zip([0.0, *walls], walls)]
  if len(steps) < 3:
    return 0.0
  return max(steps[0] - statistics.median(steps[1:]), 0.0)


def stages_of(lag_0: Dict[str, Any], sync: Dict[str, Any], cores: float,
              lag_1: Optional[Dict[str, Any]] = None) -> Stages:
  """The stage costs from a lag-0 HTS run's and a sync run's summary.json (the same flags; their
  rollouts and updates never overlap, so each is timed alone; U is both runs' mean: the same
  update, bit for bit), and from a lag-1 run's, if given, the rollout and the update beside each
  other. A summary's `first_segment_excess_s` (the probe adds it from metrics.csv) is its run's
  start, left out of the rollout means."""
  seg = lambda s: s["updates"] - (s.get("resumed_from_update") or 0)
  n0, ns = seg(lag_0), seg(sync)
  t0, ts = lag_0["timing"], sync["timing"]
  start_h, start_s = (s.get("first_segment_excess_s", 0.0) for s in (lag_0, sync))
  update = (t0["learn_s"] + ts["learn_s"]) / (n0 + ns)
  update_cpu = (t0["learn_cpu_s"] + ts["learn_cpu_s"]) / (n0 + ns)
  boundary = (lag_0["wall_time_s"] - t0["rollout_s"] - t0["learn_s"]) / n0
  return Stages(steps_per_segment=lag_0["alpha"] * lag_0["num_envs"],
                rollout_hts_s=(t0["rollout_s"] - start_h) / n0,
                rollout_sync_s=(ts["rollout_s"] - start_s) / ns,
                update_s=update, rollout_cpu_s=t0["rollout_cpu_s"] / n0, update_cpu_s=update_cpu,
                cores=cores, boundary_s=max(boundary, 0.0), env_hts_s=t0["env_busy_s"] / n0,
                env_sync_s=ts["env_busy_s"] / ns, executors=lag_0["num_executors"],
                rollout_sync_cpu_s=ts["rollout_cpu_s"] / ns,
                rollout_beside_s=((lag_1["timing"]["rollout_s"] - start_h) / seg(lag_1)
                                  if lag_1 else 0.0),
                update_beside_s=lag_1["timing"]["learn_s"] / seg(lag_1) if lag_1 else 0.0,
                start_hts_s=start_h, start_sync_s=start_s)


def time_to_target(sps: Dict[str, float], sync_steps: float,
                   hts_over_sync_steps: float) -> Dict[str, float]:
  """Seconds to a target for each schedule: sync and lag 0 take sync's env steps (lag 0 is
  sync's run), lag 1 takes `hts_over_sync_steps` times as many (measured in the grids)."""
  steps = {"sync": sync_steps, "lag_0": sync_steps, "lag_1": sync_steps * hts_over_sync_steps}
  return {m: steps[m] / sps[m] for m in MODES}


def recommend(sps: Dict[str, float], hts_over_sync_steps: Optional[float]) -> Dict[str, Any]:
  """The lag that reaches a score sooner: by time to target where the lag's sample cost is
  measured (`hts_over_sync_steps`), else by SPS alone (the same score is then not assured at
  lag 1); and whether lag 0's exactness costs little."""
  lag_1_relative = sps["lag_0"] / sps["lag_1"]  # lag 1's time per env step over lag 0's
  if hts_over_sync_steps is not None and math.isfinite(hts_over_sync_steps):
    lag_1_relative *= hts_over_sync_steps
    basis = "time to target (lag 1's measured sample cost)"
  else:
    basis = "SPS only (no measured sample cost for this env family)"
  lag = 0 if lag_1_relative >= 1.0 else 1
  return {"policy_lag": lag, "basis": basis,
          "lag_1_time_over_lag_0": lag_1_relative}
