"""`hts_jax.envs.costs` and `experiments/bench_env_costs.py`: a step's and a reset's cost on a
real env, and the script's JSON (run as a subprocess: the script defines absl flags)."""

import json
import subprocess
import sys

from hts_jax.envs import costs
from tests.support import ROOT


def test_costs_of_steps_and_resets_on_cartpole():
  out = costs.measure("CartPole-v1", {}, 500, 0)
  assert out["steps"] == 500 and out["resets"] >= 5  # a random CartPole episode: ~22 steps
  assert 0 < out["step_ms"]["median"] <= out["step_ms"]["mean"] * 10
  assert out["reset_ms"]["mean"] > 0
  assert out["reset_in_steps"] == out["reset_ms"]["mean"] / out["step_ms"]["mean"]
  assert 10 < out["random_episode_length"] < 60


def test_the_script_saves_its_json_with_provenance(tmp_path):
  path = tmp_path / "env_costs.json"
  proc = subprocess.run([sys.executable, "-m", "experiments.bench_env_costs",
                         "--envs=CartPole-v1", "--steps=100", f"--save={path}"],
                        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
  printed, saved = json.loads(proc.stdout), json.loads(path.read_text())
  assert saved["envs"] == printed["envs"] and saved["benchmark"] == "env_costs"
  assert {"date", "commit", "machine", "command"} <= set(saved)
