"""Ablation sweeps for the notebooks (paper Tables 4 and 5): one launcher run per value of one flag,
each in its own logdir, summarized as SPS, the final metric and the parameter hash.

Every run is `python -m experiments.train ...` in a subprocess, exactly what a user would type,
so a sweep exercises the real launcher, executors and runtime.
"""

import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train_command(flags: Dict[str, Any], python: str = sys.executable) -> List[str]:
  args = [f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in flags.items()]
  return [python, "-m", "experiments.train", *args]


def run_sweep(name: str, values: Sequence[Any], base_flags: Dict[str, Any], logroot: str, *,
              last: int = 10, echo: bool = True) -> List[Dict[str, Any]]:
  """Runs the launcher once per value of flag `name` (other flags from `base_flags`), each in
  `<logroot>/<name>=<value>` (replaced if it exists). Returns one row per run."""
  from hts_jax.analysis import metrics  # pylint: disable=import-outside-toplevel
  rows = []
  for value in values:
    logdir = os.path.abspath(os.path.join(logroot, f"{name}={value}"))
    shutil.rmtree(logdir, ignore_errors=True)
    cmd = train_command({**base_flags, name: value, "logdir": logdir})
    if echo:
      print("$ python", " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
      tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
      raise RuntimeError(f"{name}={value}: the run failed (exit {proc.returncode}): {tail}")
    if echo and proc.stdout.strip():
      print(proc.stdout.strip().splitlines()[-1], flush=True)
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
