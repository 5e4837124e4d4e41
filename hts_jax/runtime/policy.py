"""The actors' policy step on the host: `step(params, obs, seeds) -> (actions, extras)` for any
number of rows, built on the pure keyed core of `hts_jax.acting`.

Bitwise batch invariance. XLA CPU gives a row different low-order bits in a batch of 1 than inside
a batch of 16 (docs/determinism.md, "What makes it hold"), which could flip a sampled action. Inside one *fixed* shape, however, a
row's outputs do not depend on its position or on the other rows (checked by
`tests/unit/test_acting.py`). So the compiled core always runs on `[batch_size, ...]`; this wrapper
pads a request of N rows and splits it into chunks of `batch_size`. The runtime goes further and
keeps each env at the fixed row `env_id` of a `[num_envs, ...]` buffer.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import jax
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from hts_jax import losses
from hts_jax.acting import build_policy_core
from hts_jax.heads import Head
from hts_jax.types import DATA_AXIS, ApplyFn


class PolicyStep:
  """Compiled keyed policy step on a fixed padded shape (see the module docstring).

  `step(params, obs [N, ...], seeds [N, 2]) -> (actions [N], extras)` for any N; the compiled core
  always sees `[batch_size, ...]`, so there is one compilation and bitwise batch invariance.
  With `devices`, the core is data-parallel over them (`shard_map`: rows split evenly, params
  replicated); each device then sees a fixed `[batch_size / num_devices, ...]` shape.
  """

  def __init__(self, apply_fn: ApplyFn, batch_size: int, greedy: bool = False,
               devices: Optional[Sequence[jax.Device]] = None, head: Head = losses.CATEGORICAL,
               recurrent: bool = False):
    self.batch_size = int(batch_size)
    self.head = head
    self.recurrent = recurrent
    core = build_policy_core(apply_fn, greedy, head, recurrent)
    # Actors that only need actions (HTS, sync, envpool, evaluation) run a core without the
    # extras: XLA then drops the value tower and the log-prob, and one output comes back (two
    # with a recurrent core: the actions and the rows' next states).
    if recurrent:
      def actions_core(params, obs, seeds, state):
        actions, extras = core(params, obs, seeds, state)
        return actions, extras["core"]
    else:
      actions_core = lambda params, obs, seeds: core(params, obs, seeds)[0]
    if devices is None:
      self.core, self.actions_core = jax.jit(core), jax.jit(actions_core)
    else:
      if self.batch_size % len(devices):
        raise ValueError(f"policy batch {batch_size} not divisible by {len(devices)} devices")
      mesh = Mesh(np.asarray(list(devices)), (DATA_AXIS,))
      specs = (P(), P(DATA_AXIS), P(DATA_AXIS)) + ((P(DATA_AXIS),) if recurrent else ())
      self.core, self.actions_core = (
          jax.jit(jax.shard_map(f, mesh=mesh, in_specs=specs, out_specs=P(DATA_AXIS)))
          for f in (core, actions_core))

  def run_fixed(self, params, obs: np.ndarray, seeds: np.ndarray,
                state: Optional[np.ndarray] = None) -> Tuple[np.ndarray, Dict]:
    """Runs the core on exactly `batch_size` rows (host arrays in, host arrays out); a recurrent
    policy takes the rows' core `state` and returns the next one in `extras["core"]`."""
    args = (params, obs, seeds) + ((state,) if self.recurrent else ())
    actions, extras = self.core(*args)
    return np.asarray(actions), jax.tree.map(np.asarray, extras)

  def run_actions(self, params, obs: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """`run_fixed` without the extras: actions `[batch_size]` only. Rows are as independent of
    their batch neighbours as in `run_fixed` (tested); a run uses one of the two throughout."""
    return np.asarray(self.actions_core(params, obs, seeds))

  def run_recurrent(self, params, obs: np.ndarray, seeds: np.ndarray,
                    state: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """`run_actions` of a recurrent policy: (actions, the rows' next core states)."""
    actions, state = self.actions_core(params, obs, seeds, state)
    return np.asarray(actions), np.asarray(state)

  def run_step(self, params, obs: np.ndarray, seeds: np.ndarray,
               state: Optional[np.ndarray] = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """Actions only, for either kind of policy: (actions, the rows' next core states), the
    states None for a feed-forward policy (which ignores `state`)."""
    if self.recurrent:
      return self.run_recurrent(params, obs, seeds, state)
    return self.run_actions(params, obs, seeds), None

  def __call__(self, params, obs, seeds) -> Tuple[np.ndarray, Dict]:
    """Any number of rows of a feed-forward policy (padded and split into fixed calls)."""
    obs = np.asarray(obs)
    seeds = np.asarray(seeds, np.uint32)
    n = obs.shape[0]
    p = self.batch_size
    padded = -(-n // p) * p
    obs_pad = np.zeros((padded,) + obs.shape[1:], obs.dtype)
    obs_pad[:n] = obs
    seeds_pad = np.zeros((padded, 2), np.uint32)
    seeds_pad[:n] = seeds
    outs = [self.run_fixed(params, obs_pad[i:i + p], seeds_pad[i:i + p])
            for i in range(0, padded, p)]
    actions = np.concatenate([a for a, _ in outs])[:n]
    extras = {k: np.concatenate([e[k] for _, e in outs])[:n] for k in outs[0][1]}
    return actions, extras


def make_policy_step(apply_fn: ApplyFn, batch_size: int, greedy: bool = False,
                     devices: Optional[Sequence[jax.Device]] = None,
                     head: Head = losses.CATEGORICAL, recurrent: bool = False) -> PolicyStep:
  """Factory for `PolicyStep` (see its docstring)."""
  return PolicyStep(apply_fn, batch_size, greedy=greedy, devices=devices, head=head,
                    recurrent=recurrent)
