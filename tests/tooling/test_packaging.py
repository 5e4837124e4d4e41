"""The package as `pip install` makes it: a lean core, extras whose every package is pinned in
requirements.txt (so `-c requirements.txt` gives the tested versions), console commands that run
from any directory, and the clone's `python -m experiments.<name>` shims being those commands."""

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest

import hts_jax
from tests.support import ROOT


COMMANDS = {"hts-train": "hts_jax.cli.train:run", "hts-launch": "hts_jax.cli.launch:run",
            "hts-report": "hts_jax.cli.report:run", "hts-reproduce": "hts_jax.cli.reproduce:run",
            "hts-plan": "hts_jax.cli.plan:run", "hts-eval": "hts_jax.cli.eval:run"}
CORE = {"jax", "flax", "optax", "chex", "rlax", "numpy", "gymnasium", "absl-py"}


def _project():
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)["project"]


def _name(requirement: str) -> str:
  return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")


def _pinned():
  with open(os.path.join(ROOT, "requirements.txt")) as f:
    return {_name(l): l.strip() for l in f if l.strip() and not l.startswith("#")}


def test_core_is_lean_and_every_dependency_is_pinned_in_requirements_txt():
  project = _project()
  core = {_name(r) for r in project["dependencies"]}
  assert CORE <= core
  # Test, notebook, plotting and tracking packages are extras, never the core.
  assert not core & {"pytest", "ipykernel", "nbclient", "wandb", "pygame", "tensorboard",
                     "matplotlib", "scipy", "ale-py", "envpool"}
  extras = project["optional-dependencies"]
  assert {"atari", "envpool", "football", "tracking", "analysis", "notebooks", "dev"} <= set(extras)
  pinned = _pinned()
  every = core | {_name(r) for reqs in extras.values() for r in reqs}
  assert every - set(pinned) == set(), "pin them in requirements.txt"
  for r in project["dependencies"] + [r for reqs in extras.values() for r in reqs]:
    version = re.search(r"[><=]=\s*([0-9][^,;\s]*)", r)
    if version and "==" in pinned[_name(r)] and ">=" in r:  # the floor is the tested pin
      assert pinned[_name(r)].split("==")[1] == version.group(1), (r, pinned[_name(r)])


def test_console_commands_and_the_clone_shims_are_one_program():
  assert _project()["scripts"] == COMMANDS
  for module in ("train", "launch", "report", "reproduce", "plan"):  # one process each
    code = (f"import experiments.{module} as shim, hts_jax.cli.{module} as command; "
            "assert shim is command and callable(command.run)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("module,flag,usage", [
    ("train", "--preset", "Train with HTS-RL."),
    ("launch", "--num_processes", "Starts a multi-process"), ("report", "--targets", "Paper-style tables"),
    ("plan", "--probe_s", "Which policy lag reaches a score sooner")])
def test_helpshort_lists_the_commands_flags_under_its_usage(module, flag, usage):
  """absl lists the key flags of the file in sys.argv[0]: the shim's and the console script's
  must be the command module's (`common.run_main`)."""
  proc = subprocess.run([sys.executable, "-m", f"experiments.{module}", "--helpshort"], cwd=ROOT,
                        capture_output=True, text=True, timeout=300)
  assert flag in proc.stdout and proc.stdout.lstrip().startswith(usage), proc.stdout[:500]


@pytest.mark.slow
def test_pip_install_atari_then_the_commands_run_from_outside_the_clone(tmp_path):
  """`pip install ".[atari]"` (not editable) into a new virtualenv, then a short CartPole and
  Atari run through `hts-train`, a report through `hts-report` and `hts-launch --helpshort`, all
  from a directory outside the clone. The new venv sees this one's packages (a .pth file after its
  own site-packages), so pip installs only hts_jax offline and checks that the core's and the
  extra's requirements are met by the pinned environment."""
  import site  # pylint: disable=import-outside-toplevel
  import sysconfig  # pylint: disable=import-outside-toplevel
  venv = tmp_path / "venv"
  subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
  py = str(venv / "bin" / "python")
  new_site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            check=True, capture_output=True, text=True).stdout.strip()
  ours = [sysconfig.get_paths()["purelib"]] + site.getsitepackages()
  with open(os.path.join(new_site, "outer_site.pth"), "w") as f:
    f.write("\n".join(dict.fromkeys(p for p in ours if p != new_site)) + "\n")
  pip = [py, "-m", "pip", "--disable-pip-version-check", "--no-input"]
  p = subprocess.run(pip + ["install", "--no-index", "--no-build-isolation", f"{ROOT}[atari]",
                            "-c", os.path.join(ROOT, "requirements.txt")],
                     capture_output=True, text=True, timeout=600, cwd=tmp_path)
  assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
  elsewhere = tmp_path / "elsewhere"
  elsewhere.mkdir()
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"

  def run(*cmd, code=0):
    proc = subprocess.run(list(cmd), cwd=elsewhere, capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == code, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout + proc.stderr

  where = run(py, "-c", "import hts_jax; print(hts_jax.__file__)").strip()
  assert where.startswith(new_site), where  # the installed copy, not the clone
  out = run("hts-train", "--preset=cartpole_ppo", "--total_steps=4096", "--logdir=cartpole",
            "--notensorboard")
  assert "done: 4,096 env steps" in out
  out = run("hts-train", "--env=atari:Breakout", "--num_envs=4", "--num_executors=2",
            "--alpha=20", "--total_steps=200", "--eval_episodes=1", "--eval_max_steps=200",
            "--logdir=breakout", "--notensorboard")
  assert "done: " in out and os.path.exists(elsewhere / "breakout" / "summary.json")
  with open(elsewhere / "breakout" / "summary.json") as f:
    code = json.load(f)["host"]["code"]  # outside a clone: the version (no git URL, no commit)
  assert code == {"version": hts_jax.__version__, "commit": None, "dirty": None,
                  "source": "installed"}, code
  out = run("hts-report", str(elsewhere / "cartpole"))
  assert "CartPole-v1" in out
  # docs/library.md's sweeps, from the installed package (one setting, two seeds, resumed).
  sweep = ("from hts_jax.runs import sweeps\n"
           "task = dict(preset='cartpole_ppo', num_envs=4, total_steps=512, eval_every=256,\n"
           "            eval_episodes=1, tensorboard=False)\n"
           "for _ in range(2):\n"
           "  rows = sweeps.run_grid({'policy_lag': [0]}, task, 'sweep', seeds=[0, 1], last=1)\n"
           "print(sweeps.format_summary(sweeps.summarize(rows, ['policy_lag'], 'sps')))")
  out = run(py, "-c", sweep)
  assert "| 0 | " in out and "done before: " in out and len(os.listdir(elsewhere / "sweep")) == 2
  assert "Processes to start on this machine" in run("hts-launch", "--helpshort")
  # A grid is its clone's data (results/<grid>/grid.toml): outside a clone, one line says so.
  assert "a grid is its clone's data" in run("hts-reproduce", "memory", "--dry_run", code=2)
  assert "error: num_processes must be >= 1" in run("hts-launch", "--num_processes=0", code=2)
