"""The HTS runtime: full determinism, policy lag exactly 1, real concurrency, the summary contract."""

import functools
import json
import os

import pytest

from hts_jax.analysis import metrics
from hts_jax.config import LearnerConfig, RunConfig
from hts_jax.runtime import host, modes
from tests.support.runs import small_config

SUMMARY_KEYS = {"env_steps", "updates", "wall_time_s", "sps", "mode", "algo", "env", "alpha",
                "num_actors", "num_executors", "num_envs", "seed", "param_sha256",
                "episode_returns", "eval", "policy_lag", "idle"}


RUN = dict(env="CartPole-v1", alpha=16, num_envs=8, num_executors=2, num_actors=1,
           total_steps=8 * 16 * 6, seed=3, eval_episodes=2,
           learner=LearnerConfig(algo="ppo", num_minibatches=4, ppo_epochs=2,
                                 optimizer="adam", learning_rate=1e-3))
_cfg = functools.partial(small_config, base=RUN)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  return modes.run(_cfg(tmp_path_factory.mktemp("ref"), "ref"))


@pytest.mark.smoke
@pytest.mark.parametrize("actors,executors", [(1, 1), (2, 2), (4, 4), (1, 4)])
def test_same_seed_same_bits_for_any_actor_and_executor_count(tmp_path, reference, actors,
                                                               executors):
  # Random (unseeded) step-time jitter reorders everything the actors and executors do.
  s = modes.run(_cfg(tmp_path, "run", num_actors=actors, num_executors=executors,
                           executor_jitter_s=0.002))
  assert s["param_sha256"] == reference["param_sha256"]
  assert s["episode_returns"] == reference["episode_returns"]
  assert s["eval"][-1]["mean_return"] == reference["eval"][-1]["mean_return"]
  assert sum(len(r) for r in s["episode_returns"]) > 0


@pytest.mark.parametrize("actors,executors,blocks", [(2, 2, 4), (1, 1, 3)])
def test_executor_blocks_change_no_bit(tmp_path, reference, actors, executors, blocks):
  """--executor_blocks splits each executor's envs into smaller blocks (4 of 1 env; 3, 3 and 2 of
  8 envs) that the actors pack into calls of the same fixed shape (actor_batch's 4 envs): an
  executor steps one block while another's actions are computed, and the run is the same."""
  s = modes.run(_cfg(tmp_path, "run", num_actors=actors, num_executors=executors,
                     executor_blocks=blocks, executor_jitter_s=0.002))
  assert s["param_sha256"] == reference["param_sha256"]
  assert s["episode_returns"] == reference["episode_returns"]
  with pytest.raises(ValueError, match="executor_blocks must be in \\[1, envs per executor=4\\]"):
    _cfg(tmp_path, "bad", executor_blocks=5)
  with pytest.raises(ValueError, match="--executor_blocks is for executor processes"):
    _cfg(tmp_path, "bad", mode="sync", alternating_groups=True, executor_blocks=2)


def test_executor_blocks_change_no_bit_in_sync_mode(tmp_path):
  """Synchronous A2C/PPO steps every block and makes one call for all rows: the blocks change
  nothing either."""
  runs = [modes.run(_cfg(tmp_path, f"sync{k}", mode="sync", num_executors=2, executor_blocks=k))
          for k in (1, 4)]
  assert runs[0]["param_sha256"] == runs[1]["param_sha256"]
  assert runs[0]["episode_returns"] == runs[1]["episode_returns"]


@pytest.mark.parametrize("correction", ["behaviour", "decoupled"])
def test_lagged_ppo_corrections_are_deterministic_for_any_actor_count_and_resume_bit_exactly(
    tmp_path, reference, correction):
  """--correction=behaviour (PPO's ratio, old values and GAE at θ_{j-1}) and decoupled (the weights
  min(c̄, p/μ) with μ = π_{θ_{j-1}}), both recomputed by the learner from the θ_{j-1} it keeps,
  keep the contract: one hash for (1 actor, 2 executors) and (3 actors, 4 executors) under
  jitter, a bit-exact resume, and a different run from the delayed gradient's."""
  ppo = LearnerConfig(algo="ppo", num_minibatches=4, ppo_epochs=2, optimizer="adam",
                      learning_rate=1e-3, correction=correction)
  runs = [modes.run(_cfg(tmp_path, f"b{a}{e}", num_actors=a, num_executors=e,
                                 executor_jitter_s=0.002, learner=ppo))
          for a, e in [(1, 2), (3, 4)]]
  assert runs[0]["param_sha256"] == runs[1]["param_sha256"]
  assert runs[0]["episode_returns"] == runs[1]["episode_returns"]
  assert runs[0]["correction"] == correction
  assert runs[0]["param_sha256"] != reference["param_sha256"]  # the delayed gradient's run
  modes.run(_cfg(tmp_path, "split", learner=ppo, total_steps=8 * 16 * 4,
                         checkpoint_every=2))
  resumed = modes.run(_cfg(tmp_path, "split", learner=ppo), resume=True)
  assert resumed["param_sha256"] == runs[0]["param_sha256"]
  assert resumed["episode_returns"] == runs[0]["episode_returns"]
  # Its host block lists the first session's host too (a wall time summed over both).
  first, = resumed["host"]["earlier_sessions"]
  assert first["cpu_model"] == resumed["host"]["cpu_model"] and "calibration" in first
  assert resumed["host"]["calibration_end"]["total_ms"] > 0  # timed again at this session's end
  assert "cpu_times_start" in first and 0 <= (resumed["host"]["cpu_steal_share"] or 0) <= 1
  # The first session's steal counts up to the checkpoint this one resumed from.
  assert first["cpu_times_saved"]["total"] >= first["cpu_times_start"]["total"]
  assert metrics.host_kind(resumed["host"]) == metrics.host_kind(first)
  assert metrics.host_kind(dict(resumed["host"], cpu_model="other")).startswith("mixed (")
  # Each session records the code it ran: this clone's commit.
  assert first["code"] == resumed["host"]["code"] == host.code()
  assert resumed["host"]["code"]["commit"] == host._git("rev-parse", "HEAD")


