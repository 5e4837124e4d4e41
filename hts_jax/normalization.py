"""Running observation statistics in the learner's state (pure; brax's `running_statistics` is the
model): the network normalises its input with them, the learner updates them from each whole
segment after its update, and they travel with the params to the actors at the boundary.

They live in the network's variables as the collection `obs_norm` (`mean`, `m2` (summed squared
deviations), `count`), beside `params`: the delayed gradient then scores a segment with the
statistics its behaviour policy θ_{j-1} acted with, checkpoints carry them, and every actor,
executor and learner-device count sees the same numbers (they are updated from the segment in its
fixed `[t, env]` order, over the global batch). The network stops their gradient, so the
optimizer leaves them as they are (a zero gradient gives a zero RMSProp or Adam update) and only
`update` changes them.

    x_norm = clip((x - mean) / sqrt(var + eps), -clip, clip),  var = m2 / count (1 before data)
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import chex
import jax
import jax.numpy as jnp

from hts_jax.collectives import psum

COLLECTION = "obs_norm"
EPS = 1e-8
CLIP = 10.0  # normalised observations and scaled rewards are clipped to ±CLIP (CleanRL's 10)


def as_float(obs: chex.Array) -> chex.Array:
  """What the network sees before normalising: float32, uint8 frames scaled to [0, 1]."""
  if obs.dtype == jnp.uint8:
    return obs.astype(jnp.float32) / 255.0
  return obs.astype(jnp.float32)


def init(shape) -> Dict[str, chex.Array]:
  return dict(mean=jnp.zeros(shape, jnp.float32), m2=jnp.zeros(shape, jnp.float32),
              count=jnp.zeros((), jnp.float32))


def variance(stats) -> chex.Array:
  return jnp.where(stats["count"] > 0, stats["m2"] / jnp.maximum(stats["count"], 1.0), 1.0)


def normalize(stats, x: chex.Array, clip: float) -> chex.Array:
  """`x [N, *shape]` standardised by `stats` (no gradient into them) and clipped to ±clip."""
  stats = jax.lax.stop_gradient(stats)
  z = (x - stats["mean"]) / jnp.sqrt(variance(stats) + EPS)
  return jnp.clip(z, -clip, clip)


def update(stats, x: chex.Array, mask: chex.Array, axis_name: Optional[str] = None):
  """Merges the samples `x [T, B, *shape]` where `mask [T, B]` is 1 into `stats` (Chan et al.'s
  parallel update), over the global batch when the batch is split over `axis_name`."""
  x = as_float(x)
  w = mask.astype(jnp.float32).reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
  n = psum(jnp.sum(mask.astype(jnp.float32)), axis_name)
  total = n + stats["count"]
  safe_n = jnp.maximum(n, 1.0)
  batch_mean = psum(jnp.sum(x * w, axis=(0, 1)), axis_name) / safe_n
  batch_m2 = psum(jnp.sum(jnp.square(x - batch_mean) * w, axis=(0, 1)), axis_name)
  delta = batch_mean - stats["mean"]
  mean = stats["mean"] + delta * n / jnp.maximum(total, 1.0)
  m2 = stats["m2"] + batch_m2 + jnp.square(delta) * stats["count"] * n / jnp.maximum(total, 1.0)
  return dict(mean=mean, m2=m2, count=total)


def update_params(params: Any, obs: chex.Array, mask: chex.Array,
                  axis_name: Optional[str] = None) -> Any:
  """`params` (the network's variables) with their observation statistics updated from the
  segment's `obs [T, B, ...]` (the steps with `mask` 1); unchanged without statistics."""
  if COLLECTION not in params:
    return params

  def walk(tree):  # the statistics sit under the normalising module's path
    if "count" in tree:
      return update(tree, obs, mask, axis_name)
    return {k: walk(v) for k, v in tree.items()}

  return {**params, COLLECTION: walk(params[COLLECTION])}


# Reward scaling by the spread of the discounted return (OpenAI baselines' VecNormalize,
# gymnasium's NormalizeReward, which CleanRL's PPO MuJoCo setup uses): each env accumulates
# acc_t = γ·acc_{t-1}·(1 - done_{t-1}) + r_t; the running variance of acc over every env and step
# seen scales the rewards, r_t / sqrt(var + eps), clipped to ±clip. Here the accumulators and the
# statistics are the learner's (`TrainState.reward_norm`), updated from each whole segment in its
# fixed [t, env] order, so they do not depend on executors, actors or timing; a segment's
# rewards are scaled by the statistics that include it (the wrappers update before scaling too).


def init_returns(num_envs: int) -> Dict[str, chex.Array]:
  return dict(acc=jnp.zeros((num_envs,), jnp.float32), mean=jnp.zeros((), jnp.float32),
              m2=jnp.zeros((), jnp.float32), count=jnp.zeros((), jnp.float32))


def scale_rewards(stats, rewards: chex.Array, dones: chex.Array, mask: chex.Array, gamma: float,
                  clip: float, axis_name: Optional[str] = None):
  """`(scaled rewards [T, B], new stats)` for a segment's `rewards`, `dones`, `mask` `[T, B]`.
  With `axis_name` the segment's columns are this device's share of `stats["acc"]` (in device
  order), and the statistics cover the global batch."""
  b = rewards.shape[1]
  offset = 0 if axis_name is None else jax.lax.axis_index(axis_name) * b
  acc0 = jax.lax.dynamic_slice(stats["acc"], (offset,), (b,))

  def step(acc, x):
    r, d, m = x
    acc = gamma * acc + r * m
    return acc * (1.0 - d), acc

  acc_end, accs = jax.lax.scan(step, acc0, (rewards.astype(jnp.float32),
                                            dones.astype(jnp.float32), mask.astype(jnp.float32)))
  moments = update(dict(mean=stats["mean"], m2=stats["m2"], count=stats["count"]),
                   accs[..., None], mask, axis_name)  # accs are float32 already
  moments = {k: v.reshape(()) for k, v in moments.items()}
  scale = jnp.sqrt(variance(moments) + EPS)
  scaled = jnp.clip(rewards / scale, -clip, clip)
  acc = acc_end if axis_name is None else jax.lax.all_gather(acc_end, axis_name, tiled=True)
  return scaled, dict(moments, acc=acc)
