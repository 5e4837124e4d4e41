"""`python -m experiments.eval` from a clone runs `hts-eval` (`hts_jax.cli.eval`): the same
program, flags and module (importing this module gives `hts_jax.cli.eval` itself, so its flags are
defined once)."""

import sys

if __name__ == "__main__":
  from hts_jax.cli import startup
  startup.handle_signals()  # before the program's modules load

from hts_jax.cli import eval as _command  # noqa: E402

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
