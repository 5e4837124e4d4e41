"""The learning algorithms: one record per algorithm (`Algorithm`), in `ALGORITHMS`, with what the
config, the launcher and the learner ask of it, so that adding one touches its update builder's
module and one entry here. JAX-free (the config validates with it); the builder is imported only
when a learner is built.

An algorithm's update builder (`hts_jax.algorithms.build_a2c_update`'s signature) returns
`update(start, opt_state, segment, key, current, behaviour) -> (end, opt_state, summed updates,
metrics)`: its optimizer steps on one segment from `start`, with the correction's inputs taken
from `current` (θ_j) and `behaviour` (θ_{j-1}); the learner wraps it in the policy-lag correction
(`hts_jax.learner`).

The corrections (`CORRECTIONS`, one `Correction` record each) say how `--mode=hts` handles the
one-update policy lag: where the steps start, which params PPO's ratio is centred on, and the one
function that makes each variant (its per-sample weights; PPO's policy loss is the seam
`build_ppo_update` takes). A new PPO variant is one function plus one entry there.

The JAX functions a record uses (its update builder, weights, policy loss) register themselves
under the record's name when their module is imported (`@registers("update", "ppo")`); the
learner (`hts_jax.learner`) imports every such module. No record names a module by string, and
this module imports none of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Tuple

from hts_jax.validation import check

# (kind, name) -> the function registered there: kinds "update" (an algorithm's update builder),
# "weights" (a correction's per-sample weights), "policy_loss" (PPO's policy loss).
_REGISTERED: Dict[Tuple[str, str], Callable] = {}


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
    raise LookupError(f"no {kind} {name!r} is registered: import its module (hts_jax.learner "
                      "imports them all)") from None


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
