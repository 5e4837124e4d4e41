"""A lean install (`pip install ".[atari]"`) meets a feature that needs an extra: one line naming
the extra to install, exit code 2, and nothing lost (hts-report still prints its tables). Lean is
simulated by modules that fail to import (pygame, matplotlib) ahead of the real ones."""

import os
import subprocess
import sys

from tests.support import ROOT
from tests.support.cli import run_cli
from tests.support.runs import write_run_summary


def _lean(tmp_path):
  hidden = tmp_path / "hidden"
  for name in ("pygame", "matplotlib"):
    (hidden / name).mkdir(parents=True)
    (hidden / name / "__init__.py").write_text(
        f"raise ImportError(\"No module named '{name}' (hidden: a lean install)\")\n")
  return dict(os.environ, PYTHONPATH=os.pathsep.join([str(hidden), ROOT]))


def _error_lines(stderr):
  return [ln for ln in stderr.splitlines() if ln.startswith("error:")]


def test_video_final_without_the_tracking_extra_is_one_line(tmp_path):
  proc = run_cli(tmp_path / "run", "--preset=cartpole_ppo", "--total_steps=1024", "--video_final",
                 env=_lean(tmp_path))
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  (line,) = _error_lines(proc.stderr)
  assert "recording 'CartPole-v1' needs what the tracking extra installs" in line, line
  assert line.endswith('pip install "hts_jax[tracking]"'), line


def test_hts_report_out_without_matplotlib_prints_its_tables_then_one_line(tmp_path):
  runs = [write_run_summary(str(tmp_path / f"s{i}"), seed=i, returns=[10.0, 20.0]) for i in (0, 1)]
  proc = subprocess.run([sys.executable, "-m", "experiments.report", *runs,
                         f"--out={tmp_path / 'out'}"], cwd=ROOT, capture_output=True, text=True,
                        timeout=300, env=_lean(tmp_path))
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  assert "CartPole-v1" in proc.stdout  # the tables
  assert _error_lines(proc.stderr) == [
      'error: --out: the figures need matplotlib, which the analysis extra installs: '
      'pip install "hts_jax[analysis]"']
  assert os.path.isfile(tmp_path / "out" / "report.json")
