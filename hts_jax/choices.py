"""The choices and rules of the config, JAX-free: the launcher, the executors and the config
dataclasses (`config.py`) import it.

- The validation base: `ConfigError` (a user-facing error of one line), `check`, `check_finite`,
  `flag_name` (a config field's launcher flag).
- The str fields that take one of a few values (`CHOICES`, by flag name: the launcher's flags are
  enums), checked by `check_choices`.
- The algorithms (`ALGORITHMS`, one `Algorithm` record each) and the policy-lag corrections of
  --mode=hts (`CORRECTIONS`, one `Correction` record each).
- The env families (`FAMILIES`, one `EnvFamily` record each).
- The modes' rules (`RULES`, one `ModeRules` record each).

A record's JAX or env code (an algorithm's update builder, a correction's weights, PPO's policy
loss, an env family's `make`) registers itself under the record's name when its module is imported
(`@registers("update", "ppo")`, `@registers("env", "atari:")`): no record names a module by
string, and this module imports none of them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Dict, Mapping, Optional, Tuple


# The validation base every config shares.

class ConfigError(ValueError):
  """A user-facing configuration error; its message is one line."""


def check(cond: bool, message: str) -> None:
  if not cond:
    raise ConfigError(message)


def flag_name(cls, field_name: str) -> str:
  """The launcher flag of the config dataclass `cls`'s field: its name after the dataclass's
  `FLAG_PREFIX`, if it has one."""
  return getattr(cls, "FLAG_PREFIX", "") + field_name


def check_finite(cls, values: Mapping[str, Any],
                 renamed: Optional[Mapping[str, str]] = None) -> None:
  """Every float among `values` (the config dataclass `cls`'s fields by name) is finite. NaN
  passes every range check (`nan > 0` and `nan < 0` are both False, so `if x < 0: refuse` lets it
  through) and inf passes `> 0`: either then reached the learner and failed at its first update,
  naming no flag. `renamed`: flag names that are not the field's (the launcher's `--lr`)."""
  for field, value in values.items():
    if isinstance(value, float) and not math.isfinite(value):
      name = (renamed or {}).get(field, flag_name(cls, field))
      raise ConfigError(f"--{name} must be a finite number, got {value}")


# Registration by import.

# (kind, name) -> the function registered there: kinds "update" (an algorithm's update builder),
# "weights" (a correction's per-sample weights), "policy_loss" (PPO's policy loss), "env" (an env
# family's `make`).
_REGISTERED: Dict[Tuple[str, str], Callable] = {}
# The module that imports every module registering a kind: the learner's, but for envs.
_IMPORTERS = {"env": "hts_jax.envs"}


def registers(kind: str, name: str) -> Callable[[Callable], Callable]:
  """A decorator: the function is the `kind` named `name` that the records below use."""
  def register(function: Callable) -> Callable:
    _REGISTERED[(kind, name)] = function
    return function
  return register


def registered(kind: str, name: str) -> Callable:
  """The function registered as (`kind`, `name`); LookupError if its module was not imported."""
  try:
    return _REGISTERED[(kind, name)]
  except KeyError:
    raise LookupError(f"no {kind} {name!r} is registered: import its module "
                      f"({_IMPORTERS.get(kind, 'hts_jax.learner')} imports them all)") from None


# The algorithms and the policy-lag corrections.

@dataclasses.dataclass(frozen=True)
class Correction:
  """One `--correction` (docs/modes.md): the learner's inputs for a lagged update, on data
  collected by θ_{j-1} (`behaviour_params`) while the params are θ_j (`params`)."""
  name: str
  # Where the optimizer steps start: "behaviour" (θ_{j-1}; the summed updates are added to θ_j,
  # the delayed gradient of Eq. 6) or "current" (θ_j).
  start: str
  # The params PPO's ratio denominator, old values and GAE are taken at (the clip's centre).
  centre: str
  # The name the weights `(config, log π_j(a|s), log π_{j-1}(a|s)) -> [T, B]` are registered
  # under (`registers("weights", ...)`): per-sample weights fixed for the iteration, no gradient
  # (`hts_jax.corrections`); "": none (every weight 1).
  weights: str = ""
  # The IS weights' cap, a LearnerConfig field name or a number (for the `is_capped` diagnostic).
  cap: Any = None
  # PPO's policy loss (`losses.clipped_surrogate_loss`'s signature, registered under this name
  # as "policy_loss"): the loss seam.
  policy_loss: str = "clipped_surrogate"
  # At lag 0 (θ_{j-1} = θ_j) it is synchronous PPO bit for bit, so the lag-free modes (which run
  # their own update) accept it: a preset made for HTS that names it also runs with --mode=sync.
  lag_free_at_lag_0: bool = False

  def __post_init__(self):
    if self.start not in ("behaviour", "current") or self.centre not in ("behaviour", "current"):
      raise ValueError(f"correction {self.name}: start and centre are 'behaviour' or 'current'")

  def weights_fn(self) -> Callable:
    return registered("weights", self.weights) if self.weights else None

  def policy_loss_fn(self) -> Callable:
    return registered("policy_loss", self.policy_loss)

  def cap_value(self, config) -> float:
    """c̄ for this config (inf: uncapped)."""
    if self.cap is None:
      return float("inf")
    return float(getattr(config, self.cap) if isinstance(self.cap, str) else self.cap)


CORRECTIONS: Dict[str, Correction] = {c.name: c for c in (
    # The paper's Eq. 6: the update computed at θ_{j-1} (on-policy), added to θ_j.
    Correction("delayed", start="behaviour", centre="behaviour"),
    # The reference HTS-RL code's HTS-PPO (APPO, Cleanba): the steps start at θ_j, the clip is
    # centred on the behaviour policy θ_{j-1}.
    Correction("behaviour", start="current", centre="behaviour", lag_free_at_lag_0=True),
    # Hilton, Cobbe & Schulman 2022 (openai/ppo-ewma, staleness_loss='decoupled'): the clip is
    # centred on the proximal policy p = π_{θ_j}; μ = π_{θ_{j-1}} enters only through
    # w = min(c̄, p/μ).
    Correction("decoupled", start="current", centre="current",
               weights="decoupled", cap="is_cap",
               lag_free_at_lag_0=True),
    # The paper's Table A1: at θ_j with weights min(1, π_j/π_{j-1}) (decoupled with c̄ = 1).
    Correction("truncated_is", start="current", centre="current",
               weights="truncated_is", cap=1.0),
    # The paper's Table A1: at θ_j, everything recomputed there; the lag ignored.
    Correction("none", start="current", centre="current", lag_free_at_lag_0=True),
)}


@dataclasses.dataclass(frozen=True)
class Algorithm:
  name: str
  # (LearnerConfig, segment length T) -> optimizer steps per learner update (what --lr_decay
  # spans); raises ConfigError (one line) when T does not fit the algorithm's batches.
  sgd_steps: Callable[[Any, int], int]
  corrections: Tuple[str, ...]  # the --correction values it supports
  # Its update takes minibatches of env columns (PPO's): the config checks --minibatch=envs'
  # divisibility and that a recurrent core unrolls whole sequences.
  minibatches: bool = False
  # --mode=async (IMPALA's V-trace actor-critic) runs with its hyperparameters.
  vtrace_baseline: bool = False
  defaults: Dict[str, Any] = dataclasses.field(default_factory=dict)  # launcher defaults
  why_not: str = ""  # said when a correction it lacks is asked for

  def build(self) -> Callable:
    """The update builder, registered under this algorithm's name (`registers("update", name)`)."""
    return registered("update", self.name)


