"""Run and learner configuration: typed dataclasses that validate themselves.

No JAX import here: executor processes (spawned) and the launcher's flag parsing import this module
without paying for JAX. Errors are `ConfigError` with a one-line message meant for users.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional

ALGOS = ("a2c", "ppo")
CORRECTIONS = ("delayed", "truncated_is", "none")
OPTIMIZERS = ("rmsprop", "adam")
MODES = ("hts", "sync", "async")
NETWORK_KINDS = ("cnn", "mlp")  # `hts_jax.networks.make_network`'s kinds
NETWORKS = ("auto",) + NETWORK_KINDS  # what --network takes


class ConfigError(ValueError):
  """A user-facing configuration error; its message is one line."""


def _check(cond: bool, message: str) -> None:
  if not cond:
    raise ConfigError(message)


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
  """Learner hyperparameters. Defaults follow the paper's A2C (Table A3) where it gives them."""
  algo: str = "a2c"
  correction: str = "delayed"
  optimizer: str = "rmsprop"
  learning_rate: float = 7e-4
  rmsprop_decay: float = 0.99
  rmsprop_eps: float = 1e-5
  adam_eps: float = 1e-5
  max_grad_norm: float = 0.5
  # Linear decay of the learning rate to 0 over `lr_decay_updates` optimizer steps (0 = constant).
  lr_decay_updates: int = 0
  gamma: float = 0.99
  gae_lambda: float = 0.95
  value_coef: float = 0.5
  entropy_coef: float = 0.01
  # A2C: n-step horizon; the learner takes T // unroll_length A2C steps per segment.
  unroll_length: int = 5
  # PPO.
  ppo_epochs: int = 4
  num_minibatches: int = 4
  clip_eps: float = 0.2
  clip_value_loss: bool = True
  normalize_advantages: bool = True

  def __post_init__(self):
    _check(self.algo in ALGOS, f"algo must be one of {ALGOS}, got {self.algo!r}")
    _check(self.correction in CORRECTIONS,
           f"correction must be one of {CORRECTIONS}, got {self.correction!r}")
    _check(self.optimizer in OPTIMIZERS,
           f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
    _check(self.learning_rate > 0, f"learning_rate must be > 0, got {self.learning_rate}")
    _check(0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
    _check(0 <= self.gae_lambda <= 1, f"gae_lambda must be in [0, 1], got {self.gae_lambda}")
    _check(self.max_grad_norm > 0, f"max_grad_norm must be > 0, got {self.max_grad_norm}")
    _check(self.lr_decay_updates >= 0,
           f"lr_decay_updates must be >= 0, got {self.lr_decay_updates}")
    _check(self.unroll_length >= 1, f"unroll_length must be >= 1, got {self.unroll_length}")
    _check(self.ppo_epochs >= 1, f"ppo_epochs must be >= 1, got {self.ppo_epochs}")
    _check(self.num_minibatches >= 1,
           f"num_minibatches must be >= 1, got {self.num_minibatches}")
    _check(self.clip_eps > 0, f"clip_eps must be > 0, got {self.clip_eps}")

  def num_sgd_steps(self, segment_length: int) -> int:
    """Optimizer steps one learner iteration takes on a segment of `segment_length` steps."""
    self.check_segment_length(segment_length)
    if self.algo == "a2c":
      return segment_length // self.unroll_length
    return self.ppo_epochs * self.num_minibatches

  def check_segment_length(self, segment_length: int) -> None:
    if self.algo == "a2c":
      _check(segment_length % self.unroll_length == 0,
             f"alpha (segment length {segment_length}) must be a multiple of "
             f"unroll_length ({self.unroll_length})")
    else:
      _check(segment_length % self.num_minibatches == 0,
             f"alpha (segment length {segment_length}) must be a multiple of "
             f"num_minibatches ({self.num_minibatches}): PPO minibatches are sets of time steps")


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """One training run of the HTS-RL runtime (what `python -m experiments.train` builds from flags).

  Attributes (runtime-specific):
    env: env name (a gymnasium id such as `CartPole-v1`).
    env_kwargs: keyword arguments for the env constructor.
    alpha: synchronization interval: steps per env per segment (storage length).
    num_envs: env replicas; num_executors: processes owning them (envs split evenly);
    num_actors: actor threads doing batched inference in the main process.
    actor_batch: envs per actor policy call, the fixed shape that bitwise determinism needs
      (0: num_envs // 2). Executors step their envs in blocks of at most this many; an actor
      packs the blocks that are ready into calls of this size. Like alpha it is part of what a
      run computes: the same seed gives the same bits for any actor and executor count at a given
      actor_batch.
    total_steps: env steps to collect (rounded up to whole segments).
    eval_every: env steps between evaluations (0 = only at the end); eval_episodes per evaluation.
    executor_delay_s / executor_jitter_s: added to every env step (constant / uniform random,
      unseeded): for tests and benchmarks of the runtime under slow and variable envs.
    learner_delay_s: added to every learner iteration (tests of the concurrency).
    learner_devices / actor_devices: local devices the learner step / the policy step are
      data-parallel over (num_envs must divide evenly).
    checkpoint_every: learner updates between checkpoints (0: only on SIGINT/SIGTERM).
    decorrelate_steps: start-state decorrelation (Stooke & Abbeel 2018): each env replica first
      takes a random number in [0, decorrelate_steps] of uniform-random actions, keyed by env id.
    envpool: Atari through envpool (`hts_jax.runtime.envpool_group`): num_actors actor threads each
      drive an envpool instance over num_envs / num_actors envs; num_executors envpool threads.
    stop_at_return: end the run once the running average return of the 10 most recent
      evaluations reaches this (the paper's required time metric); needs eval_every > 0.
    vector_envs: executors step plain CartPole-v1 blocks in one tight loop
      (`hts_jax.envs.blocks.CartPoleBlock`, bit-for-bit gymnasium's env); False steps every
      gymnasium replica in turn (same results, slower; other envs always do).
    async_batch_unrolls: --mode=async: actor unrolls per learner update (0: num_actors, i.e. as
      many samples per update as HTS and sync; IMPALA uses a fixed batch whatever the actors).
  """
  env: str = "CartPole-v1"
  env_kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
  mode: str = "hts"
  network: str = "auto"
  alpha: int = 5
  num_envs: int = 16
  num_executors: int = 4
  num_actors: int = 1
  actor_batch: int = 0
  total_steps: int = 100_000
  seed: int = 0
  logdir: str = "runs/default"
  eval_every: int = 0
  eval_episodes: int = 10
  eval_greedy: bool = True
  log_every_s: float = 5.0
  executor_delay_s: float = 0.0
  executor_jitter_s: float = 0.0
  learner_delay_s: float = 0.0
  learner_devices: int = 1
  actor_devices: int = 1
  checkpoint_every: int = 0
  decorrelate_steps: int = 0
  envpool: bool = False
  vector_envs: bool = True
  stop_at_return: Optional[float] = None
  async_batch_unrolls: int = 0
  learner: LearnerConfig = dataclasses.field(default_factory=LearnerConfig)

  def __post_init__(self):
    _check(self.mode in MODES, f"mode must be one of {MODES}, got {self.mode!r}")
    _check(self.network in NETWORKS, f"network must be one of {NETWORKS}, got {self.network!r}")
    _check(self.alpha >= 1, f"alpha must be >= 1, got {self.alpha}")
    _check(self.num_envs >= 1, f"num_envs must be >= 1, got {self.num_envs}")
    _check(self.num_executors >= 1, f"num_executors must be >= 1, got {self.num_executors}")
    _check(self.num_executors <= self.num_envs,
           f"num_executors ({self.num_executors}) must not exceed num_envs ({self.num_envs})")
    _check(self.num_envs % self.num_executors == 0,
           f"num_envs ({self.num_envs}) must be divisible by num_executors ({self.num_executors})")
    _check(self.num_actors >= 1, f"num_actors must be >= 1, got {self.num_actors}")
    _check(0 <= self.actor_batch <= self.num_envs,
           f"actor_batch must be in [0, num_envs={self.num_envs}], got {self.actor_batch}")
    _check(self.actor_batch_envs % self.actor_devices == 0,
           f"actor_batch ({self.actor_batch_envs} envs) must be divisible by actor_devices "
           f"({self.actor_devices})")
    _check(self.total_steps >= 1, f"total_steps must be >= 1, got {self.total_steps}")
    _check(self.eval_every >= 0, f"eval_every must be >= 0, got {self.eval_every}")
    _check(self.eval_episodes >= 1, f"eval_episodes must be >= 1, got {self.eval_episodes}")
    _check(self.seed >= 0, f"seed must be >= 0, got {self.seed}")
    _check(self.decorrelate_steps >= 0,
           f"decorrelate_steps must be >= 0, got {self.decorrelate_steps}")
    _check(self.checkpoint_every >= 0,
           f"checkpoint_every must be >= 0, got {self.checkpoint_every}")
    for name in ("executor_delay_s", "executor_jitter_s", "learner_delay_s"):
      _check(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
    for name in ("learner_devices", "actor_devices"):
      d = getattr(self, name)
      _check(d >= 1, f"{name} must be >= 1, got {d}")
      _check(self.num_envs % d == 0,
             f"num_envs ({self.num_envs}) must be divisible by {name} ({d})")
    _check(self.stop_at_return is None or self.eval_every > 0,
           "stop_at_return needs eval_every > 0")
    if self.mode != "hts":
      _check(self.learner.correction == "delayed",
             f"--correction applies to --mode=hts (the baselines have no policy lag to "
             f"correct, or correct it with V-trace), got {self.learner.correction!r}")
    if self.mode == "async":
      _check(not self.envpool, "--envpool is for --mode=hts and --mode=sync")
      _check(self.learner.algo == "a2c",
             "--mode=async is IMPALA's V-trace actor-critic: use --algo=a2c")
      _check(self.async_batch_unrolls >= 0,
             f"async_batch_unrolls must be >= 0, got {self.async_batch_unrolls}")
      _check(self.num_executors % self.num_actors == 0,
             f"--mode=async: num_executors ({self.num_executors}) must be a multiple of "
             f"num_actors ({self.num_actors}): each actor owns whole executors")
    if self.envpool:
      _check(self.env.startswith("atari:"),
             f"--envpool is for atari:<Game> envs, not {self.env!r}")
      _check(self.num_envs % self.num_actors == 0,
             f"with --envpool, num_envs ({self.num_envs}) must be divisible by num_actors "
             f"({self.num_actors}): each actor drives one envpool instance")
      _check(self.decorrelate_steps == 0, "--decorrelate_steps is not available with --envpool")
    _check(bool(self.logdir), "logdir must be set")
    self.learner.check_segment_length(self.alpha)

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
  def learner_updates(self) -> int:
    """Learner updates over the run: one per segment (hts, sync); async: one per batch of
    `async_unrolls_per_update` unrolls."""
    if self.mode == "async":
      return -(-self.total_steps // self.async_steps_per_update)
    return self.num_segments

  @property
  def optimizer_steps(self) -> int:
    """Optimizer steps over the run (what `--lr_decay` decays over); a V-trace update is one."""
    per = 1 if self.mode == "async" else self.learner.num_sgd_steps(self.alpha)
    return self.learner_updates * per

  def env_ids_of_executor(self, executor: int):
    per = self.num_envs // self.num_executors
    return list(range(executor * per, (executor + 1) * per))

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)
