"""`python -m experiments.train` from a clone runs `hts-train` (`hts_jax.cli.train`): the same
program, flags and module (importing this module gives `hts_jax.cli.train` itself, so its flags are
defined once)."""

import sys

if __name__ == "__main__":
  from hts_jax.cli import startup
  startup.handle_signals()  # before the program's modules load

from hts_jax.cli import train as _command  # noqa: E402

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
