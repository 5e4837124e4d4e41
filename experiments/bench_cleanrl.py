r"""`--preset=atari_ppo` against CleanRL's `ppo_atari_envpool_xla_jax.py` on identical work, side
by side on one host: PPO on envpool's Pong with 8 envs x 128 steps per update, 4 epochs
x 4 minibatches, the Nature CNN and CleanRL's values (`hts_jax/presets.py` cites each), runs
interleaved, each in a fresh process. Prints one JSON object.

  python -m experiments.bench_cleanrl --cleanrl_script=PATH/cleanrl/ppo_atari_envpool_xla_jax.py
  python -m experiments.bench_cleanrl --cleanrl_script=... --steps=8192 --repeats=3 \
      --save=results/benchmarks/cleanrl.json

CleanRL does not install for this Python (PyPI's cleanrl stops at 0.4.8), so its script is read
from a clone of vwxyzjn/cleanrl (recorded by its sha256) and run with `PATCHES`, each named: they
port it to this machine's JAX, Flax and envpool (which returns Gymnasium's API) and replace its
tyro command line and torch TensorBoard writer; none touches its algorithm. Figures per run:
- steady SPS: CleanRL's env steps after its first `WARMUP` iterations over the time after them
  (its first iteration compiles its jitted functions, its second compiles `rollout` again for
  `global_step`'s new type); hts_jax's env steps over its run's wall time, which starts after
  its ahead-of-time compile (its first updates stay in);
- start-up: CleanRL's seconds from process start to the end of its warm-up; hts_jax's compile
  seconds (summary.json's `timing.compile_s`).
Layouts differ where each program's design does: CleanRL steps its envpool inside its jitted
rollout (one envpool of 8 envs, envpool's default threads); hts_jax runs `atari_ppo`'s 2 envpool
groups of 4 envs with 2 threads and HTS (`--mode=hts`, or the mode given).
"""

import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.results import provenance
from hts_jax.runs import launch

flags.DEFINE_string("cleanrl_script", None, "CleanRL's cleanrl/ppo_atari_envpool_xla_jax.py (from "
                    "a clone of vwxyzjn/cleanrl).")
flags.DEFINE_integer("steps", 8192, "Env steps per run (a multiple of 1,024, one update's batch).")
flags.DEFINE_integer("repeats", 3, "Runs per program, interleaved; SPS is their median.")
flags.DEFINE_list("modes", ["hts"], "hts_jax's --mode values to run (hts, sync).")
flags.DEFINE_bool("hts_lag_diagnostics", True, "hts_jax's PPO lag diagnostics (--lag_diagnostics: a "
                  "forward pass before each update that CleanRL's update does not make; "
                  "results/benchmarks/lag_diagnostics.json measures it); --nolag_diagnostics "
                  "runs without (--nohts_lag_diagnostics), the same params bit for bit.")
flags.DEFINE_integer("timeout_per_run_s", 1800, "Seconds before a run is stopped.")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance here.")
FLAGS = flags.FLAGS

ENV = "Pong-v5"  # CleanRL's id; hts_jax's `atari:Pong` through envpool is the same game
BATCH = 8 * 128  # env steps per update in both
WARMUP = 2  # CleanRL's iterations that compile
TICK = "BENCH_TICK"
# (name, what it fixes, text in CleanRL's script, its replacement). Each must match exactly once.
PATCHES = (
    ("no tyro", "tyro is not installed: its Args come from the benchmark (JSON in an env var)",
     "import tyro\n", ""),
    ("args from the benchmark", "the same", "args = tyro.cli(Args)",
     'args = Args(**__import__("json").loads(os.environ["BENCH_CLEANRL_ARGS"]))'),
    ("no torch TensorBoard", "torch is not installed: a writer that prints when each iteration "
     "ends (the benchmark's clock) and drops the rest",
     "from torch.utils.tensorboard import SummaryWriter\n",
     "\nclass SummaryWriter:\n    def __init__(self, *a, **k): pass\n"
     "    def add_text(self, *a, **k): pass\n"
     "    def add_scalar(self, tag, value, step):\n"
     f'        if tag == "charts/SPS": print(f"{TICK} {{step}} {{time.time()}}", flush=True)\n'
     "    def close(self): pass\n"),
    ("gymnasium spaces", "envpool here returns Gymnasium's env and spaces (the assert on "
     "gym.spaces.Discrete)", "import gym\n", "import gymnasium as gym\n"),
    ("envpool's own attributes", "num_envs and the single spaces are read-only properties of "
     "envpool's Gymnasium env, already set",
     "    envs.num_envs = args.num_envs\n    envs.single_action_space = envs.action_space\n"
     "    envs.single_observation_space = envs.observation_space\n    envs.is_vector_env = True\n",
     ""),
    ("Gymnasium reset", "reset returns (obs, info)", "    next_obs = envs.reset()\n",
     "    next_obs, _ = envs.reset()\n"),
    ("Gymnasium step", "envpool's XLA step returns terminated and truncated apart; done is either "
     "(gym's done) and the episode statistics read truncated where gym's info had it",
     "        handle, (next_obs, reward, next_done, info) = step_env(handle, action)\n",
     "        handle, (next_obs, reward, terminated, truncated, info) = step_env(handle, action)\n"
     "        next_done = terminated | truncated\n"
     '        info = {**info, "TimeLimit.truncated": truncated}\n'),
    ("Flax TrainState.create", "today's Flax asks `OVERWRITE_WITH_GRADIENT in params`: the "
     "params' dataclass answers no", "    critic_params: flax.core.FrozenDict\n",
     "    critic_params: flax.core.FrozenDict\n\n    def __contains__(self, key):\n"
     "        return False\n"),
)


