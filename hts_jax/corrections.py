"""The policy-lag corrections' pure parts (their records: `choices.CORRECTIONS`): the
per-sample weights a record names, and the diagnostics every PPO update reports, against the
clip's centre (`ratio_diagnostics`) and of the lag itself (`lag_diagnostics`: KL(μ || p), the
weights' mean, effective sample size and tails). μ = π_{θ_{j-1}}, the behaviour policy that
collected the segment; p = π_{θ_j}, the params the update starts from. Shapes `[T, B]` (or flat).
"""

from __future__ import annotations

from typing import Dict, Optional

import chex
import jax
import jax.numpy as jnp

from hts_jax.choices import registers
from hts_jax.collectives import psum
from hts_jax.normalization import COLLECTION

Metrics = Dict[str, chex.Array]


def _mean(x: chex.Array, mask: Optional[chex.Array]) -> chex.Array:
  """The mean over the masked-in samples (`losses`' "mean" reduction)."""
  if mask is None:
    return jnp.mean(x)
  return jnp.mean(x * mask) * (x.size / jnp.maximum(jnp.sum(mask), 1.0))


@registers("weights", "truncated_is")
def truncated_is_weights(config, log_p: chex.Array, log_mu: chex.Array) -> chex.Array:
  """`--correction=truncated_is`'s weights min(1, π_j(a|s)/π_{j-1}(a|s)) (paper Table A1), no
  gradient; `config` is unused (the cap is 1)."""
  del config
  return jax.lax.stop_gradient(jnp.minimum(1.0, jnp.exp(log_p - log_mu)))


@registers("weights", "decoupled")
def decoupled_weights(config, log_p: chex.Array, log_mu: chex.Array) -> chex.Array:
  """`--correction=decoupled`'s weights min(c̄, p(a|s)/μ(a|s)), p = π_{θ_j}, μ = π_{θ_{j-1}},
  c̄ = `config.is_cap` (Hilton et al. 2022; openai/ppo-ewma caps at 100), no gradient. At lag 0
  (log_p = log_mu) every weight is exactly 1."""
  return jax.lax.stop_gradient(jnp.minimum(config.is_cap, jnp.exp(log_p - log_mu)))


def ratio_diagnostics(log_ratio: chex.Array, clip_eps: float,
                      mask: Optional[chex.Array] = None) -> Metrics:
  """What a researcher checks when PPO under-performs, from log ρ over the (masked-in) samples, no
  gradient:
  `approx_kl`, Schulman's k3 E[(ρ - 1) - log ρ] (CleanRL's `approx_kl`: KL(π_old || π) where the
  samples are π_old's, i.e. where the clip's centre is the behaviour policy); the ratio's mean and its spread `ratio_abs_dev`, E|ρ - 1|; `clip_frac`, the share
  with |ρ - 1| > ε. All are means over samples, so the data-parallel step's (averaged over
  devices) equal the global batch's."""
  log_ratio = jax.lax.stop_gradient(log_ratio)
  ratio = jnp.exp(log_ratio)
  # From the log-ratio: no log(0) when a ratio underflows.
  return dict(approx_kl=_mean(jnp.expm1(log_ratio) - log_ratio, mask),
              ratio_mean=_mean(ratio, mask),
              ratio_abs_dev=_mean(jnp.abs(ratio - 1.0), mask),
              clip_frac=_mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), mask))


def _masked_totals(mask: chex.Array, axis_name: Optional[str]):
  """`(total, count)` over the global batch's real (`mask`) samples: `total(x)` sums x there
  (over every learner device), `count` is their number (at least 1)."""
  m = mask.astype(jnp.float32)
  total = lambda x: psum(jnp.sum(x * m), axis_name)
  return total, jnp.maximum(total(jnp.ones_like(m)), 1.0)


def lag_diagnostics(out_p: chex.Array, out_mu: chex.Array, log_p: chex.Array,
                    log_mu: chex.Array, weights: chex.Array, cap: float, mask: chex.Array,
                    head, axis_name: Optional[str] = None) -> Metrics:
  """How far the lag moved the policy and what the correction's weights make of it, over the
  global batch's real (`mask`) samples `[T, B]`, no gradient: `kl_lag` KL(μ || p) (exact, by the
  head), μ = π_{θ_{j-1}}, p = π_{θ_j} (under --mode=sync, θ_{j-1} is the params before the last
  update: its move); the weights' mean `is_weight`, their effective sample size per sample
  `is_ess` E[w]²/E[w²] (1: equal weights), the shares `is_above_2` with w > 2 and `is_capped` with
  p/μ above the cap (0 without one)."""
  sg = jax.lax.stop_gradient
  w = sg(weights)
  total, count = _masked_totals(mask, axis_name)
  w1, w2 = total(w), total(jnp.square(w))
  capped = (sg(log_p - log_mu) > jnp.log(cap)).astype(jnp.float32)
  return dict(kl_lag=total(head.kl(sg(out_mu), sg(out_p))) / count, is_weight=w1 / count,
              is_ess=jnp.square(w1) / jnp.maximum(count * w2, 1e-30),
              is_above_2=total((w > 2.0).astype(jnp.float32)) / count,
              is_capped=total(capped) / count)


def extrapolate(current, previous, beta: float):
  """The acting params `--acting_extrapolation` publishes: θ_j + β(θ_j − θ_{j-1}), a prediction
  of θ_{j+1}, the params that will learn from the segment they collect (weight prediction for
  stale updates, as SpecTrain, Chen et al. 2018). Only the network's weights are extrapolated:
  the observation statistics (`normalization.COLLECTION`) stay θ_j's. At β = 0 it is θ_j."""
  move = lambda a, b: a + beta * (a - b)
  if isinstance(current, dict) and COLLECTION in current:
    return {k: (v if k == COLLECTION else jax.tree.map(move, v, previous[k]))
            for k, v in current.items()}
  return jax.tree.map(move, current, previous)


def prediction_diagnostics(policy_outs, mask: chex.Array, head,
                           axis_name: Optional[str] = None) -> Metrics:
  """How far the segment's actors stand from the params that will learn from it, with and
  without `--acting_extrapolation`, over the global batch's real samples: `kl_next`
  KL(π_{θ_j} || π_{θ_{j+1}}) (what acting with θ_j leaves between the two) and `kl_pred`
  KL(π_{θ_j + β(θ_j − θ_{j-1})} || π_{θ_{j+1}}) (what the prediction leaves). `policy_outs`:
  the three policies' outputs `[T, B, K]` (current, predicted, next), no gradient."""
  sg = jax.lax.stop_gradient
  current, predicted, nxt = (sg(o) for o in policy_outs)
  total, count = _masked_totals(mask, axis_name)
  return dict(kl_next=total(head.kl(current, nxt)) / count,
              kl_pred=total(head.kl(predicted, nxt)) / count)
