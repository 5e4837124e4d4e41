"""What a run is assembled from, typed and frozen, in the order the parts exist, and what a mode
gives the runner.

  Shape   what follows from (config, env spec) alone: rows, the block layout, the storages' shape.
          A mode answers its shape questions (its policy call's rows, its learner's input) from
          it, before anything is built or compiled.
  Model   the network, its head and the optimizer (what a mode's learner step is built from).
  Parts   everything `Runner` builds once for a run: the above, the placement, the compiled
          policy step (`ActingParts`), the learner worker (the only writer of the TrainState),
          the restored checkpoint, the host record. The controller and a mode's loop receive
          this, never the runner.
  Mode    a mode (`--mode`): its rules, its shape answers and its loop, defined in its loop's
          module (`runtime/loops`) and registered by `runtime.modes`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

import jax

from hts_jax.choices import ModeRules
from hts_jax.config import ConfigError, RunConfig
from hts_jax.envs import EnvInfo
from hts_jax.runtime import distributed
from hts_jax.runtime import storage as storage_lib
from hts_jax.runtime.sampler import ActingParts
from hts_jax.runtime.buffers import BlockLayout
from hts_jax.runtime.learner_worker import LearnerWorker, segment_of
from hts_jax.runtime.placement import Placement
from hts_jax.types import Segment

if TYPE_CHECKING:
  from hts_jax.runtime.controller import Controller


@dataclasses.dataclass(frozen=True)
class Shape:
  """A run's shapes, from the config and the env spec (`Shape.of`)."""
  config: RunConfig
  info: EnvInfo
  core_size: int  # floats of recurrent state per row (0: feed-forward)
  num_agents: int
  num_rows: int  # storage rows of this process: (env_id - env_offset) * agents + agent
  layout: BlockLayout
  storage: storage_lib.StorageSpec  # this process's storages (alpha steps of its env rows)

  @classmethod
  def of(cls, config: RunConfig, info: EnvInfo, core_size: int) -> "Shape":
    r, agents = config.rollout, info.num_agents
    # envpool: one group of envs per actor thread plays the executor (loops/envpool_group.py).
    # --alternating_groups: each executor's envs in two blocks, one per group (loops/sync.py).
    block_envs = (config.local_envs // r.num_executors // 2 if config.sync.alternating_groups
                  else r.actor_batch_envs)
    layout = BlockLayout(config.local_envs, r.num_actors if r.envpool else r.num_executors,
                         block_envs, agents, r.executor_blocks)
    storage = storage_lib.StorageSpec(r.alpha, config.local_envs, info.obs_shape, info.obs_dtype,
                                      agents, final_obs=config.learner.bootstrap_truncation,
                                      action_shape=info.action_shape,
                                      action_dtype=info.action_dtype, core_size=core_size)
    return cls(config, info, core_size, agents, config.local_envs * agents, layout, storage)

  def zeros_segment(self) -> Segment:
    """A segment of zeros shaped like the storages' (what the learner is compiled for)."""
    return segment_of(storage_lib.zeros(self.storage))


@dataclasses.dataclass(frozen=True)
class Model:
  """The network (`apply`), its kind, its action head and the optimizer."""
  network: Any
  kind: str
  head: Any
  optimizer: Any


@dataclasses.dataclass(frozen=True)
class Parts:
  """What `Runner` builds once; the controller and the mode's loop compose it."""
  config: RunConfig
  shape: Shape
  model: Model
  placement: Placement
  learner: LearnerWorker
  acting: ActingParts  # the compiled policy step and its rows (the mode's answer) among them
  host: Dict[str, Any]  # this session's host record (`host.start_record`)
  restored: Optional[Dict[str, Any]]  # the checkpoint resumed from, or None
  compile_s: float

  @property
  def policy(self):
    """The compiled policy step (`policy.make_policy_step`)."""
    return self.acting.policy

  @property
  def policy_rows(self) -> int:
    """Rows of one actor policy call."""
    return self.acting.rows

  def actor_params(self, params):
    """A copy of `params` on the actors' devices (replicated over them; no copy where they are
    the learner's)."""
    return jax.device_put(distributed.local_copy(params), self.placement.actor_params)


@dataclasses.dataclass(frozen=True)
class Mode:
  """A mode (`--mode`): `rules` what the JAX-free config knows of it (`choices.RULES`: its options
  and their checks, the correction it forces or reports, its update size); `policy_rows(shape)`
  the actors' fixed call shape; `learner_step(shape, model, lcfg)` the compiled update (default:
  the delayed-gradient A2C/PPO step); `learner_input(shape, segment)` an example input to compile
  it with; `acts_with_extras` whether actors need log-probs; `no_checkpoints` why it cannot
  checkpoint, if it cannot; `loop(parts, controller)` the run itself.

  A new mode is one module of `runtime/loops` that defines its `Mode` and its loop
  `loop(parts, ctl) -> summary`, composed of the parts (`Parts`) and the `Controller`'s
  verbs (the barrier's `go` / `wait_done`, the learner's `submit` / `result`, `boundary`,
  `finish`), plus its rules in `choices.RULES`; `hts_jax.runtime.modes` registers the `Mode` by
  importing its module (CONTRIBUTING.md). Its shape questions are answered from `Shape`
  (config and env spec) before anything is built."""
  rules: ModeRules
  policy_rows: Callable[[Shape], int]
  loop: Callable[[Parts, "Controller"], Dict[str, Any]]
  learner_step: Optional[Callable] = None
  learner_input: Optional[Callable] = None
  acts_with_extras: bool = False
  no_checkpoints: Optional[str] = None

  @property
  def name(self) -> str:
    return self.rules.name

  @property
  def checkpoints(self) -> bool:
    return self.no_checkpoints is None

  def check(self, config: RunConfig, resume: bool) -> None:
    """Refuses what this mode cannot do with `config` (one line)."""
    if not self.checkpoints and (resume or config.outputs.checkpoint_every):
      raise ConfigError(f"--mode={self.name} does not checkpoint ({self.no_checkpoints}); "
                        "use --mode=hts or sync")

  def total_steps(self, config: RunConfig) -> int:
    """The env steps the run takes (whole updates)."""
    return config.learner_updates * config.steps_per_update
