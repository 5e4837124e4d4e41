"""GALA-A2C, its all-reduce A2C baseline and Stooke & Abbeel's alternating env groups.

The deterministic GALA variant's bits across executor counts and step-time jitter, the
alternating groups' bits against plain sync, no checkpoints in GALA, and (slow) sync with
alternating groups solving CartPole. The gossip algebra's golden values are in
tests/unit/test_gossip.py, GALA-A2C's learning check in tests/learning/test_learning.py.
"""


import pytest

from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime import modes
from tests.support.cli import train


def run(tmp_path, name, **kw):
  cfg = dict(env="CartPole-v1", num_envs=8, num_executors=2, alpha=10, total_steps=2400,
             log_every_s=1000, logdir=str(tmp_path / name))
  cfg.update(kw)
  return modes.run(RunConfig.make(**cfg))


def test_fixed_gossip_gala_is_deterministic(tmp_path):
  """One param_sha256 (the agents' average, and every agent's) whatever the executor count and
  the step-time jitter; the epsilon-ball and staleness are reported."""
  base = dict(mode="gala", gala_agents=2, gala_gossip="fixed", eval_every=1200)
  a = run(tmp_path, "a", **base)
  b = run(tmp_path, "b", num_executors=4, executor_jitter_s=0.0005, **base)
  c = run(tmp_path, "c", num_executors=8, actor_batch=1, **base)
  for other in (b, c):
    assert other["param_sha256"] == a["param_sha256"]
    assert other["gala"]["agent_param_sha256"] == a["gala"]["agent_param_sha256"]
    assert [e["mean_return"] for e in other["eval"]] == [e["mean_return"] for e in a["eval"]]
  g = a["gala"]
  assert g["agent_updates"] == [30, 30] and a["updates"] == 30
  assert g["gossip_staleness"]["histogram"] == {"1": 58}  # every update but the first mixes
  assert g["iterations_without_gossip"] == 2
  assert 0 < g["epsilon_ball"]["mean"] <= g["epsilon_ball"]["max"]
  assert len(g["agent_eval"]) == 2 and a["compiled_during_run"] == []
  assert a["gala"]["agent_param_sha256"][0] != a["gala"]["agent_param_sha256"][1]
  d = run(tmp_path, "d", **dict(base, gala_staleness=0))  # a synchronous ring: other bits
  assert d["param_sha256"] != a["param_sha256"]


def test_async_gala_and_allreduce_run(tmp_path):
  a = run(tmp_path, "gala", mode="gala", gala_agents=2, num_executors=4)
  g = a["gala"]
  assert g["gossip"] == "async" and g["messages_sent"] == 60
  assert sum(g["gossip_staleness"]["histogram"].values()) + g["iterations_without_gossip"] == 60
  assert a["env_steps"] == 2400 and a["compiled_during_run"] == []
  r1 = run(tmp_path, "ar1", mode="allreduce", gala_agents=2)
  r2 = run(tmp_path, "ar2", mode="allreduce", gala_agents=2, num_executors=4,
           executor_jitter_s=0.0005)
  assert r1["param_sha256"] == r2["param_sha256"]
  assert r1["updates"] == 30 and r1["policy_lag"]["max"] == 0


def test_alternating_groups_give_plain_syncs_bits(tmp_path):
  a = run(tmp_path, "sync", mode="sync")
  b = run(tmp_path, "alt", mode="sync", alternating_groups=True, executor_jitter_s=0.0005)
  c = run(tmp_path, "alt4", mode="sync", alternating_groups=True, num_executors=4)
  assert a["param_sha256"] == b["param_sha256"] == c["param_sha256"]
  assert b["efficiency"]["actor_calls"] == 2 * a["efficiency"]["actor_calls"]


def test_gala_does_not_checkpoint(tmp_path):
  with pytest.raises(ConfigError, match="does not checkpoint"):
    modes.make_runner(RunConfig.make(mode="gala", num_envs=8, checkpoint_every=5,
                                logdir=str(tmp_path)))


def test_alternating_groups_learn_as_plain_sync(tmp_path):
  """The same learning run with and without alternation: the same bits, and it solves CartPole
  (measured: 489 at 100k steps)."""
  common = ["--preset=cartpole_a2c", "--mode=sync", "--total_steps=150000", "--eval_every=25000"]
  plain, _ = train(str(tmp_path / "plain"), *common)
  alt, _ = train(str(tmp_path / "alt"), *common, "--alternating_groups")
  assert alt["param_sha256"] == plain["param_sha256"]
  assert max(e["mean_return"] for e in alt["eval"]) >= 475