@pytest.mark.smoke
def test_vectorised_cartpole_blocks_change_no_bit(tmp_path, reference):
  """The reference steps CartPole blocks in one tight loop; stepping every gymnasium replica in
  turn (and in smaller blocks) gives the same run."""
  s = modes.run(_cfg(tmp_path, "plain", num_executors=4, vector_envs=False))
  assert s["param_sha256"] == reference["param_sha256"]
  assert s["episode_returns"] == reference["episode_returns"]


def test_data_parallel_runtime_is_deterministic_too(tmp_path):
  """Learner and actors over 2 (forced CPU) devices: one hash for any actor/executor count."""
  runs = [modes.run(_cfg(tmp_path, f"dp{a}", num_actors=a, num_executors=e,
                               learner_devices=(0, 1), actor_devices=(0, 1),
                               executor_jitter_s=0.002))
          for a, e in [(1, 1), (3, 4)]]
  assert runs[0]["param_sha256"] == runs[1]["param_sha256"]
  assert runs[0]["episode_returns"] == runs[1]["episode_returns"]


@pytest.mark.smoke
def test_different_seed_different_bits(tmp_path, reference):
  s = modes.run(_cfg(tmp_path, "seed", seed=4))
  assert s["param_sha256"] != reference["param_sha256"]
  assert s["episode_returns"] != reference["episode_returns"]


@pytest.mark.smoke
def test_evaluation_does_not_perturb_training(tmp_path, reference):
  s = modes.run(_cfg(tmp_path, "eval", eval_every=8 * 16 * 2))
  assert s["param_sha256"] == reference["param_sha256"]
  assert [e["env_steps"] for e in s["eval"]] == [256, 512, 768]
  # Each evaluation's cost is recorded, and summed into timing.
  assert all(e["eval_s"] > 0 and e["eval_cpu_s"] > 0 for e in s["eval"])
  assert s["timing"]["eval_s"] == pytest.approx(sum(e["eval_s"] for e in s["eval"]))
  assert s["timing"]["eval_cpu_s"] == pytest.approx(sum(e["eval_cpu_s"] for e in s["eval"]))


@pytest.mark.smoke
def test_lag_is_exactly_one_after_the_first_segment(reference):
  lag = reference["policy_lag"]
  assert lag["per_update"][0] == 0  # segment 0 is collected by θ_0 and learned at θ_0
  assert lag["per_update"][1:] == [1] * (reference["updates"] - 1)
  assert lag["histogram"] == {"0": 1, "1": reference["updates"] - 1}


@pytest.mark.smoke
def test_summary_and_metrics_contract(reference, tmp_path):
  assert SUMMARY_KEYS <= set(reference)
  assert reference["env_steps"] == 8 * 16 * 6 and reference["updates"] == 6
  assert len(reference["episode_returns"]) == 8
  assert set(reference["idle"]) >= {"executors", "actors", "learner"}
  assert len(reference["param_sha256"]) == 64
  logdir = reference["config"]["logdir"]
  with open(os.path.join(logdir, "summary.json")) as f:
    assert json.load(f)["param_sha256"] == reference["param_sha256"]
  with open(os.path.join(logdir, "metrics.csv")) as f:
    rows = f.read().strip().splitlines()
  header = rows[0].split(",")
  assert {"env_steps", "wall_time_s", "sps", "loss", "lag", "train_return"} <= set(header)
  assert len(rows) == 1 + 6