def patched(source: str) -> str:
  """CleanRL's script with `PATCHES` applied; a patch that does not match once: one line."""
  for name, _, old, new in PATCHES:
    if source.count(old) != 1:
      raise ValueError(f"patch {name!r} matches {source.count(old)} times (expected once): "
                       "not the script these patches are for")
    source = source.replace(old, new)
  return source


def steady(ticks, warmup: int = WARMUP):
  """(steady SPS, seconds of the warm-up) from CleanRL's (global_step, time) ticks and its start."""
  start, ticks = ticks[0], ticks[1:]
  if len(ticks) <= warmup:
    raise ValueError(f"{len(ticks)} iterations: more than {warmup} are needed for a steady rate")
  (s0, t0), (s1, t1) = ticks[warmup - 1], ticks[-1]
  return (s1 - s0) / (t1 - t0), t0 - start[1]


def run_cleanrl(script: str, steps: int, seed: int) -> dict:
  env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
             BENCH_CLEANRL_ARGS=json.dumps({"env_id": ENV, "total_timesteps": steps,
                                            "seed": seed, "cuda": False}))
  with tempfile.TemporaryDirectory() as tmp:
    t0 = time.time()
    proc = subprocess.run([sys.executable, script], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=FLAGS.timeout_per_run_s)
  if proc.returncode:
    raise RuntimeError(f"CleanRL's run failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
  ticks = [(0, t0)] + [(int(m[1]), float(m[2]))
                       for m in re.finditer(rf"^{TICK} (\d+) ([\d.]+)$", proc.stdout, re.M)]
  sps, warm = steady(ticks)
  return {"program": "cleanrl", "sps": round(sps, 1), "startup_s": round(warm, 1),
          "env_steps": ticks[-1][0], "process_s": round(time.time() - t0, 1)}


def run_hts_jax(mode: str, steps: int, seed: int) -> dict:
  t0 = time.time()
  diagnostics = "--lag_diagnostics" if FLAGS.hts_lag_diagnostics else "--nolag_diagnostics"
  with tempfile.TemporaryDirectory() as tmp:
    s = launch.run_process(["--preset=atari_ppo", f"--mode={mode}", f"--total_steps={steps}",
                            f"--seed={seed}", "--eval_every=0", "--notensorboard",
                            "--log_every_s=60", diagnostics], os.path.join(tmp, "run"),
                           timeout_s=FLAGS.timeout_per_run_s)
  return {"program": f"hts_jax_{mode}", "sps": round(s["sps"], 1),
          "startup_s": round(s["timing"]["compile_s"], 1), "env_steps": s["env_steps"],
          "process_s": round(time.time() - t0, 1)}


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  if not FLAGS.cleanrl_script or not os.path.isfile(FLAGS.cleanrl_script):
    cli.fail(f"--cleanrl_script: not a file: {FLAGS.cleanrl_script!r} (cleanrl/"
             "ppo_atari_envpool_xla_jax.py from a clone of vwxyzjn/cleanrl)")
  if FLAGS.steps % BATCH or FLAGS.steps // BATCH <= WARMUP + 1:
    cli.fail(f"--steps: a multiple of {BATCH:,} above {(WARMUP + 1) * BATCH:,}")
  if not FLAGS.modes or set(FLAGS.modes) - {"hts", "sync"}:
    cli.fail(f"--modes: hts and/or sync, got {FLAGS.modes}")
  with open(FLAGS.cleanrl_script, "rb") as f:
    raw = f.read()
  try:
    source = patched(raw.decode())
  except ValueError as e:
    cli.fail(str(e))
  rows = []
  with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
    f.write(source)
  try:
    for k in range(FLAGS.repeats):  # interleaved: CleanRL, then each mode, per repeat
      for run in [lambda: run_cleanrl(f.name, FLAGS.steps, k)] + [
          lambda m=m: run_hts_jax(m, FLAGS.steps, k) for m in FLAGS.modes]:
        rows.append(dict(run(), repeat=k))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
  finally:
    os.unlink(f.name)
  programs = list(dict.fromkeys(r["program"] for r in rows))
  median = {p: statistics.median(r["sps"] for r in rows if r["program"] == p) for p in programs}
  out = {"env": ENV, "steps": FLAGS.steps, "repeats": FLAGS.repeats, "warmup_iterations": WARMUP,
         "lag_diagnostics": FLAGS.hts_lag_diagnostics,
         "cleanrl_script_sha256": hashlib.sha256(raw).hexdigest(),
         "patches": [{"name": n, "why": why} for n, why, _, _ in PATCHES],
         "median_sps": median, "over_cleanrl": {p: round(median[p] / median["cleanrl"], 3)
                                                for p in programs if p != "cleanrl"},
         "runs": rows}
  print(json.dumps(out, indent=1))
  if FLAGS.save:
    provenance.save(FLAGS.save, dict(out, benchmark="cleanrl"))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
