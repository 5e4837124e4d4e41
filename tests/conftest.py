"""Test setup: 2 forced CPU devices for the data-parallel paths, repo root importable, markers.

The tests stand in folders by level, and each test is marked with its folder's name (`-m unit`,
`-m "not tooling"`):
  unit       pure functions and the algebra (losses, the delayed gradient, configs, envs, acting);
  parts      the runtime's parts alone, in-process (executor, barrier, learner worker, outputs);
  contracts  what needs a whole run: determinism across counts, lag, resume, faults, processes;
             slow, except the few marked `smoke` that the fast lane keeps;
  learning   reward thresholds (slow);
  tooling    the project's tools (wheels, docs, notebooks, grids, the GPU bench, import graph).
What they share is in `tests/support/` (no test file imports another)."""

import importlib.util
import os
import shutil
import sys
import tempfile

import pytest

# Must happen before JAX initialises its backends.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=2").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# One persistent XLA compilation cache for the session, made by the first process (xdist's
# controller, before it starts its workers) and inherited by the workers and every launcher
# subprocess: the small runs of many tests compile the same programs, and a cache hit returns the
# same executable (bits unchanged; CompileLog still counts it, the event fires for hits too). The
# size limit turns on JAX's file lock (the `filelock` package; without it, no cache), so
# concurrent writers and readers see whole entries only.
_FILELOCK = importlib.util.find_spec("filelock") is not None
_OWN_XLA_CACHE = _FILELOCK and "JAX_COMPILATION_CACHE_DIR" not in os.environ
if _OWN_XLA_CACHE:
  os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="hts_jax_tests_xla_")
if _FILELOCK and "JAX_COMPILATION_CACHE_DIR" in os.environ:  # also a folder of the user's
  os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(4 << 30))
  os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")

# The checkpoint key (`hts_jax.runtime.outputs.signing`) of the session, in a folder of its own
# that xdist's workers and every launched run inherit: tests do not write into the user's home.
_OWN_KEY = "HTS_JAX_KEY_FILE" not in os.environ
if _OWN_KEY:
  os.environ["HTS_JAX_KEY_FILE"] = os.path.join(tempfile.mkdtemp(prefix="hts_jax_tests_key_"),
                                                "checkpoint.key")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)


LEVELS = {
    "unit": "pure functions and the algebra",
    "parts": "the runtime's parts alone, in-process",
    "contracts": "whole runs for the contracts that need one",
    "learning": "reward thresholds",
    "tooling": "the project's tools rather than the runtime: -m tooling runs them alone, "
               "-m 'not tooling' leaves them out",
}


# Whole runs are slow (CI runs them; `make test-fast` is `-m "not slow"`), except the contracts
# marked `smoke`: one determinism-across-counts run per mode family, one interrupt-and-resume,
# one of each kind of fault (bad input, a dying env process, a failing actor or learner).
SLOW_LEVELS = ("contracts", "learning")


def pytest_configure(config):
  config.addinivalue_line("markers", "slow: whole runs, learning and heavy tooling (run in CI; "
                          "skip locally with -m 'not slow')")
  config.addinivalue_line("markers", "smoke: a contract that the fast lane keeps (the other "
                          "contracts are slow)")
  for level, what in LEVELS.items():
    config.addinivalue_line("markers", f"{level}: {what} (tests/{level}/)")


def pytest_collection_modifyitems(items):
  for item in items:
    level = os.path.basename(os.path.dirname(str(item.path)))
    if level in LEVELS:
      item.add_marker(level)
    if level in SLOW_LEVELS and item.get_closest_marker("smoke") is None:
      item.add_marker("slow")


# `make test` and `make test-fast` run .ci/setup.sh first and set HTS_JAX_REQUIRE_SETUP=1: a test
# skipped for want of what that setup installs (its skip reason names .ci/setup.sh: GFootball,
# envpool, MinAtar, Xvfb) then fails, so a broken install cannot turn real-env tests into skips.
SETUP_SKIP = ".ci/setup.sh"


def _require_setup(report) -> None:
  if not (report.skipped and os.environ.get("HTS_JAX_REQUIRE_SETUP") == "1"):
    return
  reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
  if SETUP_SKIP in reason:
    report.outcome = "failed"
    report.longrepr = (f"skipped ({reason}), but HTS_JAX_REQUIRE_SETUP=1: `make test` ran "
                       f"{SETUP_SKIP}, which should have installed it; check its output")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
  outcome = yield
  _require_setup(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
  outcome = yield
  _require_setup(outcome.get_result())


def pytest_unconfigure(config):
  if _OWN_XLA_CACHE and not hasattr(config, "workerinput"):  # the process that made it
    shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)
  if _OWN_KEY and not hasattr(config, "workerinput"):
    shutil.rmtree(os.path.dirname(os.environ["HTS_JAX_KEY_FILE"]), ignore_errors=True)
