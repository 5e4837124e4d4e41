"""The planner's model (`hts_jax.analysis.planner`) by golden values, and `hts-plan` as a user runs
it: from a stage file, from a probe of a real CartPole run, and its one-line errors."""

import json
import re
import subprocess
import sys

import pytest

from hts_jax.analysis import planner
from tests.support import ROOT

# Per segment of 1,000 env steps: HTS's rollout 1 s, sync's 2 s, the update 0.5 s alone, 0.1 s
# of boundary; beside each other the rollout takes 1.2 s and the update 0.8 s.
STAGES = planner.Stages(steps_per_segment=1000, rollout_hts_s=1.0, rollout_sync_s=2.0,
                        update_s=0.5, rollout_cpu_s=1.5, update_cpu_s=0.5, cores=2,
                        boundary_s=0.1, env_hts_s=1.6, env_sync_s=1.6, executors=2,
                        rollout_beside_s=1.2, update_beside_s=0.8)


def test_the_three_schedules_by_golden_values():
  sps = STAGES.sps()  # steady state
  assert sps["sync"] == pytest.approx(1000 / 2.6)      # R_s + U + b
  assert sps["lag_0"] == pytest.approx(1000 / 1.6)     # R_h + U + b
  assert sps["lag_1"] == pytest.approx(1000 / 1.3)     # max(R_h', U') + b
  # Over 4 segments lag 1's first rollout and last update run alone: (1 + 3 x 1.2 + 0.5) / 4 + b.
  assert STAGES.segment_s("lag_1", 4) == pytest.approx(5.1 / 4 + 0.1)
  assert STAGES.segment_s("lag_0", 4) == STAGES.segment_s("lag_0")
  assert STAGES.bound("lag_1") == "rollout" and STAGES.bound("sync") == "rollout"
  assert STAGES.learner_share("lag_1") == pytest.approx(0.8 / 1.3)
  # Unmeasured beside each other: the CPU both need over the cores, (1.5 + 0.5) / 2 = 1.0.
  roofline = planner.Stages(**dict(STAGES.to_json(), rollout_beside_s=0.0, update_beside_s=0.0,
                                   rollout_cpu_s=3.5))
  assert roofline.segment_s("lag_1") == pytest.approx(2.0 + 0.1)
  assert roofline.bound("lag_1") == "cores"
  with pytest.raises(ValueError, match="mode must be one of"):
    STAGES.segment_s("async")


def test_a_runs_first_segment_is_paid_once():
  """The first segment's excess over the median segment, from metrics.csv's clock; a run of n
  segments pays it once (sync its own, both lags HTS's), steady state never; the probe's rollout
  means leave it out."""
  # Segments of 1 s after a first one of 1.5 s (and one slow one: the median is not moved by it).
  assert planner.first_segment_excess_s([1.5, 2.5, 3.5, 5.5, 6.5]) == pytest.approx(0.5)
  assert planner.first_segment_excess_s([0.5, 1.5, 2.5]) == 0.0  # a fast first one: none
  assert planner.first_segment_excess_s([1.5, 2.5]) == 0.0  # too few to tell
  started = planner.Stages(**dict(STAGES.to_json(), start_hts_s=0.4, start_sync_s=0.8))
  assert started.segment_s("sync", 4) == pytest.approx(2.6 + 0.8 / 4)
  assert started.segment_s("lag_0", 4) == pytest.approx(1.6 + 0.4 / 4)
  assert started.segment_s("lag_1", 4) == pytest.approx(5.1 / 4 + 0.1 + 0.4 / 4)
  assert started.sps() == STAGES.sps()
  run = lambda rollout_s, excess: {"updates": 4, "alpha": 10, "num_envs": 100, "num_executors": 2,
                                   "wall_time_s": rollout_s + 2.4, "first_segment_excess_s": excess,
                                   "timing": {"rollout_s": rollout_s, "learn_s": 2.0,
                                              "learn_cpu_s": 2.0, "rollout_cpu_s": 6.0,
                                              "env_busy_s": 6.4}}
  stages = planner.stages_of(run(4.4, 0.4), run(8.8, 0.8), cores=2)
  assert stages.rollout_hts_s == pytest.approx(1.0) and stages.rollout_sync_s == pytest.approx(2.0)
  assert stages.segment_s("lag_0", 4) * 4 == pytest.approx(4.4 + 2.0 + 0.4)  # the run, back


