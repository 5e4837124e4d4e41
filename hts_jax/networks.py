"""Actor-critic networks (flax.linen). Every network maps `obs [N, ...] -> (policy_out [N, K],
value [N])`, where `policy_out` is what its head (`hts_jax.heads`) reads: logits `[N, A]` for
discrete actions, `[mean, log_std]` `[N, 2D]` for continuous ones (a state-independent log-std
parameter, initialised to 0, as in the PPO references).

- `NatureCNN`: the paper's CNN (Appendix F.1/F.2): conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1,
  dense 512, then a policy head and a value head. Works for Atari (84x84x4) and GFootball
  (72x96x16 extracted map, or raw 72x96x3k pixels).
- `MLP`: separate 64-64 tanh towers for the policy and the value (as in OpenAI baselines / Kostrikov).
- `MinAtarNet`: MinAtar's network (Young & Tian 2019; its examples' `QNetwork` / `ACNetwork`):
  conv 16 3x3/1 (no padding: 8x8x16), dense 128, ReLUs, then the policy and value heads.

uint8 observations are scaled to [0, 1] inside the network so frames can stay uint8 on the host;
MinAtar's uint8 channels are 0/1 already and reach its network as they are (not /255).
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
from hts_jax.choices import CONV_KINDS, CORES, NETWORK_KINDS, family_of
from hts_jax.heads import Categorical, Head

_TORSO_INIT = nn.initializers.orthogonal(np.sqrt(2.0))
_POLICY_INIT = nn.initializers.orthogonal(0.01)
_VALUE_INIT = nn.initializers.orthogonal(1.0)


class _Input(nn.Module):
  """float32 observations, standardised by the learner's running statistics if `normalize`.
  uint8 ones are scaled by 1/255 (frames) unless `frames` is False (MinAtar's 0/1 channels); the
  standardised ones are scale-free, so they use the learner's statistics, taken of /255 values."""
  normalize: bool = False
  clip: float = normalization.CLIP
  frames: bool = True

  @nn.compact
  def __call__(self, obs):
    if not self.normalize:
      return normalization.as_float(obs) if self.frames else obs.astype(jnp.float32)
    x = normalization.as_float(obs)
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


def _cnn_features(x, hidden: int):
  """The Nature-CNN torso: three convolutions and a dense ReLU layer, `[N, H, W, C] -> [N, hidden]`
  (modules named in the caller's scope, as if written there)."""
  x = nn.relu(nn.Conv(32, (8, 8), (4, 4), padding="VALID", kernel_init=_TORSO_INIT)(x))
  x = nn.relu(nn.Conv(64, (4, 4), (2, 2), padding="VALID", kernel_init=_TORSO_INIT)(x))
  x = nn.relu(nn.Conv(64, (3, 3), (1, 1), padding="VALID", kernel_init=_TORSO_INIT)(x))
  x = x.reshape((x.shape[0], -1))
  return nn.relu(nn.Dense(hidden, kernel_init=_TORSO_INIT)(x))


def _minatar_features(x, hidden: int = 128):
  """MinAtar's torso: conv 16 3x3/1 without padding and a dense ReLU layer,
  `[N, 10, 10, C] -> [N, hidden]` (modules named in the caller's scope)."""
  x = nn.relu(nn.Conv(16, (3, 3), (1, 1), padding="VALID", kernel_init=_TORSO_INIT)(x))
  x = x.reshape((x.shape[0], -1))
  return nn.relu(nn.Dense(hidden, kernel_init=_TORSO_INIT)(x))


def _torso(kind: str, x, cnn_hidden: int = 512):
  """Network `kind`'s features of `x [N, ...]`: a convolutional torso, or `x` flattened (mlp)."""
  if kind == "cnn":
    return _cnn_features(x, cnn_hidden)
  if kind == "minatar":
    return _minatar_features(x)
  return x.reshape((x.shape[0], -1))


def _conv_heads(head: Head, x, names: bool = False):
  """The policy output and the value `[N]` on a convolutional torso's features `x [N, F]`."""
  out = _policy_out(head, x, name="policy" if names else None)
  value = nn.Dense(1, kernel_init=_VALUE_INIT, name="value" if names else None)(x)
  return out, value[:, 0]


def _mlp_heads(head: Head, x, hidden: Sequence[int]):
  """The MLP's separate policy and value towers of `hidden` tanh layers on features `x [N, F]`."""

  def tower(h, name):
    for i, width in enumerate(hidden):
      h = nn.tanh(nn.Dense(width, kernel_init=_TORSO_INIT, name=f"{name}_{i}")(h))
    return h

  logits = _policy_out(head, tower(x, "pi"), name="policy")
  value = nn.Dense(1, kernel_init=_VALUE_INIT, name="value")(tower(x, "v"))
  return logits, value[:, 0]


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
    return _conv_heads(self.head, _cnn_features(_Input(self.normalize_obs)(obs), self.hidden))


class MinAtarNet(nn.Module):
  """MinAtar's network with policy and value heads. Input `[N, 10, 10, C]` 0/1 channels."""
  head: Head
  normalize_obs: bool = False

  @nn.compact
  def __call__(self, obs):
    return _conv_heads(self.head, _minatar_features(_Input(self.normalize_obs, frames=False)(obs)))


class MLP(nn.Module):
  """Separate policy and value towers of `hidden` tanh layers. Input `[N, D]` (flattened if more)."""
  head: Head
  hidden: Sequence[int] = (64, 64)
  normalize_obs: bool = False

  @nn.compact
  def __call__(self, obs):
    x = _Input(self.normalize_obs)(obs).reshape((obs.shape[0], -1))
    return _mlp_heads(self.head, x, self.hidden)


class _ResetLSTMCell(nn.Module):
  """One LSTM step whose incoming state is zeroed where `reset` is 1 (the step's observation is
  the first of an episode). Returns the new state and its `[c, h]` concatenation `[N, 2H]`."""
  size: int

  @nn.compact
  def __call__(self, carry, inputs):
    x, reset = inputs
    first = (reset > 0)[:, None]
    carry = tuple(jnp.where(first, 0.0, c) for c in carry)
    carry, _ = nn.OptimizedLSTMCell(self.size, name="lstm")(carry, x)
    return carry, jnp.concatenate(carry, axis=-1)


class Recurrent(nn.Module):
  """The torso of network `kind`, an LSTM core of `core_size`, then the kind's heads (IMPALA's
  and Sample Factory's layout for the CNN, and so for MinAtar's network; for the MLP,
  sb3-contrib's RecurrentPPO: the LSTM on the flattened observation, then the 64-64 policy and
  value towers).

  `__call__(obs [T, B, ...], state [B, 2H], resets [T, B]) -> (policy_out [T, B, K],
  value [T, B], states [T, B, 2H])`: `state` is `[c, h]` entering step 0, zeroed at steps where
  `resets` is 1; `states[t]` is the state after step t (what step t + 1 starts from). The torso
  and heads run batched over T·B; only the LSTM step is scanned over time (no convolution inside
  a scan: the XLA CPU trap in docs/benchmarks.md, "XLA on CPU"). An actor calls it with T = 1.
  """
  kind: str
  head: Head
  core_size: int = 256
  normalize_obs: bool = False
  hidden: int = 512
  towers: Sequence[int] = (64, 64)

  @nn.compact
  def __call__(self, obs, state, resets):
    t, b = obs.shape[:2]
    x = _Input(self.normalize_obs, frames=self.kind != "minatar")(
        obs.reshape((t * b,) + obs.shape[2:]))
    x = _torso(self.kind, x, self.hidden)
    cell = nn.scan(_ResetLSTMCell, variable_broadcast="params", split_rngs={"params": False},
                   in_axes=0, out_axes=0)(self.core_size, name="core")
    carry = (state[:, :self.core_size], state[:, self.core_size:])
    _, states = cell(carry, (x.reshape((t, b, -1)), resets))
    y = states[..., self.core_size:].reshape((t * b, self.core_size))  # h
    if self.kind in CONV_KINDS:
      out, value = _conv_heads(self.head, y, names=True)
    else:
      out, value = _mlp_heads(self.head, y, self.towers)
    return out.reshape((t, b, -1)), value.reshape((t, b)), states


NETWORKS = NETWORK_KINDS  # the one list, in the JAX-free config


def state_size(network: nn.Module) -> int:
  """Floats of recurrent state per row (`[c, h]`: 2 x the LSTM's size); 0 for feed-forward."""
  return 2 * network.core_size if isinstance(network, Recurrent) else 0


def init_params(network: nn.Module, key, obs_shape, obs_dtype):
  """The network's initial variables, from one observation of `obs_shape`."""
  obs = jnp.zeros((1,) + tuple(obs_shape), obs_dtype)
  if isinstance(network, Recurrent):
    return network.init(key, obs[None], jnp.zeros((1, state_size(network))), jnp.zeros((1, 1)))
  return network.init(key, obs)


def make_network(kind: str, head: "Head | int", normalize_obs: bool = False, core: str = "none",
                 core_size: int = 256) -> nn.Module:
  """Returns the actor-critic module `kind` (`NETWORKS`) with the policy output of `head`
  (an int: that many logits); with `core="lstm"` the `Recurrent` module around them."""
  if isinstance(head, int):
    head = Categorical(head)
  if kind not in NETWORKS:
    raise ValueError(f"unknown network {kind!r}; expected one of {NETWORKS}")
  if core not in CORES:
    raise ValueError(f"unknown core {core!r}; expected one of {CORES}")
  if core == "lstm":
    return Recurrent(kind, head, core_size, normalize_obs)
  if kind == "cnn":
    return NatureCNN(head, normalize_obs=normalize_obs)
  if kind == "minatar":
    return MinAtarNet(head, normalize_obs=normalize_obs)
  return MLP(head, normalize_obs=normalize_obs)


def resolve_kind(kind: str, env: str, obs_shape: Sequence[int]) -> str:
  """The network `--network=<kind>` runs on `env`: `kind` itself, or for "auto" the env family's
  own (`choices.EnvFamily.network`), else `default_network_for` the observation's shape."""
  if kind != "auto":
    return kind
  family = family_of(env)
  return (family and family.network) or default_network_for(obs_shape)


def default_network_for(obs_shape: Sequence[int]) -> str:
  """'cnn' for image-like observations `[H, W, C]`, 'mlp' for vectors: `--network=auto` where the
  env's family names no network of its own (`choices.EnvFamily.network`)."""
  return "cnn" if len(obs_shape) == 3 and min(obs_shape[:2]) >= 36 else "mlp"

