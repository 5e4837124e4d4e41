"""Actor-critic networks (flax.linen). Every network maps `obs [N, ...] -> (policy_out [N, K],
value [N])`, where `policy_out` is what its head (`hts_jax.heads`) reads: logits `[N, A]` for
discrete actions, `[mean, log_std]` `[N, 2D]` for continuous ones (a state-independent log-std
parameter, initialised to 0, as in the PPO references).

- `NatureCNN`: the paper's CNN (Appendix F.1/F.2): conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1,
  dense 512, then a policy head and a value head. Works for Atari (84x84x4) and GFootball
  (72x96x16 extracted map, or raw 72x96x3k pixels).
- `MLP`: separate 64-64 tanh towers for the policy and the value (as in OpenAI baselines / Kostrikov).

uint8 observations are scaled to [0, 1] inside the network so frames can stay uint8 on the host.
With `normalize_obs`, float observations are standardised by running statistics kept in the
variables' `obs_norm` collection and updated by the learner (`hts_jax.normalization`).
Initialisation follows OpenAI baselines: orthogonal, gain sqrt(2) in the torso, 0.01 for the policy
head and 1 for the value head.
"""

from __future__ import annotations

from typing import Optional, Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from hts_jax import normalization
from hts_jax.config import NETWORK_KINDS
from hts_jax.heads import Categorical, Head

_TORSO_INIT = nn.initializers.orthogonal(np.sqrt(2.0))
_POLICY_INIT = nn.initializers.orthogonal(0.01)
_VALUE_INIT = nn.initializers.orthogonal(1.0)


class _Input(nn.Module):
  """float32 observations, standardised by the learner's running statistics if `normalize`."""
  normalize: bool = False
  clip: float = normalization.CLIP

  @nn.compact
  def __call__(self, obs):
    x = normalization.as_float(obs)
    if not self.normalize:
      return x
    stats = {k: self.variable(normalization.COLLECTION, k, lambda s=v: s).value
             for k, v in normalization.init(obs.shape[1:]).items()}
    return normalization.normalize(stats, x, self.clip)


def _policy_out(head: Head, x, name: Optional[str] = None):
  """The head's policy output from features `x [N, F]`: logits, or [mean, log_std]."""
  if isinstance(head, Categorical):
    return nn.Dense(head.num_actions, kernel_init=_POLICY_INIT, name=name)(x)
  mean = nn.Dense(head.action_size, kernel_init=_POLICY_INIT, name=name)(x)
  log_std = _LogStd(head.action_size, name=None if name is None else "log_std")()
  return jnp.concatenate([mean, jnp.broadcast_to(log_std, mean.shape)], axis=-1)


class _LogStd(nn.Module):
  size: int

  @nn.compact
  def __call__(self):
    return self.param("log_std", nn.initializers.zeros, (self.size,))


class NatureCNN(nn.Module):
  """The paper's CNN torso with policy and value heads. Input `[N, H, W, C]`."""
  head: Head
  hidden: int = 512
  normalize_obs: bool = False

  @nn.compact
  def __call__(self, obs):
    x = _Input(self.normalize_obs)(obs)
    x = nn.relu(nn.Conv(32, (8, 8), (4, 4), padding="VALID", kernel_init=_TORSO_INIT)(x))
    x = nn.relu(nn.Conv(64, (4, 4), (2, 2), padding="VALID", kernel_init=_TORSO_INIT)(x))
    x = nn.relu(nn.Conv(64, (3, 3), (1, 1), padding="VALID", kernel_init=_TORSO_INIT)(x))
    x = x.reshape((x.shape[0], -1))
    x = nn.relu(nn.Dense(self.hidden, kernel_init=_TORSO_INIT)(x))
    logits = _policy_out(self.head, x)
    value = nn.Dense(1, kernel_init=_VALUE_INIT)(x)
    return logits, value[:, 0]


class MLP(nn.Module):
  """Separate policy and value towers of `hidden` tanh layers. Input `[N, D]` (flattened if more)."""
  head: Head
  hidden: Sequence[int] = (64, 64)
  normalize_obs: bool = False

  @nn.compact
  def __call__(self, obs):
    x = _Input(self.normalize_obs)(obs).reshape((obs.shape[0], -1))

    def tower(h, name):
      for i, width in enumerate(self.hidden):
        h = nn.tanh(nn.Dense(width, kernel_init=_TORSO_INIT, name=f"{name}_{i}")(h))
      return h

    logits = _policy_out(self.head, tower(x, "pi"), name="policy")
    value = nn.Dense(1, kernel_init=_VALUE_INIT, name="value")(tower(x, "v"))
    return logits, value[:, 0]


NETWORKS = NETWORK_KINDS  # the one list, in the JAX-free config


def make_network(kind: str, head: "Head | int", normalize_obs: bool = False) -> nn.Module:
  """Returns the actor-critic module `kind` ('cnn' or 'mlp') with the policy output of `head`
  (an int: that many logits)."""
  if isinstance(head, int):
    head = Categorical(head)
  if kind == "cnn":
    return NatureCNN(head, normalize_obs=normalize_obs)
  if kind == "mlp":
    return MLP(head, normalize_obs=normalize_obs)
  raise ValueError(f"unknown network {kind!r}; expected one of {NETWORKS}")


def default_network_for(obs_shape: Sequence[int]) -> str:
  """'cnn' for image-like observations `[H, W, C]`, 'mlp' for vectors."""
  return "cnn" if len(obs_shape) == 3 and min(obs_shape[:2]) >= 36 else "mlp"

