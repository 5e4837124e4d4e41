"""The corrections study's protocol as data (results/corrections/PROTOCOL.md, fixed before its
runs): tasks with their kind, target and budget, methods, seeds, the committed runs that count,
and one run's launcher flags. `corrections` runs and reports it."""

from __future__ import annotations

from typing import Any, Dict

from hts_jax.results import gfootball, grid

CLOSE = "academy_empty_goal_close"
# task key -> (kind, target or None, budget); the protocol's table.
TASKS = {CLOSE: ("steps", 0.8, 400_000), "Hopper-v5": ("final", None, 1_000_000),
         "Walker2d-v5": ("final", None, 1_000_000), "HalfCheetah-v5": ("final", None, 1_000_000),
         "CartPoleNoVel": ("steps", 475.0, 100_000)}
METHODS = {"sync_ppo": {"mode": "sync"}, "behaviour": {"mode": "hts", "correction": "behaviour"},
           "decoupled": {"mode": "hts", "correction": "decoupled"},
           "none": {"mode": "hts", "correction": "none"}}
REFERENCE = "sync_ppo"
CORRECTIONS = ("behaviour", "decoupled", "none")
SEEDS = ("0", "1", "2", "3", "4")
# The committed GFootball runs that count (PROTOCOL.md): method here -> method there.
COMMITTED = {"behaviour": "hts_ppo", "sync_ppo": "sync_ppo"}
DIAGNOSTICS = ("clip_frac", "approx_kl", "kl_lag", "is_weight", "is_ess", "is_above_2",
               "is_capped", "entropy")
SHARED = grid.SHARED  # a run's mark that other work shared the machine
PASS_RATIO = 1.1  # steps tasks: pass at <= 1.1x sync PPO's median env steps
# Steps tasks: env steps of the first full window (the 10th evaluation), the earliest possible hit.
FIRST_WINDOW = {CLOSE: 10 * 8_000, "CartPoleNoVel": 10 * 2_000}


def run_flags(task: str, method: str, seed: int) -> Dict[str, Any]:
  """One run's launcher flags, as PROTOCOL.md's table fixes them."""
  fixed, budget = METHODS[method], TASKS[task][2]
  if task == CLOSE:
    out = gfootball.GRID.run_flags(CLOSE, "hts_ppo", seed, budget)  # the protocol's scale
    out.pop("mode", None)
    return {**out, **fixed}
  common = {"seed": seed, "total_steps": budget, "tensorboard": False, "log_every_s": 60, **fixed}
  if task == "CartPoleNoVel":
    return {"preset": "memory_lstm_ppo", **common, "eval_every": 2_000, "eval_episodes": 5,
            "eval_greedy": False}
  return {"preset": "mujoco_hts_ppo", "env": task, **common, "eval_every": 50_000}
