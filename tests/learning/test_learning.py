"""End-to-end learning on CartPole-v1 through the launcher: HTS-A2C and HTS-PPO, the sync and
async baselines, GALA-A2C.

Budgets (env steps; deterministic runs, seed 0): PPO reaches a mean evaluation return >= 475
within 100k steps, A2C within 200k (measured on the 2-core CPU: ~15 s and ~25 s of training).
"""

import pytest

from tests.support.cli import train


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


@pytest.mark.slow
@pytest.mark.parametrize("mode,budget", [("sync", 200_000), ("async", 300_000)])
def test_baselines_solve_cartpole(tmp_path, mode, budget):
  """Budgets (env steps): sync A2C 200k, async V-trace A2C 300k (the cartpole_a2c preset, a
  constant learning rate). Sync is deterministic: one run, one outcome. Async is not: its lags
  follow the machine's timing, and with this small batch (2 unrolls of 8 envs x 5 steps) some
  runs stall with a stochastic policy at evaluation returns of 150-380 for the whole budget. On
  this 2-core machine (2026-11-25, 400k steps): 0 of 25 runs stalled alone or beside busy loops,
  1 of 8 beside the fast test lane, 1 of 2 inside the full suite (and one 300k CI run). So async
  gets up to three seeds and one of them must reach CartPole's 475, which a stalled run does not;
  a broken V-trace or async data path reaches it with none."""
  curves = []
  for seed in (0, 1, 2) if mode == "async" else (0,):
    s, _ = train(str(tmp_path / f"seed{seed}"), "--preset=cartpole_a2c", f"--mode={mode}",
                 f"--total_steps={budget}", "--eval_every=25000", "--num_executors=2",
                 "--num_actors=2", f"--seed={seed}")
    returns = [e["mean_return"] for e in s["eval"]]
    curves.append({"seed": seed, "eval": returns, "lag_mean": s["policy_lag"]["mean"],
                   "sps": round(s["sps"])})
    if max(returns) >= 475:
      return
  pytest.fail(f"no run reached 475: {curves}")


@pytest.mark.slow
def test_gala_a2c_solves_cartpole(tmp_path):
  """GALA-A2C (2 agents x 8 envs, deterministic gossip) reaches 475 within 300k env steps
  (measured: 500 from 250k steps on, ~60 s here)."""
  summary, _ = train(str(tmp_path), "--preset=cartpole_gala", "--total_steps=300000",
                     "--eval_every=25000")
  returns = [e["mean_return"] for e in summary["eval"]]
  assert max(returns) >= 475, returns
  assert summary["gala"]["epsilon_ball"]["max_relative"] < 0.1
