"""`make test` runs .ci/setup.sh first and sets HTS_JAX_REQUIRE_SETUP=1 (tests/conftest.py): a
test skipped for want of what that setup installs fails there, at collection (a module-level
`importorskip`) and in a test; other skips stay skips, and without the variable nothing changes."""

import os
import subprocess
import sys

from tests.support import ROOT

CASES = '''
import pytest

def test_needs_setup():
    pytest.importorskip("no_such_module_hts_jax", reason="installed by .ci/setup.sh")

def test_other_skip():
    pytest.skip("needs root")

def test_passes():
    pass
'''
MODULE = '''
import pytest
pytest.importorskip("no_such_module_hts_jax", reason="built by .ci/setup.sh")

def test_never_collected():
    pass
'''


def _pytest(tmp_path, require):
  (tmp_path / "conftest.py").write_text(
      "from tests.conftest import pytest_make_collect_report, pytest_runtest_makereport\n")
  (tmp_path / "test_cases.py").write_text(CASES)
  (tmp_path / "test_module.py").write_text(MODULE)
  env = {**os.environ, "PYTHONPATH": ROOT}
  env.pop("HTS_JAX_REQUIRE_SETUP", None)
  if require:
    env["HTS_JAX_REQUIRE_SETUP"] = "1"
  return subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-q", "-rfEs",
                         "-p", "no:cacheprovider", "-p", "no:xdist",
                         "--continue-on-collection-errors"], cwd=str(tmp_path),
                        env=env, capture_output=True, text=True, timeout=120)


def test_a_skip_for_what_setup_installs_fails_under_make_test(tmp_path):
  proc = _pytest(tmp_path, require=True)
  assert proc.returncode == 1, proc.stdout + proc.stderr
  last = proc.stdout.strip().splitlines()[-1]
  assert "1 failed" in last and "1 passed" in last and "1 skipped" in last and "1 error" in last, \
      proc.stdout
  assert "HTS_JAX_REQUIRE_SETUP=1" in proc.stdout and "needs root" in proc.stdout


def test_without_the_variable_those_skips_stay_skips(tmp_path):
  proc = _pytest(tmp_path, require=False)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  last = proc.stdout.strip().splitlines()[-1]
  assert "1 passed" in last and "3 skipped" in last and "failed" not in last, proc.stdout


def test_setup_installs_the_package_into_the_clones_venv(tmp_path):
  """After .ci/setup.sh the clone's .venv has the console commands, and a script in any folder
  imports hts_jax from this checkout (an editable install)."""
  import pytest  # pylint: disable=import-outside-toplevel
  venv_bin = os.path.join(ROOT, ".venv", "bin")
  if not os.path.isfile(os.path.join(venv_bin, "hts-eval")):
    pytest.skip("the package is installed by .ci/setup.sh")
  script = tmp_path / "mine.py"
  script.write_text("import hts_jax, hts_jax.trained\nprint(hts_jax.__file__)\n")
  out = subprocess.run([os.path.join(venv_bin, "python"), str(script)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == os.path.join(ROOT, "hts_jax", "__init__.py")
  usage = subprocess.run([os.path.join(venv_bin, "hts-eval")], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
  assert usage.returncode == 2 and usage.stderr.startswith("error: usage: hts-eval LOGDIR")
