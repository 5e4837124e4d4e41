"""Env blocks (host side, no JAX): the envs of one executor block, stepped together.

An executor steps its envs in blocks (`runtime.buffers.BlockLayout`): one action array in, the
block's rewards, dones and next observations out, written straight into the storage rows. Two
kinds:

- `GymBlock`: a list of gymnasium env replicas stepped one after another (any env: Atari,
  GFootball, vstep, gymnasium ids). An env that ends an episode is reset at once; its next
  observation is the reset's.
- `CartPoleBlock`: gymnasium's `CartPole-v1` (as `gymnasium.make` builds it) stepped in one
  tight loop over the block, without the five wrapper layers, the action-space check, the info
  dicts and the small numpy arrays that make one gymnasium step cost ~15 us (Sample Factory's
  and envpool's point: keep per-env Python calls off the hot path). For blocks of 8-32 envs a
  loop of Python float operations is cheaper than ~50 numpy calls on tiny arrays (measured:
  ~3 us per env in blocks of 8, against ~11 us as numpy ops and ~20 us through gymnasium).
  It is bit-for-bit the gymnasium env: it takes over the state of the replicas it was built
  from (physics state, each env's own reset `np_random`, the `TimeLimit` step count, the
  episode's return), evaluates gymnasium's `CartPoleEnv.step` expression by expression on
  doubles (the same IEEE operations in the same order; sin and cos from libm, one element at a
  time, which numpy's float64 loops match), resets a finished env from that env's own
  generator, and writes the state back into the replicas whenever they are asked for
  (checkpoints pickle the replicas). So an env's trajectory does not depend on which block it is
  in, and runs give the same bits as with `GymBlock` (`tests/unit/test_blocks.py`,
  `tests/contracts/test_runtime.py`).

`make_block` picks `CartPoleBlock` when every replica is a plain `CartPole-v1` (any
`max_episode_steps` / `sutton_barto_reward`) and `GymBlock` otherwise.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from hts_jax.envs.wrappers import RecordRawEpisode

# (env_id, raw episode return, episode length) of an episode that ended in a step.
Finished = Tuple[int, float, int]


class GymBlock:
  """`k` gymnasium replicas with global ids `env_ids`, each `agents` storage rows."""

  def __init__(self, env_ids: Sequence[int], replicas: Sequence[gym.Env],
               last_obs: Sequence[Any], agents: int, where: Dict[str, Any]):
    self.env_ids, self.envs = list(env_ids), list(replicas)
    self.last_obs, self.agents, self.where = list(last_obs), agents, where

  def observations(self, out: np.ndarray) -> None:
    """Writes the current observations into `out` (`[k * agents, ...]`)."""
    a = self.agents
    for i, obs in enumerate(self.last_obs):
      out[i * a:(i + 1) * a] = np.reshape(obs, (a,) + out.shape[1:])

  def step(self, actions: np.ndarray, rewards: np.ndarray, dones: np.ndarray,
           truncations: np.ndarray, next_obs: np.ndarray, final_obs: Optional[np.ndarray],
           finished: List[Finished]) -> None:
    """Steps every env with its action(s); writes rewards, dones, time-limit truncations and next
    observations (the reset's after an episode ends) into the given storage views, and where
    `final_obs` is given the observation a truncated episode ended on; appends finished
    episodes."""
    a = self.agents
    acts = actions.tolist()
    for i, env in enumerate(self.envs):
      self.where["env_id"] = e = self.env_ids[i]
      act = acts[i] if a == 1 else acts[i * a:(i + 1) * a]
      obs, reward, terminated, truncated, info = env.step(act)
      if "episode_return" in info:  # raw score of a finished episode (a whole game on Atari)
        finished.append((e, float(info["episode_return"]), int(info["episode_length"])))
      done = terminated or truncated
      cut = bool(truncated and not terminated)
      rows = slice(i * a, (i + 1) * a)
      truncations[rows] = float(cut)
      if cut and final_obs is not None:
        final_obs[rows] = np.reshape(obs, (a,) + final_obs.shape[1:])
      if done:
        obs, _ = env.reset()
      if a == 1:
        rewards[i], dones[i], next_obs[i] = reward, done, obs
      else:
        rewards[rows] = np.reshape(reward, a)
        dones[rows] = float(done)
        next_obs[rows] = np.reshape(obs, (a,) + next_obs.shape[1:])
      self.last_obs[i] = obs
    self.where["env_id"] = None

  def replicas(self) -> Dict[int, Tuple[gym.Env, Any]]:
    """{env_id: (replica, last observation)}, current (what a checkpoint pickles)."""
    return {e: (env, obs) for e, env, obs in zip(self.env_ids, self.envs, self.last_obs)}

  def close(self) -> None:
    for env in self.envs:
      env.close()


def _cartpole_chain(env: gym.Env) -> Optional[Tuple[RecordRawEpisode, Any, Any, CartPoleEnv]]:
  """(recorder, TimeLimit, OrderEnforcing, CartPoleEnv) if `env` is exactly what `make_env`
  builds for `CartPole-v1`, else None."""
  chain = [env]
  while hasattr(chain[-1], "env"):
    chain.append(chain[-1].env)
  kinds = [type(w) for w in chain]
  if kinds != [RecordRawEpisode, gym.wrappers.TimeLimit, gym.wrappers.OrderEnforcing,
               gym.wrappers.PassiveEnvChecker, CartPoleEnv]:
    return None
  core = chain[-1]
  if core.render_mode is not None or core.kinematics_integrator != "euler":
    return None
  return chain[0], chain[1], chain[2], core


class CartPoleBlock:
  """gymnasium `CartPole-v1` replicas stepped in one loop (see the module docstring)."""

  def __init__(self, env_ids: Sequence[int], replicas: Sequence[gym.Env]):
    chains = [_cartpole_chain(env) for env in replicas]
    assert all(c is not None for c in chains), "CartPoleBlock needs plain CartPole-v1 replicas"
    self.env_ids, self.envs, self.chains = list(env_ids), list(replicas), chains
    cores = [c[3] for c in chains]
    for x in cores:
      if x.state is None or x.steps_beyond_terminated is not None:
        raise ValueError("CartPoleBlock takes replicas that are reset and not terminated")
    c = cores[0]
    # Python floats are IEEE doubles: the same operations give gymnasium's float64 results.
    self.consts = (c.gravity, c.masspole, c.total_mass, c.length, c.polemass_length, c.force_mag,
                   c.tau, c.x_threshold, c.theta_threshold_radians)
    # pylint: disable=protected-access
    self.sutton_barto = [bool(x._sutton_barto_reward) for x in cores]
    self.max_steps = [int(ch[1]._max_episode_steps) for ch in chains]
    self.rngs = [x.np_random for x in cores]  # each env's own reset generator, shared with it
    self.state = [[float(v) for v in x.state] for x in cores]
    self.elapsed = [int(ch[1]._elapsed_steps) for ch in chains]
    self.ret = [float(ch[0]._return) for ch in chains]
    self.len = [int(ch[0]._length) for ch in chains]
    self.synced = True

  def observations(self, out: np.ndarray) -> None:
    out[:] = self.state  # float64 -> float32, as gymnasium's `np.array(state, dtype=np.float32)`

  def step(self, actions: np.ndarray, rewards: np.ndarray, dones: np.ndarray,
           truncations: np.ndarray, next_obs: np.ndarray, final_obs: Optional[np.ndarray],
           finished: List[Finished]) -> None:
    """As `GymBlock.step`."""
    self.synced = False
    g, mp_, tm, length, pml, fm, tau, xt, tt = self.consts
    cos, sin = math.cos, math.sin
    rew, done_out, cut_out = [], [], []
    for i, a in enumerate(actions.tolist()):
      if a != 0 and a != 1:
        raise AssertionError(f"{a!r} is not a CartPole action")
      s = self.state[i]
      x, x_dot, theta, theta_dot = s
      # gymnasium's CartPoleEnv.step (euler), operation for operation.
      force = fm if a == 1 else -fm
      costheta, sintheta = cos(theta), sin(theta)
      temp = (force + pml * (theta_dot * theta_dot) * sintheta) / tm
      thetaacc = (g * sintheta - costheta * temp) / (
          length * (4.0 / 3.0 - mp_ * (costheta * costheta) / tm))
      xacc = temp - pml * thetaacc * costheta / tm
      x = x + tau * x_dot
      x_dot = x_dot + tau * xacc
      theta = theta + tau * theta_dot
      theta_dot = theta_dot + tau * thetaacc
      s[0], s[1], s[2], s[3] = x, x_dot, theta, theta_dot
      terminated = x < -xt or x > xt or theta < -tt or theta > tt
      r = (-1.0 if terminated else 0.0) if self.sutton_barto[i] else 1.0
      self.elapsed[i] += 1
      self.len[i] += 1
      self.ret[i] += r  # RecordRawEpisode
      cut = not terminated and self.elapsed[i] >= self.max_steps[i]  # TimeLimit
      done = terminated or cut
      if cut and final_obs is not None:
        final_obs[i] = s
      if done:  # then the executor's reset
        finished.append((self.env_ids[i], self.ret[i], self.len[i]))
        s[:] = self.rngs[i].uniform(low=-0.05, high=0.05, size=(4,)).tolist()
        self.elapsed[i] = self.len[i] = 0
        self.ret[i] = 0.0
      rew.append(r)
      done_out.append(done)
      cut_out.append(cut)
    rewards[:] = rew
    dones[:] = done_out
    truncations[:] = cut_out
    next_obs[:] = self.state

  def replicas(self) -> Dict[int, Tuple[gym.Env, Any]]:
    """Writes the block's state back into the gymnasium replicas and returns them."""
    if not self.synced:
      for i, (rec, limit, order, core) in enumerate(self.chains):
        core.state = np.array(self.state[i], np.float64)
        core.steps_beyond_terminated = None
        limit._elapsed_steps = self.elapsed[i]  # pylint: disable=protected-access
        order._has_reset = True  # pylint: disable=protected-access
        rec._return, rec._length = self.ret[i], self.len[i]  # pylint: disable=protected-access
      self.synced = True
    return {e: (env, np.array(env.unwrapped.state, np.float32))
            for e, env in zip(self.env_ids, self.envs)}

  def close(self) -> None:
    for env in self.envs:
      env.close()


def make_block(env_ids: Sequence[int], replicas: Sequence[gym.Env], last_obs: Sequence[Any],
               agents: int, where: Dict[str, Any], vectorize: bool = True):
  """`CartPoleBlock` for plain CartPole-v1 replicas (unless `vectorize=False`), else `GymBlock`."""
  if vectorize and agents == 1 and all(_cartpole_chain(env) is not None for env in replicas):
    return CartPoleBlock(env_ids, replicas)
  return GymBlock(env_ids, replicas, last_obs, agents, where)
