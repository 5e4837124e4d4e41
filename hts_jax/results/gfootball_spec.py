"""What the GFootball grid runs (results/gfootball/PROTOCOL.md): its methods, the protocol's
budgets, seeds and schedule, the paper's figures, and one run's launcher flags. Read by the grid's
program (`gfootball`) and its report (`gfootball_report`)."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Sequence

from hts_jax.results import grid

# method -> (preset, extra flags at every scale). `hts_ppo` takes gfootball_ppo's correction
# (`behaviour`, the released code's); `hts_ppo_delayed` is the paper's Eq. 6.
METHODS = {
    "hts_ppo": ("gfootball_ppo", {"mode": "hts"}),
    "sync_ppo": ("gfootball_ppo", {"mode": "sync"}),
    "impala": ("gfootball_impala", {}),
    "hts_ppo_delayed": ("gfootball_ppo", {"mode": "hts", "correction": "delayed"}),
}
DEFAULT_METHODS = ("hts_ppo", "sync_ppo", "impala")
LABELS = {"hts_ppo": "HTS-PPO", "sync_ppo": "PPO (sync)", "impala": "IMPALA",
          "hts_ppo_delayed": "HTS-PPO (delayed)"}
REFERENCE = "hts_ppo"  # the paired ratios' denominator
# results/gfootball/PROTOCOL.md, fixed before the runs: budgets and seeds per scenario, every
# method's learning rate over the paper's 5M-step schedule, evaluation cadence, targets.
PROTOCOL = {
    "budgets": {"academy_empty_goal_close": 400_000, "academy_empty_goal": 800_000,
                "academy_run_to_score": 1_000_000},
    "seeds": {"academy_empty_goal_close": [0, 1, 2, 3, 4], "academy_empty_goal": [0, 1, 2],
              "academy_run_to_score": [0, 1, 2]},
    "lr_decay_steps": 5_000_000,  # the paper's 5M env steps (§5)
    "evals_per_run": 50,  # the paper: every 100k of 5M steps
    "eval_episodes": 10,
    "targets": [0.4, 0.8],  # Table 2 / A10
    "identity": {"scenario": "academy_empty_goal_close", "seed": 0, "steps": 100_000,
                 "actor_counts": [1, 2, 4]},
    "benchmark": {"repeats": 3, "steps": 30_000},
}
BUDGETS = PROTOCOL["budgets"]
EVALS_PER_RUN = PROTOCOL["evals_per_run"]
TARGETS = tuple(PROTOCOL["targets"])
# The paper's figures for these scenarios (Liu, Yeh & Schwing 2020; 4 GPUs, 16 envs, extracted
# maps): Table A10 (= Table 2) required minutes to 0.4 / 0.8 (None: '-'), Table A9 final time
# metric at IMPALA's 5M-step time (mean, +-).
PAPER = {
    "academy_empty_goal_close": {"required_min": {"impala": (1.7, 2.6), "sync_ppo": (5.4, 15.5),
                                                  "hts_ppo": (1.0, 2.0)},
                                 "final_time": {"impala": (1.00, 0.00), "sync_ppo": (1.00, 0.00),
                                                "hts_ppo": (1.00, 0.00)}},
    "academy_empty_goal": {"required_min": {"impala": (8.4, 11.7), "sync_ppo": (12.8, 19.2),
                                            "hts_ppo": (2.0, 3.9)},
                           "final_time": {"impala": (1.00, 0.00), "sync_ppo": (0.89, 0.05),
                                          "hts_ppo": (0.94, 0.04)}},
    "academy_run_to_score": {"required_min": {"impala": (27.0, 34.6), "sync_ppo": (16.2, 32.5),
                                              "hts_ppo": (6.3, 11.4)},
                             "final_time": {"impala": (0.65, 0.42), "sync_ppo": (0.89, 0.05),
                                            "hts_ppo": (0.93, 0.03)}},
}

def budget_of(scenario: str, overrides: Dict[str, int]) -> int:
  if scenario in overrides:
    return overrides[scenario]
  if scenario not in BUDGETS:
    raise grid.GridError(f"no budget for scenario {scenario!r}: give --steps={scenario}=N")
  return BUDGETS[scenario]


def parse_steps(pairs: Sequence[str]) -> Dict[str, int]:
  out = {}
  for p in pairs:
    name, sep, value = p.partition("=")
    try:
      if not sep or not name or int(value) < 1:
        raise ValueError
      out[name] = int(value)
    except ValueError:
      raise grid.GridError(f"--steps: expected SCENARIO=STEPS (STEPS >= 1), got {p!r}") from None
  return out


def run_flags(method: str, scenario: str, seed: int, steps: int, *, num_envs: int,
              num_executors: int, ppo_actors: int, impala_actors: int, representation: str,
              num_actors: Optional[int] = None, extra: Sequence[str] = ()) -> Dict[str, Any]:
  """The launcher flags of one run (before --logdir)."""
  if method not in METHODS:
    raise grid.GridError(f"unknown method {method!r}; known: {list(METHODS)}")
  preset, fixed = METHODS[method]
  stacked = representation not in ("simple115", "simple115v2")
  out: Dict[str, Any] = {
      "preset": preset, **fixed, "env": f"gfootball:{scenario}",
      "env_kwargs": json.dumps({"representation": representation, "stacked": stacked},
                               separators=(",", ":")),
      "num_envs": num_envs, "num_executors": num_executors, "total_steps": steps, "seed": seed,
      "eval_every": max(1, steps // EVALS_PER_RUN), "lr_decay_steps": PROTOCOL["lr_decay_steps"],
      "tensorboard": False, "log_every_s": 60}
  if min(num_envs, num_executors, ppo_actors, impala_actors, num_actors or 1) < 1:
    raise grid.GridError("--num_envs, --num_executors, --ppo_actors, --impala_actors and "
                    "--actor_counts must be >= 1")
  if preset == "gfootball_impala":
    # Each actor owns num_envs / impala_actors envs (whole executors); a batch of Table A6's 8
    # unrolls of one env is 8 env-sequences of 32 steps, whatever the actors' share.
    if num_envs % impala_actors or num_executors % impala_actors or 8 % (num_envs //
                                                                         impala_actors):
      raise grid.GridError(f"impala: {impala_actors} actors must divide num_envs ({num_envs}) "
                           f"and num_executors ({num_executors}), each actor's envs dividing 8")
    out.update(num_actors=impala_actors, async_batch_unrolls=8 // (num_envs // impala_actors))
  else:
    out["num_actors"] = num_actors or ppo_actors
  for item in extra:
    name, sep, value = item.partition("=")
    if not sep:
      raise grid.GridError(f"--extra: expected NAME=VALUE, got {item!r}")
    out[name] = value
  return out
