"""Policy heads: what a network's policy output means, for discrete and continuous actions.

A network returns `(policy_out [N, K], value [N])`; its head turns `policy_out` into actions,
log-probabilities and entropies, and gives the losses their policy-gradient and entropy terms:

- `Categorical` (`Discrete` action spaces): `policy_out` holds the logits `[N, A]`; actions are
  int32 `[N]`. Its terms are rlax's (`policy_gradient_loss`, `entropy_loss`), as before heads
  existed, so discrete runs keep their bits.
- `DiagGaussian` (1-D `Box` action spaces): `policy_out` holds `[mean, log_std]`, `[N, 2D]`
  (the MLP's log-std is a state-independent parameter broadcast over the rows, as in Schulman et
  al. 2017 and CleanRL's `ppo_continuous_action`); actions are float32 `[N, D]`, the unclipped
  sample (the env clips it to the space's bounds, `hts_jax.envs.wrappers.ClipAction`, and the
  learner scores the sample itself, as the references do). Log-probabilities and entropies are
  distrax's `MultivariateNormalDiag`.

Sampling is keyed per row (`hts_jax.acting.row_keys`): a row's action depends only on its own
key and outputs, never on the other rows of the call.
"""

from __future__ import annotations

import dataclasses
from typing import Tuple

import chex
import distrax
import jax
import jax.numpy as jnp
import rlax


@dataclasses.dataclass(frozen=True)
class Categorical:
  """Logits `[..., A]`; int32 actions `[...]`."""
  num_actions: int

  @property
  def action_shape(self) -> Tuple[int, ...]:
    return ()

  action_dtype = jnp.int32

  @property
  def out_size(self) -> int:
    return self.num_actions

  def sample(self, key: chex.PRNGKey, out: chex.Array) -> chex.Array:
    """One action for one row's `out [A]`."""
    return jax.random.categorical(key, out).astype(jnp.int32)

  def mode(self, out: chex.Array) -> chex.Array:
    return jnp.argmax(out, axis=-1).astype(jnp.int32)

  def log_prob(self, out: chex.Array, actions: chex.Array) -> chex.Array:
    """log π(a|s), `[..., A], [...] -> [...]`."""
    logp_all = jax.nn.log_softmax(out)
    return jnp.take_along_axis(logp_all, actions[..., None].astype(jnp.int32), axis=-1)[..., 0]

  def entropy(self, out: chex.Array) -> chex.Array:
    logp_all = jax.nn.log_softmax(out)
    return -jnp.sum(jnp.exp(logp_all) * logp_all, axis=-1)

  def kl(self, out_p: chex.Array, out_q: chex.Array) -> chex.Array:
    """KL(π_p || π_q) per row, `[..., A], [..., A] -> [...]`."""
    logp, logq = jax.nn.log_softmax(out_p), jax.nn.log_softmax(out_q)
    return jnp.sum(jnp.exp(logp) * (logp - logq), axis=-1)

  def pg_loss(self, out: chex.Array, actions: chex.Array, adv: chex.Array,
              weights: chex.Array) -> chex.Array:
    """-mean(w · sg(adv) · log π(a|s)) over flat samples `[N, A], [N], [N], [N]`."""
    return rlax.policy_gradient_loss(out, actions.astype(jnp.int32), adv, weights)

  def entropy_loss(self, out: chex.Array, weights: chex.Array) -> chex.Array:
    """-mean(w · H[π(·|s)]) over flat samples."""
    return rlax.entropy_loss(out, weights)


@dataclasses.dataclass(frozen=True)
class DiagGaussian:
  """`[mean, log_std]` `[..., 2D]`; float32 actions `[..., D]`."""
  action_size: int

  @property
  def action_shape(self) -> Tuple[int, ...]:
    return (self.action_size,)

  action_dtype = jnp.float32

  @property
  def out_size(self) -> int:
    return 2 * self.action_size

  def dist(self, out: chex.Array) -> distrax.MultivariateNormalDiag:
    mean, log_std = jnp.split(out, 2, axis=-1)
    return distrax.MultivariateNormalDiag(mean, jnp.exp(log_std))

  def sample(self, key: chex.PRNGKey, out: chex.Array) -> chex.Array:
    return self.dist(out).sample(seed=key).astype(jnp.float32)

  def mode(self, out: chex.Array) -> chex.Array:
    return jnp.split(out, 2, axis=-1)[0].astype(jnp.float32)

  def log_prob(self, out: chex.Array, actions: chex.Array) -> chex.Array:
    return self.dist(out).log_prob(actions.astype(jnp.float32))

  def entropy(self, out: chex.Array) -> chex.Array:
    return self.dist(out).entropy()

  def kl(self, out_p: chex.Array, out_q: chex.Array) -> chex.Array:
    """KL(π_p || π_q) per row (closed form for diagonal Gaussians)."""
    return self.dist(out_p).kl_divergence(self.dist(out_q))

  def pg_loss(self, out: chex.Array, actions: chex.Array, adv: chex.Array,
              weights: chex.Array) -> chex.Array:
    chex.assert_rank([out, actions, adv, weights], [2, 2, 1, 1])
    return -jnp.mean(self.log_prob(out, actions) * jax.lax.stop_gradient(adv) * weights)

  def entropy_loss(self, out: chex.Array, weights: chex.Array) -> chex.Array:
    return -jnp.mean(self.entropy(out) * weights)


Head = Categorical | DiagGaussian


def for_env(info) -> Head:
  """The head for an env's action space (`hts_jax.envs.EnvInfo`)."""
  return DiagGaussian(info.num_actions) if info.continuous else Categorical(info.num_actions)
