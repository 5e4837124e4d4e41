"""Run and learner configuration: typed dataclasses that validate themselves.

`RunConfig` is made of sections, one per concern (`config_sections.py`: rollout, evaluation,
outputs, devices, distributed, testing; `mode_options.py`: each mode's own options), plus the mode
and the learner's `LearnerConfig`. Every field of a section is a launcher flag of its own name, so
`RunConfig.make(num_envs=8, logdir="runs/x")` builds a config from flag names, `config.replace`
changes some, and `to_dict()` (what summary.json and checkpoints store) is keyed by flag name.

No JAX import here: executor processes (spawned) and the launcher's flag parsing import this module
without paying for JAX. Errors are `ConfigError` with a one-line message meant for users.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import typing
from typing import Any, Dict, Tuple

from hts_jax import learner_config
from hts_jax.algorithm_registry import ALGORITHMS
# Re-exported: the learner's config lives in `learner_config.py`, the validation base in
# `validation.py`, the sections in `config_sections.py` and `mode_options.py`.
from hts_jax.config_sections import (WANDB_MODES, Devices, Distributed, Evaluation,  # noqa: F401
                                     Outputs, Rollout, Testing, resumable)
from hts_jax.learner_config import (ALGOS, CONV_KINDS, CORES, CORRECTIONS, GOSSIP,  # noqa: F401
                                    MINIBATCHES, NETWORK_KINDS, NETWORKS, OPTIMIZERS, REDUCTIONS,
                                    ConfigError, LearnerConfig, check, check_choices, flag_name)
from hts_jax.mode_options import (MODES, RULES, AsyncOptions, GalaOptions, HtsOptions,
                                  SyncOptions)

# The str fields that take one of a few values, by flag name (the launcher's flags are enums).
CHOICES = {**learner_config.CHOICES, "mode": MODES}
# Evaluations in the paper's running average ("the most recent 100 evaluation episodes, 10 of each
# of the ten most recent policies"): `analysis.metrics` and --stop_at_return use full windows.
RUNNING_WINDOW = 10


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """One training run of the HTS-RL runtime (what `python -m experiments.train` builds from flags):
  the mode, one section per concern and the learner's hyperparameters. Build it from flag names
  with `RunConfig.make(...)`."""
  mode: str = "hts"
  """hts (HTS-RL), sync (synchronous A2C/PPO baseline), async (IMPALA, V-trace), gala
  (GALA-A2C: gossiping A2C agents, Assran et al. 2019), allreduce (A2C agents whose gradients
  are all-reduced: GALA's baseline)."""
  rollout: Rollout = dataclasses.field(default_factory=Rollout)
  """What the run computes (env, replicas, segment length, steps, seed)."""
  evaluation: Evaluation = dataclasses.field(default_factory=Evaluation)
  """Evaluations, videos, the early stop."""
  outputs: Outputs = dataclasses.field(default_factory=Outputs)
  """The run's folder, progress lines, TensorBoard, W&B, checkpoints."""
  devices: Devices = dataclasses.field(default_factory=Devices)
  """The learner's and actors' local devices."""
  distributed: Distributed = dataclasses.field(default_factory=Distributed)
  """Multi-process runs."""
  hts: HtsOptions = dataclasses.field(default_factory=HtsOptions)
  """--mode=hts's options."""
  sync: SyncOptions = dataclasses.field(default_factory=SyncOptions)
  """--mode=sync's options."""
  asynchronous: AsyncOptions = dataclasses.field(default_factory=AsyncOptions)
  """--mode=async's options."""
  gala: GalaOptions = dataclasses.field(default_factory=GalaOptions)
  """--mode=gala's and allreduce's options."""
  testing: Testing = dataclasses.field(default_factory=Testing)
  """Testing hooks."""
  learner: LearnerConfig = dataclasses.field(default_factory=LearnerConfig)
  """Learner hyperparameters (on the command line, its fields are flags of their own)."""

  def __post_init__(self):
    """The checks that span sections (each section checks its own fields)."""
    check(self.mode in MODES, f"mode must be one of {MODES}, got {self.mode!r}")
    r, n = self.rollout, self.local_envs
    p = self.distributed.num_processes
    check(r.num_envs % p == 0, f"num_envs ({r.num_envs}) must be divisible by num_processes ({p})")
    where = "" if p == 1 else " per process"
    check(r.num_executors <= n,
          f"num_executors ({r.num_executors}) must not exceed num_envs{where} ({n})")
    check(n % r.num_executors == 0,
          f"num_envs{where} ({n}) must be divisible by num_executors ({r.num_executors})")
    check(r.actor_batch <= n, f"actor_batch must be in [0, num_envs{where}={n}], got "
          f"{r.actor_batch}")
    check(r.actor_batch_envs <= n, f"the actor batch ({r.actor_batch_envs} envs) exceeds "
          f"num_envs{where} ({n}): set --actor_batch")
    check(1 <= r.executor_blocks <= n // r.num_executors,
          f"executor_blocks must be in [1, envs per executor={n // r.num_executors}], got "
          f"{r.executor_blocks}")
    d = self.devices
    check(r.actor_batch_envs % len(d.actor_devices) == 0,
          f"actor_batch ({r.actor_batch_envs} envs) must be divisible by the number of "
          f"actor_devices ({len(d.actor_devices)})")
    check(n % len(d.learner_devices) == 0,
          f"num_envs{where} ({n}) must be divisible by the number of learner_devices "
          f"({len(d.learner_devices)})")
    RULES[self.mode].check_run(self, n, where)  # the mode's own options
    for name in ("alternating_groups", "lagged_acting"):
      check(not getattr(self.sync, name) or self.mode == "sync",
            f"--{name} is an option of --mode=sync")
    check(self.hts.policy_lag == 1 or self.mode == "hts",
          "--policy_lag is an option of --mode=hts (--mode=sync acts with the params it learns "
          "at, lag 0; --lagged_acting gives it HTS's lag 1)")
    check(self.learner.acting_extrapolation == 0 or self.mode == "hts",
          "--acting_extrapolation is an option of --mode=hts (the executors act one update "
          "behind only there)")
    check(self.learner.acting_extrapolation == 0 or self.learner.correction == "none",
          "--acting_extrapolation predicts the params that learn from the segment, which "
          "--correction=none learns at: pass --correction=none, got "
          f"--correction={self.learner.correction}")
    check(r.executor_blocks == 1 or not (r.envpool or self.sync.alternating_groups),
          "--executor_blocks is for executor processes: --envpool's groups and "
          "--alternating_groups' two blocks per executor set their own blocks")
    if r.envpool:
      check(n % r.num_actors == 0,
            f"with --envpool, num_envs{where} ({n}) must be divisible by num_actors "
            f"({r.num_actors}): each actor drives one envpool instance")
    self.learner.check_segment_length(r.alpha)
    lc = self.learner
    if ALGORITHMS[lc.algo].minibatches and self.mode != "async":
      check(r.core == "none" or lc.minibatch == "envs",
            "--core=lstm with PPO needs --minibatch=envs (a recurrent core unrolls whole "
            "sequences)")
      # The env columns one learner step sees: a device's share, or a GALA/all-reduce agent's.
      gala = RULES[self.mode].options == "gala"
      per = n // (self.gala.agents if gala else len(d.learner_devices))
      check(lc.minibatch != "envs" or per % lc.num_minibatches == 0,
            f"--minibatch=envs: num_envs{where} per {'agent' if gala else 'learner device'} "
            f"({per}) must be divisible by num_minibatches ({lc.num_minibatches})")
    check(not (self.learner.normalize_rewards and p > 1),
          "--normalize_rewards runs in one process")
    ev = self.evaluation
    if ev.stop_at_return is not None and ev.eval_every > 0:
      n = r.total_steps // ev.eval_every
      check(n >= RUNNING_WINDOW,
            f"--stop_at_return judges the running average over full windows of "
            f"{RUNNING_WINDOW} evaluations, but --total_steps={r.total_steps} with "
            f"--eval_every={ev.eval_every} gives {n}: evaluate more often")

  @classmethod
  def make(cls, mode: str = "hts", learner: Any = None, **values: Any) -> "RunConfig":
    """The config whose fields have the given values, each named as its flag (e.g.
    `num_envs=8, gala_agents=2`); `learner`: a LearnerConfig or a dict of its fields."""
    where = flag_fields()
    unknown = sorted(set(values) - set(where))
    check(not unknown, f"unknown config field {', '.join(unknown)} (fields are named as the "
          "launcher's flags)")
    sections: Dict[str, Dict[str, Any]] = {}
    for name, value in values.items():
      section, field = where[name]
      sections.setdefault(section, {})[field] = value
    types = _section_types()
    if not isinstance(learner, LearnerConfig):
      learner = LearnerConfig(**(learner or {}))
    return cls(mode=mode, learner=learner,
               **{s: types[s](**fields) for s, fields in sections.items()})

  def replace(self, **values: Any) -> "RunConfig":
    """This config with the given fields (named as their flags, or `mode`, `learner`) changed."""
    return RunConfig.make(**{**self.to_dict(), "learner": self.learner, **values})

  def to_dict(self) -> Dict[str, Any]:
    """Every field by flag name, the learner's as a dict under "learner" (what summary.json and
    checkpoints store)."""
    out: Dict[str, Any] = {"mode": self.mode}
    for name, (section, field) in flag_fields().items():
      out[name] = getattr(getattr(self, section), field)
    out["learner"] = dataclasses.asdict(self.learner)
    return copy.deepcopy(out)

  @property
  def evaluates_greedy(self) -> bool:
    """Whether evaluations take the argmax action (`eval_greedy`, or its default by env)."""
    return self.evaluation.greedy(self.rollout.env)

  @property
  def local_envs(self) -> int:
    """Envs of this process (all of them in a one-process run)."""
    return self.rollout.num_envs // self.distributed.num_processes

  @property
  def env_offset(self) -> int:
    """This process's first global env id: its envs are [env_offset, env_offset + local_envs)."""
    return self.distributed.process_id * self.local_envs

  @property
  def steps_per_update(self) -> int:
    """Env steps per learner update: a segment's, or the mode's own (`mode_options.RULES`)."""
    own = RULES[self.mode].steps_per_update
    return self.rollout.steps_per_segment if own is None else own(self)

  @property
  def learner_updates(self) -> int:
    """Learner updates over the run (the last one whole)."""
    return -(-self.rollout.total_steps // self.steps_per_update)

  @property
  def optimizer_steps(self) -> int:
    """Optimizer steps over the run (what `--lr_decay` decays over)."""
    per = RULES[self.mode].sgd_steps_per_update
    if per is None:
      per = self.learner.num_sgd_steps(self.rollout.alpha)
    return self.learner_updates * per

  def env_ids_of_executor(self, executor: int):
    """The global env ids of this process's executor `executor`."""
    per = self.local_envs // self.rollout.num_executors
    return list(range(self.env_offset + executor * per, self.env_offset + (executor + 1) * per))


def _section_types() -> Dict[str, type]:
  """RunConfig's sections (every field but `mode` and `learner`) by field name."""
  hints = typing.get_type_hints(RunConfig)
  return {f.name: hints[f.name] for f in dataclasses.fields(RunConfig)
          if f.name not in ("mode", "learner")}


@functools.lru_cache(maxsize=None)
def _section_fields() -> Dict[str, Tuple[str, dataclasses.Field]]:
  """(section, field) of every section field by its flag name."""
  return {learner_config.flag_name(kind, field.name): (section, field)
          for section, kind in _section_types().items() for field in dataclasses.fields(kind)}


def flag_fields() -> Dict[str, Tuple[str, str]]:
  """(section, field name) of every section field by its flag name."""
  return {name: (section, field.name) for name, (section, field) in _section_fields().items()}


def resumable_fields() -> frozenset:
  """The flag names of the fields marked `resumable` (a resumed run may change them)."""
  return frozenset(name for name, (_, field) in _section_fields().items()
                   if field.metadata.get("resumable"))


def incompatible_changes(saved: Dict[str, Any], current: Dict[str, Any]) -> Dict[str, Any]:
  """Config fields that differ between a checkpoint and a resumed run and may not. A field the
  checkpoint's config lacks (added to RunConfig or LearnerConfig since it was written) counts as
  its default: the code that wrote it behaved so. A field whose 0 stands for a value derived from
  others (`actor_batch`: num_envs // 2) is compared as resolved: `--actor_batch=4` equals 0 at 8
  envs."""
  defaults = json.loads(json.dumps(RunConfig().to_dict()))  # as a checkpoint stores it
  saved, current = _resolved({**defaults, **saved}), _resolved(current)
  free = resumable_fields()
  if isinstance(saved.get("learner"), dict):
    saved["learner"] = {**defaults["learner"], **saved["learner"]}
  out = _differing(saved, current, free | {"learner"})
  if isinstance(saved.get("learner"), dict) and isinstance(current.get("learner"), dict):
    # Named by the learner field that differs (its flag's name), not by the whole section.
    out.update(_differing(saved["learner"], current["learner"], free))
    if set(out) == {"lr_decay_updates"}:  # the one change: named by its flags
      raise ConfigError(_lr_decay_change(*out["lr_decay_updates"], current))
  elif saved.get("learner") != current.get("learner"):
    out["learner"] = (saved.get("learner"), current.get("learner"))
  return out


def from_json(values: Dict[str, Any]) -> RunConfig:
  """The RunConfig of a saved `to_dict()` (a checkpoint's or summary.json's; JSON's lists back to
  tuples)."""
  return RunConfig.make(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def _lr_decay_change(saved: int, now: int, current: Dict[str, Any]) -> str:
  """The line refusing a resume whose --lr_decay horizon (`lr_decay_updates`, optimizer steps,
  which no flag names) is not the checkpoint's, with the flags that keep it. The horizon is fixed
  when a run starts; resumed past it, updates would train at learning rate 0."""
  cfg = from_json(current)
  env_steps = saved // (cfg.optimizer_steps // cfg.learner_updates) * cfg.steps_per_update
  if not saved:
    return "--resume: the checkpoint's run has a constant learning rate: leave --lr_decay out"
  return (f"--resume: the checkpoint's --lr_decay ends at env step {env_steps:,} (its horizon: "
          f"--lr_decay_steps, else --total_steps, as the run started), this command's "
          f"{'nowhere (no --lr_decay)' if not now else 'elsewhere'}: pass --lr_decay "
          f"--lr_decay_steps={env_steps} with --total_steps <= {env_steps} (past the horizon the "
          "learning rate is 0); a run meant to go further starts with --lr_decay_steps set to "
          "its longest length")


def _resolved(cfg: Dict[str, Any]) -> Dict[str, Any]:
  if cfg.get("actor_batch") == 0 and isinstance(cfg.get("num_envs"), int):
    return dict(cfg, actor_batch=max(1, cfg["num_envs"] // 2))  # Rollout.actor_batch_envs
  return cfg


def _differing(saved: Dict[str, Any], current: Dict[str, Any], skip: frozenset) -> Dict[str, Any]:
  return {k: (saved.get(k), current.get(k)) for k in set(saved) | set(current)
          if k not in skip and saved.get(k) != current.get(k)}
