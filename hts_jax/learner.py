"""The HTS-RL learner: A2C / PPO with the one-step delayed gradient (paper Section 4.1, Eq. 6).

One learner iteration on the segment D^{θ_{j-1}} collected by θ_{j-1}:

    updates, opt_state' = algorithm_update(θ_{j-1}, D^{θ_{j-1}}, opt_state)   # gradients at θ_{j-1}
    θ_{j+1}             = θ_j + updates
    state'              = (behaviour_params=θ_j, params=θ_{j+1}, opt_state')

For A2C (T // unroll_length n-step updates per segment) and PPO (epochs x minibatches) the
algorithm runs its usual sequence of optimizer steps on a *shadow* copy started at θ_{j-1}; the sum
of the optimizer's updates is transferred to θ_j. With one A2C step per segment this is exactly
Eq. 6. The paper's Table A1 ablations use the same slot:

- `correction="delayed"` (default): shadow starts at θ_{j-1}, the behaviour policy; on-policy.
- `correction="truncated_is"`: shadow starts at θ_j; per-sample weights min(1, π_j(a|s)/π_{j-1}(a|s)).
- `correction="none"`: shadow starts at θ_j; no weights (the policy lag is ignored).

Everything here is pure; the step is data-parallel over `DATA_AXIS` (gradients, metrics and
advantage statistics are `pmean`ed) and runs under `jax.shard_map` over the learner devices.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, PartitionSpec as P

from hts_jax import losses
from hts_jax.config import LearnerConfig
from hts_jax.types import DATA_AXIS, ApplyFn, Segment, TrainState, Unroll
LearnerStep = Callable[[TrainState, Segment], Tuple[TrainState, dict]]

# Convolution gradients inside `lax.scan` run ~10x slower on XLA CPU (jax-ml/jax#12868, FACTS.md),
# so conv networks loop over optimizer steps in Python (unrolled into the jitted graph); small MLPs
# compile 7x faster with a rolled scan (2.1 s vs 14.2 s for 16 PPO steps) and run faster too.


def unroll_for(network_kind: str) -> bool:
  """Whether to unroll the optimizer-step loop for a network of this kind ('cnn' or 'mlp')."""
  return network_kind == "cnn"


def make_optimizer(config: LearnerConfig) -> optax.GradientTransformation:
  """Gradient-norm clipping followed by RMSProp (PyTorch semantics, as the paper) or Adam.

  RMSProp: decay `rmsprop_decay`, eps `rmsprop_eps` added outside the square root, no momentum.
  With `lr_decay_updates > 0` the learning rate decays linearly to 0 over that many optimizer steps.
  """
  lr = config.learning_rate
  if config.lr_decay_updates > 0:
    lr = optax.linear_schedule(config.learning_rate, 0.0, config.lr_decay_updates)
  if config.optimizer == "rmsprop":
    opt = optax.rmsprop(lr, decay=config.rmsprop_decay, eps=config.rmsprop_eps,
                        eps_in_sqrt=False, momentum=None)
  else:
    opt = optax.adam(lr, eps=config.adam_eps)
  return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), opt)


def init_train_state(params, optimizer: optax.GradientTransformation,
                     key: chex.PRNGKey) -> TrainState:
  """θ_0 serves as both θ_j and θ_{j-1}: the first segment is collected by θ_0."""
  return TrainState(params=params, behaviour_params=params, opt_state=optimizer.init(params),
                    update_count=jnp.zeros((), jnp.int32), key=key)


def _flat(x):
  """`[T, B, ...] -> [T*B, ...]`."""
  return x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:])


def _apply_tb(apply_fn: ApplyFn, params, obs):
  """Runs the network on `[T, B, ...]` observations; returns logits `[T, B, A]`, values `[T, B]`."""
  logits, values = apply_fn(params, _flat(obs))
  t, b = obs.shape[:2]
  return logits.reshape((t, b, -1)), values.reshape((t, b))


def _pmean(x, axis_name):
  return x if axis_name is None else jax.lax.pmean(x, axis_name)


def build_learner_update(config: LearnerConfig, apply_fn: ApplyFn,
                         optimizer: optax.GradientTransformation,
                         axis_name: Optional[str] = None, unroll: bool = True) -> LearnerStep:
  """Returns the pure (unjitted) learner iteration `update(state, segment) -> (state, metrics)`.

  Args:
    config: learner hyperparameters.
    apply_fn: `apply_fn(params, obs [N, ...]) -> (logits [N, A], value [N])`.
    optimizer: an optax transformation (usually `make_optimizer(config)`).
    axis_name: the pmap axis to average gradients over, or None on one device.
    unroll: unroll the loop over optimizer steps (see `unroll_for`).
  """

  def sgd_step(shadow, opt_state, loss_fn, batch):
    (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(shadow, batch)
    grads = _pmean(grads, axis_name)
    metrics = _pmean(metrics, axis_name)
    metrics["grad_norm"] = optax.tree.norm(grads)
    updates, opt_state = optimizer.update(grads, opt_state, shadow)
    return optax.apply_updates(shadow, updates), opt_state, updates, metrics

  def run_steps(start, opt_state, loss_fn, batches, num_steps):
    """Runs `num_steps` optimizer steps from `start`; returns the end params, the summed updates."""
    carry = (start, opt_state, jax.tree.map(jnp.zeros_like, start))

    def body(carry, batch):
      shadow, opt_state, summed = carry
      shadow, opt_state, updates, metrics = sgd_step(shadow, opt_state, loss_fn, batch)
      summed = jax.tree.map(jnp.add, summed, updates)
      return (shadow, opt_state, summed), metrics

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

  def a2c_batches_and_loss(segment, weights):
    t_len = segment.actions.shape[0]
    n = config.unroll_length
    k = t_len // n
    # Chunk i holds steps [i*n, (i+1)*n) and its bootstrap observation obs[(i+1)*n].
    obs_chunks = jnp.stack([segment.obs[i * n:(i + 1) * n + 1] for i in range(k)])
    split = lambda x: x.reshape((k, n) + x.shape[1:])
    batches = (obs_chunks, split(segment.actions), split(segment.rewards), split(segment.dones),
               split(weights))

    def loss_fn(params, batch):
      obs, actions, rewards, dones, w = batch
      logits, values = _apply_tb(apply_fn, params, obs[:-1])
      # The bootstrap V(s_n) carries no gradient: a separate forward pass keeps the gradient pass
      # at n*B rows (XLA CPU: Nature-CNN grad on 96 rows 145 ms, on 80 rows 81 ms).
      _, bootstrap = apply_fn(jax.lax.stop_gradient(params), obs[-1])
      returns = losses.nstep_returns(rewards, dones, bootstrap, config.gamma)
      return losses.a2c_loss(logits, values, actions, returns, config.value_coef,
                             config.entropy_coef, weights=w)

    return batches, loss_fn, k

  def ppo_batches_and_loss(start, segment, weights, key):
    t_len = segment.actions.shape[0]
    logits, values = _apply_tb(apply_fn, start, segment.obs)
    old_logp = losses.log_prob(logits[:-1], segment.actions)
    advantages, returns = losses.gae(segment.rewards, segment.dones, values, config.gamma,
                                     config.gae_lambda)
    if config.normalize_advantages:
      # Statistics over the global batch (all learner devices), so the pmapped step equals the
      # single-device step on the same global batch.
      mean = _pmean(jnp.mean(advantages), axis_name)
      var = _pmean(jnp.mean(jnp.square(advantages - mean)), axis_name)
      advantages = (advantages - mean) / (jnp.sqrt(var) + 1e-5)
    per_step = (segment.obs[:-1], segment.actions, old_logp, values[:-1], advantages, returns,
                weights)
    # Minibatches are sets of time steps (all envs of each chosen step). The permutation is the
    # same on every device, so a device's minibatch is its shard of the global minibatch.
    m = config.num_minibatches
    rows = []
    for epoch in range(config.ppo_epochs):
      perm = jax.random.permutation(jax.random.fold_in(key, epoch), t_len)
      rows.append(perm.reshape((m, t_len // m)))
    rows = jnp.concatenate(rows)  # [epochs * m, T/m]
    batches = jax.vmap(lambda r: jax.tree.map(lambda x: x[r], per_step))(rows)

    def loss_fn(params, batch):
      obs, actions, old_logp, old_values, adv, ret, w = batch
      logits, values = _apply_tb(apply_fn, params, obs)
      return losses.ppo_loss(logits, values, actions, old_logp, old_values, adv, ret,
                             config.clip_eps, config.value_coef, config.entropy_coef,
                             clip_value_loss=config.clip_value_loss, weights=w)

    return batches, loss_fn, config.ppo_epochs * m

  def update(state: TrainState, segment: Segment):
    chex.assert_rank([segment.actions, segment.rewards, segment.dones], 2)
    chex.assert_equal_shape([segment.actions, segment.rewards, segment.dones])
    chex.assert_equal(segment.obs.shape[:2],
                      (segment.actions.shape[0] + 1, segment.actions.shape[1]))
    config.check_segment_length(segment.actions.shape[0])
    key = jax.random.fold_in(state.key, state.update_count)

    delayed = config.correction == "delayed"
    start = state.behaviour_params if delayed else state.params
    if config.correction == "truncated_is":
      # min(1, π_j(a|s) / π_{j-1}(a|s)), fixed for the whole iteration.
      logits_j, _ = _apply_tb(apply_fn, state.params, segment.obs[:-1])
      logits_b, _ = _apply_tb(apply_fn, state.behaviour_params, segment.obs[:-1])
      log_ratio = (losses.log_prob(logits_j, segment.actions)
                   - losses.log_prob(logits_b, segment.actions))
      weights = jax.lax.stop_gradient(jnp.minimum(1.0, jnp.exp(log_ratio)))
    else:
      weights = jnp.ones(segment.actions.shape, jnp.float32)

    if config.algo == "a2c":
      batches, loss_fn, num_steps = a2c_batches_and_loss(segment, weights)
    else:
      batches, loss_fn, num_steps = ppo_batches_and_loss(start, segment, weights, key)
    end, opt_state, summed, metrics = run_steps(start, state.opt_state, loss_fn, batches,
                                                num_steps)
    # Delayed gradient: the updates computed from θ_{j-1} are applied to θ_j (Eq. 6).
    new_params = optax.apply_updates(state.params, summed) if delayed else end
    metrics["is_weight"] = _pmean(jnp.mean(weights), axis_name)
    metrics["params_finite"] = jnp.all(jnp.stack(
        [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(new_params)]))
    new_state = state.replace(params=new_params, behaviour_params=state.params,
                              opt_state=opt_state, update_count=state.update_count + 1)
    return new_state, metrics

  return update


def data_mesh(devices: Sequence[jax.Device]) -> Mesh:
  """A 1-D mesh over `devices` whose one axis is `DATA_AXIS`."""
  return Mesh(np.asarray(list(devices)), (DATA_AXIS,))


def make_learner_step(config: LearnerConfig, apply_fn: ApplyFn,
                      optimizer: optax.GradientTransformation,
                      devices: Optional[Sequence[jax.Device]] = None,
                      unroll: bool = True) -> LearnerStep:
  """The compiled learner step `step(state, segment) -> (state, metrics)`.

  With `devices=None` it is `jax.jit`ed for the default device. With a list of devices it is
  data-parallel over them (`jax.shard_map`, the successor of `pmap`): the state is replicated, the
  segment `[T, B, ...]` is split along B (B divisible by the device count), gradients, metrics and
  advantage statistics are `pmean`ed over `DATA_AXIS`. Inputs and outputs keep the single-device
  layout either way.
  """
  if devices is None:
    return jax.jit(build_learner_update(config, apply_fn, optimizer, unroll=unroll))
  update = build_learner_update(config, apply_fn, optimizer, axis_name=DATA_AXIS, unroll=unroll)
  # check_vma=False: rlax's scans carry unannotated accumulators; every cross-device quantity is
  # an explicit pmean, so the replicated out_specs hold by construction.
  sharded = jax.shard_map(update, mesh=data_mesh(devices), in_specs=(P(), P(None, DATA_AXIS)),
                          out_specs=(P(), P()), check_vma=False)
  return jax.jit(sharded)


def build_vtrace_update(config: LearnerConfig, apply_fn: ApplyFn,
                        optimizer: optax.GradientTransformation,
                        axis_name: Optional[str] = None):
  """IMPALA's learner (Espeholt et al. 2018) for the asynchronous baseline: one optimizer step
  per batch of unrolls, gradients at the current params θ_j, off-policy corrected by V-trace
  (ρ̄ = c̄ = 1, λ = config.gae_lambda is not used: λ = 1). No delayed gradient: θ_{j+1} = θ_j + u."""

  def loss_fn(params, unroll: Unroll):
    logits, values = _apply_tb(apply_fn, params, unroll.obs)
    return losses.vtrace_loss(logits[:-1], values[:-1], jax.lax.stop_gradient(values[-1]),
                              unroll.actions, unroll.behaviour_log_probs, unroll.rewards,
                              unroll.dones, config.gamma, config.value_coef, config.entropy_coef)

  def update(state: TrainState, unroll: Unroll):
    chex.assert_rank([unroll.actions, unroll.behaviour_log_probs], 2)
    (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, unroll)
    grads = _pmean(grads, axis_name)
    metrics = _pmean(metrics, axis_name)
    metrics["grad_norm"] = optax.tree.norm(grads)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics["params_finite"] = jnp.all(jnp.stack(
        [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(params)]))
    return state.replace(params=params, behaviour_params=state.params, opt_state=opt_state,
                         update_count=state.update_count + 1), metrics

  return update
