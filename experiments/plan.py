"""`python -m experiments.plan` from a clone runs `hts-plan` (`hts_jax.cli.plan`): the same
program, flags and module (importing this module gives `hts_jax.cli.plan` itself, so its flags are
defined once)."""

import sys

if __name__ == "__main__":
  from hts_jax.cli import startup
  startup.handle_signals()  # before the program's modules load

from hts_jax.cli import plan as _command  # noqa: E402

if __name__ == "__main__":
  _command.run()
else:
  sys.modules[__name__] = _command
