"""Ablation sweeps for the notebooks (paper Tables 4 and 5): one training run per value of one flag,
each in its own logdir, summarized as SPS, the final metric and the parameter hash.

Every run is one training process started by `hts_jax.results.launch` (what a user types), so a
sweep exercises the real launcher, executors and runtime.
"""

import os
from typing import Any, Dict, List, Sequence

from hts_jax.analysis import metrics
from hts_jax.results import launch


def run_sweep(name: str, values: Sequence[Any], base_flags: Dict[str, Any], logroot: str, *,
              last: int = 10, echo: bool = True) -> List[Dict[str, Any]]:
  """Runs the launcher once per value of flag `name` (other flags from `base_flags`), each in
  `<logroot>/<name>=<value>` (replaced if it exists). Returns one row per run."""
  rows = []
  for value in values:
    logdir = os.path.abspath(os.path.join(logroot, f"{name}={value}"))
    try:
      launch.run_process(launch.flag_args({**base_flags, name: value}), logdir, echo=echo)
    except launch.RunFailed as e:
      raise RuntimeError(f"{name}={value}: the run failed ({e})") from None
    run = metrics.load_run(logdir)
    s = run.summary
    rows.append({name: value, "sps": s["sps"], "final_metric": metrics.final_metric(run, last),
                 "wall_time_s": s["wall_time_s"], "env_steps": s["env_steps"],
                 "updates": s["updates"], "policy_lag_mean": s["policy_lag"]["mean"],
                 "param_sha256": s["param_sha256"], "episode_returns": s["episode_returns"],
                 "logdir": logdir})
  return rows


def format_rows(rows: List[Dict[str, Any]], name: str) -> str:
  """A small text table: value, SPS, final metric, hash prefix."""
  lines = [f"{name:>12}  {'SPS':>9}  {'final metric':>12}  {'wall s':>7}  param_sha256"]
  for r in rows:
    lines.append(f"{r[name]!s:>12}  {r['sps']:9,.0f}  {r['final_metric']:12.1f}  "
                 f"{r['wall_time_s']:7.1f}  {r['param_sha256'][:16]}")
  return "\n".join(lines)
