"""What a new user sees first: the run says what it starts and that it compiles before XLA's
silence (a CNN's compile takes about a minute on 2 cores), then the progress lines."""

import re

from tests.support.cli import run_cli


def test_the_start_up_says_what_it_does_before_the_compile(tmp_path):
  out = run_cli(tmp_path / "run", "--preset=cartpole_ppo", "--total_steps=2048")
  assert out.returncode == 0, out.stderr
  lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[hts] ")]
  assert lines[0] == "[hts] starting: CartPole-v1, 8 envs, 2 executors, PPO", lines
  assert lines[1] == "[hts] compiling the learner and policy steps (mlp network, XLA)", lines
  assert re.fullmatch(r"\[hts\] compiled in \d+\.\d s; starting the executors' envs", lines[2])
  assert "steps |" in lines[3] and "done: 2,048 env steps" in out.stdout, lines
  assert not [ln for ln in out.stderr.splitlines() if ln.strip()], out.stderr  # errors only
