"""The two analysis command lines (the runtime model, the report) on run directories written by
tests/support/runs.py (summary.json files in the runs' layout; no training)."""

import json
import os
import subprocess
import sys

import pytest

from hts_jax.analysis import metrics
from hts_jax.analysis import runtime_model
from tests.support import ROOT
from tests.support.runs import write_run_summary


def _cli(*args):
  return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                        timeout=300)


def test_runtime_model_cli():
  p = _cli("experiments.runtime_model", "--n", "16", "--alpha", "4", "--beta", "2", "--K",
           "100000", "--c", "0", "--json")
  assert p.returncode == 0, p.stderr
  out = json.loads(p.stdout)
  assert out["formula_s"] == pytest.approx(
      runtime_model.expected_runtime(100_000, 16, 4, 2.0), rel=1e-12)
  assert out["simulation_s"] == pytest.approx(out["formula_s"], rel=0.1)
  p = _cli("experiments.runtime_model", "--beta=0")
  assert p.returncode == 2 and p.stderr.strip().startswith("error:") and \
      len(p.stderr.strip().splitlines()) == 1


def test_report_cli(tmp_path):
  dirs = [write_run_summary(str(tmp_path / f"hts{s}"), seed=s, returns=[0, 100, 200], sps=900.0)
          for s in range(2)]
  dirs += [write_run_summary(str(tmp_path / f"sync{s}"), seed=s, mode="sync", returns=[0, 10, 20])
           for s in range(2)]
  out = tmp_path / "report"
  p = _cli("experiments.report", *dirs, "--targets=CartPole-v1=150", "--time_limit=1.5",
           "--window=1",
           f"--out={out}", "--resamples=500")
  assert p.returncode == 0, p.stderr
  assert "HTS-RL (A2C)" in p.stdout and "A2C (sync)" in p.stdout
  assert "not reached (0/2)" in p.stdout and "Final time metric" in p.stdout
  assert sorted(os.listdir(out)) == ["report.json", "return_vs_env_steps.png",
                                     "return_vs_wall_time.png", "throughput_sps.png"]
  rows = {r["method"]: r for r in json.loads((out / "report.json").read_text())["rows"]}
  assert rows["HTS-RL (A2C)"]["required_time"]["mean"] == 2.0
  assert rows["A2C (sync)"]["required_time"]["mean"] is None  # never reached: null in JSON
  p = _cli("experiments.report", str(tmp_path / "nowhere"))
  assert p.returncode == 2 and "not a directory" in p.stderr and len(p.stderr.splitlines()) == 1
  p = _cli("experiments.report", dirs[0], "--targets=oops")
  assert p.returncode == 2 and "ENV=RETURN" in p.stderr


def test_report_shows_hosts_and_refuses_to_mix_them(tmp_path):
  """Wall-time figures from different host kinds do not share a column unless asked for."""
  epyc = {"cpu_model": "AMD EPYC", "usable_cores": 2, "calibration": {"total_ms": 812.0}}
  xeon = {"cpu_model": "Intel(R) Xeon(R) Processor", "usable_cores": 2}
  a = write_run_summary(str(tmp_path / "a"), seed=0, returns=[0, 100], host=epyc)
  b = write_run_summary(str(tmp_path / "b"), seed=1, returns=[0, 100],
                        host=dict(epyc, calibration_end={"total_ms": 1200.0},
                                  cpu_steal_share=0.45))
  c = write_run_summary(str(tmp_path / "c"), seed=2, returns=[0, 100], host=xeon)
  p = _cli("experiments.report", a, b)
  assert p.returncode == 0, p.stderr
  assert f"{a}: seed 0, AMD EPYC x2, calibration 812 ms, 1,000 SPS" in p.stdout
  assert (f"{b}: seed 1, AMD EPYC x2, calibration 812 ms (1,200 ms at the end), 45% CPU steal, "
          "1,000 SPS") in p.stdout
  assert "mix" not in p.stdout
  p = _cli("experiments.report", a, b, c)
  assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
  assert "2 host kinds (AMD EPYC x2; Intel(R) Xeon(R) Processor x2)" in p.stderr
  assert "--mixed_hosts" in p.stderr
  p = _cli("experiments.report", a, b, c, "--mixed_hosts")
  assert p.returncode == 0, p.stderr
  assert "NOTE: wall-time figures below mix 2 host kinds" in p.stdout
  # A run without a host block is a host kind of its own.
  d = write_run_summary(str(tmp_path / "d"), seed=3, returns=[0, 100])
  p = _cli("experiments.report", a, d)
  assert p.returncode == 2 and metrics.UNKNOWN_HOST in p.stderr
