"""The sections of `RunConfig`, one per concern, each validating its own fields: what a run computes
(`Rollout`), when it evaluates (`Evaluation`), what it writes (`Outputs`), where it runs (`Devices`,
`Distributed`), the testing hooks (`Testing`); the modes' options: `mode_options.py`. No JAX.

Each field's docstring is its flag's help text; a field's flag has the field's name (`FLAG_PREFIX`
+ name where a section has a prefix). Fields made with `resumable(...)` may change when a run
resumes from a checkpoint (they change no result); every other field must match the checkpoint's.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

from hts_jax.env_families import FAMILIES, family_of
from hts_jax.learner_config import check, check_choices
from hts_jax.validation import check_finite

WANDB_MODES = ("online", "offline")  # --wandb_mode
# Env families whose evaluations sample from the policy unless --eval_greedy (`Evaluation.greedy`).
SAMPLED_EVALUATION = tuple(f.prefix for f in FAMILIES if f.sampled_evaluation)


def resumable(default: Any) -> Any:
  """A field a resumed run may change (it changes no result); others must match the checkpoint."""
  return dataclasses.field(default=default, metadata={"resumable": True})


# The gymnasium MuJoCo ids that envpool 1.2.5 also provides (`--envpool` runs them there).
ENVPOOL_MUJOCO = tuple(f"{task}-v{v}" for task in (
    "HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid", "HumanoidStandup", "Swimmer",
    "Reacher", "Pusher", "InvertedPendulum", "InvertedDoublePendulum") for v in (4, 5))


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
