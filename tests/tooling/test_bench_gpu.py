"""`experiments/bench_gpu.py` on CPU (the GPU figures come from a GPU machine): every run it would
make is a valid launcher configuration (parsed and validated, not run), envpool's random-policy
ceiling steps, and (slow) the determinism part end to end at a small scale."""

import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT



COLLECT = r"""
import json
from absl import flags
from experiments import bench_gpu
from experiments import train as launcher
FLAGS = flags.FLAGS
FLAGS(["bench_gpu"])
runs = []
def fake_train(part, name, *argv):
  runs.append((part, name, list(argv)))
  return {"part": part, "run": name, "sps": 1.0, "param_sha256": "x" * 64}
bench_gpu.train = fake_train
bench_gpu.envpool_random = lambda n, t, s: {"part": "ppo", "run": "random", "sps": 2.0}
for part in bench_gpu.PARTS.values():
  part()
out = []
for part, name, argv in runs:
  FLAGS.unparse_flags()
  FLAGS(["train", "--logdir=unused", *argv])
  cfg = launcher.build_config()  # raises ConfigError on a bad combination
  r = cfg.rollout
  out.append({"part": part, "run": name, "mode": cfg.mode, "env": r.env,
              "num_envs": r.num_envs, "num_actors": r.num_actors, "envpool": r.envpool,
              "algo": cfg.learner.algo, "xla_deterministic": cfg.devices.xla_deterministic,
              "num_executors": r.num_executors})
print(json.dumps(out))
"""


def _env():
  return dict(os.environ, PYTHONPATH=ROOT)


def test_every_run_of_every_part_is_a_valid_launcher_config():
  proc = subprocess.run([sys.executable, "-c", COLLECT], cwd=ROOT, env=_env(),
                        capture_output=True, text=True)
  assert proc.returncode == 0, proc.stderr[-2000:]
  runs = json.loads(proc.stdout.splitlines()[-1])
  by_part = {}
  for r in runs:
    by_part.setdefault(r["part"], []).append(r)
  assert sorted(by_part) == ["atari16", "determinism", "gfootball", "learning", "ppo"]
  assert [r["num_actors"] for r in by_part["determinism"]] == [4, 4, 1]
  a16 = by_part["atari16"]
  assert [(r["mode"], r["envpool"], r["xla_deterministic"]) for r in a16] == [
      ("hts", False, True), ("hts", False, False), ("hts", True, True), ("sync", False, True),
      ("async", False, True)]
  assert all(r["num_envs"] == 16 and r["env"] == "atari:Breakout" for r in a16)
  assert all(r["num_executors"] == 16 for r in a16)
  ppo = by_part["ppo"]
  assert [(r["num_envs"], r["mode"], r["envpool"]) for r in ppo] == [
      (64, "hts", False), (64, "hts", True), (64, "sync", False),
      (256, "hts", False), (256, "hts", True), (256, "sync", False)]
  assert all(r["algo"] == "ppo" for r in ppo)
  assert [(r["mode"], r["env"]) for r in by_part["gfootball"]] == [
      ("hts", "gfootball:academy_3_vs_1_with_keeper"),
      ("sync", "gfootball:academy_3_vs_1_with_keeper")]
  assert by_part["learning"][0]["mode"] == "hts"


def test_envpool_random_policy_rate():
  from experiments import bench_gpu  # pylint: disable=import-outside-toplevel
  row = bench_gpu.envpool_random(4, 2, 0.5)
  assert row["sps"] > 0 and row["env_steps"] % 4 == 0 and row["env_steps"] >= 4


def test_unknown_part_is_one_line(tmp_path):
  proc = subprocess.run([sys.executable, "-m", "experiments.bench_gpu", "--parts=atari17"],
                        cwd=ROOT, env=_env(), capture_output=True, text=True)
  assert proc.returncode == 2
  assert proc.stderr.strip() == ("error: unknown part 'atari17' (parts: determinism, atari16, "
                                 "ppo, gfootball, learning)")


@pytest.mark.slow
def test_determinism_part_end_to_end(tmp_path):
  """Three real Atari CNN runs (4 actors twice, 1 actor): one param_sha256, the JSON and the
  markdown table written."""
  out = tmp_path / "out"
  proc = subprocess.run(
      [sys.executable, "-m", "experiments.bench_gpu", "--parts=determinism", "--scale=0.05",
       "--executors=2", f"--runs_dir={tmp_path / 'runs'}", f"--out={out}"],
      cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900)
  assert proc.returncode == 0, proc.stderr[-2000:]
  result = json.loads(proc.stdout)
  det = result["parts"]["determinism"]["determinism"]
  assert det["same_two_runs"] and det["same_1_vs_4_actors"], det
  assert det["deterministic_ops"] == [True, True, True]
  rows = result["parts"]["determinism"]["rows"]
  assert all(r["env_steps"] >= 160 and r["compiled_during_run"] == [] for r in rows)
  assert result["backend"]["platform"] == "cpu"
  assert json.loads((out / "bench_gpu.json").read_text()) == result
  table = (out / "bench_gpu.md").read_text()
  assert table.count("| determinism |") == 3 and det["param_sha256"][0][:12] in table
