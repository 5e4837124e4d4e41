"""PPO's algorithm update (Schulman et al. 2017; Kostrikov's PPO, which the paper uses), pure and
data-parallel over `DATA_AXIS`: epochs x minibatches clipped-surrogate steps (`build_ppo_update`)
from inputs fixed once per iteration at the correction's clip centre (`ppo_targets`), with the
correction's per-sample weights and the lag diagnostics (`hts_jax.corrections`). The policy loss
is an argument (the loss seam; default the correction record's, `losses.clipped_surrogate_loss`).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import optax

from hts_jax import losses
from hts_jax.algorithms import bootstrapped_rewards, run_steps, shard_weighted
from hts_jax.choices import CORRECTIONS, registers
from hts_jax.collectives import psum
from hts_jax.config import LearnerConfig
from hts_jax.corrections import lag_diagnostics
from hts_jax.heads import Head
from hts_jax.sequences import (CoreInput, apply_tb, core_input, env_minibatches,
                               minibatch_steps)
from hts_jax.types import ApplyFn, Segment


class PPOBatch(NamedTuple):
  """PPO's per-transition inputs (a minibatch: `[T / m, B]` of each), computed once before the
  first optimizer step at the reference params (`ppo_targets`)."""
  obs: jax.Array
  actions: jax.Array
  old_log_probs: jax.Array
  old_values: jax.Array
  advantages: jax.Array
  returns: jax.Array
  weights: jax.Array      # importance weights (the correction's; 1 where it has none)
  valid: jax.Array        # 0 where a transition is padding (envpool's reset step)
  core: Optional[jax.Array] = None    # recurrent: [1, B] states entering step 0
  resets: Optional[jax.Array] = None  # recurrent: [T, B] (`sequences.core_resets`)


class PPOTargets(NamedTuple):
  """What PPO fixes before its first optimizer step, all `[T, B]` and without gradient."""
  old_log_probs: jax.Array  # log π_ref(a_t|s_t): the ratio's denominator
  old_values: jax.Array     # V_ref(s_t): the clipped value loss's centre
  advantages: jax.Array     # GAE over V_ref (normalised if `normalize_advantages`)
  returns: jax.Array        # advantages (before normalising) + V_ref(s_t)


def ppo_targets(config: LearnerConfig, apply_fn: ApplyFn, reference, segment: Segment,
                axis_name: Optional[str] = None, head: Head = losses.CATEGORICAL,
                forward=None) -> PPOTargets:
  """PPO's fixed inputs from the `reference` params (Schulman et al. 2017; Kostrikov's PPO): the
  old log-probabilities, the old values and GAE with its returns, for the segment `[T, B]`.

  The reference is the clip's centre (the correction's record): θ_j for `decoupled`, `none` and
  `truncated_is`, θ_{j-1} for `delayed` (where the steps start) and for `behaviour` (the behaviour
  policy that collected the segment while the update starts at θ_j: the reference HTS-RL code's
  HTS-PPO; APPO, Cleanba). `forward`: `apply_tb` of `reference` over `segment.obs`, if computed
  already.
  """
  core = core_input(segment, segment.rewards.shape[0] + 1)
  sg = jax.lax.stop_gradient
  if forward is None:
    forward = apply_tb(apply_fn, sg(reference), segment.obs, core)
  logits, values, states = forward
  old_logp = sg(losses.log_prob(logits[:-1], segment.actions, head))
  rewards = bootstrapped_rewards(config, apply_fn, reference, segment, states)
  advantages, returns = losses.gae(rewards, segment.dones, sg(values), config.gamma,
                                   config.gae_lambda)
  valid = segment.valid
  if config.normalize_advantages:
    # Statistics over the global batch's real transitions (all learner devices), so the
    # data-parallel step equals the single-device step on the same global batch.
    count = psum(jnp.sum(valid), axis_name)
    mean = psum(jnp.sum(advantages * valid), axis_name) / count
    var = psum(jnp.sum(jnp.square(advantages - mean) * valid), axis_name) / count
    advantages = (advantages - mean) / (jnp.sqrt(var) + 1e-5)
  return PPOTargets(old_logp, sg(values[:-1]), advantages, returns)


@registers("update", "ppo")
def build_ppo_update(config: LearnerConfig, apply_fn: ApplyFn,
                     optimizer: optax.GradientTransformation, axis_name: Optional[str] = None,
                     unroll: bool = True, head: Head = losses.CATEGORICAL, policy_loss=None):
  """PPO's algorithm update: epochs x minibatches clipped-surrogate steps from `start`, with the
  ratio's denominator, the old values and GAE computed once at the clip's centre (`ppo_targets`)
  and the per-sample weights once, both as the correction's record says
  (`choices.CORRECTIONS`).

  `update(start, opt_state, segment, key, current, behaviour) -> (end, opt_state, summed updates,
  metrics)`: `current` θ_j, `behaviour` θ_{j-1}. `policy_loss` (the seam, default the record's,
  `losses.clipped_surrogate_loss`) is PPO's policy term; the metrics carry `lag_diagnostics`.
  """
  correction = CORRECTIONS[config.correction]
  policy_loss = policy_loss or correction.policy_loss_fn()
  weights_fn = correction.weights_fn()
  cap = correction.cap_value(config)

  def loss_fn(params, batch: PPOBatch):
    core = None if batch.core is None else CoreInput(batch.core[0], batch.resets)
    logits, values, _ = apply_tb(apply_fn, params, batch.obs, core)
    loss, metrics = losses.ppo_loss(
        logits, values, batch.actions, batch.old_log_probs, batch.old_values, batch.advantages,
        batch.returns, config.clip_eps, config.value_coef, config.entropy_coef,
        clip_value_loss=config.clip_value_loss, weights=batch.weights, mask=batch.valid,
        reduction=config.loss_reduction, head=head, policy_loss=policy_loss)
    return shard_weighted(loss, metrics, batch.valid, config.loss_reduction, axis_name)

  def update(start, opt_state, segment: Segment, key, current, behaviour):
    t_len, b = segment.rewards.shape
    core = core_input(segment, t_len + 1)
    sg = jax.lax.stop_gradient
    # p = π_{θ_j} and μ = π_{θ_{j-1}} over the whole segment, once (no gradient), where the
    # clip's centre, the weights or the lag diagnostics need them; the recurrent core unrolls
    # from the stored state for both (docs/recurrent.md).
    needed = {correction.centre}
    if weights_fn is not None or config.lag_diagnostics:
      needed |= {"current", "behaviour"}
    forward = {k: apply_tb(apply_fn, sg(p), segment.obs, core)
               for k, p in (("current", current), ("behaviour", behaviour)) if k in needed}
    centre = current if correction.centre == "current" else behaviour
    targets = ppo_targets(config, apply_fn, centre, segment, axis_name, head,
                          forward=forward[correction.centre])
    weights = jnp.ones(segment.rewards.shape, jnp.float32)
    if len(forward) == 2:
      out_p, out_mu = forward["current"][0][:-1], forward["behaviour"][0][:-1]
      log_p, log_mu = (losses.log_prob(o, segment.actions, head) for o in (out_p, out_mu))
      if weights_fn is not None:
        weights = weights_fn(config, log_p, log_mu)
    per_step = PPOBatch(segment.obs[:-1], segment.actions, *targets, weights, segment.valid,
                        segment.core, None if core is None else core.resets[:-1])
    if config.minibatch == "envs":  # whole sequences of some envs
      envs = env_minibatches(key, config, b)
      batches = jax.vmap(lambda e: jax.tree.map(lambda x: x[:, e], per_step))(envs)
    elif core is not None:
      raise ValueError("a recurrent core needs minibatch='envs' (whole sequences)")
    else:
      offset = 0 if axis_name is None else jax.lax.axis_index(axis_name) * b
      steps = minibatch_steps(key, config, t_len, b, offset)
      cols = jnp.arange(b)[None, :]
      batches = jax.vmap(lambda s: jax.tree.map(lambda x: x[s, cols], per_step))(steps)
    end, opt_state, summed, metrics = run_steps(optimizer, loss_fn, start, opt_state, batches,
                                                config.num_sgd_steps(t_len), axis_name, unroll)
    if config.lag_diagnostics:
      metrics.update(lag_diagnostics(out_p, out_mu, log_p, log_mu, weights, cap, segment.valid,
                                     head, axis_name))
    return end, opt_state, summed, metrics

  return update
