"""Run and learner configuration: typed dataclasses that validate themselves.

No JAX import here: executor processes (spawned) and the launcher's flag parsing import this module
without paying for JAX. Errors are `ConfigError` with a one-line message meant for users.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

# Re-exported: the learner's config and the shared validation live in `learner_config.py`.
from hts_jax.learner_config import (ALGOS, CHOICES, CORRECTIONS, GOSSIP, MINIBATCHES,  # noqa: F401
                                    MODES, NETWORK_KINDS, NETWORKS, OPTIMIZERS, REDUCTIONS,
                                    ConfigError, LearnerConfig, check, check_choices)
from hts_jax.mode_options import MODE_CHECKS, UPDATES

WANDB_MODES = ("online", "offline")  # --wandb_mode


def resumable(default: Any) -> Any:
  """A field that a resumed run may change (it changes no result: outputs, counts, the run's
  length, testing delays); every other field must match the checkpoint's config."""
  return dataclasses.field(default=default, metadata={"resumable": True})


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """One training run of the HTS-RL runtime (what `python -m experiments.train` builds from flags).

  Each field's docstring is its help text: the launcher's flags are generated from the fields.
  """
  env: str = "CartPole-v1"
  """Env: a gymnasium id (CartPole-v1, module:Id-v0), atari:<Game>, vstep."""
  env_kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
  """Keyword arguments for the env constructor (a JSON object on the command line)."""
  mode: str = "hts"
  """hts (HTS-RL), sync (synchronous A2C/PPO baseline), async (IMPALA, V-trace), gala
  (GALA-A2C: gossiping A2C agents, Assran et al. 2019), allreduce (A2C agents whose gradients
  are all-reduced: GALA's baseline)."""
  network: str = "auto"
  """auto: CNN for images, MLP for vectors."""
  alpha: int = 5
  """Synchronization interval: steps per env per segment (storage length)."""
  num_envs: int = 16
  """Env replicas."""
  num_executors: int = resumable(4)
  """Executor processes owning the env replicas (num_envs must divide evenly)."""
  num_actors: int = resumable(1)
  """Actor threads doing batched inference in the main process."""
  actor_batch: int = 0
  """Envs per actor policy call, the fixed shape that bitwise determinism needs
  (0: num_envs // 2). Executors step their envs in blocks of at most this many; an actor packs
  the blocks that are ready into calls of this size. Like alpha it is part of what a run
  computes: the same seed gives the same bits for any actor and executor count at a given
  actor_batch."""
  total_steps: int = resumable(100_000)
  """Env steps to collect (rounded up to whole segments)."""
  seed: int = 0
  """Run seed: everything random derives from it."""
  logdir: str = resumable("runs/default")
  """Output directory."""
  eval_every: int = resumable(0)
  """Env steps between evaluations (0: only at the end)."""
  eval_episodes: int = resumable(10)
  """Episodes per evaluation."""
  eval_greedy: Optional[bool] = resumable(None)
  """Evaluate the greedy (argmax) policy; unset: sampled actions on atari: and gfootball: envs
  (the paper's protocol, and a greedy untrained Atari policy may never press FIRE after a lost
  life and play to the step cap), greedy on the others."""
  eval_max_steps: int = resumable(0)
  """Env steps an evaluation episode may take before it is cut (0: the env's own limit, at most
  108,000); a cut episode counts its return so far, and the evaluation says so in one line."""
  log_every_s: float = resumable(5.0)
  """Seconds between progress lines."""
  tensorboard: bool = resumable(True)
  """Write TensorBoard event files into logdir (every learner update's row, evaluations, idle and
  efficiency figures, the config, videos): `tensorboard --logdir runs`."""
  video_every: int = resumable(0)
  """Env steps between recorded evaluation episodes (0: none): one episode of the current params
  (the first evaluation episode: same seed and policy), saved as <logdir>/videos/eval-<env
  steps>.mp4 (a GIF where no encoder is available) and sent to TensorBoard and W&B. It runs in the
  evaluator's thread on an env of its own: training results do not change."""
  video_final: bool = resumable(False)
  """Also record an episode of the final params (as video_every does)."""
  wandb_project: str = resumable("")
  """Also log to this Weights & Biases project (the scalars, config and videos TensorBoard gets;
  the W&B files go to <logdir>/wandb). Empty: no W&B."""
  wandb_entity: str = resumable("")
  """W&B entity (user or team) of --wandb_project (empty: your default)."""
  wandb_mode: str = resumable("online")
  """W&B mode: online, or offline (no network: the run is written to <logdir>/wandb and
  `wandb sync` uploads it later)."""
  executor_delay_s: float = resumable(0.0)
  """Testing: sleep added to every env step (the runtime under slow envs)."""
  executor_jitter_s: float = resumable(0.0)
  """Testing: uniform random (unseeded) sleep up to this, added to every env step (the runtime
  under variable envs)."""
  learner_delay_s: float = resumable(0.0)
  """Testing: sleep added to every learner update (tests of the concurrency)."""
  learner_devices: Tuple[int, ...] = (0,)
  """Indices of the local devices the learner step is data-parallel over (comma separated;
  num_envs must divide evenly). They may overlap the actor devices or not: e.g. actors on GPU 0,
  the learner on GPUs 1-7 (`--actor_devices=0 --learner_devices=1,2,3,4,5,6,7`)."""
  actor_devices: Tuple[int, ...] = (0,)
  """Indices of the local devices the actors' policy step is data-parallel over and the
  evaluator runs on (its first); params are copied there once per segment (comma separated; the
  actor batch must divide evenly)."""
  xla_deterministic: bool = True
  """On GPU, XLA's deterministic ops (`--xla_gpu_deterministic_ops`: deterministic scatters and
  reductions, no timing-based GEMM autotuning), so GPU runs keep the
  determinism contract (the same param_sha256 run after run and for any actor count) at some
  speed (`experiments/bench_gpu.py` measures it). No effect on CPU, which is deterministic anyway.
  Set in XLA_FLAGS before JAX starts its backends (the launchers do; in a notebook, run before the
  first JAX computation)."""
  checkpoint_every: int = resumable(0)
  """Learner updates between checkpoints (0: only on SIGINT/SIGTERM)."""
  decorrelate_steps: int = 0
  """Start-state decorrelation (Stooke & Abbeel 2018): each env replica first takes a random
  number in [0, decorrelate_steps] of uniform-random actions, keyed by env id."""
  envpool: bool = False
  """Atari fast path through envpool (`hts_jax.runtime.envpool_group`): num_actors actor threads
  each drive an envpool instance over num_envs / num_actors envs; num_executors envpool
  threads."""
  vector_envs: bool = True
  """Executors step plain CartPole-v1 blocks in one tight loop (`hts_jax.envs.blocks.CartPoleBlock`,
  bit-for-bit gymnasium's env); False steps every gymnasium replica in turn (same results,
  slower; other envs always do)."""
  stop_at_return: Optional[float] = None
  """End the run once the running average return of the 10 most recent evaluations reaches
  this (the paper's required time metric); needs eval_every > 0."""
  async_batch_unrolls: int = 0
  """--mode=async: actor unrolls per learner update (0: num_actors, i.e. as many samples per
  update as HTS and sync; IMPALA uses a fixed batch whatever the actors)."""
  num_processes: int = 1
  """Processes of a multi-process run (`jax.distributed`; `hts-launch` starts
  them on one machine): each runs the executors and actors of its slice of the global env ids
  (num_envs / num_processes envs; num_executors and num_actors are per process), the learner
  runs over every process's learner devices."""
  process_id: int = resumable(0)
  """This process's index in a multi-process run (0 writes the outputs and evaluates)."""
  coordinator_address: str = resumable("")
  """host:port of the multi-process run's coordinator (process 0's machine)."""
  alternating_groups: bool = False
  """--mode=sync: each executor's envs form two groups that alternate, one stepping while the
  batched inference for the other runs (Stooke & Abbeel 2018, Section 4.1); same results as
  plain sync (each group's call keeps sync's [num_envs] shape)."""
  gala_agents: int = 4
  """--mode=gala / allreduce: A2C agents (learners), each with num_envs / gala_agents envs and
  num_executors / gala_agents executors of its own, acting in lockstep over them."""
  gala_gossip: str = "async"
  """--mode=gala: async (the paper's: send the params to the out-peer without waiting, mix in the
  newest message received, if any) or fixed (mix the in-peer's params of exactly gala_staleness
  updates before, waiting for them: bitwise reproducible)."""
  gala_staleness: int = 1
  """--gala_gossip=fixed: agent i's update k mixes its in-peer's params after update
  k - gala_staleness (0: the same update, a synchronous ring)."""
  learner: LearnerConfig = dataclasses.field(default_factory=LearnerConfig)
  """Learner hyperparameters (on the command line, its fields are flags of their own)."""

  def __post_init__(self):
    check_choices(self)
    check(self.alpha >= 1, f"alpha must be >= 1, got {self.alpha}")
    check(self.num_envs >= 1, f"num_envs must be >= 1, got {self.num_envs}")
    check(self.num_processes >= 1, f"num_processes must be >= 1, got {self.num_processes}")
    check(0 <= self.process_id < self.num_processes,
           f"process_id must be in [0, num_processes={self.num_processes}), got {self.process_id}")
    check(self.num_envs % self.num_processes == 0,
           f"num_envs ({self.num_envs}) must be divisible by num_processes ({self.num_processes})")
    n = self.local_envs
    where = "" if self.num_processes == 1 else " per process"
    check(self.num_executors >= 1, f"num_executors must be >= 1, got {self.num_executors}")
    check(self.num_executors <= n,
           f"num_executors ({self.num_executors}) must not exceed num_envs{where} ({n})")
    check(n % self.num_executors == 0,
           f"num_envs{where} ({n}) must be divisible by num_executors ({self.num_executors})")
    check(self.num_actors >= 1, f"num_actors must be >= 1, got {self.num_actors}")
    check(0 <= self.actor_batch <= n,
           f"actor_batch must be in [0, num_envs{where}={n}], got {self.actor_batch}")
    check(self.actor_batch_envs <= n,
           f"the actor batch ({self.actor_batch_envs} envs) exceeds num_envs{where} ({n}): "
           "set --actor_batch")
    for name in ("learner_devices", "actor_devices"):
      d = getattr(self, name)
      check(isinstance(d, tuple) and len(d) >= 1 and
             all(isinstance(i, int) and i >= 0 for i in d) and len(set(d)) == len(d),
             f"{name} must be distinct device indices >= 0, got {d!r}")
    check(self.actor_batch_envs % len(self.actor_devices) == 0,
           f"actor_batch ({self.actor_batch_envs} envs) must be divisible by the number of "
           f"actor_devices ({len(self.actor_devices)})")
    check(self.total_steps >= 1, f"total_steps must be >= 1, got {self.total_steps}")
    check(self.eval_every >= 0, f"eval_every must be >= 0, got {self.eval_every}")
    check(self.eval_episodes >= 1, f"eval_episodes must be >= 1, got {self.eval_episodes}")
    check(self.eval_max_steps >= 0, f"eval_max_steps must be >= 0, got {self.eval_max_steps}")
    check(self.video_every >= 0, f"video_every must be >= 0 (0: no videos), got "
           f"{self.video_every}")
    check(self.wandb_mode in WANDB_MODES,
           f"wandb_mode must be one of {WANDB_MODES}, got {self.wandb_mode!r}")
    check(self.seed >= 0, f"seed must be >= 0, got {self.seed}")
    check(self.decorrelate_steps >= 0,
           f"decorrelate_steps must be >= 0, got {self.decorrelate_steps}")
    check(self.checkpoint_every >= 0,
           f"checkpoint_every must be >= 0, got {self.checkpoint_every}")
    for name in ("executor_delay_s", "executor_jitter_s", "learner_delay_s"):
      check(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
    check(n % len(self.learner_devices) == 0,
           f"num_envs{where} ({n}) must be divisible by the number of learner_devices "
           f"({len(self.learner_devices)})")
    check(self.stop_at_return is None or self.eval_every > 0,
           "stop_at_return needs eval_every > 0")
    for mode_check in MODE_CHECKS.get(self.mode, ()):  # each mode's own options
      mode_check(self, n, where)
    check(not self.alternating_groups or self.mode == "sync",
          "--alternating_groups is an option of --mode=sync")
    if self.envpool:
      check(self.env.startswith("atari:"),
             f"--envpool is for atari:<Game> envs, not {self.env!r}")
      check(n % self.num_actors == 0,
             f"with --envpool, num_envs{where} ({n}) must be divisible by num_actors "
             f"({self.num_actors}): each actor drives one envpool instance")
      check(self.decorrelate_steps == 0, "--decorrelate_steps is not available with --envpool")
    check(bool(self.logdir), "logdir must be set")
    self.learner.check_segment_length(self.alpha)

  @property
  def evaluates_greedy(self) -> bool:
    """Whether evaluations take the argmax action (`eval_greedy`, or its default by env)."""
    if self.eval_greedy is not None:
      return self.eval_greedy
    return not self.env.startswith(("atari:", "gfootball:"))

  @property
  def local_envs(self) -> int:
    """Envs of this process (all of them in a one-process run)."""
    return self.num_envs // self.num_processes

  @property
  def env_offset(self) -> int:
    """This process's first global env id: its envs are [env_offset, env_offset + local_envs)."""
    return self.process_id * self.local_envs

  @property
  def actor_batch_envs(self) -> int:
    """Envs per actor policy call (see `actor_batch`)."""
    return self.actor_batch or max(1, self.num_envs // 2)

  @property
  def steps_per_segment(self) -> int:
    return self.alpha * self.num_envs

  @property
  def num_segments(self) -> int:
    return -(-self.total_steps // self.steps_per_segment)

  @property
  def async_unrolls_per_update(self) -> int:
    return self.async_batch_unrolls or self.num_actors

  @property
  def async_steps_per_update(self) -> int:
    return self.alpha * self.num_envs // self.num_actors * self.async_unrolls_per_update

  @property
  def steps_per_update(self) -> int:
    """Env steps per learner update: a segment's, or the mode's own (`mode_options.UPDATES`)."""
    own = UPDATES.get(self.mode)
    return self.steps_per_segment if own is None else own[0](self)

  @property
  def learner_updates(self) -> int:
    """Learner updates over the run (the last one whole)."""
    return -(-self.total_steps // self.steps_per_update)

  @property
  def optimizer_steps(self) -> int:
    """Optimizer steps over the run (what `--lr_decay` decays over)."""
    own = UPDATES.get(self.mode)
    per = self.learner.num_sgd_steps(self.alpha) if own is None else own[1]
    return self.learner_updates * per

  def env_ids_of_executor(self, executor: int):
    """The global env ids of this process's executor `executor`."""
    per = self.local_envs // self.num_executors
    return list(range(self.env_offset + executor * per, self.env_offset + (executor + 1) * per))

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


def resumable_fields() -> frozenset:
  """The names of RunConfig's fields marked `resumable`."""
  return frozenset(f.name for f in dataclasses.fields(RunConfig) if f.metadata.get("resumable"))
