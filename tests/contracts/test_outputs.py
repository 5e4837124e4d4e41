"""Run outputs around training, in whole runs: TensorBoard event files with every figure, evaluation
videos that change no bit, offline W&B, a resumed run's TensorBoard log, GFootball video under a
virtual display."""

import csv
import functools
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hts_jax.config import LearnerConfig, RunConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint
from tests.support import ROOT
from tests.support.runs import small_config, video_frames


CARTPOLE = dict(env="CartPole-v1", alpha=16, num_envs=8, num_executors=2, total_steps=8 * 16 * 6,
                seed=3, eval_episodes=2, eval_every=256,
                learner=LearnerConfig(algo="ppo", num_minibatches=4, ppo_epochs=2,
                                      optimizer="adam", learning_rate=1e-3))


cartpole = functools.partial(small_config, base=CARTPOLE)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  """The same CartPole run twice: plain (TensorBoard on, the default) and recording videos every
  300 env steps and at the end, logging to an offline W&B run too."""
  tmp = tmp_path_factory.mktemp("tracking")
  plain = modes.run(cartpole(tmp, "plain"))
  os.environ["WANDB_MODE"] = "offline"  # belt and braces: no network, whatever the flag says
  try:
    recorded = modes.run(cartpole(tmp, "video", video_every=300, video_final=True,
                                  wandb_project="hts-jax-tests", wandb_mode="offline"))
  finally:
    del os.environ["WANDB_MODE"]
  return tmp, plain, recorded


def _events(logdir):
  from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # pylint: disable=import-outside-toplevel
  acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "images": 0, "tensors": 0})
  acc.Reload()
  return acc


def test_tensorboard_event_files_hold_every_figure(runs):
  tmp, plain, _ = runs
  logdir = str(tmp / "plain")
  assert glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
  acc = _events(logdir)
  tags = set(acc.Tags()["scalars"])
  for tag in ("train/sps", "train/lag", "train/train_return", "train/updates", "learner/loss",
              "learner/entropy", "learner/grad_norm", "eval/mean_return", "idle/executors",
              "idle/learner", "idle/actors", "efficiency/policy_rows_per_env_step",
              "efficiency/mean_ready_envs_per_actor_call"):
    assert tag in tags, tag
  assert "config/text_summary" in acc.Tags()["tensors"]  # the run's config as text
  evals = [(e.step, e.value) for e in acc.Scalars("eval/mean_return")]
  assert evals == [(e["env_steps"], pytest.approx(e["mean_return"])) for e in plain["eval"]]
  with open(os.path.join(logdir, "metrics.csv")) as f:
    steps = [int(r["env_steps"]) for r in csv.DictReader(f)]
  assert [e.step for e in acc.Scalars("train/lag")] == steps and len(steps) == 6  # per update
  assert "videos" not in plain and not os.path.exists(os.path.join(logdir, "videos"))


def test_videos_do_not_change_training(runs):
  _, plain, recorded = runs
  assert recorded["param_sha256"] == plain["param_sha256"]
  assert recorded["episode_returns"] == plain["episode_returns"]
  assert len(recorded["eval"]) == len(plain["eval"]) == 3
  timed = ("wall_time_s", "eval_s", "eval_cpu_s")
  assert recorded["eval"] == [dict(e, **{k: r[k] for k in timed})
                              for e, r in zip(plain["eval"], recorded["eval"])]


@pytest.mark.smoke
def test_cartpole_videos_have_one_frame_per_step(runs):
  tmp, _, recorded = runs
  videos = recorded["videos"]
  assert [(v["env_steps"], v["final"]) for v in videos] == [(384, False), (640, False),
                                                            (768, True)]
  for v in videos:
    assert os.path.dirname(v["path"]) == str(tmp / "video" / "videos")
    frames = video_frames(v["path"])
    # CartPole: reward 1 per step, so the return is the episode length; a frame after the reset
    # and after every step.
    assert len(frames) == v["frames"] == int(v["return"]) + 1
    assert frames.shape[1:] == (400, 600, 3)
    assert np.abs(np.diff(frames.astype(np.int16), axis=0)).max() > 0  # the pole moves
  # The final video replays the final evaluation's first episode.
  assert videos[-1]["return"] == recorded["eval"][-1]["returns"][0]
  acc = _events(str(tmp / "video"))
  assert [e.step for e in acc.Images("eval/video")] == [384, 640, 768]
  gif = acc.Images("eval/video")[0]
  assert gif.encoded_image_string[:6] == b"GIF89a" and gif.width == 200


