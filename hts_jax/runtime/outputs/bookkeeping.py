"""Bookkeeping of a run and the summary.json contract (host side).

`Book` holds everything a run accumulates that a checkpoint must carry (JSON-able): episode
returns by env id, policy lags, evaluation history and schedule, and the time and efficiency
counters. `summary` turns it into the `<logdir>/summary.json` dict (DESIGN.md, Contracts).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

from hts_jax.choices import RULES
from hts_jax.runtime.outputs import reporting
from hts_jax.runtime.buffers import Done


@dataclasses.dataclass
class Book:
  returns: List[List[float]]
  lags: List[float] = dataclasses.field(default_factory=list)
  eval: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
  next_eval: Optional[int] = None
  last_eval: Optional[int] = None
  wall_time_s: float = 0.0
  rollout_s: float = 0.0
  learn_s: float = 0.0
  env_busy_s: float = 0.0
  exec_idle_actions: float = 0.0
  exec_idle_barrier: float = 0.0
  actor_idle: float = 0.0
  learner_idle: float = 0.0
  actor_calls: int = 0
  ready_rows: int = 0       # rows of actor policy calls that carried a ready observation
  computed_rows: int = 0    # rows actor policy calls computed (calls x the fixed shape)
  main_cpu_s: float = 0.0   # CPU seconds of the main process (actors, learner, controller)
  # CPU seconds of the run's processes (main and executors) during rollouts and updates that
  # do not overlap (sync, HTS at lag 0): the planner's stage costs (`analysis.planner`).
  rollout_cpu_s: float = 0.0
  learn_cpu_s: float = 0.0
  # The host record of every session of the run (a resumed run's earlier ones first): a wall
  # time summed over sessions on different hosts mixes them (`analysis.metrics.host_kind`).
  hosts: List[Dict[str, Any]] = dataclasses.field(default_factory=list)

  @classmethod
  def new(cls, num_envs: int, eval_every: int) -> "Book":
    return cls(returns=[[] for _ in range(num_envs)],
               next_eval=eval_every if eval_every > 0 else None)

  def to_json(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, d: Dict[str, Any]) -> "Book":
    return cls(**d)

  def record_done(self, reports: List[Done]) -> List[float]:
    """Books the executors' Done reports; returns the episode returns they finished."""
    finished: List[float] = []
    for r in reports:
      for e, rs in r.returns.items():
        self.returns[int(e)].extend(rs)
        finished.extend(rs)
      self.exec_idle_actions += r.idle_actions_s
      self.exec_idle_barrier += r.idle_barrier_s
      self.env_busy_s += r.busy_s
    return finished

  def recent_return(self) -> Optional[float]:
    return reporting.mean_or_none([r for rs in self.returns for r in rs[-5:]])

  def efficiency(self, env_steps: int) -> Dict[str, Any]:
    """What the rollout hot path cost: rows per env step, ready envs per call, CPU per 1k steps."""
    steps = max(1, env_steps)
    return {"policy_rows_per_env_step": self.computed_rows / steps,
            "ready_rows_per_actor_call": self.ready_rows / max(1, self.actor_calls),
            "actor_calls": self.actor_calls,
            "main_cpu_s_per_1k_env_steps": 1000.0 * self.main_cpu_s / steps}


def idle(book: Book) -> Dict[str, float]:
  """Seconds executors, actors and the learner spent waiting (summary.json's `idle`)."""
  return {"executors": book.exec_idle_actions + book.exec_idle_barrier,
          "executors_waiting_for_actions": book.exec_idle_actions,
          "executors_at_barrier": book.exec_idle_barrier,
          "actors": book.actor_idle, "learner": book.learner_idle}


def learner_busy_share(book: Book, wall: float) -> float:
  """The share of the run's wall time the learner spent updating: what HTS's concurrent learning
  (`--policy_lag=1`) can hide behind the rollout at most."""
  return book.learn_s / wall if wall > 0 else 0.0


# Below this learner busy share an HTS run's overlap saved too little wall time to be worth its
# one-update lag: its done line and summary.json say that --policy_lag=0 was an option.
LAG_0_NOTE_SHARE = 0.10


def lag_0_note(config, busy_share: float) -> Optional[str]:
  """For an HTS run at lag 1 whose learner was busy less than LAG_0_NOTE_SHARE of its wall time:
  that --policy_lag=0 would have learned exactly as sync at nearly the same speed; else None."""
  if config.mode != "hts" or config.hts.policy_lag != 1 or busy_share >= LAG_0_NOTE_SHARE:
    return None
  return (f"the learner was busy {busy_share:.0%} of the run, all the overlap of learning with "
          "the rollout could save: --policy_lag=0 would have learned exactly as --mode=sync "
          "(the same bits) at nearly this speed (hts-plan predicts both)")


