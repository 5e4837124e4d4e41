"""Pure RL losses and return estimators with `[T, B]` shape contracts.

Returns and advantages are single-stream rlax functions vmapped over the batch axis B (axis 1).
Losses take per-sample arrays of any leading shape (`[T, B]` or flattened `[N]`), use rlax's
policy-gradient, clipped-surrogate and entropy losses on the flattened samples, and return
`(loss, metrics)`. They reduce over samples by `reduction`:

- "mean" (Kostrikov's A2C/PPO, the paper's baselines): the mean over the samples, or with a
  `mask` (1 = a real transition, 0 = a step to ignore, such as envpool's auto-reset step) the
  mean over the masked-in samples; masked-out samples contribute nothing.
- "sum" (IMPALA's V-trace loss): the sum over the (masked-in) samples, so that IMPALA's
  published learning rate and gradient clipping mean what they meant.

Sign convention everywhere: the loss is *minimised*; the entropy term enters as
`- entropy_coef * entropy`, so a positive `entropy_coef` raises the policy's entropy.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import rlax

from hts_jax import choices, corrections
from hts_jax.choices import registers
from hts_jax.heads import Categorical, Head

Metrics = Dict[str, chex.Array]

# Discrete actions: the losses' default head (its terms are rlax's own).
CATEGORICAL = Categorical(num_actions=0)


def log_prob(logits: chex.Array, actions: chex.Array, head: Head = CATEGORICAL) -> chex.Array:
  """log π(a|s) for the policy output `[..., K]` and `actions` (`[...]` ints or `[..., D]`)."""
  return head.log_prob(logits, actions)


def entropy(logits: chex.Array, head: Head = CATEGORICAL) -> chex.Array:
  """Entropy of the policy, `[..., K] -> [...]`."""
  return head.entropy(logits)


def _discounts(dones: chex.Array, gamma: float) -> chex.Array:
  return gamma * (1.0 - dones.astype(jnp.float32))


def nstep_returns(rewards: chex.Array, dones: chex.Array, bootstrap_value: chex.Array,
                  gamma: float) -> chex.Array:
  """A2C's n-step bootstrapped returns (paper Eq. 3): R_t = r_t + γ(1-d_t) R_{t+1}, R_T = V(s_T).

  Args:
    rewards: `[T, B]` rewards r_t.
    dones: `[T, B]` episode-end flags after step t (cut the bootstrap).
    bootstrap_value: `[B]` V(s_T).
    gamma: discount.
  Returns:
    `[T, B]` returns, with no gradient through `bootstrap_value`.
  """
  chex.assert_rank([rewards, dones, bootstrap_value], [2, 2, 1])
  chex.assert_equal_shape([rewards, dones])
  discounts = _discounts(dones, gamma)
  # With λ = 1 only v_t[-1] (the bootstrap) enters the lambda-return recursion.
  v_t = jnp.broadcast_to(bootstrap_value[None], rewards.shape)
  returns = jax.vmap(rlax.lambda_returns, in_axes=(1, 1, 1, None), out_axes=1)(
      rewards, discounts, v_t, 1.0)
  return jax.lax.stop_gradient(returns)


def gae(rewards: chex.Array, dones: chex.Array, values: chex.Array, gamma: float,
        lambda_: float) -> Tuple[chex.Array, chex.Array]:
  """Generalised advantage estimation (Schulman et al. 2016) as used by PPO.

  Args:
    rewards: `[T, B]`.
    dones: `[T, B]`.
    values: `[T+1, B]` V(s_0..s_T).
    gamma: discount.
    lambda_: GAE λ.
  Returns:
    `(advantages [T, B], returns [T, B])` with `returns = advantages + values[:-1]`, no gradient.
  """
  chex.assert_rank([rewards, dones, values], 2)
  chex.assert_equal_shape([rewards, dones])
  chex.assert_equal(values.shape[0], rewards.shape[0] + 1)
  discounts = _discounts(dones, gamma)
  adv = jax.vmap(rlax.truncated_generalized_advantage_estimation,
                 in_axes=(1, 1, None, 1), out_axes=1)(rewards, discounts, lambda_, values)
  adv = jax.lax.stop_gradient(adv)
  return adv, jax.lax.stop_gradient(adv + values[:-1])


# The metrics that follow `reduction` (the rest, such as clip_frac, approx_kl and mean_rho, are
# means).
REDUCED_METRICS = ("loss", "pg_loss", "value_loss", "entropy")


def _flat(x: chex.Array) -> chex.Array:
  return x.reshape(-1)


def _flat_logits(logits: chex.Array) -> chex.Array:
  return logits.reshape((-1, logits.shape[-1]))


def _flat_actions(actions: chex.Array, head: Head) -> chex.Array:
  return actions.reshape((-1,) + head.action_shape)


def _check_actions(values: chex.Array, actions: chex.Array, head: Head) -> None:
  chex.assert_shape(actions, values.shape + head.action_shape)


def _scale(n: int, mask: Optional[chex.Array], reduction: str):
  """Factor turning a mean over all `n` samples of `x * mask` into the requested reduction."""
  if reduction == "sum":
    return float(n)
  if mask is None:
    return 1.0
  return n / jnp.maximum(jnp.sum(mask), 1.0)


def _reduce(x: chex.Array, mask: Optional[chex.Array], reduction: str) -> chex.Array:
  """`x`'s mean or sum over samples, only the masked-in ones if `mask` is given."""
  if mask is None:
    return jnp.mean(x) if reduction == "mean" else jnp.sum(x)
  return jnp.mean(x * mask) * _scale(x.size, mask, reduction)


