"""The baselines: synchronous A2C/PPO (lag 0, deterministic) and IMPALA-style async (V-trace,
lag measured and growing with the number of actors)."""

import dataclasses

import pytest

from hts_jax.config import ConfigError, LearnerConfig, RunConfig
from hts_jax.runtime import modes


def cartpole(tmp_path, name, mode, **kw):
  base = dict(env="CartPole-v1", mode=mode, alpha=8, num_envs=8, num_executors=2,
              num_actors=1, total_steps=8 * 8 * 6, seed=4, logdir=str(tmp_path / name),
              eval_episodes=2, log_every_s=1e9, learner=LearnerConfig(algo="a2c", unroll_length=8))
  base.update(kw)
  return modes.run(RunConfig.make(**base))


@pytest.mark.smoke
def test_sync_lag_is_zero_and_runs_are_deterministic(tmp_path):
  a = cartpole(tmp_path, "a", "sync")
  b = cartpole(tmp_path, "b", "sync", num_executors=4, executor_jitter_s=0.002)
  assert a["policy_lag"]["histogram"] == {"0": 6}
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert a["mode"] == "sync" and a["correction"] == "none" and a["updates"] == 6
  c = cartpole(tmp_path, "c", "sync", seed=5)
  assert c["param_sha256"] != a["param_sha256"]


def test_sync_ppo_runs(tmp_path):
  s = cartpole(tmp_path, "ppo", "sync",
               learner=LearnerConfig(algo="ppo", num_minibatches=2, ppo_epochs=2))
  assert s["updates"] == 6 and s["policy_lag"]["max"] == 0


def test_sync_acting_one_update_behind_is_hts_without_a_correction_bit_for_bit(tmp_path):
  """HTS's runtime adds its one-update lag and nothing else: sync PPO whose rollout acts with the
  params before the last update (`--lagged_acting`) gives HTS-PPO's `--correction=none` run, the
  same param_sha256 and returns and the same lag histogram (0 for the first segment, then 1),
  with sync's lockstep loop and batch-of-all-envs policy calls against HTS's actors on ready
  blocks; plain sync PPO differs."""
  ppo = LearnerConfig(algo="ppo", num_minibatches=2, ppo_epochs=2, correction="none")
  every = dict(eval_every=8 * 8 * 2)  # evaluations at boundaries, of the params published there
  hts = cartpole(tmp_path, "hts", "hts", learner=ppo, **every)
  lagged = cartpole(tmp_path, "lagged", "sync", lagged_acting=True, num_executors=4,
                    learner=dataclasses.replace(ppo, correction="delayed"), **every)
  assert lagged["param_sha256"] == hts["param_sha256"]
  assert lagged["episode_returns"] == hts["episode_returns"]
  scored = lambda s: [(e["env_steps"], e["returns"]) for e in s["eval"]]  # not their timings
  assert len(hts["eval"]) == 3 and scored(lagged) == scored(hts)
  assert lagged["policy_lag"]["histogram"] == hts["policy_lag"]["histogram"] == {"0": 1, "1": 5}
  plain = cartpole(tmp_path, "plain", "sync", learner=ppo, **every)
  assert plain["param_sha256"] != hts["param_sha256"]
  assert scored(plain)[:2] != scored(hts)[:2]
  with pytest.raises(ConfigError, match="--lagged_acting is an option of --mode=sync"):
    cartpole(tmp_path, "bad", "hts", lagged_acting=True)
  with pytest.raises(ConfigError, match="^--lagged_acting learns as HTS's --correction=none"):
    cartpole(tmp_path, "bad2", "sync", lagged_acting=True,
             learner=dataclasses.replace(ppo, correction="behaviour"))


def test_async_lag_grows_with_the_number_of_actors(tmp_path):
  """Slow learner (0.1 s/update), one unroll per update, as IMPALA's fixed learner batch: the
  more actors, the staler the unrolls the learner consumes (paper Claim 2)."""
  lags = {}
  for actors in (1, 2, 4):
    s = cartpole(tmp_path, f"async{actors}", "async", num_actors=actors, num_executors=4,
                 async_batch_unrolls=1, learner_delay_s=0.1, total_steps=8 * 8 * 4)
    assert s["mode"] == "async" and s["correction"] == "vtrace"
    lags[actors] = s["policy_lag"]["mean"]
    assert len(s["policy_lag"]["per_update"]) == s["updates"]
    queued = s["policy_lag"]["queued"]  # the part of the lag spent waiting in the queue
    assert 0 <= queued["min"] and queued["mean"] <= s["policy_lag"]["mean"]
    assert queued["max"] <= actors  # at most one unroll per actor waits
  assert lags[1] < lags[2] < lags[4], lags
  assert lags[4] >= 2.0, lags


def test_async_books_every_executor_report(tmp_path):
  """IMPALA's actors hand their executors' Done reports to the learner's queue and the loop books
  them like every mode (`record_rollout`): the executors' idle seconds were 0 (only the episode
  returns were kept)."""
  s = cartpole(tmp_path, "books", "async", num_actors=2, total_steps=8 * 8 * 8)
  assert s["idle"]["executors_waiting_for_actions"] > 0, s["idle"]
  assert s["idle"]["executors"] > 0, s["idle"]


def test_async_configuration_errors(tmp_path):
  with pytest.raises(ConfigError, match="use --algo=a2c"):
    RunConfig.make(mode="async", learner=LearnerConfig(algo="ppo", num_minibatches=1), alpha=4)
  with pytest.raises(ConfigError, match="applies to --mode=hts"):
    RunConfig.make(mode="sync", learner=LearnerConfig(correction="truncated_is"))
  with pytest.raises(ConfigError, match="does not checkpoint"):
    modes.make_runner(RunConfig.make(mode="async", checkpoint_every=2, logdir=str(tmp_path)))
