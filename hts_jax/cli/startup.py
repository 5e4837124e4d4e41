"""Signals during start-up, until the runner is built and `defer_signals` takes them over: a
SIGINT or SIGTERM while the program's modules load, the env is checked or the model is built ends
it at once with one line (nothing was trained or saved), not a KeyboardInterrupt traceback or a
silent death. The handler exits by itself (`os._exit`) rather than raising: an exception raised
from a signal handler is lost where it lands in a garbage-collector callback. Imports nothing but the standard library, so it can be installed
first (`python -m hts_jax`, `python -m experiments.train`)."""

import os
import signal


def _early(signum, frame):
  del frame
  os.write(2, f"error: interrupted by {signal.Signals(signum).name} during start-up; nothing "
              "was trained or saved\n".encode())
  os._exit(128 + signum)


def handle_signals() -> None:
  for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, _early)
