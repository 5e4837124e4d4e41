"""Atari envs alone: the paper's frames and raw scores, pickled emulator states, noop starts, a game
ending inside a wrapper step, envpool's fake steps masked as on the ale-py path."""

import gymnasium as gym
import numpy as np
import pytest

from hts_jax import envs
from hts_jax.config import RunConfig
from tests.support.cli import run_python


def _raw_recorder(env):
  from hts_jax.envs.wrappers import RecordRawEpisode
  while not isinstance(env, RecordRawEpisode):
    env = env.env
  return env


def _games(dones, game_over, valid):
  """Per env: [(valid transitions, dones)] of every game that ended in the recording."""
  out = []
  for e in range(dones.shape[1]):
    start = 0
    for t in np.flatnonzero(game_over[:, e]):
      out.append((int(valid[start:t + 1, e].sum()), int(dones[start:t + 1, e].sum())))
      start = t + 1
  return out


def test_atari_frames_and_raw_scores():
  env = envs.make_env("atari:Breakout", {}, train=True)
  obs, _ = env.reset(seed=0)
  assert obs.shape == (84, 84, 4) and obs.dtype == np.uint8
  rng = np.random.default_rng(0)
  games, lives_lost = [], 0
  for _ in range(2000):
    obs, r, terminated, truncated, info = env.step(int(rng.integers(4)))
    assert r in (-1.0, 0.0, 1.0)  # clipped for training
    if "episode_return" in info:
      games.append(info["episode_return"])
    if terminated or truncated:
      lives_lost += 1
      env.reset()
  assert games and lives_lost >= 4 * len(games)  # episodic life: a learning episode per life
  eval_env = envs.make_env("atari:Breakout", {}, train=False)
  assert eval_env.reset(seed=0)[0].shape == (84, 84, 4)


@pytest.mark.parametrize("bad", [{"sticky": True, "bogus": 1}])
def test_atari_rejects_unknown_kwargs(bad):
  with pytest.raises(ValueError, match="unknown atari env_kwargs"):
    envs.make_env("atari:Breakout", bad)


@pytest.mark.parametrize("sticky", [False, True])
def test_atari_env_state_pickles_bit_exact(sticky):
  """Checkpoints pickle env replicas: an ALE env must continue bit for bit, across games."""
  import pickle
  env = envs.make_env("atari:Breakout", {"sticky": sticky})
  env.reset(seed=3)
  rng = np.random.default_rng(0)
  for _ in range(100):
    env.step(int(rng.integers(4)))
  copy = pickle.loads(pickle.dumps(env))
  games = 0
  for _ in range(1200):
    a = int(rng.integers(4))
    o1, r1, te1, tr1, info = env.step(a)
    o2, r2, te2, tr2, _ = copy.step(a)
    assert (o1 == o2).all() and (r1, te1, tr1) == (r2, te2, tr2)
    games += "episode_return" in info
    if te1 or tr1:
      assert (env.reset()[0] == copy.reset()[0]).all()
  assert games >= 2  # whole games ended and restarted (no-op starts drawn from the saved RNG)


def test_envpool_only_for_atari():
  from hts_jax.config import ConfigError
  with pytest.raises(ConfigError, match="--envpool is for atari"):
    RunConfig.make(env="CartPole-v1", envpool=True)


def test_atari_evaluation_uses_up_to_30_noop_starts():
  """Evaluation replicas (train=False) start each episode with a random number (up to 30) of
  no-ops, drawn from the env's seeded RNG: different seeds give different start frames."""
  env = envs.make_env("atari:Pong", {}, train=False)
  pre = env
  while not isinstance(pre, gym.wrappers.AtariPreprocessing):
    pre = pre.env
  assert pre.noop_max == 30
  starts = {env.reset(seed=s)[0].tobytes() for s in range(6)}
  assert len(starts) > 1
  env.close()


@pytest.mark.parametrize("inner_steps", [1, 2, 3])  # the no-op after a lost life, FIRE, then 2
def test_atari_game_ending_inside_a_wrapper_step_is_reported_once(inner_steps):
  """A whole game can end on a step the wrappers take themselves (EpisodicLife.reset's no-op that
  continues the game after a lost life, FireReset's FIRE and the step after it). Its raw score and
  length must still reach the caller once, on a later step's info. Real Breakout: the frame limit
  is set so that the game is truncated on exactly that inner step."""
  import pickle

  def play(limit=None):
    env = envs.make_env("atari:Breakout", {} if limit is None else
                        {"max_num_frames_per_episode": limit}, train=True)
    env.reset(seed=0)
    rng = np.random.default_rng(9)  # scores 2 before the first life is lost
    for t in range(1000):
      _, _, terminated, truncated, info = env.step(int(rng.integers(4)))
      assert "episode_return" not in info
      if terminated or truncated:
        return env, t
    raise AssertionError("no life lost")

  env, t_lost = play()
  rec = _raw_recorder(env)
  frame, score, length = env.unwrapped.ale.getEpisodeFrameNumber(), rec._return, rec._length
  assert env.unwrapped.ale.lives() > 0 and score == 2.0
  # Frame-skip 4: inner step k (1: no-op, 2: FIRE, 3: action 2) plays frames 4k-3..4k after it.
  env, t = play(limit=frame + 4 * (inner_steps - 1) + 1)
  assert t == t_lost
  env.reset()  # the game ends inside this reset, on the wrapper's own inner step
  assert env.unwrapped.ale.getEpisodeFrameNumber() < frame  # a new game started
  copy = pickle.loads(pickle.dumps(env))  # a checkpoint taken while the record waits keeps it
  for e in (env, copy):
    records = []
    for _ in range(20):
      _, _, terminated, truncated, info = e.step(0)
      if "episode_return" in info:
        records.append((info["episode_return"], info["episode_length"]))
      if terminated or truncated:
        e.reset()
    # The inner steps score nothing (the ball is out, FIRE only serves): raw score as at the life
    # loss; the length counts the inner steps up to the one the game ended on.
    assert records == [(score, length + inner_steps)]


