"""`python -m experiments.report` from a clone runs `hts-report` (`hts_jax.cli.report`): the same
program, flags and module (importing this module gives `hts_jax.cli.report` itself, so its flags are
defined once)."""

import sys

from hts_jax.cli import report as _command

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