REDUCTIONS = choices.REDUCTIONS


def _check_reduction(reduction: str) -> None:
  if reduction not in REDUCTIONS:
    raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


def _sample_weights(logits, values, weights, mask, reduction):
  """Checks the shapes; returns the flat mask `m`, the flat policy-loss weights `w · m` and the
  factor turning means over all samples into `reduction` (see `_scale`)."""
  chex.assert_equal_shape_prefix([logits, values], values.ndim)
  chex.assert_rank(logits, values.ndim + 1)
  _check_reduction(reduction)
  n = values.size
  m = jnp.ones((n,), jnp.float32) if mask is None else _flat(mask).astype(jnp.float32)
  w = m if weights is None else _flat(jax.lax.stop_gradient(weights)) * m
  return m, w, _scale(n, mask, reduction)


def a2c_loss(logits: chex.Array, values: chex.Array, actions: chex.Array, returns: chex.Array,
             value_coef: float, entropy_coef: float, weights: Optional[chex.Array] = None,
             mask: Optional[chex.Array] = None, reduction: str = "mean",
             head: Head = CATEGORICAL) -> Tuple[chex.Array, Metrics]:
  """Advantage actor-critic loss (paper Eq. 3/4; Mnih et al. 2016).

  L = -mean(w · sg(R - V) · log π(a|s)) + c_v · mean((R - V)^2) - c_e · mean(H[π(·|s)])

  Args:
    logits: `[..., A]` policy logits at the evaluation parameters.
    values: `[...]` V(s) at the evaluation parameters.
    actions: `[...]` actions taken.
    returns: `[...]` targets R (no gradient).
    value_coef: c_v.
    entropy_coef: c_e; positive raises entropy.
    weights: optional `[...]` per-sample weights (truncated importance weights), no gradient.
    mask: optional `[...]` 1 for real transitions, 0 for steps to leave out (see the module doc).
    reduction: "mean" or "sum" over samples.
    head: the policy head (`hts_jax.heads`; default categorical logits, int actions).
  """
  chex.assert_equal_shape([values, returns])
  _check_actions(values, actions, head)
  m, w, scale = _sample_weights(logits, values, weights, mask, reduction)
  adv = returns - values
  pg_loss = head.pg_loss(_flat_logits(logits), _flat_actions(actions, head), _flat(adv),
                         w) * scale
  value_loss = _reduce(jnp.square(adv), mask, reduction)
  ent = -head.entropy_loss(_flat_logits(logits), m) * scale
  loss = pg_loss + value_coef * value_loss - entropy_coef * ent
  return loss, dict(loss=loss, pg_loss=pg_loss, value_loss=value_loss, entropy=ent)


@registers("policy_loss", "clipped_surrogate")
def clipped_surrogate_loss(log_ratio: chex.Array, advantages: chex.Array, weights: chex.Array,
                           clip_eps: float) -> chex.Array:
  """PPO's policy loss over N samples (flat `[N]` arrays), the default of `ppo_loss`'s seam:

      -1/N Σ w · min(ρ A, clip(ρ, 1-ε, 1+ε) A),   ρ = exp(log_ratio) = π(a|s) / π_centre(a|s).

  rlax's `clipped_surrogate_pg_loss` on `w · A` (w ≥ 0 commutes with the min). With the clip
  centred on the proximal policy p = π_{θ_j} and w = min(c̄, p/μ) it is Hilton, Cobbe & Schulman's
  (2022) decoupled objective; with w = 1 and the centre at the behaviour policy, the usual one.
  `weights` carry the mask (0 for samples to leave out) and no gradient.
  """
  chex.assert_rank([log_ratio, advantages, weights], 1)
  return rlax.clipped_surrogate_pg_loss(jnp.exp(log_ratio), weights * advantages, clip_eps)


