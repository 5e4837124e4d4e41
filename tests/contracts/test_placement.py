"""Device placement (`--learner_devices`, `--actor_devices`) on forced CPU devices: overlapping or
disjoint sets run, give the same bits for any actor count, move no bit when only the placement
changes, and compile nothing after the clock starts."""

import functools
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from hts_jax.runtime import modes
from hts_jax.runtime.placement import COMPILES
from tests.support import ROOT
from tests.support.runs import small_config



@pytest.mark.smoke
def test_compile_log_sees_compilations():
  COMPILES.start()
  jax.jit(lambda x: x * 3 + 1)(np.arange(5.0))
  assert any("lambda" in name for name in COMPILES.since_start())


RUN = dict(env="CartPole-v1", alpha=5, num_envs=8, num_executors=2, total_steps=8 * 5 * 10,
           seed=5, eval_every=8 * 5 * 4,
           eval_episodes=2)
_config = functools.partial(small_config, base=RUN)


def test_placement_changes_no_bit_and_nothing_compiles_in_the_run(tmp_path):
  """Learner on device 1 and actors (and the evaluator) on device 0 compute what one device
  computes; no XLA compilation happens after the clock starts (evaluations included)."""
  assert len(jax.devices()) == 2, "conftest forces 2 host devices"
  one = modes.run(_config(tmp_path, "one"))
  split = modes.run(_config(tmp_path, "split", learner_devices=(1,), actor_devices=(0,)))
  sync = modes.run(_config(tmp_path, "sync", mode="sync", learner_devices=(1,),
                           actor_devices=(0,)))
  assert one["param_sha256"] == split["param_sha256"]
  assert [e["returns"] for e in one["eval"]] == [e["returns"] for e in split["eval"]]
  for s in (one, split, sync):
    assert s["compiled_during_run"] == [], s["compiled_during_run"]


def _train(logdir, devices, *flags):
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
  proc = subprocess.run([sys.executable, "-m", "experiments.train", f"--logdir={logdir}",
                         "--log_every_s=1000", *flags], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=600, check=False)
  return proc


def test_disjoint_learner_and_actor_devices(tmp_path):
  """4 learner devices and 2 actor devices, disjoint (it used to fail with 'Received
  incompatible devices for jitted computation'): runs, one hash for 1 or 3 actors, no
  compilation in the run."""
  flags = ["--num_envs=8", "--num_executors=2", "--alpha=5", "--total_steps=400", "--seed=2",
           "--learner_devices=0,1,2,3", "--actor_devices=4,5", "--eval_every=200",
           "--eval_episodes=2"]
  out = []
  for actors in (1, 3):
    logdir = str(tmp_path / f"a{actors}")
    proc = _train(logdir, 6, *flags, f"--num_actors={actors}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(os.path.join(logdir, "summary.json")) as f:
      out.append(json.load(f))
  assert out[0]["param_sha256"] == out[1]["param_sha256"]
  assert out[0]["compiled_during_run"] == out[1]["compiled_during_run"] == []
  assert out[0]["config"]["learner_devices"] == [0, 1, 2, 3]


@pytest.mark.smoke
def test_bad_device_flags_are_one_line_errors(tmp_path):
  proc = _train(str(tmp_path / "bad"), 2, "--learner_devices=7", "--total_steps=100")
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines()[-1] == (
      "error: learner_devices=7: this process has 2 local cpu device(s), no index 7")
  proc = _train(str(tmp_path / "dup"), 2, "--actor_devices=0,0", "--total_steps=100")
  assert proc.returncode == 2 and "distinct device indices" in proc.stderr
  proc = _train(str(tmp_path / "nan"), 2, "--actor_devices=a", "--total_steps=100")
  assert proc.returncode == 2 and "comma-separated integers" in proc.stderr
