"""`python -m experiments.train` from a clone runs `hts-train` (`hts_jax.cli.train`): the same
program, flags and module (importing this module gives `hts_jax.cli.train` itself, so its flags are
defined once)."""

import sys

from hts_jax.cli import train as _command

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
