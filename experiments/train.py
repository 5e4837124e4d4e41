"""`python -m experiments.train` from a clone runs `hts-train` (`hts_jax.cli.train`): the same
program, flags and module (importing this module gives `hts_jax.cli.train` itself, so its flags are
defined once)."""

import sys

if __name__ == "__main__":
  # A signal while the program's modules load (before `run()` takes signals over) ends it with
  # the start-up line, not a KeyboardInterrupt traceback or a silent death.
  import os
  import signal

  def _early(signum, frame):
    del frame
    os.write(2, f"error: interrupted by {signal.Signals(signum).name} during start-up; nothing "
                "was trained or saved\n".encode())
    os._exit(128 + signum)

  for _s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_s, _early)

from hts_jax.cli import train as _command  # noqa: E402

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
