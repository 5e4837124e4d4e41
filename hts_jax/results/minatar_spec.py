"""What the MinAtar grid runs (results/minatar/PROTOCOL.md): its methods, the protocol's games,
seeds, budget and schedule, the paper's Atari figures for the same games, and one run's launcher
flags. Read by the grid's program (`minatar`) and its report (`minatar_report`)."""

from __future__ import annotations

from typing import Any, Dict, List

from hts_jax.presets import PRESETS
from hts_jax.results import grid

# method -> (preset, flags). `hts_a2c` is the paper's HTS-A2C (the delayed gradient, Eq. 6).
METHODS = {
    "hts_a2c": ("minatar_a2c", {"mode": "hts", "correction": "delayed"}),
    "a2c": ("minatar_a2c", {"mode": "sync"}),
    "impala": ("minatar_impala", {}),
    "hts_a2c_tis": ("minatar_a2c", {"mode": "hts", "correction": "truncated_is"}),
    "hts_a2c_none": ("minatar_a2c", {"mode": "hts", "correction": "none"}),
}
LABELS = {"hts_a2c": "HTS-A2C", "a2c": "A2C (sync)", "impala": "IMPALA",
          "hts_a2c_tis": "HTS-A2C, truncated IS", "hts_a2c_none": "HTS-A2C, no correction"}
MAIN = ("hts_a2c", "a2c", "impala")  # Table 1/A7 and A8
A1 = ("hts_a2c", "hts_a2c_tis", "hts_a2c_none")  # Table A1
# results/minatar/PROTOCOL.md, fixed before the runs.
PROTOCOL = {
    "games": {"Breakout": [0, 1, 2], "Seaquest": [0, 1, 2], "SpaceInvaders": [0, 1, 2]},
    "more_games": ["Asterix", "Freeway"],  # where time allows
    "a1_games": ["Breakout", "Seaquest"],
    "budget": 2_000_000,
    "lr_decay_steps": 5_000_000,  # the presets' 5M steps (MinAtar's examples' NUM_FRAMES)
    "evals_per_run": 50,
    "eval_episodes": 10,
    "target_fractions": [0.4, 0.8],  # Table A8: 40% / 80% of the reference score
    "reference_method": "a2c",  # the reference score: A2C's final metric in this grid, per game
    "benchmark": {"repeats": 3, "steps": 200_000},
}
# The paper's Atari figures for the same games (Liu et al. 2020; 20M steps, 4 GPUs): Table A7 final
# time metric (mean, +-), Table A8 required minutes to 40% / 80% of Dhariwal et al.'s A2C score
# (None: '-'; the targets in parentheses), Table A1 final rewards by correction.
PAPER = {
    "Breakout": {"final_time": {"impala": (201, 133), "a2c": (362, 29), "hts_a2c": (413, 37)},
                 "targets": (160, 320),
                 "required_min": {"impala": (77.8, None), "a2c": (21.7, 43.5),
                                  "hts_a2c": (17.7, 38.9)},
                 "a1": {"hts_a2c": 415, "hts_a2c_tis": 390, "hts_a2c_none": 402}},
    "Seaquest": {"final_time": {"impala": (458, 2), "a2c": (1833, 6), "hts_a2c": (1831, 7)},
                 "targets": (640, 1280),
                 "required_min": {"impala": (None, None), "a2c": (6.7, 28.4),
                                  "hts_a2c": (4.0, 17.2)},
                 "a1": {"hts_a2c": 1831, "hts_a2c_tis": 1827, "hts_a2c_none": 1784}},
    "SpaceInvaders": {"final_time": {"impala": (1142, 207), "a2c": (596, 69),
                                     "hts_a2c": (731, 80)},
                      "targets": (240, 480),
                      "required_min": {"impala": (9.65, 19.9), "a2c": (14.1, 26.4),
                                       "hts_a2c": (6.9, 21.8)}},
}


def run_flags(method: str, game: str, seed: int, steps: int) -> Dict[str, Any]:
  """One run's launcher flags (before --logdir)."""
  if method not in METHODS:
    raise grid.GridError(f"unknown method {method!r}; known: {list(METHODS)}")
  preset, fixed = METHODS[method]
  out: Dict[str, Any] = {
      "preset": preset, **fixed, "env": f"minatar:{game}", "seed": seed, "total_steps": steps,
      "eval_every": max(1, steps // PROTOCOL["evals_per_run"]),
      "eval_episodes": PROTOCOL["eval_episodes"], "tensorboard": False, "log_every_s": 60}
  if PRESETS[preset].get("lr_decay"):
    out["lr_decay_steps"] = PROTOCOL["lr_decay_steps"]
  return out


def methods_for(game: str, methods: List[str], a1: bool) -> List[str]:
  """A block's methods: Table 1/A7/A8's, and Table A1's extra corrections on its games."""
  wanted = list(MAIN) + ([m for m in A1 if m not in MAIN]
                         if a1 and game in PROTOCOL["a1_games"] else [])
  return [m for m in wanted if m in methods]