def _a2c_steps(config, segment_length: int) -> int:
  check(segment_length % config.unroll_length == 0,
        f"alpha (segment length {segment_length}) must be a multiple of unroll_length "
        f"({config.unroll_length})")
  return segment_length // config.unroll_length


def _ppo_steps(config, segment_length: int) -> int:
  check(config.minibatch == "envs" or segment_length % config.num_minibatches == 0,
        f"alpha (segment length {segment_length}) must be a multiple of num_minibatches "
        f"({config.num_minibatches}): every PPO minibatch takes alpha / num_minibatches steps of "
        "each env")
  return config.ppo_epochs * config.num_minibatches


ALGORITHMS: Dict[str, Algorithm] = {a.name: a for a in (
    # The paper's A2C (Eq. 3/4): T / unroll_length n-step steps per segment.
    Algorithm("a2c", _a2c_steps,
              corrections=("delayed", "truncated_is", "none"), vtrace_baseline=True,
              why_not="A2C has no trust region to centre: its delayed gradient is Eq. 6 "
                      "exactly, and truncated_is is decoupled's analogue"),
    # PPO: epochs x minibatches clipped-surrogate steps; 128 steps per update as in Kostrikov's
    # PPO (which the paper uses) and the released HTS-RL PPO scripts.
    Algorithm("ppo", _ppo_steps,
              corrections=tuple(CORRECTIONS), minibatches=True, defaults={"alpha": 128}),
)}


