"""Env blocks: the vectorised CartPole block is bit-for-bit gymnasium's CartPole-v1."""

import pickle

import numpy as np
import pytest

from hts_jax import envs, seeding
from hts_jax.envs import blocks


def _replicas(ids, kwargs=None, seed=3):
  out, obs = [], []
  for e in ids:
    env = envs.make_env("CartPole-v1", kwargs or {}, train=True)
    o, _ = env.reset(seed=seeding.env_seed(seed, e))
    out.append(env)
    obs.append(o)
  return out, obs


def _run(block, k, steps, rng_seed=0, stop_at=None):
  rng = np.random.default_rng(rng_seed)
  obs = np.zeros((steps + 1, k, 4), np.float32)
  rew = np.zeros((steps, k), np.float32)
  done = np.zeros((steps, k), np.float32)
  finished = []
  block.observations(obs[0])
  for t in range(steps if stop_at is None else stop_at):
    block.step(rng.integers(0, 2, size=k).astype(np.int32), rew[t], done[t], obs[t + 1], finished)
  return obs, rew, done, finished


@pytest.mark.parametrize("kwargs", [{}, {"max_episode_steps": 30, "sutton_barto_reward": True}])
def test_cartpole_block_matches_gymnasium_bitwise(kwargs):
  ids = list(range(4, 11))
  where = {"env_id": None}
  vec = blocks.make_block(ids, *_replicas(ids, kwargs), 1, where)
  ref = blocks.make_block(ids, *_replicas(ids, kwargs), 1, where, vectorize=False)
  assert isinstance(vec, blocks.CartPoleBlock) and isinstance(ref, blocks.GymBlock)
  a, b = _run(vec, len(ids), 700), _run(ref, len(ids), 700)
  for x, y in zip(a[:3], b[:3]):
    np.testing.assert_array_equal(x, y)
  assert a[3] == b[3] and len(a[3]) > 20  # the same finished episodes, returns and lengths
  assert a[2].sum() == len(a[3])


def test_env_trajectory_does_not_depend_on_its_block():
  where = {"env_id": None}
  whole = blocks.make_block(range(8), *_replicas(range(8)), 1, where)
  halves = [blocks.make_block(ids, *_replicas(ids), 1, where) for ids in (range(4), range(4, 8))]
  rng = np.random.default_rng(1)
  for _ in range(300):
    acts = rng.integers(0, 2, size=8).astype(np.int32)
    outs = [np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros((8, 4), np.float32)]
    whole.step(acts, *outs, [])
    parts = [np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros((8, 4), np.float32)]
    for h, block in enumerate(halves):
      sl = slice(4 * h, 4 * h + 4)
      block.step(acts[sl], parts[0][sl], parts[1][sl], parts[2][sl], [])
    for x, y in zip(outs, parts):
      np.testing.assert_array_equal(x, y)


def test_cartpole_block_replicas_resume_mid_episode():
  ids = list(range(5))
  where = {"env_id": None}
  vec = blocks.make_block(ids, *_replicas(ids), 1, where)
  _run(vec, 5, 0, stop_at=0)
  rng = np.random.default_rng(2)
  scratch = [np.zeros(5, np.float32), np.zeros(5, np.float32), np.zeros((5, 4), np.float32)]
  for _ in range(37):
    vec.step(rng.integers(0, 2, size=5).astype(np.int32), *scratch, [])
  saved = {e: pickle.dumps(pair) for e, pair in vec.replicas().items()}
  restored = [pickle.loads(saved[e]) for e in ids]
  twin = blocks.make_block(ids, [r for r, _ in restored], [o for _, o in restored], 1, where)
  ref = blocks.make_block(ids, *map(list, zip(*[pickle.loads(saved[e]) for e in ids])), 1, where,
                          vectorize=False)
  np.testing.assert_array_equal(scratch[2], np.stack([o for _, o in restored]))
  outs = [_run(blk, 5, 400, rng_seed=9) for blk in (vec, twin, ref)]
  for other in outs[1:]:
    for x, y in zip(outs[0][:3], other[:3]):
      np.testing.assert_array_equal(x, y)
    assert outs[0][3] == other[3]


def test_other_envs_get_the_generic_block():
  env = envs.make_env("vstep", {"mean_s": 0.0, "dist": "constant"}, train=True)
  o, _ = env.reset(seed=0)
  assert isinstance(blocks.make_block([0], [env], [o], 1, {"env_id": None}), blocks.GymBlock)
