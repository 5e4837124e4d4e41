r"""The GPU benchmark: HTS-RL's throughput, determinism and a learning spot check on one GPU
machine, against the paper's per-GPU figures and its peers'. Prints one JSON object on stdout and a
markdown table on stderr (`--out`: also `<out>/bench_gpu.json` and `bench_gpu.md`).

  python -m experiments.bench_gpu                                  # every part (~25 min on a GPU)
  python -m experiments.bench_gpu --parts=determinism,atari16      # some parts
  python -m experiments.bench_gpu --parts=learning --learning_steps=2000000

Parts (Breakout; the paper's A2C is the `atari_a2c` preset, Table A3):
  determinism  HTS-A2C, Atari CNN, a few segments: two runs with 4 actors and one with 1 actor give
               one param_sha256 (XLA's deterministic GPU ops on, the launcher's default).
  atari16      A2C (Table A3), 16 envs: HTS with ale-py executors, the same without XLA's
               deterministic ops (the flag's cost), HTS with envpool, sync, and async
               (IMPALA, `atari_impala`, Table A3): SPS, learner utilisation (update seconds over
               wall seconds), policy rows per env step, ready envs per actor call.
  ppo          PPO (Kostrikov's Atari PPO: 128 steps, 4 epochs x 4 minibatches, Adam 2.5e-4,
               clip 0.1) with --ppo_envs envs: HTS (ale-py), HTS (envpool), sync; and envpool's
               random-policy rate over as many envs on --executors threads (the ceiling).
  gfootball    academy_3_vs_1_with_keeper, `gfootball_ppo` (the paper's CNN, 16 envs in 16
               executors, Table A6): HTS-PPO vs sync.
  learning     HTS-A2C (`atari_a2c`) for --learning_steps, evaluated every --learning_eval_every
               steps (10 sampled episodes): returns against env steps, and the wall time.

Every run is a training process of its own (`hts_jax.runs.launch.run_process`): XLA reads its
flags when JAX starts (the flag-cost row needs a fresh process), and each run gets the GPU to
itself. A run that
fails is a row with its error; the others still run.
"""

import json
import os
import re
import sys
import time

from absl import app
from absl import flags

from hts_jax.analysis import stats
from hts_jax.runs import launch

flags.DEFINE_list("parts", ["determinism", "atari16", "ppo", "gfootball", "learning"],
                  "Which parts to run.")
flags.DEFINE_float("scale", 1.0, "Scales every run's env steps (0.01: a smoke run on CPU).")
flags.DEFINE_integer("executors", 16, "Executor processes (envpool threads) for 16-env Atari "
                     "runs and the PPO part; the machine's cores.")
flags.DEFINE_list("ppo_envs", ["64", "256"], "Env counts of the PPO part.")
flags.DEFINE_integer("learning_steps", 2_400_000, "Env steps of the learning spot check.")
flags.DEFINE_integer("learning_eval_every", 200_000, "Env steps between its evaluations.")
flags.DEFINE_integer("run_timeout_s", 900, "A run taking longer is stopped (an error row).")
flags.DEFINE_string("runs_dir", "runs/bench_gpu", "Where the runs write (each part's runs in a "
                    "folder of its own, replaced).")
flags.DEFINE_string("out", "", "Also write bench_gpu.json and bench_gpu.md into this folder.")
FLAGS = flags.FLAGS

# Kostrikov's Atari PPO (pytorch-a2c-ppo-acktr README's command and defaults), which the paper's
# PPO follows (§5).
ATARI_PPO = ["--env=atari:Breakout", "--algo=ppo", "--alpha=128", "--ppo_epochs=4",
             "--num_minibatches=4", "--optimizer=adam", "--lr=2.5e-4", "--adam_eps=1e-5",
             "--clip_eps=0.1", "--entropy_coef=0.01", "--value_coef=0.5", "--gae_lambda=0.95",
             "--gamma=0.99", "--max_grad_norm=0.5", "--num_actors=4", "--eval_greedy=false"]
# The paper's per-GPU A2C (Table A2: 16 env processes, one GPU; "Ours" over 12 games, and Breakout
# for HTS-RL and Kostrikov's A2C) and Cleanba's one-A100 figures (Atari,
# 10 CPU cores), what users will compare with.
REFERENCES = {"paper_table_a2_hts_a2c_sps_range": [1860, 2657],
              "paper_table_a2_hts_a2c_breakout_sps": 1885,
              "paper_table_a2_kostrikov_a2c_breakout_sps": 1225,
              "cleanba_impala_a100_sps": 6100, "cleanba_ppo_a100_sps": 3900,
              "paper_table4_gfootball_3v1_16_envs_sps": [1229, 1393]}


