"""The envs' own rate for a run's layout (`hts_jax.runtime.ceiling`): the run's
executors step whole segments of every block with actions drawn inside them, and the rate is their
env steps over the wall time from the moment all are ready."""

import pytest

from hts_jax.config import RunConfig
from hts_jax.runtime import ceiling


@pytest.mark.parametrize("env,executors,actions", [("CartPole-v1", 2, "discrete"),
                                                  ("Pendulum-v1", 1, "continuous")])
def test_every_executor_steps_whole_segments_of_its_envs(tmp_path, env, executors, actions):
  del actions  # the ids' label: a Discrete and a Box action space
  cfg = RunConfig.make(logdir=str(tmp_path), env=env, num_envs=8, num_executors=executors,
                       alpha=16, learner=dict(algo="a2c", unroll_length=16))
  out = ceiling.measure(cfg, 1_000)
  # 1,000 steps of 8 envs at alpha 16: 8 whole segments of 128 env steps.
  assert out["segments"] == 8 and out["env_steps"] == 8 * 16 * 8
  assert len(out["executor_s"]) == executors
  assert 0 < max(out["executor_s"]) <= out["wall_time_s"]
  assert out["sps"] == pytest.approx(out["env_steps"] / out["wall_time_s"])