@pytest.mark.smoke
def test_learning_runs_concurrently_with_rollout(tmp_path):
  """With a slow learner (0.3 s/update) and slow envs (~0.3 s of rollout per segment), the wall
  time is close to max(rollout, learning) per segment, not their sum. The sleeps are long against
  the per-step hand-offs and the 50 ms polls, so a loaded machine's scheduling delays stay a small
  part of the learner's idle time."""
  segs = 8
  cfg = _cfg(tmp_path, "overlap", alpha=10, num_envs=2, num_executors=2,
                     total_steps=2 * 10 * segs, executor_delay_s=0.03, learner_delay_s=0.3,
                     learner=LearnerConfig(algo="a2c", unroll_length=10))
  s = modes.run(cfg)
  rollout, learn = s["timing"]["rollout_s"], s["timing"]["learn_s"]
  assert learn >= 0.3 * segs and rollout >= 0.28 * segs  # both really were slow
  # Alternating rollout and learning (synchronous A2C) takes rollout + learn. Overlapped, it takes
  # about max(rollout, learn) plus one segment of the other: (segs + 1) / (2 segs) ~ 0.56 of it.
  assert s["wall_time_s"] < 0.8 * (rollout + learn), (s["wall_time_s"], rollout, learn)
  assert s["wall_time_s"] >= max(rollout, learn)
  # The learner waited for data only a little (its wait for segment 0 is not counted).
  assert s["idle"]["learner"] < 0.5 * learn


@pytest.mark.smoke
def test_unknown_env_is_a_config_error(tmp_path):
  from hts_jax.config import ConfigError
  with pytest.raises(ConfigError, match="unknown env"):
    modes.run(_cfg(tmp_path, "bad", env="NoSuchEnv-v0"))


def test_evaluations_score_the_params_of_their_boundary_whatever_the_timing(tmp_path):
  """Defect: the evaluator read the learner's params after the update was queued, so an evaluation
  scored θ_j or θ_{j+1} depending on thread timing. Now it scores the params published at its
  boundary: a slow learner changes no evaluation."""
  runs = [modes.run(_cfg(tmp_path, f"ev{d}", eval_every=8 * 16, learner_delay_s=d))
          for d in (0.0, 0.3)]
  assert [e["returns"] for e in runs[0]["eval"]] == [e["returns"] for e in runs[1]["eval"]]
  assert len(runs[0]["eval"]) == 6
  assert runs[0]["param_sha256"] == runs[1]["param_sha256"]


def test_stop_at_return_stops_at_the_same_segment_whatever_the_timing(tmp_path):
  """Defect: --stop_at_return read evaluation results as they arrived. Now the evaluation submitted
  at boundary k is judged at boundary k + 1, so the stopping segment is fixed."""
  kw = dict(eval_every=8 * 16, stop_at_return=0.0, total_steps=8 * 16 * 20)
  fast = modes.run(_cfg(tmp_path, "fast", **kw))
  slow = modes.run(_cfg(tmp_path, "slow", learner_delay_s=0.2, executor_jitter_s=0.002,
                                **kw))
  # Evaluations at boundaries 0..9 (submitted), the first full window of 10 judged (reached) at
  # boundary 10: segments 0 to 10.
  assert fast["updates"] == slow["updates"] == 11
  assert fast["param_sha256"] == slow["param_sha256"]


def test_decorrelation_is_keyed_by_env_and_deterministic(tmp_path):
  def run(executors, decorrelate):
    cfg = RunConfig.make(env="CartPole-v1", alpha=8, num_envs=4, num_executors=executors,
                    total_steps=4 * 8 * 3, logdir=str(tmp_path / f"{executors}{decorrelate}"),
                    log_every_s=1e9, eval_episodes=1, decorrelate_steps=decorrelate,
                    learner=LearnerConfig(algo="a2c", unroll_length=8))
    return modes.run(cfg)
  a, b, plain = run(1, 30), run(4, 30), run(2, 0)
  assert a["param_sha256"] == b["param_sha256"]
  assert a["param_sha256"] != plain["param_sha256"]


def test_bootstrap_truncation_end_to_end_is_deterministic(tmp_path):
  """`--bootstrap_truncation` through the runtime (executors record `truncated` and `final_obs`):
  one `param_sha256` for any executor/actor count, another than the terminal treatment's."""
  from hts_jax.config import RunConfig
  from hts_jax.runtime import modes

  def run(name, bootstrap, executors, actors, mode="hts"):
    return modes.run(RunConfig.make(
        env="CartPole-v1", env_kwargs={"max_episode_steps": 20}, mode=mode, alpha=5, num_envs=4,
        num_executors=executors, num_actors=actors, actor_batch=2, total_steps=4 * 5 * 12,
        seed=3, logdir=str(tmp_path / name), log_every_s=1e9, eval_episodes=1,
        learner=LearnerConfig(unroll_length=5, bootstrap_truncation=bootstrap)))

  a, b = run("a", True, 1, 1), run("b", True, 4, 2)
  plain = run("plain", False, 1, 1)
  assert a["param_sha256"] == b["param_sha256"] != plain["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert run("sync", True, 2, 1, mode="sync")["updates"] == 12
