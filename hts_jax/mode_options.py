"""What the JAX-free config knows of each mode (`RULES`): the section of `RunConfig` holding its
own options (`HtsOptions`, `SyncOptions`, `AsyncOptions`, `GalaOptions`, each validating itself
and checking what it needs of the rest of the config), the learner correction it forces, the
policy lag its schedule sets, the correction name its summary reports and its update size where
an update is not one segment. No JAX import (see `config.py`): the mode's loop and compiled steps
are the `Mode` (`hts_jax/runtime/loops/mode.py`) that holds these rules, defined in its loop's
module. A new mode is its loop module plus its entry here (CONTRIBUTING.md)."""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar, Dict, Optional

from hts_jax.algorithm_registry import ALGORITHMS, CORRECTIONS
from hts_jax.learner_config import check, check_choices


@dataclasses.dataclass(frozen=True)
class HtsOptions:
  """--mode=hts's options."""
  policy_lag: int = 1
  """--mode=hts: 1 (the paper's): the learner trains on one storage while the executors fill the
  other (concurrent learning), so each segment is collected one update behind the params that
  learn from it (the delayed gradient, or --correction). 0: at each alpha barrier the learner
  updates on the segment just collected while the executors wait, and the next segment acts with
  the new params: sync's run bit for bit (its param_sha256, evaluations and returns) at HTS's
  asynchronous rollout speed (batch synchronization alone). `hts-plan` says which is sooner
  (docs/modes.md)."""

  def __post_init__(self):
    check(self.policy_lag in (0, 1), f"policy_lag must be 0 or 1, got {self.policy_lag}")

  @property
  def forces_correction(self) -> Optional[str]:
    """Lag 0 learns as sync does (the plain update at the params that acted), whatever
    --correction says; lag 1 runs --correction."""
    return "none" if self.policy_lag == 0 else None

  @property
  def scheduled_lag(self) -> int:
    return self.policy_lag

  def check_run(self, cfg, n: int, where: str) -> None:
    del n, where
    check(self.policy_lag == 1 or cfg.learner.acting_extrapolation == 0,
          "--acting_extrapolation predicts the params one update ahead for a lagged rollout: "
          "--policy_lag=0 acts with the params that learn from the segment already")


