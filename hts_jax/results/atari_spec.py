"""What the Atari grid runs (results/atari/PROTOCOL.md): HTS-A2C against A2C on a full Atari game
(Pong through envpool, the paper's preprocessing and Nature CNN), the protocol's budget, seeds,
targets and schedule, and one run's launcher flags. Read by the grid's program (`atari`) and its
report (`atari_report`)."""

from __future__ import annotations

from typing import Any, Dict

from hts_jax.results import grid

# method -> (preset, flags): `atari_a2c` is Table A3's A2C column (16 envs, 5-step rollouts,
# RMSProp 7e-4, entropy 0.01, value 0.5); HTS-A2C with the paper's delayed gradient (Eq. 6).
# Both step envpool's Atari (`--envpool`), so the two modes compare on the same env engine.
METHODS = {
    "hts_a2c": ("atari_a2c", {"mode": "hts", "correction": "delayed", "envpool": True,
                              "network": "cnn"}),
    "a2c": ("atari_a2c", {"mode": "sync", "envpool": True, "network": "cnn"}),
}
LABELS = {"hts_a2c": "HTS-A2C", "a2c": "A2C (sync)"}
REFERENCE = "hts_a2c"  # the paired ratios' denominator
# results/atari/PROTOCOL.md, fixed before the runs.
PROTOCOL = {
    "games": {"Pong": [0, 1, 2]},
    "budget": 2_000_000,  # env steps (8M frames at frame skip 4)
    # 2 envpool groups (actors) of 8 envs, one envpool thread each: the machine's 2 cores (the
    # bits are the same for any actor count).
    "num_actors": 2,
    "num_executors": 2,
    "evals_per_run": 40,
    "eval_episodes": 10,
    "targets": {"0": 0.0, "15": 15.0},  # running-average game scores (Pong's lie in [-21, 21])
    "benchmark": {"repeats": 3, "steps": 30_000},
}


def run_flags(method: str, game: str, seed: int, steps: int) -> Dict[str, Any]:
  """One run's launcher flags (before --logdir)."""
  if method not in METHODS:
    raise grid.GridError(f"unknown method {method!r}; known: {list(METHODS)}")
  preset, fixed = METHODS[method]
  return {"preset": preset, **fixed, "env": f"atari:{game}",
          "num_actors": PROTOCOL["num_actors"], "num_executors": PROTOCOL["num_executors"],
          "seed": seed, "total_steps": steps,
          "eval_every": max(1, steps // PROTOCOL["evals_per_run"]),
          "eval_episodes": PROTOCOL["eval_episodes"], "tensorboard": False, "log_every_s": 60}