def test_other_machines_to_first_order():
  """A learner 10x faster divides U and the slowdowns; envs 2x faster halve each executor's
  stepping share (0.8 s of each rollout); 4 cores halve the CPU-bound share of the rollout."""
  fast = STAGES.scaled(learner_speedup=10)
  assert fast.update_s == pytest.approx(0.05) and fast.update_beside_s == pytest.approx(0.08)
  assert fast.rollout_beside_s == pytest.approx(1.02)
  envs = STAGES.scaled(env_speedup=2)
  assert envs.rollout_hts_s == pytest.approx(0.6) and envs.rollout_sync_s == pytest.approx(1.6)
  assert envs.rollout_cpu_s == pytest.approx(0.7)
  cores = STAGES.scaled(cores=4)
  q = 1.5 / (2 * 1.0)  # the rollout's CPU-bound share on 2 cores
  assert cores.rollout_hts_s == pytest.approx((1 - q) + q * 0.5)
  assert cores.rollout_beside_s == pytest.approx(cores.rollout_hts_s + 0.2 * 0.5)
  assert STAGES.scaled().sps() == STAGES.sps()  # nothing scaled, nothing moves


def test_recommendation_weighs_lag_1s_sample_cost():
  sps = {"sync": 100.0, "lag_0": 120.0, "lag_1": 130.0}
  assert planner.recommend(sps, None)["policy_lag"] == 1  # faster, no measured cost
  slower = planner.recommend(sps, 1.2)  # lag 1 needs 1.2x the env steps
  assert slower["policy_lag"] == 0 and slower["lag_1_time_over_lag_0"] == pytest.approx(
      120 / 130 * 1.2)
  times = planner.time_to_target(sps, 1000.0, 1.2)
  assert times == pytest.approx({"sync": 10.0, "lag_0": 1000 / 120, "lag_1": 1200 / 130})


def test_lag_1s_sample_cost_comes_from_the_grids_headline():
  from hts_jax.cli import plan  # pylint: disable=import-outside-toplevel
  close = plan.family_sample_cost("gfootball:academy_empty_goal_close")
  assert close["grid"] == "gfootball" and close["target"] == "0.8" and close["blocks"] >= 3
  assert 0.5 < close["sync_over_hts_steps"] < 2
  assert plan.family_sample_cost("CartPole-v1") is None


def _plan(*flags):
  return subprocess.run([sys.executable, "-m", "experiments.plan", *flags], cwd=ROOT,
                        capture_output=True, text=True, timeout=600)


def test_hts_plan_from_a_stage_file_and_its_errors(tmp_path):
  path = tmp_path / "stages.json"
  path.write_text(json.dumps(STAGES.to_json()))
  out = _plan(f"--stages={path}", "--json", "--env=CartPole-v1", "--total_steps=4000",
              "--alpha=125", "--num_envs=8", "--num_executors=2")
  assert out.returncode == 0, out.stderr[-2000:]
  got = json.loads(out.stdout)
  assert got["segments"] == 4
  assert got["predicted_sps"]["lag_1"] == pytest.approx(1000 / (5.1 / 4 + 0.1))
  assert got["recommendation"]["policy_lag"] == 1 and "SPS only" in got["recommendation"]["basis"]
  steps = tmp_path / "steps.txt"
  steps.write_text("0.0004\n0.0004\n")  # the stages' steps take 1.6 s / 1000 = 1.6 ms: 4x faster
  out = _plan(f"--stages={path}", "--json", f"--plan_step_times={steps}")
  assert out.returncode == 0, out.stderr[-2000:]
  assert json.loads(out.stdout)["planned_stages"]["rollout_hts_s"] == pytest.approx(
      1.0 - 0.8 * (1 - 1 / 4))
  for flags, message in [((f"--stages={tmp_path / 'none.json'}",), "--stages: cannot read"),
                         ((f"--stages={path}", f"--plan_step_times={path}"),
                          "--plan_step_times: .* holds no list of seconds"),
                         (("--mode=async",), "hts-plan compares --mode=hts and --mode=sync")]:
    out = _plan(*flags)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("error: ") and re.search(message, out.stderr)


def test_hts_plan_probes_a_real_run(tmp_path):
  """A short probe of CartPole A2C: lag 0 and sync give one hash (the identity), lag 1 another;
  the predictions are positive and the text names a recommended lag."""
  out = _plan("--preset=cartpole_a2c", "--probe_s=2", "--probe_segments=4", "--json")
  assert out.returncode == 0, out.stderr[-2000:]
  got = json.loads(out.stdout)
  measured = got["probe"]["measured"]
  assert measured["lag_0"]["param_sha256"] == measured["sync"]["param_sha256"]
  assert measured["lag_1"]["param_sha256"] != measured["sync"]["param_sha256"]
  assert all(v > 0 for v in got["predicted_sps"].values())
  assert got["stages"]["update_s"] > 0 and got["stages"]["rollout_beside_s"] > 0
  text = _plan("--preset=cartpole_a2c", "--probe_s=2", "--probe_segments=4",
               "--noprobe_lag_1").stdout
  assert "recommended: --policy_lag=" in text and "HTS --policy_lag=0" in text
