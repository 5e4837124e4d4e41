"""End-to-end learning through the launcher: HTS-A2C and HTS-PPO solve CartPole-v1.

Budgets (env steps; deterministic runs, seed 0): PPO reaches a mean evaluation return >= 475
within 100k steps, A2C within 200k (measured on the 2-core CPU: ~15 s and ~25 s of training).
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train(logdir, *flags):
  cmd = [sys.executable, "-m", "experiments.train", f"--logdir={logdir}", "--log_every_s=1000",
         *flags]
  proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stderr[-2000:]
  with open(os.path.join(logdir, "summary.json")) as f:
    return json.load(f), proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("preset,budget,every", [("cartpole_ppo", 100_000, 12_500),
                                                 ("cartpole_a2c", 200_000, 25_000)])
def test_hts_solves_cartpole(tmp_path, preset, budget, every):
  summary, stdout = train(str(tmp_path), f"--preset={preset}", f"--total_steps={budget}",
                          f"--eval_every={every}")
  returns = [e["mean_return"] for e in summary["eval"]]
  assert max(returns) >= 475, returns
  assert summary["env_steps"] <= budget + summary["alpha"] * summary["num_envs"]
  assert summary["policy_lag"]["max"] == 1
  assert "done:" in stdout
