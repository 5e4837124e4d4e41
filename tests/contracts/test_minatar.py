"""MinAtar as an env family (`minatar:<Game>`) in whole HTS-A2C runs: determinism across actor and
executor counts with evaluations and a video, and a bit-exact resume. The env against MinAtar's
own `Environment`, seeded resets, pickling, frames and the network are in
tests/unit/test_minatar_env.py, the learning check in tests/learning/."""

import functools
import os
import shutil

from hts_jax.config import LearnerConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint
from tests.support.runs import small_config, video_frames


RUN = dict(env="minatar:Breakout", alpha=5, num_envs=8, num_executors=2, num_actors=1,
           total_steps=8 * 5 * 6, seed=4, eval_episodes=3,
           learner=LearnerConfig(algo="a2c", unroll_length=5))
_cfg = functools.partial(small_config, base=RUN)


def test_hts_a2c_is_bitwise_identical_for_any_actor_and_executor_count_with_a_video(tmp_path):
  """(1 actor, 2 executors) and (2 actors, 4 executors) under step-time jitter give the same
  params, episodes and evaluation; the final evaluation's first episode is recorded."""
  a = modes.run(_cfg(tmp_path, "a", num_actors=1, num_executors=2, executor_jitter_s=0.001,
                     video_final=True))
  b = modes.run(_cfg(tmp_path, "b", num_actors=2, num_executors=4, executor_jitter_s=0.001))
  assert a["network"] == "minatar" and a["updates"] == 6
  assert a["param_sha256"] == b["param_sha256"]
  assert a["episode_returns"] == b["episode_returns"]
  assert sum(len(r) for r in a["episode_returns"]) > 8
  assert [e["returns"] for e in a["eval"]] == [e["returns"] for e in b["eval"]]
  assert len(a["eval"][-1]["returns"]) == 3
  video, = a["videos"]
  assert video["path"].endswith(".mp4") and video["return"] == a["eval"][-1]["returns"][0]
  frames = video_frames(video["path"])
  assert frames.shape[1:] == (100, 100, 3) and len(frames) == video["frames"] > 1


def test_hts_a2c_resumes_bit_exact(tmp_path):
  straight = modes.run(_cfg(tmp_path, "straight"))
  modes.run(_cfg(tmp_path, "split", total_steps=8 * 5 * 4, checkpoint_every=2))
  # A finished run checkpoints its last update too; it is set aside: this resumes mid-way.
  assert checkpoint.steps(str(tmp_path / "split"))[:2] == [4, 2]
  shutil.rmtree(os.path.join(checkpoint.directory(str(tmp_path / "split")), "4"))
  resumed = modes.run(_cfg(tmp_path, "split", num_executors=4), resume=True)
  assert resumed["resumed_from_update"] == 2
  assert resumed["param_sha256"] == straight["param_sha256"]
  assert resumed["episode_returns"] == straight["episode_returns"]
