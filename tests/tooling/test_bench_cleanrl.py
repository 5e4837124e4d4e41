"""The CleanRL benchmark's parts that need no run: its named patches apply exactly once each or
say which one does not, the steady rate skips the compiling iterations, and bad input is one
line."""

import subprocess
import sys

import pytest

from experiments import bench_cleanrl as bench
from tests.support import ROOT


def test_each_patch_applies_once_or_is_named():
  source = "\n".join(old for _, _, old, _ in bench.PATCHES) + "\nrest = 1\n"
  out = bench.patched(source)
  assert all(new in out for _, _, _, new in bench.PATCHES) and out.endswith("rest = 1\n")
  assert "import tyro" not in out and "torch" not in out
  name, _, old, _ = bench.PATCHES[3]
  with pytest.raises(ValueError, match=f"patch '{name}' matches 0 times"):
    bench.patched(source.replace(old, ""))
  with pytest.raises(ValueError, match=f"patch '{name}' matches 2 times"):
    bench.patched(source + old)


def test_the_steady_rate_leaves_out_the_compiling_iterations():
  # Process start at 100 s; iterations end at 130 (compiles), 150 (compiles rollout again), 160, 170.
  ticks = [(0, 100.0), (1024, 130.0), (2048, 150.0), (3072, 160.0), (4096, 170.0)]
  sps, warm = bench.steady(ticks)
  assert sps == pytest.approx(2048 / 20) and warm == pytest.approx(50.0)
  with pytest.raises(ValueError, match="more than 2 are needed"):
    bench.steady(ticks[:3])


def test_bad_input_is_one_line(tmp_path):
  for args, says in ((["--cleanrl_script=" + str(tmp_path / "none.py")], "--cleanrl_script: not"),
                     (["--cleanrl_script=" + __file__, "--steps=1000"], "--steps: a multiple"),
                     (["--cleanrl_script=" + __file__], "patch 'no tyro' matches 0 times")):
    proc = subprocess.run([sys.executable, "-m", "experiments.bench_cleanrl", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith(
        f"error: {says}"), proc.stderr
