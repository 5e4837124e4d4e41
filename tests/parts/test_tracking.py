"""Run outputs around training: evaluation videos (the emulator's screen, GIF without an encoder,
previews), the tracker's sinks (a failing one is dropped), its options' one-line errors and
their freedom to change on resume."""

import json

import numpy as np
import pytest

from hts_jax.config import ConfigError, RunConfig, incompatible_changes
from hts_jax.runtime.outputs import tracking, video
from tests.support.runs import cnn_evaluator, video_frames


def test_breakout_video_shows_the_emulator_screen(tmp_path, monkeypatch):
  monkeypatch.setattr(video, "MAX_FRAMES", 120)  # the episode is cut there
  ev, params = cnn_evaluator("atari:Breakout", tmp_path, greedy=False)
  try:
    out = ev.record(params, 1000)
  finally:
    ev.close()
  assert out["path"] == str(tmp_path / "eval-000000001000.mp4") and out["frames"] == 120
  assert out["return"] is None  # cut before the game ended
  frames = video_frames(out["path"])
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
