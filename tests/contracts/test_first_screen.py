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
  # The done line: the training's seconds and SPS beside the whole process's seconds.
  assert re.search(r"done: 2,048 env steps in \d+\.\ds of training \([\d,]+ sps; "
                   r"\d+\.\ds in all, start-up and compile included\)", out.stdout), out.stdout
  assert not [ln for ln in out.stderr.splitlines() if ln.strip()], out.stderr  # errors only


def test_help_is_short_and_exits_0():
  """`--help` / `--helpshort`: the flags most runs change, in a few screens; `--helpfull`: every
  flag; each command exits 0 for all three."""
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  from tests.support import ROOT  # pylint: disable=import-outside-toplevel

  def run(*args):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
  short = run("experiments.train", "--helpshort")
  assert short.returncode == 0 and len(short.stdout.splitlines()) <= 80, short.stderr
  for flag in ("--preset", "--env", "--mode", "--policy_lag", "--seed", "--total_steps",
               "--num_envs", "--num_actors", "--alpha", "--logdir", "--resume", "--lr"):
    assert f"\n  {flag}:" in short.stdout, flag
  assert run("experiments.train", "--help").stdout == short.stdout
  full = run("experiments.train", "--helpfull")
  assert full.returncode == 0 and len(full.stdout.splitlines()) > 300
  for args in (("experiments.plan", "--help"), ("experiments.eval", "--help"),
               ("experiments.report", "--help"), ("experiments.launch", "--help"),
               ("experiments.reproduce", "--help"), ("experiments.reproduce", "memory", "--help")):
    out = run(*args)
    assert out.returncode == 0 and out.stdout.strip(), (args, out.stderr)
