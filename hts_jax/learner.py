"""The HTS-RL learner: A2C / PPO with the one-step delayed gradient (paper Section 4.1, Eq. 6).

One learner iteration on the segment D^{θ_{j-1}} collected by θ_{j-1}:

    updates, opt_state' = algorithm_update(θ_{j-1}, opt_state, D^{θ_{j-1}})   # gradients at θ_{j-1}
    θ_{j+1}             = θ_j + updates
    state'              = (behaviour_params=θ_j, params=θ_{j+1}, opt_state')

For A2C (T // unroll_length n-step updates per segment) and PPO (epochs x minibatches) the
algorithm runs its usual sequence of optimizer steps on a *shadow* copy started at θ_{j-1}; the sum
of the optimizer's updates is transferred to θ_j. With one A2C step per segment this is exactly
Eq. 6. The paper's Table A1 ablations use the same slot:

The corrections are records (`choices.CORRECTIONS`: where the steps start, where
PPO's clip is centred, the per-sample weights; docs/modes.md):

- `delayed` (default): the steps start at θ_{j-1}, the behaviour policy; on-policy. For PPO's many
  steps this is the sum of its steps taken at θ_{j-1}, added to θ_j.
- `behaviour` (PPO only): the steps start at θ_j; PPO's ratio denominator, the clipped value
  loss's old values and GAE are the behaviour policy θ_{j-1}'s, recomputed here from
  `behaviour_params` (never taken from the actors, so the run stays bitwise identical for any
  actor count). What the reference HTS-RL code runs for HTS-PPO, and asynchronous PPO's usual
  choice (APPO, Cleanba). With lag 0 (θ_{j-1} = θ_j) it is synchronous PPO exactly.
- `decoupled` (PPO only; Hilton, Cobbe & Schulman 2022): the steps start at θ_j and the clip is
  centred there (p = π_{θ_j}); the behaviour policy μ = π_{θ_{j-1}} enters only through the
  weights min(c̄, p/μ), recomputed here from `behaviour_params`. At lag 0 it is synchronous PPO.
- `truncated_is`: the steps start at θ_j; per-sample weights min(1, π_j(a|s)/π_{j-1}(a|s)).
- `none`: the steps start at θ_j and everything is recomputed there: the lag is ignored.

The pieces: `choices.ALGORITHMS[algo].build()` builds the algorithm update
(`build_a2c_update`, `build_ppo_update`: `update(start, opt_state, segment, key, current,
behaviour) -> (end, opt_state, summed updates, metrics)`), made of `run_steps` over the one
`sgd_step`; `build_learner_update` here is the delayed-gradient step around it (Eq. 6's lines).
IMPALA's V-trace learner for the asynchronous baseline (`impala.build_vtrace_update`) takes one
`sgd_step` at θ_j.

Everything here is pure; the step is data-parallel over `DATA_AXIS` (gradients, metrics and
advantage statistics are averaged so that the result is the global batch's) and runs under
`jax.shard_map` over the learner devices.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, PartitionSpec as P

# ppo (like algorithms) registers its update builder (`choices.registers`) when imported.
from hts_jax import corrections, losses, normalization, ppo  # pylint: disable=unused-import
from hts_jax.algorithms import check_segment, complete_segment, learning_rate, params_finite
from hts_jax.choices import ALGORITHMS, CONV_KINDS, CORRECTIONS
from hts_jax.config import LearnerConfig
from hts_jax.heads import Head
from hts_jax.sequences import apply_tb, core_input
from hts_jax.types import DATA_AXIS, ApplyFn, Segment, TrainState
LearnerStep = Callable[[TrainState, Segment], Tuple[TrainState, dict]]

# Convolution gradients inside `lax.scan` run ~10x slower on XLA CPU (jax-ml/jax#12868; docs/benchmarks.md, "XLA on CPU"),
# so conv networks loop over optimizer steps in Python (unrolled into the jitted graph); small MLPs
# compile 7x faster with a rolled scan (2.1 s vs 14.2 s for 16 PPO steps) and run faster too.


def unroll_for(network_kind: str) -> bool:
  """Whether to unroll the optimizer-step loop for a network of this kind (those with
  convolutions: 'cnn', 'minatar')."""
  return network_kind in CONV_KINDS


def make_optimizer(config: LearnerConfig) -> optax.GradientTransformation:
  """Gradient-norm clipping followed by RMSProp (PyTorch semantics, as the paper) or Adam.

  RMSProp: decay `rmsprop_decay`, eps `rmsprop_eps` added outside the square root, no momentum.
  With `lr_decay_updates > 0` the learning rate decays linearly to 0 over that many optimizer steps.
  """
  lr = learning_rate(config) if config.lr_decay_updates > 0 else config.learning_rate
  if config.optimizer == "rmsprop":
    opt = optax.rmsprop(lr, decay=config.rmsprop_decay, eps=config.rmsprop_eps,
                        eps_in_sqrt=False, momentum=None)
  else:
    opt = optax.adam(lr, eps=config.adam_eps)
  return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), opt)


def init_train_state(params, optimizer: optax.GradientTransformation, key: chex.PRNGKey,
                     reward_envs: int = 0) -> TrainState:
  """θ_0 serves as both θ_j and θ_{j-1}: the first segment is collected by θ_0. `reward_envs`:
  the storage rows whose rewards `normalize_rewards` scales (0: no reward scaling)."""
  return TrainState(params=params, behaviour_params=params, opt_state=optimizer.init(params),
                    update_count=jnp.zeros((), jnp.int32), key=key,
                    reward_norm=normalization.init_returns(reward_envs) if reward_envs else None)


def build_learner_update(config: LearnerConfig, apply_fn: ApplyFn,
                         optimizer: optax.GradientTransformation,
                         axis_name: Optional[str] = None, unroll: bool = True,
                         head: Head = losses.CATEGORICAL) -> LearnerStep:
  """Returns the pure (unjitted) learner iteration `update(state, segment) -> (state, metrics)`:
  the algorithm's update computed from θ_{j-1} and applied to θ_j (paper Eq. 6).

  Args:
    config: learner hyperparameters.
    apply_fn: `apply_fn(params, obs [N, ...]) -> (logits [N, A], value [N])`, or a recurrent
      network's (`networks.Recurrent`; the segment then carries its `core` state).
    optimizer: an optax transformation (usually `make_optimizer(config)`).
    axis_name: the data-parallel axis to average gradients over, or None on one device.
    unroll: unroll the loop over optimizer steps (see `unroll_for`).
    head: the policy head of the network's policy output (`hts_jax.heads`).
  """
  algorithm_update = ALGORITHMS[config.algo].build()(config, apply_fn, optimizer, axis_name,
                                                     unroll, head=head)
  correction = CORRECTIONS[config.correction]

  def update(state: TrainState, segment: Segment):
    check_segment(segment)
    config.check_segment_length(segment.actions.shape[0])
    segment = complete_segment(segment)
    reward_norm = state.reward_norm
    if config.normalize_rewards:
      rewards, reward_norm = normalization.scale_rewards(
          reward_norm, segment.rewards, segment.dones, segment.valid, config.gamma,
          normalization.CLIP, axis_name)
      segment = segment.replace(rewards=rewards)
    key = jax.random.fold_in(state.key, state.update_count)
    delayed = correction.start == "behaviour"
    start = state.behaviour_params if delayed else state.params
    # The correction's inputs (clip centre, weights) come from θ_j and θ_{j-1} (the module doc).
    end, opt_state, summed, metrics = algorithm_update(start, state.opt_state, segment, key,
                                                       state.params, state.behaviour_params)
    # Delayed gradient: the updates computed from θ_{j-1} are applied to θ_j (Eq. 6).
    new_params = optax.apply_updates(state.params, summed) if delayed else end
    # Observation statistics (if any) take in the segment after the update that scored it.
    new_params = normalization.update_params(new_params, segment.obs[:-1], segment.valid,
                                             axis_name)
    if config.acting_extrapolation:
      metrics.update(_prediction_metrics(config, apply_fn, head, state, new_params, segment,
                                         axis_name))
    metrics["learning_rate"] = learning_rate(config)(
        state.update_count * config.num_sgd_steps(segment.actions.shape[0]))
    metrics["params_finite"] = params_finite(new_params)
    new_state = state.replace(params=new_params, behaviour_params=state.params,
                              opt_state=opt_state, update_count=state.update_count + 1,
                              reward_norm=reward_norm)
    return new_state, metrics

  return update


def _prediction_metrics(config: LearnerConfig, apply_fn: ApplyFn, head: Head, state: TrainState,
                        new_params, segment: Segment, axis_name: Optional[str]) -> dict:
  """`corrections.prediction_diagnostics` for `--acting_extrapolation`: θ_j, its prediction of
  θ_{j+1} from θ_j and θ_{j-1}, and θ_{j+1} itself, over the segment's observations."""
  predicted = corrections.extrapolate(state.params, state.behaviour_params,
                                      config.acting_extrapolation)
  core = core_input(segment, segment.rewards.shape[0])
  outs = [apply_tb(apply_fn, jax.lax.stop_gradient(p), segment.obs[:-1], core)[0]
          for p in (state.params, predicted, new_params)]
  return corrections.prediction_diagnostics(outs, segment.valid, head, axis_name)


