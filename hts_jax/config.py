"""The run's configuration: typed dataclasses that validate themselves.

`RunConfig` is the mode, one section per concern and the learner's hyperparameters: what a run
computes (`Rollout`), when it evaluates (`Evaluation`), what it writes (`Outputs`), where it runs
(`Devices`, `Distributed`), the testing hooks (`Testing`), each mode's own options (`HtsOptions`,
`SyncOptions`, `AsyncOptions`, `GalaOptions`) and the learner's `LearnerConfig`. The values a field
may take and the rules of the algorithms, env families and modes are `choices.py`'s; named
presets are `presets.py`'s.

Each field's docstring is its flag's help text, and every field is a launcher flag of its own name
(`FLAG_PREFIX` + name where a section has a prefix), so `RunConfig.make(num_envs=8,
logdir="runs/x")` builds a config from flag names, `config.replace` changes some, and `to_dict()`
(what summary.json and checkpoints store) is keyed by flag name. Fields made with `resumable(...)`
may change when a run resumes from a checkpoint (they change no result); every other field must
match the checkpoint's.

No JAX import here: executor processes (spawned) and the launcher's flag parsing import this module
without paying for JAX. Errors are `ConfigError` with a one-line message meant for users.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import typing
from typing import Any, ClassVar, Dict, Optional, Tuple

from hts_jax.choices import (ALGORITHMS, ENVPOOL_MUJOCO, FAMILIES, MODES, RULES, SAMPLED_EVALUATION,
                             WANDB_MODES, ConfigError, check, check_choices, check_finite,
                             family_of, flag_name)

# Evaluations in the paper's running average ("the most recent 100 evaluation episodes, 10 of each
# of the ten most recent policies"): `analysis.metrics` and --stop_at_return use full windows.
RUNNING_WINDOW = 10


def resumable(default: Any) -> Any:
  """A field a resumed run may change (it changes no result); others must match the checkpoint."""
  return dataclasses.field(default=default, metadata={"resumable": True})


# The sections of RunConfig, one per concern.

@dataclasses.dataclass(frozen=True)
class Rollout:
  """What the run computes: the env, its replicas and their split over processes and threads, the
  segment length, the run's length and seed."""
  env: str = "CartPole-v1"
  """Env: a gymnasium id (CartPole-v1, module:Id-v0), atari:<Game>, gfootball:<scenario>,
  minatar:<Game>, vstep."""
  env_kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
  """Keyword arguments for the env constructor (a JSON object on the command line)."""
  network: str = "auto"
  """auto: MinAtar's network for minatar: envs, CNN for images, MLP for vectors; cnn (the paper's
  Nature CNN), mlp, minatar (Young & Tian's: one 3x3 conv of 16, 128 units)."""
  core: str = "none"
  """Recurrent core after the network's torso: none (feed-forward) or lstm (an LSTM whose state
  each env row keeps in the storage, reset where an episode ends; `hts_jax.networks.Recurrent`).
  PPO then needs --minibatch=envs (whole sequences)."""
  core_size: int = 256
  """Units of the LSTM core (its state per row is 2 x core_size floats: c and h)."""
  alpha: int = 5
  """Synchronization interval: steps per env per segment (storage length)."""
  num_envs: int = 16
  """Env replicas."""
  num_executors: int = resumable(4)
  """Executor processes owning the env replicas (num_envs must divide evenly)."""
  num_actors: int = resumable(1)
  """Actors doing batched inference in the main process."""
  actor_batch: int = 0
  """Envs per actor policy call, the fixed shape that bitwise determinism needs
  (0: num_envs // 2). Executors step their envs in blocks of at most this many; an actor packs
  the blocks that are ready into calls of this size. Like alpha it is part of what a run
  computes: the same seed gives the same bits for any actor and executor count at a given
  actor_batch."""
  executor_blocks: int = resumable(1)
  """Blocks each executor steps its envs in (each at most actor_batch envs): with 2 or more, an
  executor steps one block while the actors compute another's actions (their latency hidden).
  The policy calls keep their shape, so a run computes the same bits for any value. Not with
  --envpool or --alternating_groups (they set their own blocks)."""
  actor_wait: float = resumable(0.0)
  """HTS, one actor: when the ready blocks fill less than a policy call, how long it waits for more,
  in mean policy calls (0: it calls at once; no bits change; docs/training.md says when it pays)."""
  total_steps: int = resumable(100_000)
  """Env steps to collect (rounded up to whole segments)."""
  seed: int = 0
  """Run seed: everything random derives from it."""
  decorrelate_steps: int = 0
  """Start-state decorrelation (Stooke & Abbeel 2018): each env replica first takes a random
  number in [0, decorrelate_steps] of uniform-random actions, keyed by env id."""
  envpool: bool = False
  """Fast path through envpool (`hts_jax.runtime.loops.envpool_group`) for atari:<Game> and the
  MuJoCo ids envpool has (e.g. HalfCheetah-v5): num_actors actor threads each drive an envpool
  instance over num_envs / num_actors envs; num_executors envpool threads."""
  vector_envs: bool = True
  """Executors step plain CartPole-v1 blocks in one tight loop (`hts_jax.envs.blocks.CartPoleBlock`,
  bit-for-bit gymnasium's env); False steps every gymnasium replica in turn (same results,
  slower; other envs always do)."""
  watchdog_s: float = resumable(0.0)
  """Seconds an executor may go without stepping an env in the middle of a segment before the
  run stops with one line naming it, its envs and its last step (a hung env, a stopped process);
  0: 50 times the longest gap between its steps measured so far, at least 10 s. Also the seconds
  the learner thread's update may run (0: 50 times its longest update so far, at least 120 s)."""
  startup_s: float = resumable(300.0)
  """Seconds each stage of an executor's start-up may take (spawn, then for each of its envs: env
  make, first reset) before the run stops with one line naming the executor, the stage and the
  env (0: no limit). 300 s: a GFootball env make took 1.6 s on a loaded 2-core machine, so about
  13 s with 16 executors starting at once there; imports and slower envs get 20 times that."""

  def __post_init__(self):
    check_finite(type(self), vars(self))
    check_choices(self)
    check(self.watchdog_s >= 0, f"watchdog_s must be >= 0, got {self.watchdog_s}")
    check(self.startup_s >= 0, f"startup_s must be >= 0, got {self.startup_s}")
    for name in ("alpha", "num_envs", "num_executors", "num_actors", "total_steps", "core_size"):
      check(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
    for name in ("actor_batch", "seed", "decorrelate_steps", "actor_wait"):
      check(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
    if self.envpool:
      family = family_of(self.env)
      check((family is not None and family.envpool) or self.env in ENVPOOL_MUJOCO,
            f"--envpool is for {', '.join(f.usage for f in FAMILIES if f.envpool)} envs and "
            f"envpool's MuJoCo ids (HalfCheetah-v5, Hopper-v5, ...), not {self.env!r}")
      check(self.decorrelate_steps == 0, "--decorrelate_steps is not available with --envpool")

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


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """When and how the run evaluates its policy, records videos and stops early."""
  eval_every: int = resumable(0)
  """Env steps between evaluations (0: only at the end)."""
  eval_episodes: int = resumable(10)
  """Episodes per evaluation."""
  eval_greedy: Optional[bool] = resumable(None)
  """Evaluate the greedy (argmax) policy; unset: sampled actions on atari:, gfootball: and
  minatar: envs (the paper's protocol, and a greedy untrained Atari policy may never press FIRE
  after a lost life and play to the step cap; MinAtar stands in for Atari), greedy on the
  others."""
  eval_max_steps: int = resumable(0)
  """Env steps an evaluation episode may take before it is cut (0: the env's own limit, at most
  108,000); a cut episode counts its return so far, and the evaluation says so in one line."""
  video_every: int = resumable(0)
  """Env steps between recorded evaluation episodes (0: none): one episode of the current params
  (the first evaluation episode: same seed and policy), saved as <logdir>/videos/eval-<env
  steps>.mp4 (a GIF where no encoder is available) and sent to TensorBoard and W&B. It runs in the
  evaluator's thread on an env of its own: training results do not change."""
  video_final: bool = resumable(False)
  """Also record an episode of the final params (as video_every does)."""
  stop_at_return: Optional[float] = None
  """End the run once the running average return of the 10 most recent evaluations reaches
  this (the paper's required time metric); needs eval_every > 0."""

  def __post_init__(self):
    check_finite(type(self), vars(self))
    check(self.eval_every >= 0, f"eval_every must be >= 0, got {self.eval_every}")
    check(self.eval_episodes >= 1, f"eval_episodes must be >= 1, got {self.eval_episodes}")
    check(self.eval_max_steps >= 0, f"eval_max_steps must be >= 0, got {self.eval_max_steps}")
    check(self.video_every >= 0, f"video_every must be >= 0 (0: no videos), got "
          f"{self.video_every}")
    check(self.stop_at_return is None or self.eval_every > 0,
          "stop_at_return needs eval_every > 0")

  def greedy(self, env: str) -> bool:
    """Whether evaluations of `env` take the argmax action (`eval_greedy`, or its default)."""
    if self.eval_greedy is not None:
      return self.eval_greedy
    return not env.startswith(SAMPLED_EVALUATION)


@dataclasses.dataclass(frozen=True)
class Outputs:
  """What the run writes: its folder, progress lines, TensorBoard, W&B and checkpoints."""
  logdir: str = resumable("runs/default")
  """Output directory."""
  log_every_s: float = resumable(5.0)
  """Seconds between progress lines (> 0)."""
  tensorboard: bool = resumable(True)
  """Write TensorBoard event files into logdir (every learner update's row, evaluations, idle and
  efficiency figures, the config, videos): `tensorboard --logdir runs`."""
  wandb_project: str = resumable("")
  """Also log to this Weights & Biases project (the scalars, config and videos TensorBoard gets;
  the W&B files go to <logdir>/wandb). Empty: no W&B."""
  wandb_entity: str = resumable("")
  """W&B entity (user or team) of --wandb_project (empty: your default)."""
  wandb_mode: str = resumable("online")
  """W&B mode: online, or offline (no network: the run is written to <logdir>/wandb and
  `wandb sync` uploads it later)."""
  checkpoint_every: int = resumable(0)
  """Learner updates between checkpoints (0: only on SIGINT/SIGTERM)."""
  host_calibration: bool = resumable(True)
  """Time a fixed CPU workload (a CNN and an MLP gradient step, a matmul, a Python loop; about a
  second) at start-up and again at the end into summary.json's host block, so SPS from different
  hosts can be compared and a host that slowed inside the run shows (the rest of the host block is
  always recorded)."""
  resume_unverified: bool = resumable(False)
  """With --resume: restore a checkpoint that has no digest to check it against (written before
  checkpoints had one, or with its digest/ and files.json deleted), with a warning. Without it such
  a checkpoint is refused: a flipped bit in it would resume silently."""
  resume_unsigned: bool = resumable(False)
  """With --resume: unpickle env states that this machine's checkpoint key did not sign (a
  checkpoint copied from another machine or user, or from before signatures), with a warning.
  Unpickling runs any code a pickle names: pass it only for a checkpoint you trust. The key is
  $HTS_JAX_KEY_FILE, else ~/.config/hts_jax/checkpoint.key (docs/determinism.md)."""
  overwrite: bool = resumable(False)
  """Start a new run in a logdir that holds an earlier one: its metrics.csv, summary.json,
  checkpoints, TensorBoard event files and videos are deleted first (without it such a logdir is
  refused; --resume continues the earlier run instead)."""

  def __post_init__(self):
    check_finite(type(self), vars(self))
    check(bool(self.logdir), "logdir must be set")
    check(self.log_every_s > 0, f"log_every_s must be > 0, got {self.log_every_s}")
    check(self.wandb_mode in WANDB_MODES,
          f"wandb_mode must be one of {WANDB_MODES}, got {self.wandb_mode!r}")
    check(self.checkpoint_every >= 0, f"checkpoint_every must be >= 0, got {self.checkpoint_every}")


@dataclasses.dataclass(frozen=True)
class Devices:
  """Which local devices the learner and the actors compute on."""
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

  def __post_init__(self):
    for name in ("learner_devices", "actor_devices"):
      d = getattr(self, name)
      check(isinstance(d, tuple) and len(d) >= 1 and
            all(isinstance(i, int) and i >= 0 for i in d) and len(set(d)) == len(d),
            f"{name} must be distinct device indices >= 0, got {d!r}")


@dataclasses.dataclass(frozen=True)
class Distributed:
  """A multi-process run (`jax.distributed`): how many processes, which one this is."""
  num_processes: int = 1
  """Processes of a multi-process run (`jax.distributed`; `hts-launch` starts them on one machine):
  each runs the executors and actors of its slice of the global env ids (num_envs / num_processes
  envs; num_executors and num_actors are per process); the learner runs over all their devices."""
  process_id: int = resumable(0)
  """This process's index in a multi-process run (0 writes the outputs and evaluates)."""
  coordinator_address: str = resumable("")
  """host:port of the multi-process run's coordinator (process 0's machine); port + 1 beside it
  is the job check that every other process asks before joining (docs/multiprocess.md)."""
  job_token: str = resumable("")
  """What the processes of one multi-process job share, checked before a process joins the
  coordinator (a process of another job is refused in one line and cannot harm this one).
  hts-launch makes a random one; under SLURM pass $SLURM_JOB_ID. Empty: a digest of what the run
  computes, its logdir and num_processes (the same flags on every machine give the same)."""
  join_timeout_s: float = resumable(120.0)
  """Seconds a multi-process run's processes wait to join: then process 0 names the ids that never
  asked its job check, another the check that never answered (one line, exit code 2)."""

  def __post_init__(self):
    check(self.num_processes >= 1, f"num_processes must be >= 1, got {self.num_processes}")
    check(0 <= self.process_id < self.num_processes,
          f"process_id must be in [0, num_processes={self.num_processes}), got {self.process_id}")
    # In one process nothing joins: these would be ignored.
    given = " and ".join(f"--{n}" for n in ("coordinator_address", "job_token") if getattr(self, n))
    check(self.num_processes > 1 or not given, f"{given}: for a multi-process run, which joins "
          "nothing without --num_processes > 1")
    check_finite(type(self), vars(self))
    check(self.join_timeout_s > 0, f"join_timeout_s must be > 0, got {self.join_timeout_s}")


@dataclasses.dataclass(frozen=True)
class Testing:
  """Hooks for tests and benchmarks of the runtime: delays that make envs and the learner slow or
  variable (they change no result)."""
  executor_delay_s: float = resumable(0.0)
  """Testing: sleep added to every env step (the runtime under slow envs)."""
  executor_jitter_s: float = resumable(0.0)
  """Testing: uniform random (unseeded) sleep up to this, added to every env step (the runtime
  under variable envs)."""
  learner_delay_s: float = resumable(0.0)
  """Testing: sleep added to every learner update (tests of the concurrency)."""
  policy_delay_s: float = resumable(0.0)
  """Testing: sleep added to every actor's policy call on executors' observations (tests of the
  watchdog)."""

  def __post_init__(self):
    check_finite(type(self), vars(self))
    for name in ("executor_delay_s", "executor_jitter_s", "learner_delay_s", "policy_delay_s"):
      check(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")


# Each mode's own options: a section of RunConfig (the mode's rules: `choices.RULES`).

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


# The learner's hyperparameters.

@dataclasses.dataclass(frozen=True)
class LearnerConfig:
  """Learner hyperparameters. Defaults follow the paper's A2C (Table A3) where it gives them.

  Each field's docstring is its help text: the launcher's flags are generated from the fields.
  """
  algo: str = "a2c"
  """Learning algorithm."""
  correction: str = "delayed"
  """Policy-lag correction of --mode=hts: delayed (the paper's Eq. 6: the update computed at the
  behaviour params theta_{j-1} and added to theta_j; for PPO the sum of its steps), behaviour (PPO
  only: the steps start at theta_j, the ratio, old values and GAE are theta_{j-1}'s: the reference
  HTS-RL code's HTS-PPO), decoupled (PPO only: the clip centred on theta_j, samples weighted by
  min(is_cap, pi_j/pi_{j-1}); Hilton et al. 2022), truncated_is (at theta_j with weights
  min(1, pi_j/pi_{j-1}); Table A1), none (at theta_j, everything recomputed there: the lag
  ignored; Table A1)."""
  optimizer: str = "rmsprop"
  """Optimizer: RMSProp (PyTorch semantics, as the paper) or Adam."""
  learning_rate: float = 7e-4
  """Learning rate."""
  rmsprop_decay: float = 0.99
  """RMSProp's decay of the squared-gradient average."""
  rmsprop_eps: float = 1e-5
  """RMSProp's epsilon, added outside the square root."""
  adam_eps: float = 1e-5
  """Adam's epsilon."""
  max_grad_norm: float = 0.5
  """Global gradient-norm clip."""
  lr_decay_updates: int = 0
  """Linear decay of the learning rate to 0 over this many optimizer steps (0: constant)."""
  gamma: float = 0.99
  """Discount."""
  gae_lambda: float = 0.95
  """GAE lambda (PPO)."""
  value_coef: float = 0.5
  """Value loss coefficient."""
  entropy_coef: float = 0.01
  """Entropy bonus coefficient (positive raises entropy)."""
  unroll_length: int = 5
  """A2C n-step horizon (must divide alpha): the learner takes alpha // unroll_length A2C steps
  per segment."""
  ppo_epochs: int = 4
  """PPO epochs per segment."""
  num_minibatches: int = 4
  """PPO minibatches per epoch (must divide alpha)."""
  clip_eps: float = 0.2
  """PPO clip epsilon."""
  is_cap: float = 100.0
  """--correction=decoupled: the cap c-bar of its importance weights min(c-bar, pi_j/pi_{j-1}).
  100, as openai/ppo-ewma (Hilton et al. 2022): a cap for numerical safety only, so the objective
  stays the unbiased decoupled one; a lower cap trades bias for variance (1 is truncated_is)."""
  acting_extrapolation: float = 0.0
  """--mode=hts with --correction=none: the executors act with theta_j + beta (theta_j -
  theta_{j-1}), a prediction of theta_{j+1}, the params that learn from the segment they collect
  (weight prediction; SpecTrain, Chen et al. 2018); observation statistics stay theta_j's and
  evaluations use theta_j. 0: act with theta_j, HTS as the paper. The learner then also reports
  kl_next and kl_pred, the acting policy's KL to theta_{j+1} without and with the prediction."""
  lag_diagnostics: bool = True
  """PPO: report the lag's diagnostics every update (kl_lag, is_weight, is_ess, is_above_2,
  is_capped: KL(mu || p) and the weights against theta_{j-1}), which costs one more forward pass
  of theta_{j-1} over the segment where the correction does not take it anyway (none, delayed,
  behaviour at lag 1; every sync and --policy_lag=0 update). Off: the update skips that pass and
  those columns (the params are the same bits)."""
  clip_value_loss: bool = True
  """PPO: clip the value loss around the old values as Kostrikov's PPO (else plain 1/2 (V-R)^2)."""
  normalize_advantages: bool = True
  """PPO: normalize the advantages over the segment (zero mean, unit variance)."""
  minibatch: str = "transitions"
  """PPO minibatches: transitions (each env's time steps shuffled, every minibatch holding
  alpha / num_minibatches transitions of every env), time_steps (all envs of the chosen steps) or
  envs (whole alpha-step sequences of num_envs / num_minibatches env rows, shuffled each epoch:
  what a recurrent core needs, as CleanRL's ppo_atari_lstm and sb3-contrib's RecurrentPPO)."""
  loss_reduction: str = "mean"
  """How losses reduce over samples: mean (Kostrikov's A2C/PPO) or sum (IMPALA's V-trace)."""
  bootstrap_truncation: bool = False
  """Bootstrap episodes cut by a time limit from V(final observation) instead of treating the cut
  as terminal (the paper's and the references' behaviour)."""
  normalize_obs: bool = False
  """Standardise observations by running statistics kept in the learner's state (updated from
  each whole segment, published with the params; clipped to ±10 as in CleanRL's
  ppo_continuous_action), for vector observations (`hts_jax.normalization`)."""
  normalize_rewards: bool = False
  """Scale rewards by the running standard deviation of each env's discounted return (clipped to
  ±10; OpenAI baselines' VecNormalize, CleanRL's NormalizeReward), kept in the learner's state
  and updated from each whole segment. Episode returns and evaluations stay raw."""

  def __post_init__(self):
    check_choices(self)
    check(self.learning_rate > 0, f"learning_rate must be > 0, got {self.learning_rate}")
    # > 0 also keeps the normalisers' statistics (zero gradients) exactly unchanged by Adam.
    check(self.adam_eps > 0, f"adam_eps must be > 0, got {self.adam_eps}")
    check(0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
    check(0 <= self.gae_lambda <= 1, f"gae_lambda must be in [0, 1], got {self.gae_lambda}")
    check(self.max_grad_norm > 0, f"max_grad_norm must be > 0, got {self.max_grad_norm}")
    check(self.lr_decay_updates >= 0,
           f"lr_decay_updates must be >= 0, got {self.lr_decay_updates}")
    check(self.unroll_length >= 1, f"unroll_length must be >= 1, got {self.unroll_length}")
    check(self.ppo_epochs >= 1, f"ppo_epochs must be >= 1, got {self.ppo_epochs}")
    check(self.num_minibatches >= 1,
           f"num_minibatches must be >= 1, got {self.num_minibatches}")
    check(self.clip_eps > 0, f"clip_eps must be > 0, got {self.clip_eps}")
    check(self.rmsprop_eps > 0, f"rmsprop_eps must be > 0, got {self.rmsprop_eps}")
    check(self.is_cap >= 1 and self.is_cap < float("inf"),
          f"is_cap must be >= 1 and finite, got {self.is_cap}")
    # beta = 1 steps as far again as the last update (a linear prediction of theta_{j+1}); beyond
    # it the acting params overshoot the prediction, and a huge beta overflows them to inf.
    check(0 <= self.acting_extrapolation <= 1,
          f"acting_extrapolation must be in [0, 1], got {self.acting_extrapolation}")
    algo = ALGORITHMS[self.algo]
    check(self.correction in algo.corrections,
          f"--correction={self.correction} does not apply to --algo={self.algo} "
          f"({algo.why_not}): use one of {algo.corrections}")

  def num_sgd_steps(self, segment_length: int) -> int:
    """Optimizer steps one learner iteration takes on a segment of `segment_length` steps (the
    algorithm's record); ConfigError when the segment does not fit its batches."""
    return ALGORITHMS[self.algo].sgd_steps(self, segment_length)

  def check_segment_length(self, segment_length: int) -> None:
    self.num_sgd_steps(segment_length)


# The run.

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
    """Env steps per learner update: a segment's, or the mode's own (`choices.RULES`)."""
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


# Flag names, resumes and saved configs.

def _section_types() -> Dict[str, type]:
  """RunConfig's sections (every field but `mode` and `learner`) by field name."""
  hints = typing.get_type_hints(RunConfig)
  return {f.name: hints[f.name] for f in dataclasses.fields(RunConfig)
          if f.name not in ("mode", "learner")}


@functools.lru_cache(maxsize=None)
def _section_fields() -> Dict[str, Tuple[str, dataclasses.Field]]:
  """(section, field) of every section field by its flag name."""
  return {flag_name(kind, field.name): (section, field)
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
