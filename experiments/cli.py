"""What every launcher shares: user errors are one `error:` line and exit code 2."""

import sys

from absl import flags


def fail(message: str, code: int = 2):
  print(f"error: {message}", file=sys.stderr)
  sys.exit(code)


def parse_flags(argv):
  """absl's parsing, with flag errors reported like every other user error: one line, exit 2."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    fail(str(e).splitlines()[0], 2)
