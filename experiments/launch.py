"""`python -m experiments.launch` from a clone runs `hts-launch` (`hts_jax.cli.launch`): the same
program, flags and module (importing this module gives `hts_jax.cli.launch` itself, so its flags are
defined once)."""

import sys

from hts_jax.cli import launch as _command

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
