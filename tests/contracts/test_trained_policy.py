"""The trained policy is kept, evaluated and loaded: every run ends by exporting its final params
(`<logdir>/policy/`, whatever --checkpoint_every says); `hts-eval` evaluates the export and
replays the run's own evaluations exactly; `hts_jax.load_policy` loads the same bits, and the
docs' snippet runs."""

import json
import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

import hts_jax
from hts_jax.config import LearnerConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import reporting
from tests.support import ROOT
from tests.support.runs import small_config

RUN = dict(env="CartPole-v1", alpha=8, num_envs=8, num_executors=2, total_steps=8 * 8 * 4,
           seed=3, eval_episodes=4, learner=LearnerConfig(algo="a2c", unroll_length=8))


def hts_eval(*args):
  return subprocess.run([sys.executable, "-m", "experiments.eval", *args], cwd=ROOT,
                        capture_output=True, text=True, timeout=300)


@pytest.mark.smoke
def test_a_finished_run_keeps_its_policy_and_hts_eval_replays_its_evaluation(tmp_path):
  s = modes.run(small_config(tmp_path, "run", base=RUN))  # --checkpoint_every=0
  logdir = tmp_path / "run"
  assert sorted(os.listdir(logdir / "policy")) == ["params.msgpack", "policy.json"]
  policy = hts_jax.load_policy(str(logdir))
  assert reporting.param_sha256(policy.params) == s["param_sha256"]
  assert policy.spec["env_steps"] == s["env_steps"] and policy.spec["greedy"] is True
  # The run's final evaluation (its index 0, 4 episodes), replayed: the same returns.
  out = hts_eval(str(logdir), "--eval_index=0", "--episodes=4", "--json")
  assert out.returncode == 0, out.stderr
  assert json.loads(out.stdout)["returns"] == s["eval"][-1]["returns"]
  # By default, episodes no evaluation of the run played, and one line.
  line = hts_eval(str(logdir / "policy"), "--episodes=2")
  assert line.returncode == 0, line.stderr
  assert re.match(r"CartPole-v1: mean return [\d.]+ \[[\d.]+, [\d.]+\] over 2 episodes "
                  r"\(greedy, evaluation 1\)", line.stdout), line.stdout
  # act: greedy without a key, sampled (reproducibly) with one; a batch in, a batch out.
  obs = np.stack([policy.make_env().reset(seed=i)[0] for i in range(3)])
  greedy = policy.act(obs)
  assert greedy.shape == (3,) and np.array_equal(greedy, policy.act(obs))
  key = jax.random.PRNGKey(1)
  assert np.array_equal(policy.act(obs, key), policy.act(obs, key))
  with pytest.raises(ValueError, match="feed-forward"):
    policy.act(obs, key, policy.initial_state(3))


@pytest.mark.slow
def test_a_recurrent_policy_acts_with_its_core_states(tmp_path):
  run = dict(RUN, env="hts_jax/CartPoleNoVel-v1", core="lstm", core_size=16,
             learner=LearnerConfig(algo="ppo", minibatch="envs", num_minibatches=1))
  s = modes.run(small_config(tmp_path, "lstm", base=run))
  policy = hts_jax.load_policy(str(tmp_path / "lstm"))
  assert reporting.param_sha256(policy.params) == s["param_sha256"] and policy.recurrent
  obs = np.zeros((2,) + policy.obs_shape, np.float32)
  actions, state = policy.act(obs, jax.random.PRNGKey(0), policy.initial_state(2))
  assert actions.shape == (2,) and state.shape == (2, 32)
  with pytest.raises(ValueError, match="core states"):
    policy.act(obs)


@pytest.mark.slow
def test_the_docs_snippet_runs(tmp_path):
  """docs/library.md's "A trained policy" block, run as written from a folder holding
  runs/quickstart."""
  modes.run(small_config(tmp_path / "runs", "quickstart", base=RUN))
  text = open(os.path.join(ROOT, "docs", "library.md")).read()
  section = text[text.index("## A trained policy"):]
  code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
  out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
  assert out.returncode == 0, out.stderr
  assert re.fullmatch(r"return \d+\.0\n", out.stdout)


def test_hts_eval_errors_are_one_line(tmp_path):
  for args in ([str(tmp_path)], []):
    out = hts_eval(*args)
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
  assert "no exported policy" in hts_eval(str(tmp_path)).stderr
