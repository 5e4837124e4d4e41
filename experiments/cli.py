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


def run_quiet(**config):
  """One run of the runtime in a temporary logdir, its progress lines sent to stderr (benchmark
  scripts keep stdout for their JSON). `config`: RunConfig fields; `learner`: LearnerConfig fields.
  Returns summary.json's dict."""
  import contextlib  # pylint: disable=import-outside-toplevel
  import tempfile  # pylint: disable=import-outside-toplevel
  from hts_jax.config import LearnerConfig, RunConfig  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime import modes  # pylint: disable=import-outside-toplevel
  learner = LearnerConfig(**config.pop("learner", {}))
  with tempfile.TemporaryDirectory() as logdir:
    cfg = RunConfig(**{"logdir": logdir, "eval_episodes": 1, "log_every_s": 1e9, **config},
                    learner=learner)
    with contextlib.redirect_stdout(sys.stderr):
      return modes.run(cfg)