def test_envpool_fake_steps_are_masked_like_the_ale_py_path():
  """Bug 1: envpool resets an env on the step after it ends (a lost life included): the action is
  ignored, the reward is 0 and `elapsed_step` does not advance. Those steps get `valid` 0 and no
  episode length counts them, so on Breakout, as on the ale-py path, a game of L steps gives the
  learner exactly L transitions and 5 episodes (one per life), and its recorded length is L
  (envpool's own `elapsed_step` at the game's end). (The ale-py path's recorded lengths also
  count the wrappers' own FIRE and no-op steps, which are not transitions.)"""
  pytest.importorskip("envpool", reason="installed by .ci/setup.sh")
  from hts_jax.envs.blocks import make_block
  from hts_jax.runtime import storage
  from hts_jax.runtime.loops.envpool_group import StepRecorder, make_pool

  steps, n = 700, 2
  spec = storage.StorageSpec(steps, n, (84, 84, 4), "uint8")
  rng = np.random.default_rng(0)
  actions = rng.integers(0, 4, (steps, n)).astype(np.int32)

  pool = make_pool(RunConfig.make(env="atari:Breakout", envpool=True, num_envs=n, num_executors=1),
                   0, n)
  st, rec = storage.zeros(spec), StepRecorder(np.arange(n))
  pool.async_reset()
  obs, *_, info = pool.recv()
  rec.reset(obs, info)
  elapsed = np.zeros((steps, n), np.int64)
  game_over = np.zeros((steps, n), bool)
  for t in range(steps):
    pool.send(actions[t], np.arange(n))
    out = pool.recv()
    rec.record(st, t, *out)
    info = out[-1]
    elapsed[t, info["env_id"]] = info["elapsed_step"]
    game_over[t, info["env_id"]] = info["terminated"].astype(bool) | out[3]
  pool.close()
  after_done = np.zeros_like(st.dones, bool)
  after_done[1:] = st.dones[:-1] == 1
  np.testing.assert_array_equal(st.valid == 0, after_done)
  assert (st.rewards[after_done] == 0).all()
  lost_life = after_done & ~np.concatenate([np.zeros((1, n), bool), game_over[:-1]])
  prev = np.concatenate([np.zeros((1, n), np.int64), elapsed[:-1]])
  assert lost_life.sum() >= 4 and (elapsed[lost_life] == prev[lost_life]).all()
  pool_lengths = [x for e in range(n) for x in rec.lengths[e]]
  assert pool_lengths == [int(elapsed[t, e]) for e in range(n) for t in np.flatnonzero(
      game_over[:, e])]
  pool_games = _games(st.dones, game_over, st.valid)

  # The ale-py executors' block on the same game: every stored transition is real.
  replicas = [envs.make_env("atari:Breakout", {}, train=True) for _ in range(n)]
  first = [env.reset(seed=i)[0] for i, env in enumerate(replicas)]
  block = make_block(range(n), replicas, first, 1, {"env_id": None})
  ale, finished = storage.zeros(spec), []
  ale.valid[:] = 1.0
  ale_over = np.zeros((steps, n), bool)
  for t in range(steps):
    before = len(finished)
    block.step(actions[t], ale.rewards[t], ale.dones[t], ale.truncated[t], ale.obs[t + 1], None,
               finished)
    for e, _, _ in finished[before:]:
      ale_over[t, e] = True
  ale_games = _games(ale.dones, ale_over, ale.valid)
  assert [v for v, _ in pool_games] == pool_lengths
  assert len(pool_games) >= 2 and len(ale_games) >= 2
  assert {d for _, d in pool_games} == {d for _, d in ale_games} == {5}


def test_making_envs_prints_no_ale_banner():
  """ALE printed its version banner ("A.L.E: ...", "[Powered by Stella]")
  for every env, interleaved across executors."""
  proc = run_python(
      "from hts_jax import envs\n"
      "for train in (True, False):\n"
      "  env = envs.make_env('atari:Pong', {}, train=train)\n  env.reset(seed=0)")
  assert proc.returncode == 0, proc.stderr
  assert "A.L.E" not in proc.stdout + proc.stderr and "Stella" not in proc.stdout + proc.stderr
