"""MinAtar as an env family (`minatar:<Game>`) alone: the env against MinAtar's own `Environment`,
seeded resets, pickling, frames, the network."""

import pickle

import numpy as np
import pytest

from hts_jax import choices, envs, networks
from hts_jax.config import ConfigError
from hts_jax.envs.minatar import GAMES
from hts_jax.runtime.outputs import video


CHANNELS = {"Asterix": 4, "Breakout": 4, "Freeway": 7, "Seaquest": 10, "SpaceInvaders": 6}


MINIMAL_ACTIONS = {"Asterix": 5, "Breakout": 3, "Freeway": 3, "Seaquest": 6, "SpaceInvaders": 4}


def _play(env, seed, actions):
  """Observations, rewards and ends of `actions` from `reset(seed=seed)` (resets after an end)."""
  obs, _ = env.reset(seed=seed)
  out = [obs]
  for a in actions:
    obs, r, terminated, truncated, _ = env.step(a)
    out.append((obs, r, terminated, truncated))
    if terminated or truncated:
      out.append(env.reset()[0])
  return out


def _same(a, b):
  return len(a) == len(b) and all(
      np.array_equal(x, y) if isinstance(x, np.ndarray)
      else np.array_equal(x[0], y[0]) and x[1:] == y[1:] for x, y in zip(a, b))


@pytest.mark.parametrize("game", sorted(GAMES))
def test_spaces_and_seeded_resets_are_deterministic(game):
  env = envs.make_env(f"minatar:{game}", {})
  shape = (10, 10, CHANNELS[game])
  assert env.observation_space.shape == shape and env.observation_space.dtype == np.uint8
  assert env.action_space.n == 6
  assert envs.env_info(f"minatar:{game}", {}) == envs.EnvInfo(shape, "uint8", 6)
  actions = np.random.default_rng(0).integers(6, size=300).tolist()
  first = _play(env, 11, actions)
  assert first[0].dtype == np.uint8 and set(np.unique(first[0])) <= {0, 1}
  env.step(0)  # what the replica played before does not matter after a seeded reset
  assert _same(_play(env, 11, actions), first)
  assert _same(_play(envs.make_env(f"minatar:{game}", {}), 11, actions), first)
  assert not _same(_play(env, 12, actions), first)
  minimal = envs.make_env(f"minatar:{game}", {"use_minimal_action_set": True})
  assert minimal.action_space.n == MINIMAL_ACTIONS[game]


@pytest.mark.parametrize("game", sorted(GAMES))
def test_steps_are_minatars_own_environment(game):
  """The same observations, rewards and ends as `minatar.Environment` (sticky actions 0.1,
  difficulty ramping) seeded alike; our env clears the previous action at every reset."""
  minatar = pytest.importorskip("minatar", reason="installed by .ci/setup.sh")
  ours = envs.make_env(f"minatar:{game}", {})
  ref = minatar.Environment(GAMES[game])
  ref.seed(5)
  ref.reset()
  obs, _ = ours.reset(seed=5)
  assert np.array_equal(obs, ref.state())
  rng = np.random.default_rng(1)
  episodes = 0
  for _ in range(2600):
    a = int(rng.integers(6))
    obs, r, terminated, _, info = ours.step(a)
    ref_r, ref_terminal = ref.act(a)
    assert np.array_equal(obs, ref.state()) and (r, terminated) == (ref_r, ref_terminal)
    if terminated:
      episodes += 1
      assert "episode_return" in info
      ours.reset()
      ref.reset()
      ref.last_action = 0
  assert episodes >= (1 if game == "Freeway" else 3)  # Freeway's games last 2,500 steps


def test_defaults_and_env_kwargs():
  env = envs.make_env("minatar:Breakout", {}).unwrapped
  assert (env.sticky_action_prob, env.difficulty_ramping) == (0.1, True)
  env = envs.make_env("minatar:SpaceInvaders", {"sticky_action_prob": 0.0,
                                                "difficulty_ramping": False}).unwrapped
  assert (env.sticky_action_prob, env.difficulty_ramping) == (0.0, False)
  capped = envs.make_env("minatar:Freeway", {"max_episode_steps": 7})
  capped.reset(seed=0)
  ends = [capped.step(0)[2:4] for _ in range(7)]
  assert ends[-1] == (False, True) and not any(any(e) for e in ends[:-1])


