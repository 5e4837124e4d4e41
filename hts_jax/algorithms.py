"""The algorithms' updates, pure and data-parallel over `DATA_AXIS`: A2C (`build_a2c_update`) here
and PPO (`ppo.build_ppo_update`), made of `run_steps` over the one `sgd_step` (IMPALA's V-trace
learner, `impala.build_vtrace_update`, takes one `sgd_step` too), with the segment helpers they
share. `learner.build_learner_update` wraps A2C/PPO in the delayed gradient (paper Eq. 6).
Transitions with `valid` 0 are left out of every loss; `bootstrap_truncation` adds γ·V(final obs)
at time-limit cuts.
"""

from __future__ import annotations

from typing import Optional

import chex
import flax.struct
import jax
import jax.numpy as jnp
import optax

from hts_jax import losses
from hts_jax.choices import CORRECTIONS, registers
from hts_jax.collectives import pmean
from hts_jax.config import LearnerConfig
from hts_jax.heads import Head
from hts_jax.sequences import (CoreInput, apply_tb, chunk_states, core_input, core_resets,
                               final_values)
from hts_jax.types import ApplyFn, Segment


def params_finite(params) -> chex.Array:
  """True if every parameter is finite."""
  return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(params)]))


def shard_weighted(loss, metrics, mask, reduction: str, axis_name: Optional[str]):
  """Weights one device's loss and metrics so that their `pmean` over devices is the reduction
  over the global batch: a device's mean is over its own masked-in samples, so it is weighted by
  its share of them (1 when every device has as many, e.g. no masked samples); a sum (the loss
  terms with `reduction="sum"`) is multiplied by the device count. Identity on one device."""
  if axis_name is None:
    return loss, metrics
  count = jnp.sum(mask)
  share = count / jnp.maximum(jax.lax.pmean(count, axis_name), 1e-8)
  if reduction == "mean":
    return loss * share, jax.tree.map(lambda x: x * share, metrics)
  devices = jax.lax.psum(1.0, axis_name)
  return loss * devices, {k: v * (devices if k in losses.REDUCED_METRICS else share)
                          for k, v in metrics.items()}


def learning_rate(config: LearnerConfig) -> optax.Schedule:
  """The learning rate by optimizer step: constant, or with `lr_decay_updates > 0` decaying
  linearly to 0 over that many optimizer steps."""
  if config.lr_decay_updates > 0:
    return optax.linear_schedule(config.learning_rate, 0.0, config.lr_decay_updates)
  return optax.constant_schedule(config.learning_rate)


