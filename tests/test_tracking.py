"""Run outputs around training: TensorBoard event files, evaluation videos, offline W&B, the
installable package."""

import csv
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hts_jax.config import ConfigError, LearnerConfig, RunConfig, incompatible_changes
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import tracking, video
from hts_jax.runtime.outputs.evaluation import Evaluator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cartpole(tmp_path, name, **kw):
  base = dict(env="CartPole-v1", alpha=16, num_envs=8, num_executors=2, total_steps=8 * 16 * 6,
              seed=3, logdir=str(tmp_path / name), eval_episodes=2, eval_every=256,
              log_every_s=1e9, learner=LearnerConfig(algo="ppo", num_minibatches=4, ppo_epochs=2,
                                                     optimizer="adam", learning_rate=1e-3))
  base.update(kw)
  return RunConfig.make(**base)


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


def _frames(path):
  """An mp4's frames `[T, H, W, 3]`, decoded by imageio-ffmpeg's ffmpeg."""
  import imageio_ffmpeg  # pylint: disable=import-outside-toplevel
  gen = imageio_ffmpeg.read_frames(path)
  w, h = next(gen)["size"]
  return np.stack([np.frombuffer(f, np.uint8).reshape(h, w, 3) for f in gen])


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
  assert recorded["eval"] == [dict(e, wall_time_s=r["wall_time_s"])
                              for e, r in zip(plain["eval"], recorded["eval"])]


def test_cartpole_videos_have_one_frame_per_step(runs):
  tmp, _, recorded = runs
  videos = recorded["videos"]
  assert [(v["env_steps"], v["final"]) for v in videos] == [(384, False), (640, False),
                                                            (768, True)]
  for v in videos:
    assert os.path.dirname(v["path"]) == str(tmp / "video" / "videos")
    frames = _frames(v["path"])
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


def _cnn_evaluator(env, tmp_path, **kw):
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  from hts_jax import envs, networks  # pylint: disable=import-outside-toplevel
  info = envs.env_info(env, {})
  net = networks.make_network("cnn", info.num_actions)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + info.obs_shape, info.obs_dtype))
  ev = Evaluator(env, {}, net.apply, 1, seed=0, video_dir=str(tmp_path), **kw)
  return ev, params


def test_breakout_video_shows_the_emulator_screen(tmp_path, monkeypatch):
  monkeypatch.setattr(video, "MAX_FRAMES", 120)  # the episode is cut there
  ev, params = _cnn_evaluator("atari:Breakout", tmp_path, greedy=False)
  try:
    out = ev.record(params, 1000)
  finally:
    ev.close()
  assert out["path"] == str(tmp_path / "eval-000000001000.mp4") and out["frames"] == 120
  assert out["return"] is None  # cut before the game ended
  frames = _frames(out["path"])
  assert frames.shape == (120, 210, 160, 3)
  assert len({f.tobytes() for f in frames}) > 10  # the ball and the paddle move
  assert frames[0].std() > 10  # walls, bricks and the score on black


def test_gif_where_no_encoder_runs(tmp_path, monkeypatch):
  monkeypatch.setattr(video, "ffmpeg_exe", lambda: None)
  out = video.VideoFile(str(tmp_path / "clip"), 25)
  for t in range(30):
    out.add(np.full((9, 13, 3), 8 * t, np.uint8))
  rec = out.close()
  from PIL import Image  # pylint: disable=import-outside-toplevel
  with Image.open(rec.path) as gif:
    assert rec.path.endswith(".gif") and gif.n_frames == rec.frames == 30


def test_preview_keeps_every_kth_frame(tmp_path, monkeypatch):
  monkeypatch.setattr(video, "PREVIEW_FRAMES", 8)
  monkeypatch.setattr(video, "ffmpeg_exe", lambda: None)
  out = video.VideoFile(str(tmp_path / "clip"), 40)
  for t in range(20):
    out.add(np.full((600, 300, 3), t, np.uint8))
  assert out._stride == 4 and [int(f[0, 0, 0]) for f in out._preview] == [0, 4, 8, 12, 16]
  assert out._preview[0].shape == (200, 100, 3)  # every 3rd pixel: at most 256 a side


@pytest.mark.slow  # GFootball's OpenGL renders in software here: ~0.3-0.5 s a frame on 2 cores
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
from tests.test_tracking import _cnn_evaluator, _frames
video.MAX_FRAMES = 8
ev, params = _cnn_evaluator("gfootball:academy_empty_goal_close", {str(tmp_path)!r})
try:
  out = ev.record(params, 7)
finally:
  ev.close()
frames = _frames(out["path"])
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


def test_tracker_drops_a_failing_sink_and_goes_on(capsys):
  class Broken:
    def scalars(self, values, step):
      raise OSError("disk full")

  class Kept:
    def __init__(self):
      self.rows = []

    def scalars(self, values, step):
      self.rows.append((step, values))

    def flush(self):
      pass

    def close(self):
      self.rows.append("closed")

  kept = Kept()
  tracker = tracking.Tracker([Broken(), kept])
  tracker.scalars({"a": 1, "b": None, "c": np.float32(2.5), "d": "text"}, 10)
  tracker.scalars({"a": 2}, 20)
  tracker.flush()
  tracker.close()
  assert kept.rows == [(10, {"a": 1.0, "c": 2.5}), (20, {"a": 2.0}), "closed"]
  err = capsys.readouterr().err.strip().splitlines()
  assert err == ["warning: Broken stopped: OSError: disk full"]


def test_bad_output_options_fail_with_one_line(monkeypatch):
  with pytest.raises(ConfigError, match="video_every must be >= 0"):
    RunConfig.make(video_every=-1)
  with pytest.raises(ConfigError, match="wandb_mode must be one of"):
    RunConfig.make(wandb_mode="maybe")
  real = tracking.importlib.util.find_spec
  monkeypatch.setattr(tracking.importlib.util, "find_spec",
                      lambda name, *a: None if name == "wandb" else real(name, *a))
  cfg = RunConfig.make(wandb_project="p")  # a config can be built anywhere; a run needs the package
  with pytest.raises(ConfigError, match=r"--wandb_project needs the wandb package"):
    tracking.check_packages(cfg)
  tracking.check_packages(RunConfig.make(wandb_project=""))  # not asked for: not needed
  with pytest.raises(ConfigError, match="vstep renders no frames"):
    video.check_recordable("vstep", {})


def test_output_options_do_not_block_a_resume():
  saved = json.loads(json.dumps(RunConfig().to_dict()))
  for name in ("tensorboard", "video_every", "video_final", "wandb_project", "wandb_entity",
               "wandb_mode"):
    del saved[name]  # a checkpoint written before these options existed
  now = RunConfig.make(tensorboard=False, video_every=1000, video_final=True, wandb_project="p",
                  wandb_mode="offline")
  assert incompatible_changes(saved, json.loads(json.dumps(now.to_dict()))) == {}
