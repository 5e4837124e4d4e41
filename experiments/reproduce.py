"""`python -m experiments.reproduce <grid> ...` from a clone runs `hts-reproduce`
(`hts_jax.cli.reproduce`): the same program and flags."""

import sys

from hts_jax.cli import reproduce as _command

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
