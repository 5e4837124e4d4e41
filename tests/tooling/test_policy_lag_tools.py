"""The policy lag's tools: the confirmation driver (a committed run's config as sync and as HTS at
lag 0, one hash) and the planner's check against the committed H100 run."""

import json
import subprocess
import sys

import pytest

from hts_jax.config import LearnerConfig, RunConfig
from hts_jax.runtime import modes
from tests.support import ROOT


def _python(*args, timeout=600):
  return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                        timeout=timeout)


@pytest.mark.slow
def test_confirm_lag0_reruns_a_committed_run_as_sync_and_lag_0_with_one_hash(tmp_path):
  committed = tmp_path / "committed"
  modes.run(RunConfig.make(env="CartPole-v1", mode="sync", alpha=16, num_envs=4, num_executors=2,
                           total_steps=4 * 16 * 4, seed=3, eval_episodes=2, eval_every=4 * 16 * 2,
                           logdir=str(committed), log_every_s=1e9,
                           learner=LearnerConfig(algo="ppo", num_minibatches=2, ppo_epochs=2)))
  out = tmp_path / "confirm"
  got = _python("experiments.confirm_lag0", f"--run={committed}", f"--out={out}")
  assert got.returncode == 0, got.stderr[-2000:]
  row = json.loads((out / "confirmation.json").read_text())
  assert row["same_param_sha256"] and row["same_eval"]
  assert row["sync"]["param_sha256"] == row["lag0"]["param_sha256"] == row[
      "committed_param_sha256"]
  assert row["lag0_time_over_sync"] > 0 and row["commit"]  # provenance-stamped
  bad = _python("experiments.confirm_lag0", f"--run={tmp_path}", f"--out={out}")
  assert bad.returncode == 2
  assert bad.stderr.strip() == f"error: --run: no summary.json in {tmp_path}"


def test_the_planner_composes_the_h100_runs_recorded_stages():
  """Reading 1 of experiments.plan_check_gpu: the H100 pairs' own stage times through the model
  give their measured SPS back (the composition: first rollout and last update alone)."""
  got = _python("experiments.plan_check_gpu", "--noprobe")
  assert got.returncode == 0, got.stderr[-2000:]
  rows = json.loads(got.stdout)["composition"]
  assert [r["case"] for r in rows] == ["atari16.json", "ppo64.json", "ppo256.json"]
  for r in rows:
    for ratio in r["predicted_over_measured"].values():
      assert ratio == pytest.approx(1.0, abs=0.01)
    assert r["predicted_sps"]["lag_0"] > 0