def test_unknown_game_or_kwarg_is_one_line_naming_what_exists():
  with pytest.raises(ConfigError, match=r"^unknown env 'minatar:Pong': MinAtar's games are "
                     r"minatar:Asterix, minatar:Breakout, minatar:Freeway, minatar:Seaquest, "
                     r"minatar:SpaceInvaders$"):
    envs.make_env("minatar:Pong", {})
  with pytest.raises(ConfigError, match=r"^unknown minatar env_kwargs \['sticky'\]; allowed: "):
    envs.make_env("minatar:Breakout", {"sticky": True})
  with pytest.raises(ConfigError, match=r"minatar:<Game>, vstep$"):
    envs.make_env("NoSuchEnv-v0", {})


def test_raw_episode_records():
  env = envs.make_env("minatar:Breakout", {})
  env.reset(seed=0)
  rng = np.random.default_rng(0)
  total, steps, records = 0.0, 0, []
  while len(records) < 5:
    _, r, terminated, _, info = env.step(int(rng.integers(6)))
    total, steps = total + r, steps + 1
    if terminated:
      records.append((info["episode_return"], info["episode_length"]))
      assert records[-1] == (total, steps)
      total, steps = 0.0, 0
      env.reset()


@pytest.mark.parametrize("game", ["Breakout", "Seaquest"])
def test_env_state_pickles_bit_exact(game):
  """Checkpoints pickle env replicas: a game continues bit for bit (its RandomState, which also
  draws the sticky actions, and the previous action included), across episodes."""
  env = envs.make_env(f"minatar:{game}", {})
  env.reset(seed=3)
  rng = np.random.default_rng(0)
  for _ in range(7):
    env.step(int(rng.integers(6)))
  copy = pickle.loads(pickle.dumps(env))
  actions = rng.integers(6, size=1500).tolist()
  ends = 0
  for a in actions:
    o1, r1, te1, tr1, i1 = env.step(a)
    o2, r2, te2, tr2, i2 = copy.step(a)
    assert np.array_equal(o1, o2) and (r1, te1, tr1, i1) == (r2, te2, tr2, i2)
    if te1:
      ends += 1
      assert np.array_equal(env.reset()[0], copy.reset()[0])
  assert ends >= 2


def test_render_colours_each_channel_ten_times_larger_at_20_fps():
  env = video.make_recording_env("minatar:Breakout", {})
  assert video.fps("minatar:Breakout", env) == 20.0  # MinAtar's display: 50 ms a frame
  obs, _ = env.reset(seed=0)
  frame = env.render()
  assert frame.shape == (100, 100, 3) and frame.dtype == np.uint8
  cells = frame[::10, ::10]
  assert np.array_equal(np.repeat(np.repeat(cells, 10, 0), 10, 1), frame)
  assert np.array_equal(cells.any(-1), obs.any(-1))  # black where no channel is set
  bricks = obs[..., 3].astype(bool) & ~obs[..., :3].any(-1)
  assert len({tuple(c) for c in cells[bricks]}) == 1  # one colour per channel


def test_network_reads_channels_as_zero_one():
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  assert choices.family_of("minatar:Breakout").network == "minatar"
  assert networks.default_network_for((10, 10, 4)) == "mlp"  # other envs as before
  net = networks.make_network("minatar", 6)
  params = networks.init_params(net, jax.random.PRNGKey(0), (10, 10, 4), "uint8")
  shapes = jax.tree.map(lambda x: x.shape, params["params"])
  assert shapes["Conv_0"]["kernel"] == (3, 3, 4, 16) and shapes["Dense_0"]["kernel"] == (1024, 128)
  obs = jnp.asarray(np.random.default_rng(0).integers(2, size=(3, 10, 10, 4)), jnp.uint8)
  for a, b in zip(net.apply(params, obs), net.apply(params, obs.astype(jnp.float32))):
    np.testing.assert_array_equal(a, b)  # uint8 0/1 is read as 0/1, not /255
