"""`--mode=gala`: GALA-A2C (Assran et al., NeurIPS 2019) and `--mode=allreduce`: the all-reduce A2C
it is compared with, composed of the same parts as the other modes.

Both run `gala_agents` agents. Agent i owns executors [i E/n, (i+1) E/n) (their own state buffer)
and acts A2C-style for their envs: per step one `[rows/n]` policy call when all its envs have
stepped (`sampler.LockstepSampler`), `alpha` steps per iteration, in a thread of its own.

- gala: each agent is a whole A2C learner with its own params and optimizer state (all start from
  the run's one init). Iteration k: collect a segment with its params, take its A2C update on it
  (lag 0), send the new params to its out-peer in the directed ring, then mix in what its in-peer
  sent (`hts_jax.gala.mix`, Eq. 6): with `--gala_gossip=async` the newest message waiting, if any
  (the paper's non-blocking gossip: timing-dependent), with `--gala_gossip=fixed` the in-peer's
  params after its update k - gala_staleness, waited for (bitwise reproducible). Agents never
  wait for each other otherwise (up to `MAX_LEAD` iterations apart, a memory bound).
- allreduce: the agents collect concurrently; after every agent's segment k the learner takes one
  update on all of them (the mean loss over every agent's samples: the all-reduced gradient of n
  equal learners, GALA's footnote 2) and every agent continues with the new params. Lag 0,
  deterministic; agents wait for each other once per iteration, not per step like --mode=sync.

The main thread takes the agents' iterations round by round (round k: every agent's k-th), in
order: it books returns, writes one metrics.csv row per round, measures the epsilon-ball (each
agent's distance to the agents' average, the paper's Proposition 2) and evaluates the average of
the round's params. summary.json's `gala` holds the epsilon-ball, the measured gossip staleness
and the final params and evaluation of every agent; its `param_sha256` is of the final average.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import jax
import numpy as np

from hts_jax import choices, gala
from hts_jax.runtime import supervisor
from hts_jax.runtime.errors import Interrupted
from hts_jax.runtime.outputs import reporting
from hts_jax.runtime.buffers import Done
from hts_jax.runtime.controller import Controller
from hts_jax.runtime.loops.gossip import Ring, Rounds, Step
from hts_jax.runtime.learner_worker import LearnerWorker, LearnResult, segment_of
from hts_jax.runtime.assembly import Mode, Parts, Shape

def _policy_rows(shape: Shape) -> int:
  return shape.num_rows // shape.config.gala.agents


def _agent_input(shape: Shape, segment):
  """An agent's columns of the segment (what each GALA agent's update is compiled for)."""
  cols = _policy_rows(shape)
  return jax.device_put(jax.tree.map(lambda x: x[:, :cols], segment))


class _Agents:
  """The agents' samplers, threads and rounds; `body(i)` is an agent thread's loop."""

  def __init__(self, parts: Parts, ctl: Controller):
    self.parts, self.ctl, cfg = parts, ctl, parts.config
    self.n = n = cfg.gala.agents
    per = cfg.rollout.num_executors // n
    ctl.spawn_executors(state_buffer_of=[k // per for k in range(cfg.rollout.num_executors)])
    self.samplers = [ctl.lockstep_sampler(i, range(i * per, (i + 1) * per)) for i in range(n)]
    self.rounds = Rounds(n)
    self.ring = Ring(n, cfg.gala.gossip, cfg.gala.staleness)
    self.stopping = threading.Event()
    ctl.on_shutdown(self.close)

  def close(self) -> None:
    self.stopping.set()
    self.rounds.close()
    self.ring.close()

  def collect(self, i: int, k: int, version: int, params) -> Optional[Tuple[List[Done], float]]:
    """Agent i's segment k with `params`: (its executors' reports, seconds), None if stopping."""
    t0 = time.perf_counter()
    sampler = self.samplers[i]
    if sampler.rollout(k, version, self.parts.actor_params(params),
                       stopped=self.stopping.is_set) is None:
      return None
    return sampler.wait_done(k), time.perf_counter() - t0

  def start(self, body: Callable[[int], None]) -> None:
    ctl = self.ctl
    ctl.wait_started()
    for i in range(self.n):
      ctl.start_thread(body, f"agent-{i}", i)
    ctl.start_clock()

  def wait_round(self, k: int) -> List[Step]:
    ctl = self.ctl
    while not self.rounds.wait(k, supervisor.POLL_S) and ctl.signal is None:
      ctl.check()
    if ctl.signal is not None:
      raise Interrupted(f"interrupted at round {k}; --mode={self.parts.config.mode} "
                        "does not checkpoint", ctl.signal)
    return self.rounds.take(k)


class _Gala(_Agents):

  def __init__(self, parts: Parts, ctl: Controller):
    super().__init__(parts, ctl)
    learner = parts.learner
    self.workers = [LearnerWorker(learner.step_fn, learner.state) for _ in range(self.n)]
    self.no_gossip = 0

  def agent(self, i: int) -> None:
    worker, sampler, ctl = self.workers[i], self.samplers[i], self.ctl
    lo, hi = sampler.span
    for k in range(self.parts.config.rollout.num_segments):
      got = self.collect(i, k, worker.version, worker.state.params)
      if got is None:
        return
      reports, rollout_s = got
      data = jax.device_put(jax.tree.map(lambda x: x[:, lo:hi],
                                         segment_of(ctl.filling(k))))
      result = worker.learn(k, data, worker.version)  # lag 0: these params collected it
      local = worker.state.params
      self.ring.send(i, k, local)
      msg = self.ring.receive(i, k, ctl.check)
      staleness = age = None
      if msg is not None:
        worker.set_params(gala.mix(local, msg[1]))
        staleness, age = k - msg[0], time.perf_counter() - msg[2]
      elif self.ring.closed:
        return
      if not self.rounds.put(i, k, Step(worker.state.params, result, reports, staleness,
                                        age, rollout_s)):
        return


class _AllReduce(_Agents):

  def __init__(self, parts: Parts, ctl: Controller):
    super().__init__(parts, ctl)
    self.jobs: List["queue.Queue"] = [queue.Queue() for _ in range(self.n)]

  def agent(self, i: int) -> None:
    for k in range(self.parts.config.rollout.num_segments):
      job = None
      while job is None and not self.stopping.is_set():
        try:
          job = self.jobs[i].get(timeout=supervisor.POLL_S)
        except queue.Empty:
          pass
      if job is None:
        return
      version, params = job
      got = self.collect(i, k, version, params)
      if got is None or not self.rounds.put(i, k, Step(None, None, got[0], None, None, got[1])):
        return

  def publish(self, version: int, params) -> None:
    for q in self.jobs:
      q.put((version, params))


def _mean_metrics(results: List[LearnResult]) -> LearnResult:
  metrics = {k: float(np.mean([r.metrics[k] for r in results])) for k in results[0].metrics}
  return LearnResult(results[0].segment, metrics, 0,
                     float(np.mean([r.compute_s for r in results])))


def _run(parts: Parts, ctl: Controller, agents: _Agents) -> Dict[str, Any]:
  cfg, learner = parts.config, parts.learner
  n_seg, per_seg = cfg.rollout.num_segments, cfg.rollout.steps_per_segment
  is_gala = isinstance(agents, _Gala)
  if not is_gala:
    ctl.start_learner(count_idle=False)
    agents.publish(learner.version, learner.state.params)
  agents.start(agents.agent)
  dists_max, dists_mean, staleness, ages = [], [], [], []
  final: List[Any] = []
  steps = 0
  for k in range(n_seg):
    steps_k = agents.wait_round(k)
    recent = ctl.record_rollout([r for s in steps_k for r in s.reports],
                                max(s.rollout_s for s in steps_k))
    steps = (k + 1) * per_seg
    extra: Dict[str, Any] = {}
    if is_gala:
      final = [s.params for s in steps_k]
      mean, dists = gala.consensus(final)
      dists = np.asarray(dists)
      dists_max.append(float(dists.max()))
      dists_mean.append(float(dists.mean()))
      st = [s.staleness for s in steps_k if s.staleness is not None]
      staleness.extend(st)
      ages.extend(s.age_s for s in steps_k if s.age_s is not None)
      agents.no_gossip += len(steps_k) - len(st)
      learner.set_params(mean, new_version=True)  # the run's params: the agents' average
      result = _mean_metrics([s.result for s in steps_k])
      extra = {"eps_max": dists_max[-1], "eps_mean": dists_mean[-1],
               "gossip_staleness": float(np.mean(st)) if st else None}
    else:  # one update on every agent's segment: the all-reduced gradient
      result = ctl.learn_now(k)
      if k + 1 < n_seg:
        agents.publish(learner.version, learner.state.params)
    ctl.record_update(result, recent, steps, extra=extra)
    if ctl.boundary(k, steps, learner.state.params):
      break
  agents.close()
  if not is_gala:
    return ctl.finish(steps)
  return ctl.finish(steps, extras=lambda: {"gala": _gala_summary(
      agents, ctl, final, dists_max, dists_mean, staleness, ages)})


def _gala_summary(agents: _Gala, ctl: Controller, final, dists_max, dists_mean, staleness,
                  ages) -> Dict[str, Any]:
  """The epsilon-ball, the gossip's staleness and every agent's final params and evaluation."""
  cfg = agents.parts.config.gala
  mean, dists = gala.consensus(final)
  scale = float(gala.norm(mean))
  lag = reporting.lag_summary(staleness)
  return {
      "agents": agents.n, "gossip": cfg.gossip,
      "staleness": cfg.staleness if cfg.gossip == "fixed" else None,
      "epsilon_ball": {"max": max(dists_max), "mean": float(np.mean(dists_mean)),
                       "final": np.asarray(dists).tolist(), "params_norm": scale,
                       "max_relative": max(dists_max) / scale if scale else None,
                       "per_round_max": dists_max},
      # Iterations between the mixed-in params and the receiver's update (negative: the in-peer
      # was ahead), and the messages' age in seconds when mixed.
      "gossip_staleness": {k: lag[k] for k in ("min", "mean", "max", "histogram")},
      "gossip_age_s": {"mean": float(np.mean(ages)) if ages else None,
                       "max": float(np.max(ages)) if ages else None},
      "iterations_without_gossip": agents.no_gossip,
      "messages_sent": agents.ring.sent, "messages_overwritten": agents.ring.overwritten,
      "agent_param_sha256": [reporting.param_sha256(p) for p in final],
      "agent_updates": [w.version for w in agents.workers],
      "agent_eval": [float(np.mean(ctl.evaluate_now(p))) for p in final],
  }


def _compile_gala(parts: Parts) -> None:
  """The gossip's mixing and the epsilon-ball, compiled before the clock like the steps."""
  params = parts.learner.state.params
  jax.block_until_ready(gala.mix(params, params))
  jax.block_until_ready(gala.consensus([params] * parts.config.gala.agents))
  jax.block_until_ready(gala.norm(params))


def run_gala(parts: Parts, ctl: Controller) -> Dict[str, Any]:
  _compile_gala(parts)
  return _run(parts, ctl, _Gala(parts, ctl))


def run_allreduce(parts: Parts, ctl: Controller) -> Dict[str, Any]:
  return _run(parts, ctl, _AllReduce(parts, ctl))


_NO_CHECKPOINTS = "its agents keep their own params and storages"
GALA = Mode(choices.GALA, policy_rows=_policy_rows, loop=run_gala,
            learner_input=_agent_input, no_checkpoints=_NO_CHECKPOINTS)
ALLREDUCE = Mode(choices.ALLREDUCE, policy_rows=_policy_rows, loop=run_allreduce,
                 no_checkpoints=_NO_CHECKPOINTS)
