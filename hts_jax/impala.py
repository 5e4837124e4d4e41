"""IMPALA's learner (Espeholt et al. 2018) for `--mode=async`, pure and data-parallel like the
other updates (`algorithms`): one `sgd_step` per batch of unrolls at the current params, off-policy
corrected by V-trace (`losses.vtrace_loss`).
"""

from __future__ import annotations

from typing import Optional

import chex
import jax
import optax

from hts_jax import losses, normalization
from hts_jax.algorithms import (bootstrapped_rewards, check_segment, complete_segment,
                                learning_rate, params_finite, sgd_step, shard_weighted)
from hts_jax.config import LearnerConfig
from hts_jax.heads import Head
from hts_jax.sequences import apply_tb, core_input
from hts_jax.types import ApplyFn, TrainState, Unroll


def build_vtrace_update(config: LearnerConfig, apply_fn: ApplyFn,
                        optimizer: optax.GradientTransformation,
                        axis_name: Optional[str] = None, head: Head = losses.CATEGORICAL):
  """IMPALA's learner (Espeholt et al. 2018) for the asynchronous baseline: one `sgd_step` per
  batch of unrolls, gradients at the current params θ_j, off-policy corrected by V-trace
  (ρ̄ = c̄ = 1, λ = 1). No delayed gradient: θ_{j+1} = θ_j + u. With `loss_reduction="sum"` the
  loss is IMPALA's (summed over time and batch)."""

  def loss_fn(params, unroll: Unroll):
    segment = unroll.segment
    logits, values, states = apply_tb(apply_fn, params, segment.obs,
                                      core_input(segment, segment.obs.shape[0]))
    rewards = bootstrapped_rewards(config, apply_fn, params, segment, states)
    loss, metrics = losses.vtrace_loss(
        logits[:-1], values[:-1], jax.lax.stop_gradient(values[-1]), segment.actions,
        unroll.behaviour_log_probs, rewards, segment.dones, config.gamma, config.value_coef,
        config.entropy_coef, mask=segment.valid, reduction=config.loss_reduction, head=head)
    return shard_weighted(loss, metrics, segment.valid, config.loss_reduction, axis_name)

  def update(state: TrainState, unroll: Unroll):
    check_segment(unroll.segment)
    chex.assert_equal_shape([unroll.segment.rewards, unroll.behaviour_log_probs])
    unroll = unroll.replace(segment=complete_segment(unroll.segment))
    params, opt_state, _, metrics = sgd_step(optimizer, loss_fn, state.params, state.opt_state,
                                             unroll, axis_name)
    params = normalization.update_params(params, unroll.segment.obs[:-1], unroll.segment.valid,
                                         axis_name)
    metrics["learning_rate"] = learning_rate(config)(state.update_count)  # one step per update
    metrics["params_finite"] = params_finite(params)
    return state.replace(params=params, behaviour_params=state.params, opt_state=opt_state,
                         update_count=state.update_count + 1), metrics

  return update
