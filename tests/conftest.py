"""Test setup: 2 forced CPU devices for the data-parallel paths, repo root importable, markers.

The tests stand in folders by level, and each test is marked with its folder's name (`-m unit`,
`-m "not tooling"`):
  unit       pure functions and the algebra (losses, the delayed gradient, configs, envs, acting);
  parts      the runtime's parts alone, in-process (executor, barrier, learner worker, outputs);
  contracts  what needs a whole run: determinism across counts, lag, resume, faults, processes;
  learning   reward thresholds;
  tooling    the project's tools (wheels, docs, notebooks, grids, the GPU bench, import graph).
What they share is in `tests/support/` (no test file imports another)."""

import os
import sys

# Must happen before JAX initialises its backends.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=2").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

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


def pytest_configure(config):
  config.addinivalue_line("markers", "slow: learning/end-to-end tests (run in CI; skip locally "
                          "with -m 'not slow')")
  for level, what in LEVELS.items():
    config.addinivalue_line("markers", f"{level}: {what} (tests/{level}/)")


def pytest_collection_modifyitems(items):
  for item in items:
    level = os.path.basename(os.path.dirname(str(item.path)))
    if level in LEVELS:
      item.add_marker(level)