def _steps(n: int) -> int:
  return max(1, int(n * FLAGS.scale))


def train(part: str, name: str, *argv: str) -> dict:
  """One training run in a fresh process (`hts_jax.runs.launch`); its summary's figures (or
  its error)."""
  logdir = os.path.join(os.path.abspath(FLAGS.runs_dir), part, re.sub(r"[^\w.-]+", "_", name))
  row = {"part": part, "run": name, "argv": list(argv)}
  t0 = time.perf_counter()
  try:
    s = launch.run_process(["--notensorboard", "--log_every_s=60", *argv], logdir,
                           timeout_s=FLAGS.run_timeout_s)
  except launch.RunFailed as e:
    row["error"] = str(e)
    return row
  row["process_s"] = round(time.perf_counter() - t0, 1)
  wall = s["wall_time_s"]
  eff = s["efficiency"]
  row.update({
      "sps": round(s["sps"], 1), "env_steps": s["env_steps"], "wall_time_s": round(wall, 2),
      "updates": s["updates"],
      "learner_utilisation": round(s["timing"]["learn_s"] / wall, 3),
      "learner_idle_s": round(s["idle"]["learner"], 2),
      "executors_waiting_for_actions_s": round(s["idle"]["executors_waiting_for_actions"], 2),
      "policy_rows_per_env_step": round(eff["policy_rows_per_env_step"], 3),
      "ready_envs_per_actor_call": round(eff["mean_ready_envs_per_actor_call"], 2),
      "compile_s": round(s["timing"]["compile_s"], 1), "param_sha256": s["param_sha256"],
      "compiled_during_run": s["compiled_during_run"], "backend": s["backend"],
      "eval": [{"env_steps": e["env_steps"], "wall_time_s": round(e["wall_time_s"], 1),
                "mean_return": e["mean_return"]} for e in s.get("eval", [])]})
  print(json.dumps({k: row[k] for k in ("part", "run", "sps", "learner_utilisation",
                                        "policy_rows_per_env_step")}), file=sys.stderr,
        flush=True)
  return row