def data_mesh(devices: Sequence[jax.Device]) -> Mesh:
  """A 1-D mesh over `devices` whose one axis is `DATA_AXIS`."""
  return Mesh(np.asarray(list(devices)), (DATA_AXIS,))


def make_learner_step(config: LearnerConfig, apply_fn: ApplyFn,
                      optimizer: optax.GradientTransformation,
                      devices: Optional[Sequence[jax.Device]] = None,
                      unroll: bool = True, head: Head = losses.CATEGORICAL) -> LearnerStep:
  """The compiled learner step `step(state, segment) -> (state, metrics)`.

  With `devices=None` it is `jax.jit`ed for the default device. With a list of devices it is
  data-parallel over them (`jax.shard_map`, the successor of `pmap`): the state is replicated, the
  segment `[T, B, ...]` is split along B (B divisible by the device count), gradients, metrics and
  advantage statistics are averaged over `DATA_AXIS` as over the global batch. Inputs and outputs
  keep the single-device layout either way.
  """
  if devices is None:
    return jax.jit(build_learner_update(config, apply_fn, optimizer, unroll=unroll, head=head))
  update = build_learner_update(config, apply_fn, optimizer, axis_name=DATA_AXIS, unroll=unroll,
                                head=head)
  # check_vma=False: rlax's scans carry unannotated accumulators; every cross-device quantity is
  # an explicit pmean, so the replicated out_specs hold by construction.
  sharded = jax.shard_map(update, mesh=data_mesh(devices), in_specs=(P(), P(None, DATA_AXIS)),
                          out_specs=(P(), P()), check_vma=False)
  return jax.jit(sharded)
