"""Actor-critic networks (flax.linen). Every network maps `obs [N, ...] -> (logits [N, A], value [N])`.

- `NatureCNN`: the paper's CNN (Appendix F.1/F.2): conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1,
  dense 512, then a policy head and a value head. Works for Atari (84x84x4) and GFootball
  (72x96x16 extracted map, or raw 72x96x3k pixels).
- `MLP`: separate 64-64 tanh towers for the policy and the value (as in OpenAI baselines / Kostrikov).

uint8 observations are scaled to [0, 1] inside the network so frames can stay uint8 on the host.
Initialisation follows OpenAI baselines: orthogonal, gain sqrt(2) in the torso, 0.01 for the policy
head and 1 for the value head.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from hts_jax.config import NETWORK_KINDS

_TORSO_INIT = nn.initializers.orthogonal(np.sqrt(2.0))
_POLICY_INIT = nn.initializers.orthogonal(0.01)
_VALUE_INIT = nn.initializers.orthogonal(1.0)


def _to_float(obs):
  if obs.dtype == jnp.uint8:
    return obs.astype(jnp.float32) / 255.0
  return obs.astype(jnp.float32)


class NatureCNN(nn.Module):
  """The paper's CNN torso with policy and value heads. Input `[N, H, W, C]`."""
  num_actions: int
  hidden: int = 512

  @nn.compact
  def __call__(self, obs):
    x = _to_float(obs)
    x = nn.relu(nn.Conv(32, (8, 8), (4, 4), padding="VALID", kernel_init=_TORSO_INIT)(x))
    x = nn.relu(nn.Conv(64, (4, 4), (2, 2), padding="VALID", kernel_init=_TORSO_INIT)(x))
    x = nn.relu(nn.Conv(64, (3, 3), (1, 1), padding="VALID", kernel_init=_TORSO_INIT)(x))
    x = x.reshape((x.shape[0], -1))
    x = nn.relu(nn.Dense(self.hidden, kernel_init=_TORSO_INIT)(x))
    logits = nn.Dense(self.num_actions, kernel_init=_POLICY_INIT)(x)
    value = nn.Dense(1, kernel_init=_VALUE_INIT)(x)
    return logits, value[:, 0]


class MLP(nn.Module):
  """Separate policy and value towers of `hidden` tanh layers. Input `[N, D]` (flattened if more)."""
  num_actions: int
  hidden: Sequence[int] = (64, 64)

  @nn.compact
  def __call__(self, obs):
    x = _to_float(obs).reshape((obs.shape[0], -1))

    def tower(h, name):
      for i, width in enumerate(self.hidden):
        h = nn.tanh(nn.Dense(width, kernel_init=_TORSO_INIT, name=f"{name}_{i}")(h))
      return h

    logits = nn.Dense(self.num_actions, kernel_init=_POLICY_INIT, name="policy")(tower(x, "pi"))
    value = nn.Dense(1, kernel_init=_VALUE_INIT, name="value")(tower(x, "v"))
    return logits, value[:, 0]


NETWORKS = NETWORK_KINDS  # the one list, in the JAX-free config


def make_network(kind: str, num_actions: int) -> nn.Module:
  """Returns the actor-critic module `kind` ('cnn' or 'mlp') with `num_actions` logits."""
  if kind == "cnn":
    return NatureCNN(num_actions)
  if kind == "mlp":
    return MLP(num_actions)
  raise ValueError(f"unknown network {kind!r}; expected one of {NETWORKS}")


def default_network_for(obs_shape: Sequence[int]) -> str:
  """'cnn' for image-like observations `[H, W, C]`, 'mlp' for vectors."""
  return "cnn" if len(obs_shape) == 3 and min(obs_shape[:2]) >= 36 else "mlp"

