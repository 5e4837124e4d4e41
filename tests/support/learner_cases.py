"""Golden-value cases the learner tests share: a bias-only model whose gradients are easy to derive
by hand, one-step segments, θ_{j-1} and θ_j, and small configs."""

import jax
import jax.numpy as jnp
import numpy as np

from hts_jax import learner
from hts_jax.types import LearnerConfig, Segment

LR = 0.1


def bias_model(params, obs):
  """logits = l, value = b for every row: gradients are easy to derive by hand."""
  n = obs.shape[0]
  return jnp.broadcast_to(params["l"], (n, 2)), jnp.full((n,), params["b"])


def one_step_segment(action):
  """T=1, B=1: reward 1.5 then the episode ends, so the A2C return is R = 1.5."""
  return Segment(obs=jnp.zeros((2, 1, 1)), actions=jnp.array([[action]], jnp.int32),
                 rewards=jnp.array([[1.5]]), dones=jnp.array([[1.0]]))


THETA_PREV = {"l": jnp.array([0.0, 0.0]), "b": jnp.array(0.5)}   # θ_{j-1}
THETA = {"l": jnp.array([1.0, -1.0]), "b": jnp.array(2.0)}       # θ_j


def hand_grad(theta, action, weight=1.0):
  """∇L for L = -w·(R-b)·log softmax(l)[a] + 0.5·(R-b)² (value_coef 0.5, no entropy)."""
  adv = 1.5 - float(theta["b"])
  pi = np.exp(np.asarray(theta["l"])) / np.exp(np.asarray(theta["l"])).sum()
  onehot = np.eye(2)[action]
  return {"l": -weight * adv * (onehot - pi), "b": np.array(-2 * 0.5 * adv)}


def state_at(optimizer, theta_prev=THETA_PREV, theta=THETA):
  st = learner.init_train_state(theta_prev, optimizer, jax.random.PRNGKey(0))
  return st.replace(params=theta, behaviour_params=theta_prev)


def config(**kw):
  base = dict(algo="a2c", unroll_length=1, value_coef=0.5, entropy_coef=0.0)
  base.update(kw)
  return LearnerConfig(**base)


def random_segment(t=8, b=4, obs_dim=4, seed=0):
  rng = np.random.default_rng(seed)
  return Segment(obs=jnp.asarray(rng.normal(size=(t + 1, b, obs_dim)), jnp.float32),
                 actions=jnp.asarray(rng.integers(0, 2, (t, b)), jnp.int32),
                 rewards=jnp.asarray(rng.normal(size=(t, b)), jnp.float32),
                 dones=jnp.asarray(rng.random((t, b)) < 0.2, jnp.float32))


def ppo_config(**kw):
  base = dict(algo="ppo", ppo_epochs=1, num_minibatches=1, value_coef=0.5, entropy_coef=0.0,
              normalize_advantages=False, gae_lambda=0.95, clip_eps=0.2)
  base.update(kw)
  return LearnerConfig(**base)