def ppo_loss(logits: chex.Array, values: chex.Array, actions: chex.Array, old_log_probs: chex.Array,
             old_values: chex.Array, advantages: chex.Array, returns: chex.Array, clip_eps: float,
             value_coef: float, entropy_coef: float, clip_value_loss: bool = True,
             weights: Optional[chex.Array] = None, mask: Optional[chex.Array] = None,
             reduction: str = "mean", head: Head = CATEGORICAL,
             policy_loss=clipped_surrogate_loss) -> Tuple[chex.Array, Metrics]:
  """PPO clipped-surrogate loss (Schulman et al. 2017), value loss as in Kostrikov's PPO.

  L = -mean(w · min(ρ A, clip(ρ, 1-ε, 1+ε) A)) + c_v · ½ mean(max((V-R)², (V_clip-R)²))
      - c_e · mean(H),   ρ = π(a|s) / π_old(a|s),  V_clip = V_old + clip(V - V_old, -ε, ε).

  The policy term is `policy_loss(log ρ [N], A [N], w·mask [N], ε)` (the seam a PPO variant
  replaces; default `clipped_surrogate_loss`); the value and entropy terms are unweighted.

  Args:
    logits: `[..., A]`; values, actions, old_log_probs, old_values, advantages, returns: `[...]`.
    clip_eps: ε.
    value_coef, entropy_coef: c_v, c_e (positive c_e raises entropy).
    clip_value_loss: use the clipped value loss (the max above) or plain ½(V-R)².
    weights: optional per-sample weights (truncated importance weights), no gradient.
    mask: optional 1 for real transitions, 0 for steps to leave out.
    reduction: "mean" or "sum" over samples.
    head: the policy head (`hts_jax.heads`; default categorical logits, int actions).
    policy_loss: the policy term (`clipped_surrogate_loss`'s signature).
  """
  chex.assert_equal_shape([values, old_log_probs, old_values, advantages, returns])
  _check_actions(values, actions, head)
  m, w, scale = _sample_weights(logits, values, weights, mask, reduction)
  log_ratio = head.log_prob(logits, actions) - old_log_probs
  pg_loss = policy_loss(_flat(log_ratio), _flat(advantages), w, clip_eps) * scale
  v_err = jnp.square(values - returns)
  if clip_value_loss:
    v_clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
    v_err = jnp.maximum(v_err, jnp.square(v_clipped - returns))
  value_loss = 0.5 * _reduce(v_err, mask, reduction)
  ent = -head.entropy_loss(_flat_logits(logits), m) * scale
  loss = pg_loss + value_coef * value_loss - entropy_coef * ent
  return loss, dict(loss=loss, pg_loss=pg_loss, value_loss=value_loss, entropy=ent,
                    **corrections.ratio_diagnostics(log_ratio, clip_eps, mask))


def vtrace_loss(logits: chex.Array, values: chex.Array, bootstrap_value: chex.Array,
                actions: chex.Array, behaviour_log_probs: chex.Array, rewards: chex.Array,
                dones: chex.Array, gamma: float, value_coef: float, entropy_coef: float,
                lambda_: float = 1.0, clip_rho_threshold: float = 1.0,
                clip_pg_rho_threshold: float = 1.0, mask: Optional[chex.Array] = None,
                reduction: str = "mean", head: Head = CATEGORICAL) -> Tuple[chex.Array, Metrics]:
  """IMPALA's V-trace actor-critic loss (Espeholt et al. 2018), for the asynchronous baseline.

  IMPALA sums its loss over the batch and time (`reduction="sum"`, what its published learning
  rates and clipping assume); "mean" divides that by the number of samples.

  Args:
    logits: `[T, B, A]` target-policy logits; values: `[T, B]`; bootstrap_value: `[B]`.
    actions, behaviour_log_probs, rewards, dones: `[T, B]`.
    gamma, lambda_: discount and V-trace λ. clip thresholds: ρ̄ and the policy-gradient ρ̄.
    value_coef, entropy_coef: c_v, c_e (positive c_e raises entropy).
    mask: optional `[T, B]`, 1 for real transitions, 0 for steps to leave out.
    reduction: "mean" or "sum" over samples.
    head: the policy head (`hts_jax.heads`; default categorical logits, int actions).
  """
  chex.assert_rank([logits, values, bootstrap_value], [3, 2, 1])
  chex.assert_equal_shape([values, behaviour_log_probs, rewards, dones])
  _check_actions(values, actions, head)
  m, _, scale = _sample_weights(logits, values, None, mask, reduction)
  logp = head.log_prob(logits, actions)
  rho = jnp.exp(logp - behaviour_log_probs)
  v_t = jnp.concatenate([values[1:], bootstrap_value[None]], axis=0)

  def one_stream(v_tm1, v_t, r_t, disc_t, rho_tm1):
    return rlax.vtrace_td_error_and_advantage(
        v_tm1, v_t, r_t, disc_t, rho_tm1, lambda_=lambda_, clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold, stop_target_gradients=True)

  out = jax.vmap(one_stream, in_axes=1, out_axes=1)(
      values, v_t, rewards, _discounts(dones, gamma), jax.lax.stop_gradient(rho))
  pg_loss = head.pg_loss(_flat_logits(logits), _flat_actions(actions, head),
                         _flat(out.pg_advantage), m) * scale
  value_loss = 0.5 * _reduce(jnp.square(out.errors), mask, reduction)
  ent = -head.entropy_loss(_flat_logits(logits), m) * scale
  loss = pg_loss + value_coef * value_loss - entropy_coef * ent
  rho = jax.lax.stop_gradient(rho)
  return loss, dict(loss=loss, pg_loss=pg_loss, value_loss=value_loss, entropy=ent,
                    mean_rho=_reduce(rho, mask, "mean"),
                    rho_clipped_frac=_reduce((rho > clip_rho_threshold).astype(jnp.float32), mask,
                                             "mean"))
