"""Seed derivation (host side, numpy only: executor processes import it without JAX).

Every random draw in a run is keyed by (seed, env_id[, step]), never by who processed it:
- `env_seed(seed, env_id)`: the env replica's reset seed;
- `action_stream(seed, env_id)`: the env's action-seed stream; the action at the env's global step
  `s` is sampled with the key `fold_in(PRNGKey(action_stream), s)` (see `hts_jax.acting`);
- `eval_episode_seed(seed, evaluation, episode)`, `eval_action_stream(seed, evaluation, row)`:
  episode i of evaluation k resets with the first and samples its actions from the second, so no
  two evaluations replay the same episodes and none replays training's (its own domain words).
"""

from __future__ import annotations

import numpy as np

_ENV, _ACTION, _EVAL, _LEARNER, _DECORRELATE, _ENVPOOL, _EVAL_ACTION = range(7)


def _derive(*words: int) -> int:
  return int(np.random.SeedSequence([int(w) for w in words]).generate_state(1, np.uint32)[0])


def env_seed(seed: int, env_id: int) -> int:
  return _derive(seed, _ENV, env_id)


def action_stream(seed: int, env_id: int) -> int:
  return _derive(seed, _ACTION, env_id)


def action_streams(seed: int, num_envs: int) -> np.ndarray:
  """`[num_envs]` uint32 action streams, indexed by global env id."""
  return np.array([action_stream(seed, e) for e in range(num_envs)], np.uint32)


def eval_episode_seed(seed: int, evaluation: int, episode: int) -> int:
  """The reset seed of episode `episode` of the run's evaluation number `evaluation` (0, 1, ...)."""
  return _derive(seed, _EVAL, evaluation, episode)


def eval_action_stream(seed: int, evaluation: int, row: int) -> int:
  """The action stream of row `row` of evaluation number `evaluation`'s policy step."""
  return _derive(seed, _EVAL_ACTION, evaluation, row)


def learner_seed(seed: int) -> int:
  return _derive(seed, _LEARNER)


def decorrelation_seed(seed: int, env_id: int) -> int:
  return _derive(seed, _DECORRELATE, env_id)


def envpool_base_seed(seed: int) -> int:
  """envpool seeds env i of a pool with `base + i`: env e gets `envpool_base_seed(seed) + e`."""
  return _derive(seed, _ENVPOOL) % (2**30)


def row_seeds(streams: np.ndarray, steps: np.ndarray) -> np.ndarray:
  """`[N, 2]` uint32 rows `(stream, step)` for the policy step."""
  return np.stack([np.asarray(streams, np.uint32), np.asarray(steps, np.uint32)], axis=-1)


def global_step(segment: int, alpha: int, t: int) -> int:
  """An env's global step at step `t` of segment `segment` (segments of `alpha` steps): the second
  word of its action seed, so an action depends on where the env is, not on who computed it."""
  return segment * alpha + t