# The env families.

@dataclasses.dataclass(frozen=True)
class EnvFamily:
  prefix: str  # "atari:"
  placeholder: str  # what follows the prefix, in messages: "<Game>"
  # Evaluations sample from the policy unless --eval_greedy: the family's published protocol
  # (`config.Evaluation.greedy`).
  sampled_evaluation: bool
  # Frames per second of game time in its videos; None: the env's `metadata["render_fps"]`.
  video_fps: Optional[float] = None
  needs_display: bool = False  # its renderer needs an X display (videos start Xvfb)
  envpool: bool = False  # --envpool runs it through envpool (`runtime.envpool_group`)
  # What --network=auto runs; None: by the observation's shape (`networks.default_network_for`).
  network: Optional[str] = None

  @property
  def usage(self) -> str:
    return self.prefix + self.placeholder

  def make(self, name: str, env_kwargs, train: bool, render: bool):
    """A replica of `name` (this prefix and the rest): its module's `make(rest, env_kwargs, train,
    render)`, registered as `registers("env", prefix)` (`hts_jax.envs` imports every family's
    module)."""
    return registered("env", self.prefix)(name[len(self.prefix):], env_kwargs, train, render)


FAMILIES: Tuple[EnvFamily, ...] = (
    # The emulator's 60 Hz over the frame skip of 4; sampled evaluation (a greedy untrained
    # policy may never press FIRE after a lost life).
    EnvFamily("atari:", "<Game>", sampled_evaluation=True, video_fps=15.0, envpool=True),
    # A step is 10 physics frames of 10 ms; the released evaluation samples.
    EnvFamily("gfootball:", "<scenario>", sampled_evaluation=True, video_fps=10.0,
              needs_display=True),
    # MinAtar stands in for Atari: Atari's protocol. Its 10x10 grid takes MinAtar's own network
    # (Young & Tian 2019), not the Nature CNN's.
    EnvFamily("minatar:", "<Game>", sampled_evaluation=True, network="minatar"),
)


def family_of(env: str) -> Optional[EnvFamily]:
  """The family whose prefix `env` starts with; None for a gymnasium id or `vstep`."""
  return next((f for f in FAMILIES if env.startswith(f.prefix)), None)


# Env families whose evaluations sample from the policy unless --eval_greedy (`Evaluation.greedy`).
SAMPLED_EVALUATION = tuple(f.prefix for f in FAMILIES if f.sampled_evaluation)
# The gymnasium MuJoCo ids that envpool 1.2.5 also provides (`--envpool` runs them there).
ENVPOOL_MUJOCO = tuple(f"{task}-v{v}" for task in (
    "HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid", "HumanoidStandup", "Swimmer",
    "Reacher", "Pusher", "InvertedPendulum", "InvertedDoublePendulum") for v in (4, 5))


# The modes' rules.

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
  module, which imports them from here: this module stays JAX-free. A mode's own options are a
  section of `RunConfig` (`config.HtsOptions`, ...)."""
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


# The fields that take one of a few values.

ALGOS = tuple(ALGORITHMS)  # --algo: the registry's names
OPTIMIZERS = ("rmsprop", "adam")
REDUCTIONS = ("mean", "sum")
MINIBATCHES = ("transitions", "time_steps", "envs")
GOSSIP = ("async", "fixed")
NETWORK_KINDS = ("cnn", "mlp", "minatar")  # `hts_jax.networks.make_network`'s kinds
CONV_KINDS = ("cnn", "minatar")  # the kinds with a convolutional torso
NETWORKS = ("auto",) + NETWORK_KINDS  # what --network takes
CORES = ("none", "lstm")  # what --core takes
WANDB_MODES = ("online", "offline")  # --wandb_mode
# The str fields that take one of a few values, by flag name (validated by `check_choices`; the
# launcher's flags are enums).
CHOICES = {"algo": ALGOS, "correction": tuple(CORRECTIONS), "optimizer": OPTIMIZERS,
           "minibatch": MINIBATCHES, "loss_reduction": REDUCTIONS,
           "network": NETWORKS, "core": CORES, "gala_gossip": GOSSIP, "mode": MODES}


def check_choices(config) -> None:
  """Checks the fields of `config` (a config dataclass) that take one of `CHOICES` (keyed by flag
  name)."""
  for field in dataclasses.fields(config):
    name = flag_name(type(config), field.name)
    if name in CHOICES:
      value, choices = getattr(config, field.name), CHOICES[name]
      check(value in choices, f"{name} must be one of {choices}, got {value!r}")
