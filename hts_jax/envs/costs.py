"""What one env replica's step and reset cost, under a uniformly random policy, in this process
(`experiments/bench_env_costs.py` prints and saves it; the GFootball report reads its JSON): a
run's steps per second falls as its policy shortens episodes, since a reset costs several steps."""

from __future__ import annotations

import statistics
import time
from typing import Any, Dict

import numpy as np

from hts_jax import envs


def measure(name: str, env_kwargs: Dict[str, Any], steps: int, seed: int) -> Dict[str, Any]:
  """One replica of `name`: `steps` timed random steps, every episode end a timed reset."""
  env = envs.make_env(name, env_kwargs, train=True)
  try:
    env.reset(seed=seed)
    env.action_space.seed(seed)
    step_ms, reset_ms, lengths, length = [], [], [], 0
    while len(step_ms) < steps:
      action = env.action_space.sample()
      t = time.perf_counter()
      _, _, terminated, truncated, _ = env.step(action)
      step_ms.append(1e3 * (time.perf_counter() - t))
      length += 1
      if terminated or truncated:
        t = time.perf_counter()
        env.reset()
        reset_ms.append(1e3 * (time.perf_counter() - t))
        lengths.append(length)
        length = 0
  finally:
    env.close()
  mean_step = float(np.mean(step_ms))
  out = {"env": name, "steps": len(step_ms), "resets": len(reset_ms),
         "step_ms": {"median": statistics.median(step_ms), "mean": mean_step},
         "reset_ms": None, "reset_in_steps": None,
         "random_episode_length": float(np.mean(lengths)) if lengths else None}
  if reset_ms:
    out["reset_ms"] = {"median": statistics.median(reset_ms), "mean": float(np.mean(reset_ms))}
    out["reset_in_steps"] = out["reset_ms"]["mean"] / mean_step
  return out
