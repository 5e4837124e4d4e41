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
  """(obs, rewards, dones, truncated, final_obs, finished episodes) of `steps` random steps."""
  rng = np.random.default_rng(rng_seed)
  obs = np.zeros((steps + 1, k, 4), np.float32)
  rew = np.zeros((steps, k), np.float32)
  done = np.zeros((steps, k), np.float32)
  cut = np.zeros((steps, k), np.float32)
  final = np.zeros((steps, k, 4), np.float32)
  finished = []
  block.observations(obs[0])
  for t in range(steps if stop_at is None else stop_at):
    block.step(rng.integers(0, 2, size=k).astype(np.int32), rew[t], done[t], cut[t], obs[t + 1],
               final[t], finished)
  return obs, rew, done, cut, final, finished


def _scratch(k):
  """Output views for one block step: rewards, dones, truncated, next obs, final obs."""
  return [np.zeros(k, np.float32), np.zeros(k, np.float32), np.zeros(k, np.float32),
          np.zeros((k, 4), np.float32), np.zeros((k, 4), np.float32)]


@pytest.mark.parametrize("kwargs", [{}, {"max_episode_steps": 30, "sutton_barto_reward": True}])
def test_cartpole_block_matches_gymnasium_bitwise(kwargs):
  ids = list(range(4, 11))
  where = {"env_id": None}
  vec = blocks.make_block(ids, *_replicas(ids, kwargs), 1, where)
  ref = blocks.make_block(ids, *_replicas(ids, kwargs), 1, where, vectorize=False)
  assert isinstance(vec, blocks.CartPoleBlock) and isinstance(ref, blocks.GymBlock)
  a, b = _run(vec, len(ids), 700), _run(ref, len(ids), 700)
  for x, y in zip(a[:5], b[:5]):
    np.testing.assert_array_equal(x, y)
  assert a[5] == b[5] and len(a[5]) > 20  # the same finished episodes, returns and lengths
  assert a[2].sum() == len(a[5])
  if kwargs:  # 30-step limit: some episodes are cut, with their last observation kept
    assert 0 < a[3].sum() < a[2].sum()
    assert np.abs(a[4][a[3] == 1]).sum() > 0 and np.abs(a[4][a[3] == 0]).sum() == 0


def test_env_trajectory_does_not_depend_on_its_block():
  where = {"env_id": None}
  whole = blocks.make_block(range(8), *_replicas(range(8)), 1, where)
  halves = [blocks.make_block(ids, *_replicas(ids), 1, where) for ids in (range(4), range(4, 8))]
  rng = np.random.default_rng(1)
  for _ in range(300):
    acts = rng.integers(0, 2, size=8).astype(np.int32)
    outs = _scratch(8)
    whole.step(acts, *outs, [])
    parts = _scratch(8)
    for h, block in enumerate(halves):
      sl = slice(4 * h, 4 * h + 4)
      block.step(acts[sl], *[p[sl] for p in parts], [])
    for x, y in zip(outs, parts):
      np.testing.assert_array_equal(x, y)


def test_cartpole_block_replicas_resume_mid_episode():
  ids = list(range(5))
  where = {"env_id": None}
  vec = blocks.make_block(ids, *_replicas(ids), 1, where)
  _run(vec, 5, 0, stop_at=0)
  rng = np.random.default_rng(2)
  scratch = _scratch(5)
  for _ in range(37):
    vec.step(rng.integers(0, 2, size=5).astype(np.int32), *scratch, [])
  saved = {e: pickle.dumps(pair) for e, pair in vec.replicas().items()}
  restored = [pickle.loads(saved[e]) for e in ids]
  twin = blocks.make_block(ids, [r for r, _ in restored], [o for _, o in restored], 1, where)
  ref = blocks.make_block(ids, *map(list, zip(*[pickle.loads(saved[e]) for e in ids])), 1, where,
                          vectorize=False)
  np.testing.assert_array_equal(scratch[3], np.stack([o for _, o in restored]))
  outs = [_run(blk, 5, 400, rng_seed=9) for blk in (vec, twin, ref)]
  for other in outs[1:]:
    for x, y in zip(outs[0][:5], other[:5]):
      np.testing.assert_array_equal(x, y)
    assert outs[0][5] == other[5]


def test_other_envs_get_the_generic_block():
  env = envs.make_env("vstep", {"mean_s": 0.0, "dist": "constant"}, train=True)
  o, _ = env.reset(seed=0)
  assert isinstance(blocks.make_block([0], [env], [o], 1, {"env_id": None}), blocks.GymBlock)
