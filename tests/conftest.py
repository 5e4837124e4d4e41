"""Test setup: 2 forced CPU devices for the data-parallel paths, repo root importable, markers."""

import os
import sys

# Must happen before JAX initialises its backends.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=2").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)


def pytest_configure(config):
  config.addinivalue_line("markers", "slow: learning/end-to-end tests (run in CI; skip locally "
                          "with -m 'not slow')")
  config.addinivalue_line("markers", "tooling: tests of the project's tools rather than the "
                          "runtime (the wheel and its commands, the GPU bench's runs): -m tooling "
                          "runs them alone, -m 'not tooling' leaves them out")
