"""Learner hyperparameters (`LearnerConfig`) and the fields of every config that take one of a few
values (`CHOICES`); the validation base (`ConfigError`, `check`) is `hts_jax.validation`'s, the
algorithms' own rules `hts_jax.algorithm_registry`'s. No JAX import (see `config.py`)."""

from __future__ import annotations

import dataclasses

from hts_jax.algorithm_registry import ALGORITHMS, CORRECTIONS
from hts_jax.validation import ConfigError, check, flag_name  # noqa: F401  (the config's base)

ALGOS = tuple(ALGORITHMS)  # --algo: the registry's names
OPTIMIZERS = ("rmsprop", "adam")
REDUCTIONS = ("mean", "sum")
MINIBATCHES = ("transitions", "time_steps", "envs")
GOSSIP = ("async", "fixed")
NETWORK_KINDS = ("cnn", "mlp", "minatar")  # `hts_jax.networks.make_network`'s kinds
CONV_KINDS = ("cnn", "minatar")  # the kinds with a convolutional torso
NETWORKS = ("auto",) + NETWORK_KINDS  # what --network takes
CORES = ("none", "lstm")  # what --core takes
# The str fields that take one of a few values, by flag name (validated here; the launcher's flags
# are enums). `config.CHOICES` adds --mode's.
CHOICES = {"algo": ALGOS, "correction": tuple(CORRECTIONS), "optimizer": OPTIMIZERS,
           "minibatch": MINIBATCHES, "loss_reduction": REDUCTIONS,
           "network": NETWORKS, "core": CORES, "gala_gossip": GOSSIP}


def check_choices(config) -> None:
  """Checks the fields of `config` (a config dataclass) that take one of `CHOICES` (keyed by flag
  name)."""
  for field in dataclasses.fields(config):
    name = flag_name(type(config), field.name)
    if name in CHOICES:
      value, choices = getattr(config, field.name), CHOICES[name]
      check(value in choices, f"{name} must be one of {choices}, got {value!r}")


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