def efficiency(book: Book, env_steps: int, num_agents: int = 1) -> Dict[str, Any]:
  """summary.json's `efficiency`: `Book.efficiency` with ready envs (not rows) per actor call."""
  eff = book.efficiency(env_steps)
  # Ready envs per call: rows over agent slots (a multi-agent env has several rows).
  eff["mean_ready_envs_per_actor_call"] = eff.pop("ready_rows_per_actor_call") / num_agents
  return eff


def totals(actor_stats: Sequence[Any], policy_rows: int, learner_idle: float) -> Dict[str, float]:
  """A session's counters that live in the parts rather than the book: the actors' calls, ready
  and computed rows and idle seconds, and the learner's idle seconds."""
  stats = {"actor_calls": 0, "ready_rows": 0, "computed_rows": 0, "actor_idle": 0.0,
           "learner_idle": learner_idle}
  for a in actor_stats:
    stats["actor_calls"] += a.calls
    stats["ready_rows"] += a.ready_rows
    stats["computed_rows"] += a.calls * policy_rows
    stats["actor_idle"] += a.idle_s
  return stats


def tags(book: Book, env_steps: int, num_agents: int = 1) -> Dict[str, float]:
  """summary.json's idle and efficiency figures so far, as tracker tags (`idle/`, `efficiency/`)."""
  out = {f"idle/{k}": v for k, v in idle(book).items()}
  out.update({f"efficiency/{k}": v for k, v in efficiency(book, env_steps, num_agents).items()})
  return out


def summary(config, book: Book, env_steps: int, updates: int, wall: float, params_sha: str,
            network_kind: str, compile_s: float, resumed_from: Optional[int],
            num_agents: int = 1) -> Dict[str, Any]:
  """The summary.json contract."""
  return {
      "env_steps": env_steps, "updates": updates, "wall_time_s": wall,
      "sps": env_steps / wall, "mode": config.mode, "algo": config.learner.algo,
      **{k: getattr(config.rollout, k)
         for k in ("env", "alpha", "num_actors", "num_executors", "num_envs", "seed")},
      "correction": RULES[config.mode].reported_correction(config),
      "network": network_kind,
      "param_sha256": params_sha,
      "episode_returns": book.returns,
      "policy_lag": reporting.lag_summary(book.lags),
      "policy_lag_setting": RULES[config.mode].scheduled_lag(config),
      "learner_busy_share": learner_busy_share(book, wall),
      "lag_note": lag_0_note(config, learner_busy_share(book, wall)),
      "idle": idle(book),
      "efficiency": efficiency(book, env_steps, num_agents),
      "timing": {"rollout_s": book.rollout_s, "learn_s": book.learn_s,
                 "env_busy_s": book.env_busy_s, "actor_calls": book.actor_calls,
                 "compile_s": compile_s, "main_cpu_s": book.main_cpu_s,
                 "rollout_cpu_s": book.rollout_cpu_s, "learn_cpu_s": book.learn_cpu_s},
      "resumed_from_update": resumed_from,
      "config": config.to_dict(),
  }


def run_summary(parts, book: Book, evaluator, env_steps: int, wall: float, params_sha: str,
                compiled: List[str]) -> Dict[str, Any]:
  """summary.json's dict at a run's end (`Controller.finish`), from its `assembly.Parts`, `book`
  and evaluator, before the mode's extras."""
  from hts_jax.runtime import backend, distributed, host  # pylint: disable=import-outside-toplevel
  cfg = parts.config
  out = summary(cfg, book, env_steps, parts.learner.version, wall, params_sha, parts.model.kind,
                parts.compile_s, None if parts.restored is None else parts.restored["step"],
                parts.shape.num_agents)
  out["backend"] = backend.describe(parts.placement.learner, parts.placement.actor)
  out["host"] = host.finish_record(parts.host, book.hosts[:-1])
  if cfg.distributed.num_processes > 1:  # every process's machine, process 0's first
    out["host"] = dict(out["host"], other_processes=distributed.allgather_json(out["host"])[1:])
  out["eval"] = evaluator.summary()
  out["timing"].update(evaluator.timing())
  # XLA compilations inside the timed run (functions' names): none is expected.
  out["compiled_during_run"] = compiled
  if evaluator.videos:
    out["videos"] = [dict(v) for v in evaluator.videos]
  return out