def envpool_random(num_envs: int, threads: int, seconds: float) -> dict:
  """envpool's stepping rate with uniform random actions: Breakout with the runtime's own
  envpool settings (`envpool_group.make_pool`), `num_envs` envs on `threads` threads, batch =
  all envs (synchronous, as the runtime's groups step)."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  from hts_jax.config import RunConfig  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime.loops import envpool_group  # pylint: disable=import-outside-toplevel
  cfg = RunConfig.make(env="atari:Breakout", envpool=True, num_envs=num_envs, num_executors=threads,
                  num_actors=1, seed=0)
  pool = envpool_group.make_pool(cfg, 0, num_envs)
  pool.reset()
  rng = np.random.default_rng(0)
  n = pool.action_space.n
  steps, t0 = 0, time.perf_counter()
  while time.perf_counter() - t0 < seconds:
    pool.step(rng.integers(0, n, num_envs))
    steps += num_envs
  wall = time.perf_counter() - t0
  pool.close()
  return {"part": "ppo", "run": f"envpool random policy, {num_envs} envs, {threads} threads",
          "sps": round(steps / wall, 1), "env_steps": steps, "wall_time_s": round(wall, 2)}


def part_determinism() -> dict:
  steps = str(_steps(16 * 5 * 40))  # 40 segments of alpha 5
  base = ["--preset=atari_a2c", f"--total_steps={steps}", "--eval_episodes=1",
          f"--num_executors={FLAGS.executors}"]
  rows = [train("determinism", "4 actors, run 1", *base, "--num_actors=4"),
          train("determinism", "4 actors, run 2", *base, "--num_actors=4"),
          train("determinism", "1 actor", *base, "--num_actors=1")]
  hashes = [r.get("param_sha256") for r in rows]
  return {"rows": rows, "determinism": {
      "param_sha256": hashes,
      "same_two_runs": hashes[0] is not None and hashes[0] == hashes[1],
      "same_1_vs_4_actors": hashes[0] is not None and hashes[0] == hashes[2],
      "deterministic_ops": [r.get("backend", {}).get("xla_gpu_deterministic_ops") for r in rows]}}


def part_atari16() -> dict:
  steps = f"--total_steps={_steps(120_000)}"
  a2c = ["--preset=atari_a2c", steps, "--eval_episodes=1", f"--num_executors={FLAGS.executors}"]
  rows = [train("atari16", "HTS-A2C, ale-py executors", *a2c),
          train("atari16", "HTS-A2C, ale-py, no deterministic ops", *a2c,
                "--noxla_deterministic"),
          train("atari16", "HTS-A2C, envpool", *a2c, "--envpool"),
          train("atari16", "sync A2C", *a2c, "--mode=sync"),
          train("atari16", "async (IMPALA, V-trace)", "--preset=atari_impala", steps,
                "--eval_episodes=1", f"--num_executors={FLAGS.executors}")]
  on, off = rows[0].get("sps"), rows[1].get("sps")
  return {"rows": rows,
          "deterministic_ops_cost": None if not (on and off) else {
              "sps_on": on, "sps_off": off, "on_over_off": round(on / off, 3)}}


def part_ppo() -> dict:
  rows = []
  for n in (int(x) for x in FLAGS.ppo_envs):
    steps = f"--total_steps={_steps(n * 128 * 12)}"  # 12 segments
    common = [*ATARI_PPO, f"--num_envs={n}", f"--num_executors={FLAGS.executors}", steps,
              "--eval_episodes=1"]
    runs = [train("ppo", f"HTS-PPO, {n} envs, ale-py executors", *common),
            train("ppo", f"HTS-PPO, {n} envs, envpool", *common, "--envpool"),
            train("ppo", f"sync PPO, {n} envs", *common, "--mode=sync")]
    try:
      ceiling = envpool_random(n, FLAGS.executors, max(1.0, 20 * FLAGS.scale))
    except Exception as e:  # pylint: disable=broad-except
      ceiling = {"part": "ppo", "run": f"envpool random policy, {n} envs", "error": repr(e)}
    for r in runs:
      if ceiling.get("sps") and r.get("sps"):
        r["of_envpool_random"] = round(r["sps"] / ceiling["sps"], 3)
    rows += runs + [ceiling]
  return {"rows": rows}


def part_gfootball() -> dict:
  common = ["--preset=gfootball_ppo", f"--total_steps={_steps(16 * 128 * 12)}",
            "--eval_episodes=1"]
  return {"rows": [train("gfootball", "HTS-PPO, academy_3_vs_1_with_keeper", *common),
                   train("gfootball", "sync PPO, academy_3_vs_1_with_keeper", *common,
                         "--mode=sync")]}


def part_learning() -> dict:
  row = train("learning", "HTS-A2C Breakout", "--preset=atari_a2c",
              f"--total_steps={_steps(FLAGS.learning_steps)}",
              f"--eval_every={_steps(FLAGS.learning_eval_every)}", "--eval_episodes=10",
              f"--num_executors={FLAGS.executors}")
  return {"rows": [row], "learning_curve": row.get("eval", [])}


PARTS = {"determinism": part_determinism, "atari16": part_atari16, "ppo": part_ppo,
         "gfootball": part_gfootball, "learning": part_learning}


def markdown(rows) -> str:
  cells = []
  for r in rows:
    if "error" in r:
      cells.append([r["part"], r["run"], f"error: {r['error']}", "", "", "", "", ""])
      continue
    cells.append([r["part"], r["run"], f"{r['sps']:,.0f}", r.get("learner_utilisation", ""),
                  r.get("policy_rows_per_env_step", ""), r.get("ready_envs_per_actor_call", ""),
                  r.get("of_envpool_random", ""), r.get("param_sha256", "")[:12]])
  return stats.markdown(["part", "run", "SPS", "learner util.", "policy rows / env step",
                         "ready envs / call", "of envpool random", "param_sha256"],
                        cells).rstrip()


def main(argv):
  del argv
  unknown = [p for p in FLAGS.parts if p not in PARTS]
  if unknown:
    print(f"error: unknown part {unknown[0]!r} (parts: {', '.join(PARTS)})", file=sys.stderr)
    sys.exit(2)
  result = {"cpu_count": os.cpu_count(), "scale": FLAGS.scale, "references": REFERENCES,
            "parts": {}}
  rows = []
  for name in FLAGS.parts:
    t0 = time.perf_counter()
    out = PARTS[name]()
    out["part_s"] = round(time.perf_counter() - t0, 1)
    result["parts"][name] = out
    rows += out["rows"]
  backends = [r["backend"] for r in rows if "backend" in r]
  result["backend"] = backends[0] if backends else None
  table = markdown(rows)
  print(json.dumps(result, indent=1))
  print(table, file=sys.stderr)
  if FLAGS.out:
    os.makedirs(FLAGS.out, exist_ok=True)
    with open(os.path.join(FLAGS.out, "bench_gpu.json"), "w") as f:
      json.dump(result, f, indent=1)
    with open(os.path.join(FLAGS.out, "bench_gpu.md"), "w") as f:
      f.write(table + "\n")


if __name__ == "__main__":
  app.run(main)
