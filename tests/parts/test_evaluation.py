"""Evaluation that never stalls silently: the default protocol per env family (sampled actions on
Atari and GFootball, as the paper and the presets evaluate), a per-episode step budget that cuts
with one line and counts the returns so far, and progress lines during a long evaluation."""

import jax
import jax.numpy as jnp
import pytest

from hts_jax import envs, networks
from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime.outputs import evaluation


def _evaluator(env, episodes, **kw):
  info = envs.env_info(env, {})
  net = networks.make_network("mlp", info.num_actions)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + info.obs_shape, info.obs_dtype))
  return evaluation.Evaluator(env, {}, net.apply, episodes, seed=0, **kw), params


def test_atari_and_gfootball_evaluate_sampled_actions_by_default_the_others_greedy(tmp_path):
  kw = dict(logdir=str(tmp_path), tensorboard=False)
  assert not RunConfig.make(env="atari:Breakout", **kw).evaluates_greedy
  assert not RunConfig.make(env="gfootball:academy_empty_goal_close", **kw).evaluates_greedy
  assert RunConfig.make(env="CartPole-v1", **kw).evaluates_greedy
  assert RunConfig.make(env="atari:Breakout", eval_greedy=True, **kw).evaluates_greedy
  assert not RunConfig.make(env="CartPole-v1", eval_greedy=False, **kw).evaluates_greedy
  with pytest.raises(ConfigError, match="eval_max_steps must be >= 0"):
    RunConfig.make(env="CartPole-v1", eval_max_steps=-1, **kw)


def test_eval_max_steps_cuts_episodes_counts_their_returns_so_far_and_says_so(capsys):
  ev, params = _evaluator("CartPole-v1", 3, max_steps=5)
  ev.submit(1234, 1.0, params)
  ev.close()  # after the evaluation submitted
  result, = ev.results
  # CartPole pays 1 per step and its shortest episode (one push all along) lasts 8 steps.
  assert result["returns"] == [5.0, 5.0, 5.0] and result["cut"] == 3
  assert ("evaluation at 1,234 env steps: cut 3 of 3 episodes at 5 steps (--eval_max_steps; "
          "their returns so far are counted)") in capsys.readouterr().out


def test_an_uncut_evaluation_has_no_cut_entry_and_the_hard_cap_is_named(monkeypatch):
  ev, params = _evaluator("CartPole-v1", 2)
  try:
    returns = ev.evaluate(params)
    assert ev.last_cut == 0 and ev.max_steps == evaluation.MAX_EPISODE_STEPS
  finally:
    ev.close()
  assert all(0 < r <= 500 for r in returns)  # CartPole-v1's own limit ends them
  monkeypatch.setattr(evaluation, "MAX_EPISODE_STEPS", 3)
  ev, params = _evaluator("CartPole-v1", 2)
  try:
    assert ev.evaluate(params) == [3.0, 3.0] and ev.last_cut == 2
    assert ev._cap == "the hard cap"  # pylint: disable=protected-access
  finally:
    ev.close()


def test_a_long_evaluation_prints_progress(monkeypatch, capsys):
  monkeypatch.setattr(evaluation, "PROGRESS_S", 0.0)  # a line at every step
  ev, params = _evaluator("CartPole-v1", 2, max_steps=4)
  try:
    ev.evaluate(params, label="evaluation at 5 env steps")
  finally:
    ev.close()
  lines = [l for l in capsys.readouterr().out.splitlines() if "episodes done" in l]
  assert lines[0].startswith("evaluation at 5 env steps: 0/2 episodes done, 0 steps, ")
  assert lines[-1].startswith("evaluation at 5 env steps: ") and lines[-1].endswith(" s")


def test_each_evaluation_plays_new_episodes_and_one_evaluation_is_reproducible():
  """Evaluation k's episode i is seeded by (run seed, k, i): the same params evaluated at two
  indices play different episodes (sampled actions: both the resets and the action streams
  change), and at one index the same episodes again."""
  ev, params = _evaluator("CartPole-v1", 10, greedy=False)
  try:
    first = ev.evaluate(params, index=0)
    again = ev.evaluate(params, index=0)
    other = ev.evaluate(params, index=1)
  finally:
    ev.close()
  assert first == again
  assert first != other


def test_scheduled_evaluations_take_consecutive_indices():
  """Through the run's schedule (`submit`), evaluation k is index k: two submitted evaluations of
  the same params give the returns of indices 0 and 1."""
  ev, params = _evaluator("CartPole-v1", 10, greedy=False)
  try:
    want = [ev.evaluate(params, index=k) for k in (0, 1)]
    ev.submit(100, 1.0, params)
    ev.submit(200, 2.0, params)
  finally:
    ev.close()
  assert [r["returns"] for r in ev.results] == want