def sgd_step(optimizer: optax.GradientTransformation, loss_fn, params, opt_state, batch,
             axis_name: Optional[str] = None):
  """One optimizer step: gradients of `loss_fn(params, batch) -> (loss, metrics)`, averaged
  over `axis_name`; returns (new params, opt_state, the applied updates, metrics)."""
  (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
  grads = pmean(grads, axis_name)
  metrics = pmean(metrics, axis_name)
  metrics["grad_norm"] = optax.tree.norm(grads)
  updates, opt_state = optimizer.update(grads, opt_state, params)
  return optax.apply_updates(params, updates), opt_state, updates, metrics


def run_steps(optimizer: optax.GradientTransformation, loss_fn, start, opt_state, batches,
              num_steps: int, axis_name: Optional[str] = None, unroll: bool = True):
  """`num_steps` optimizer steps from `start` over the stacked `batches`; returns the end params,
  the opt_state, the summed updates (end - start) and the steps' mean metrics."""
  carry = (start, opt_state, jax.tree.map(jnp.zeros_like, start))

  def body(carry, batch):
    shadow, opt_state, summed = carry
    shadow, opt_state, updates, metrics = sgd_step(optimizer, loss_fn, shadow, opt_state, batch,
                                                   axis_name)
    return (shadow, opt_state, jax.tree.map(jnp.add, summed, updates)), metrics

  if unroll:
    # A Python loop, not `lax.scan(..., unroll=True)`: on XLA CPU even a length-1 scan puts the
    # conv gradient on the slow path (Nature-CNN A2C batch 80: 1.30 s vs 0.15 s, measured).
    step_metrics = []
    for i in range(num_steps):
      carry, m = body(carry, jax.tree.map(lambda x, i=i: x[i], batches))
      step_metrics.append(m)
    metrics = jax.tree.map(lambda *xs: jnp.stack(xs), *step_metrics)
  else:
    carry, metrics = jax.lax.scan(body, carry, batches, length=num_steps)
  end, opt_state, summed = carry
  return end, opt_state, summed, jax.tree.map(jnp.mean, metrics)


@flax.struct.dataclass
class _Weighted:
  """A2C's chunks: a segment with per-sample importance weights (and with a recurrent core, the
  chunk's `[n + 1, B]` resets; its `segment.core` is the state entering the chunk)."""
  segment: Segment
  weights: chex.Array
  resets: Optional[chex.Array] = None


# Segment fields with one entry per step `[T, B, ...]` (obs has T+1).
_STEP_FLAGS = ("rewards", "dones", "valid", "truncated")  # [T, B]
_PER_STEP_FIELDS = _STEP_FLAGS + ("actions", "final_obs")  # actions: [T, B] or [T, B, D]


def complete_segment(segment: Segment) -> Segment:
  """The segment with `valid` (all ones) and `truncated` (all zeros) filled in where absent."""
  ones = jnp.ones(segment.rewards.shape, jnp.float32)
  valid = ones if segment.valid is None else segment.valid.astype(jnp.float32)
  truncated = (0.0 * ones if segment.truncated is None
               else segment.truncated.astype(jnp.float32))
  return segment.replace(valid=valid, truncated=truncated)


def bootstrapped_rewards(config: LearnerConfig, apply_fn: ApplyFn, params, segment: Segment,
                         states: Optional[chex.Array] = None) -> chex.Array:
  """`r_t`, or with `bootstrap_truncation` `r_t + γ · truncated_t · V(final obs_t)` (no gradient):
  a time-limit cut then bootstraps from the value of the observation it cut at, while `dones`
  still stops the return from running into the next episode (Pardo et al. 2018). `states`: a
  recurrent network's state after each step t (`sequences.final_values`)."""
  if not config.bootstrap_truncation:
    return segment.rewards
  if segment.final_obs is None:
    raise ValueError("bootstrap_truncation needs the segment's final_obs")
  sg = jax.lax.stop_gradient
  v_final = final_values(apply_fn, sg(params), segment.final_obs,
                         None if states is None else sg(states[:segment.rewards.shape[0]]))
  return segment.rewards + config.gamma * segment.truncated * sg(v_final)


@registers("update", "a2c")
def build_a2c_update(config: LearnerConfig, apply_fn: ApplyFn,
                     optimizer: optax.GradientTransformation, axis_name: Optional[str] = None,
                     unroll: bool = True, head: Head = losses.CATEGORICAL):
  """A2C's algorithm update: T // unroll_length n-step steps (paper Eq. 3/4) from `start`.

  `update(start, opt_state, segment, key, current, behaviour) -> (end, opt_state, summed updates,
  metrics)`: `current` θ_j and `behaviour` θ_{j-1} give the correction's per-sample weights (if
  it has any); A2C has no quantity fixed before its steps, so no clip centre (`behaviour` and
  `decoupled` are refused for A2C by the config).
  """
  n = config.unroll_length
  weights_fn = CORRECTIONS[config.correction].weights_fn()

  def loss_fn(params, chunk: _Weighted):
    weights, resets = chunk.weights, chunk.resets
    chunk = chunk.segment
    sg = jax.lax.stop_gradient
    core = None if resets is None else CoreInput(chunk.core[0], resets[:-1])
    logits, values, states = apply_tb(apply_fn, params, chunk.obs[:-1], core)
    # The bootstrap V(s_n) carries no gradient: a separate forward pass keeps the gradient pass
    # at n*B rows (XLA CPU: Nature-CNN grad on 96 rows 145 ms, on 80 rows 81 ms).
    last = None if resets is None else CoreInput(sg(states[-1]), resets[-1:])
    bootstrap = apply_tb(apply_fn, sg(params), chunk.obs[-1:], last)[1][0]
    rewards = bootstrapped_rewards(config, apply_fn, params, chunk, states)
    returns = losses.nstep_returns(rewards, chunk.dones, bootstrap, config.gamma)
    loss, metrics = losses.a2c_loss(logits, values, chunk.actions, returns, config.value_coef,
                                    config.entropy_coef, weights=weights, mask=chunk.valid,
                                    reduction=config.loss_reduction, head=head)
    return shard_weighted(loss, metrics, chunk.valid, config.loss_reduction, axis_name)

  def update(start, opt_state, segment: Segment, key, current, behaviour):
    del key
    weights = jnp.ones(segment.rewards.shape, jnp.float32)
    if weights_fn is not None:
      core = core_input(segment, segment.rewards.shape[0])
      log_p, log_mu = (losses.log_prob(apply_tb(apply_fn, p, segment.obs[:-1], core)[0],
                                       segment.actions, head) for p in (current, behaviour))
      weights = weights_fn(config, log_p, log_mu)
    k = segment.actions.shape[0] // n
    # Chunk i holds steps [i*n, (i+1)*n) and its bootstrap observation obs[(i+1)*n].
    split = lambda x: None if x is None else x.reshape((k, n) + x.shape[1:])
    windows = lambda x: jnp.stack([x[i * n:(i + 1) * n + 1] for i in range(k)])
    recurrent = segment.core is not None
    chunks = _Weighted(
        segment=segment.replace(
            obs=windows(segment.obs),
            core=chunk_states(apply_fn, start, segment, n) if recurrent else None,
            **{f: split(getattr(segment, f)) for f in _PER_STEP_FIELDS}),
        weights=split(weights), resets=windows(core_resets(segment)) if recurrent else None)
    end, opt_state, summed, metrics = run_steps(optimizer, loss_fn, start, opt_state, chunks, k,
                                                axis_name, unroll)
    metrics["is_weight"] = pmean(jnp.mean(weights), axis_name)
    return end, opt_state, summed, metrics

  return update


def check_segment(segment: Segment) -> None:
  """Checks the segment's shapes: `[T, B]` per-step fields, `[T + 1, B, ...]` observations."""
  per_step = [getattr(segment, f) for f in _STEP_FLAGS if getattr(segment, f) is not None]
  chex.assert_rank(per_step, 2)
  chex.assert_equal_shape(per_step)
  chex.assert_equal_shape_prefix([segment.actions, segment.rewards], 2)
  chex.assert_equal(segment.obs.shape[:2],
                    (segment.rewards.shape[0] + 1, segment.rewards.shape[1]))
  if segment.core is not None:
    chex.assert_rank(segment.core, 3)
    chex.assert_equal(segment.core.shape[:2], (1, segment.rewards.shape[1]))
  if segment.final_obs is not None:
    chex.assert_equal_shape([segment.final_obs, segment.obs[1:]])