def test_offline_wandb_run_is_written(runs):
  tmp, _, _ = runs
  root = tmp / "video" / "wandb"
  [run_dir] = glob.glob(str(root / "offline-run-*"))
  [log] = glob.glob(os.path.join(run_dir, "run-*.wandb"))
  data = open(log, "rb").read()
  for key in (b"train/sps", b"learner/loss", b"eval/mean_return", b"idle/executors",
              b"env_steps", b"video_every", b"hts-jax-tests"):
    assert key in data, key
  assert glob.glob(os.path.join(run_dir, "files", "media", "videos", "eval", "*.mp4"))
  assert open(root / "run_id").read().strip() in os.path.basename(run_dir)


def test_resumed_run_continues_its_tensorboard_log(tmp_path):
  """A run checkpointed at update 2 and resumed (now with videos and W&B: output options may
  change) logs each update once: TensorBoard hides what the first session wrote after the
  checkpoint, as metrics.csv drops it."""
  def cfg(name, segments, **kw):
    return RunConfig.make(env="CartPole-v1", alpha=8, num_envs=4, num_executors=2,
                     total_steps=4 * 8 * segments, seed=9, logdir=str(tmp_path / name),
                     log_every_s=1e9, eval_episodes=1,
                     learner=LearnerConfig(algo="a2c", unroll_length=8), **kw)
  straight = modes.run(cfg("straight", 6))
  modes.run(cfg("split", 4, checkpoint_every=2))
  # A finished run checkpoints its last update too; it is set aside: this resumes mid-way.
  assert checkpoint.steps(str(tmp_path / "split"))[:2] == [4, 2]
  shutil.rmtree(os.path.join(checkpoint.directory(str(tmp_path / "split")), "4"))
  resumed = modes.run(cfg("split", 6, video_every=64, wandb_project="hts-jax-tests",
                          wandb_mode="offline"), resume=True)
  assert resumed["resumed_from_update"] == 2
  assert resumed["param_sha256"] == straight["param_sha256"]
  assert [v["env_steps"] for v in resumed["videos"]] == [128]  # counted from the resume point
  a, b = _events(str(tmp_path / "straight")), _events(str(tmp_path / "split"))
  for tag in ("train/lag", "eval/mean_return", "learner/loss"):
    assert [e.step for e in b.Scalars(tag)] == [e.step for e in a.Scalars(tag)], tag
  assert [e.value for e in b.Scalars("learner/loss")] == [e.value for e in a.Scalars(
      "learner/loss")]
  assert [e.step for e in a.Scalars("train/lag")] == [32, 64, 96, 128, 160, 192]


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is installed by .ci/setup.sh")
def test_gfootball_video_under_a_virtual_display(tmp_path):
  """Without $DISPLAY the recording starts an Xvfb display of its own (and stops it). In a fresh
  interpreter, as in a run: GFootball's renderer binds its process to the first X display it
  rendered on (an in-process env rendered earlier on a display since stopped, as
  test_gfootball's pixels test does, makes the engine exit(1))."""
  pytest.importorskip("gfootball", reason="built by .ci/setup.sh")
  code = f"""
import json
from hts_jax.runtime.outputs import video
from tests.support.runs import cnn_evaluator, video_frames
video.MAX_FRAMES = 8
ev, params = cnn_evaluator("gfootball:academy_empty_goal_close", {str(tmp_path)!r})
try:
  out = ev.record(params, 7)
finally:
  ev.close()
frames = video_frames(out["path"])
[xvfb] = video._XVFB
video.stop_displays()
print(json.dumps({{"shape": list(frames.shape), "frames": out["frames"],
                  "std": float(frames[0].std()), "distinct": len({{f.tobytes() for f in frames}}),
                  "stopped": xvfb.poll() is not None}}))
"""
  env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
  env["PYTHONPATH"] = ROOT
  p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                     text=True, timeout=600)
  assert p.returncode == 0, p.stderr[-2000:]
  out = json.loads(p.stdout.strip().splitlines()[-1])
  assert out["shape"] == [8, 360, 640, 3] and out["frames"] == 8
  assert out["std"] > 10 and out["distinct"] > 1
  assert out["stopped"]