@dataclasses.dataclass(frozen=True)
class SyncOptions:
  """--mode=sync's options."""
  alternating_groups: bool = False
  """--mode=sync: each executor's envs form two groups that alternate, one stepping while the
  batched inference for the other runs (Stooke & Abbeel 2018, Section 4.1); same results as
  plain sync (each group's call keeps sync's [num_envs] shape)."""
  lagged_acting: bool = False
  """--mode=sync: the rollout acts with the params before the last update (θ_{j-1}), HTS's
  schedule through the sync loop, learned at θ_j as HTS's `--correction=none` learns it: a
  control that separates HTS's one-update lag from its runtime (the same bits as `--mode=hts
  --correction=none` at the same actor_batch)."""

  @property
  def scheduled_lag(self) -> int:
    return int(self.lagged_acting)

  def check_run(self, cfg, n: int, where: str) -> None:
    check(not self.lagged_acting or cfg.learner.correction in ("none", "delayed"),
          "--lagged_acting learns as HTS's --correction=none does (sync runs no other "
          f"correction): pass --correction=none, got --correction={cfg.learner.correction}")
    if self.alternating_groups:
      check(not cfg.rollout.envpool, "--alternating_groups steps executor envs: not with --envpool")
      check((n // cfg.rollout.num_executors) % 2 == 0,
            f"--alternating_groups splits each executor's envs in two: num_envs{where} ({n}) / "
            f"num_executors ({cfg.rollout.num_executors}) must be even")


@dataclasses.dataclass(frozen=True)
class AsyncOptions:
  """--mode=async's options (flags `--async_<field>`)."""
  FLAG_PREFIX: ClassVar[str] = "async_"
  batch_unrolls: int = 0
  """--mode=async: actor unrolls per learner update (0: num_actors, i.e. as many samples per
  update as HTS and sync; IMPALA uses a fixed batch whatever the actors)."""

  def __post_init__(self):
    check(self.batch_unrolls >= 0, f"async_batch_unrolls must be >= 0, got {self.batch_unrolls}")

  def check_run(self, cfg, n: int, where: str) -> None:
    del n, where
    r = cfg.rollout
    check(not r.envpool, "--envpool is for --mode=hts and --mode=sync")
    check(ALGORITHMS[cfg.learner.algo].vtrace_baseline,
          "--mode=async is IMPALA's V-trace actor-critic: use --algo=" + " or --algo=".join(
              a.name for a in ALGORITHMS.values() if a.vtrace_baseline))
    check(not cfg.learner.normalize_rewards,
          "--mode=async: --normalize_rewards is not available (its unrolls come from any envs, "
          "in any order)")
    check(r.num_executors % r.num_actors == 0,
          f"--mode=async: num_executors ({r.num_executors}) must be a multiple of "
          f"num_actors ({r.num_actors}): each actor owns whole executors")

  def unrolls_per_update(self, rollout) -> int:
    return self.batch_unrolls or rollout.num_actors

  def steps_per_update(self, rollout) -> int:
    """Env steps per V-trace update: that many actor unrolls of alpha steps of an actor's envs."""
    r = rollout
    return r.alpha * r.num_envs // r.num_actors * self.unrolls_per_update(r)


@dataclasses.dataclass(frozen=True)
class GalaOptions:
  """--mode=gala's and --mode=allreduce's options (flags `--gala_<field>`)."""
  FLAG_PREFIX: ClassVar[str] = "gala_"
  agents: int = 4
  """--mode=gala / allreduce: A2C agents (learners), each with num_envs / gala_agents envs and
  num_executors / gala_agents executors of its own, acting in lockstep over them."""
  gossip: str = "async"
  """--mode=gala: async (the paper's: send the params to the out-peer without waiting, mix in the
  newest message received, if any) or fixed (mix the in-peer's params of exactly gala_staleness
  updates before, waiting for them: bitwise reproducible)."""
  staleness: int = 1
  """--gala_gossip=fixed: agent i's update k mixes its in-peer's params after update
  k - gala_staleness (0: the same update, a synchronous ring)."""

  def __post_init__(self):
    check_choices(self)
    check(self.staleness >= 0, f"gala_staleness must be >= 0, got {self.staleness}")

  def check_run(self, cfg, n: int, where: str) -> None:
    """Agents that own whole executors, one process, one actor each."""
    del where
    m, k, r = cfg.mode, self.agents, cfg.rollout
    check(k >= (2 if m == "gala" else 1),
          f"gala_agents must be >= {2 if m == 'gala' else 1} for --mode={m}, got {k}")
    check(not r.envpool, f"--mode={m} runs over executor envs (no --envpool)")
    check(not (cfg.learner.normalize_obs or cfg.learner.normalize_rewards),
          f"--mode={m}: --normalize_obs and --normalize_rewards are not available (each agent "
          "would keep statistics of its own envs, which gossip would average)")
    check(n % k == 0 and r.num_executors % k == 0,
          f"--mode={m}: num_envs ({n}) and num_executors ({r.num_executors}) must be "
          f"divisible by gala_agents ({k}): each agent owns whole executors")
    check(r.num_actors == 1,
          f"--mode={m}: each agent acts for its own envs (A2C's lockstep); --num_actors must "
          f"be 1, got {r.num_actors}")
    if m == "gala":
      check(len(cfg.devices.learner_devices) == 1,
            "--mode=gala: every agent learns on the one learner device")


@dataclasses.dataclass(frozen=True)
class ModeRules:
  """What the config knows of one mode. `options`: the `RunConfig` section of its own options
  (their `check_run(config, n, where)` runs when this mode is chosen: `n` the process's envs,
  `where` " per process" in a multi-process run); `forces_correction`: the learner correction it
  runs with whatever --correction says (None: --correction applies); `reports`: the correction
  its summary names (None: --correction's); `steps_per_update(config)`, `sgd_steps_per_update`:
  its update size where an update is not one segment's (None: one segment, the learner's steps);
  `multi_process`: whether it runs over several processes (jax.distributed); `actors`: what
  --num_actors is in this mode (written here once: --num_actors' help lists it for every mode).
  The mode's `Mode` (its loop and compiled steps) holds these rules and lives in its loop's
  module, which imports them from here: this module stays JAX-free."""
  name: str
  actors: str
  options: Optional[str] = None
  forces_correction: Optional[str] = None
  reports: Optional[str] = None
  steps_per_update: Optional[Callable[..., int]] = None
  sgd_steps_per_update: Optional[int] = None
  multi_process: bool = True

  def forced_correction(self, cfg) -> Optional[str]:
    """The learner correction this mode runs for `cfg` whatever --correction says: the mode's
    (`forces_correction`), or its options' (`HtsOptions.forces_correction`: --policy_lag=0's);
    None: --correction applies."""
    if self.forces_correction is not None or self.options is None:
      return self.forces_correction
    return getattr(getattr(cfg, self.options), "forces_correction", None)

  def scheduled_lag(self, cfg) -> Optional[int]:
    """The policy lag this mode's schedule sets for `cfg` (`--policy_lag`; sync's 0, or 1 with
    --lagged_acting); None where the lag is what the timing makes it (async, gala)."""
    return getattr(getattr(cfg, self.options), "scheduled_lag", None) if self.options else None

  def reported_correction(self, cfg) -> str:
    """The correction summary.json names."""
    return self.reports or self.forced_correction(cfg) or cfg.learner.correction

  def check_run(self, cfg, n: int, where: str) -> None:
    if not self.multi_process:
      check(cfg.distributed.num_processes == 1, "--num_processes > 1 runs " + " or ".join(
          f"--mode={m}" for m, rules in RULES.items() if rules.multi_process))
    forced = self.forced_correction(cfg)
    if forced is not None:
      # The default (unset), the correction the mode applies anyway, or one that is that update at
      # lag 0 (its record says so; a preset made for HTS may name it); any other is refused.
      allowed = tuple(dict.fromkeys(("delayed", forced) + tuple(
          c.name for c in CORRECTIONS.values() if c.lag_free_at_lag_0)))
      check(cfg.learner.correction in allowed,
            f"--correction={cfg.learner.correction} {self._why_forced(cfg)}: use one of {allowed}")
    if self.options is not None:
      getattr(cfg, self.options).check_run(cfg, n, where)

  def _why_forced(self, cfg) -> str:
    if self.forces_correction is None:
      return "applies to --policy_lag=1 only (lag 0 has no policy lag to correct)"
    if self.scheduled_lag(cfg) == 1:  # --lagged_acting: lag 1, learned as --correction=none
      return "applies to --mode=hts only (--lagged_acting learns as its --correction=none does)"
    return ("applies to --mode=hts only (this mode has no policy lag to correct, or corrects it "
            "with V-trace)")

  def check_given_correction(self, cfg) -> None:
    """A --correction given on the command line must change the run: `check_run` lets the
    default ("delayed", which a config cannot tell from a given one) and a preset's lag-free
    correction through, but one typed by the user that this mode replaces by its own is refused,
    as an option of another mode is. A lag-free one runs as the forced update where the schedule
    sets lag 0, so it is the same run and accepted."""
    forced, given = self.forced_correction(cfg), cfg.learner.correction
    if forced is None or given == forced:
      return
    check(CORRECTIONS[given].lag_free_at_lag_0 and self.scheduled_lag(cfg) == 0,
          f"--correction={given} {self._why_forced(cfg)}: this run learns with "
          f"--correction={forced}'s update; pass that or leave --correction out")


_ENVPOOL_ACTORS = "with --envpool, each drives one envpool instance over num_envs / num_actors envs"
_AGENT_ACTORS = "must be 1 (each agent acts for its own envs in lockstep)"
HTS = ModeRules("hts", options="hts",
                actors="actor threads sharing one state buffer, each packing whichever blocks are "
                f"ready into fixed-shape policy calls; {_ENVPOOL_ACTORS}")
SYNC = ModeRules("sync", options="sync", forces_correction="none", reports="none",
                 actors="not used with executors (the loop makes one batched call per step for "
                 f"every env); {_ENVPOOL_ACTORS}, all in lockstep")
# IMPALA: one V-trace step per batch of unrolls.
ASYNC = ModeRules("async", options="asynchronous", forces_correction="none", reports="vtrace",
                  steps_per_update=lambda cfg: cfg.asynchronous.steps_per_update(cfg.rollout),
                  sgd_steps_per_update=1, multi_process=False,
                  actors="actor threads, each owning num_executors / num_actors executors and "
                  "sending its own unrolls to the learner (and, by default, the unrolls per "
                  "update)")
GALA = ModeRules("gala", options="gala", forces_correction="none", reports="none",
                 multi_process=False, actors=_AGENT_ACTORS)
ALLREDUCE = ModeRules("allreduce", options="gala", forces_correction="none", reports="none",
                      multi_process=False, actors=_AGENT_ACTORS)
RULES: Dict[str, ModeRules] = {r.name: r for r in (HTS, SYNC, ASYNC, GALA, ALLREDUCE)}
MODES = tuple(RULES)  # what --mode takes


def actors_help() -> str:
  """--num_actors' meaning in every mode (its help text's second part)."""
  return "By mode: " + "; ".join(f"{m}: {r.actors}" for m, r in RULES.items()) + "."
