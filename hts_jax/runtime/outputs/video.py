"""Evaluation videos (host side): the recording env, a virtual X display where one is needed, and
the video file.

A recording env is an evaluation env (`envs.make_env(..., train=False, render=True)`) whose
`render()` gives RGB frames: gymnasium's `rgb_array` (CartPole through pygame), the Atari
emulator's screen (ale-py's `getScreenRGB`, 210x160, one frame per frame-skipped step),
MinAtar's channels in colours (100x100, 20 fps from the env's `render_fps`), GFootball's OpenGL
renderer (640x360), which needs an X display: `$DISPLAY`, else an Xvfb server
started once for this process. Frames go to an H.264 mp4 through the ffmpeg binary that
imageio-ffmpeg ships, or to a GIF (Pillow) where that encoder cannot run; a downscaled copy of
at most `PREVIEW_FRAMES` frames is kept for TensorBoard and W&B.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import io
import os
import select
import shutil
import subprocess
import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from hts_jax import envs
from hts_jax.choices import family_of
from hts_jax.config import ConfigError
from hts_jax.runtime.outputs import files

# Frames recorded per episode at most (the episode is cut there): 4 minutes of Atari at 15 fps,
# a whole 11-vs-11 GFootball game (3,000 steps).
MAX_FRAMES = 3_600
# The preview (TensorBoard's GIF, the GIF fallback file): frames downscaled by an integer factor
# to at most this many pixels a side, every k-th frame so that at most PREVIEW_FRAMES are kept.
PREVIEW_SIDE = 256
PREVIEW_FRAMES = 1_000


def fps(env_name: str, env) -> float:
  """Frames per second of real (game) time for the recording env's frames: its family's
  (`choices.FAMILIES`), else the env's `render_fps`."""
  family = family_of(env_name)
  if family is not None and family.video_fps:
    return family.video_fps
  return float(env.metadata.get("render_fps") or 30)


def make_recording_env(env_name: str, env_kwargs: Dict[str, Any]):
  """An evaluation env whose `render()` returns RGB frames (an X display is started for
  GFootball where there is none). Raises ConfigError (one line) for envs that render none."""
  family = family_of(env_name)
  if family is not None and family.needs_display:
    ensure_display()
  else:
    _sdl_video_driver()
    _mujoco_gl()
  return envs.make_env(env_name, env_kwargs, train=False, render=True)


def _mujoco_gl() -> None:
  """MuJoCo's frames without a display: OSMesa, software OpenGL (the apt package libosmesa6),
  unless MUJOCO_GL says otherwise (e.g. egl on a GPU machine). Set before PyOpenGL loads."""
  if not os.environ.get("DISPLAY") and "MUJOCO_GL" not in os.environ:
    os.environ["MUJOCO_GL"] = "osmesa"
    os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")


def _sdl_video_driver() -> None:
  """pygame's rgb_array frames need no display, but without one SDL prints an `error:` line for
  every env: SDL's dummy video driver then (GFootball's env drops it again: its OpenGL needs
  SDL's X11 driver, `hts_jax.envs.gfootball`)."""
  if not os.environ.get("DISPLAY") and "SDL_VIDEODRIVER" not in os.environ:
    os.environ["SDL_VIDEODRIVER"] = "dummy"


@contextlib.contextmanager
def _exec_child():
  """Starting a subprocess (fork + exec) trips JAX's warning about os.fork(), which is meant for
  children that go on running Python; these exec at once."""
  with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
    yield


def check_recordable(env_name: str, env_kwargs: Dict[str, Any], seed: int = 0) -> None:
  """Makes the recording env and renders its first frame: a run that records videos fails
  before it starts, with one line, where it could not."""
  import gymnasium as gym  # pylint: disable=import-outside-toplevel
  try:
    env = make_recording_env(env_name, env_kwargs)
    try:
      env.reset(seed=seed)
      frame = env.render()
    finally:
      env.close()
  except (gym.error.DependencyNotInstalled, ImportError) as e:  # a lean install: name the extra
    raise ConfigError(f"--video_every/--video_final: recording {env_name!r} needs what the "
                      f"tracking extra installs ({str(e).splitlines()[0]}): "
                      "pip install \"hts_jax[tracking]\"") from None
  if not (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[-1] == 3):
    raise ConfigError(f"--video_every/--video_final: env {env_name!r} renders no RGB frames "
                      f"(render() gave {type(frame).__name__} "
                      f"{getattr(frame, 'shape', '')}); gymnasium envs need render_mode "
                      "'rgb_array'")


# ------------------------------------------------------------------ a virtual display (Xvfb)
_XVFB: List[subprocess.Popen] = []


def ensure_display(timeout_s: float = 10.0) -> str:
  """`$DISPLAY`, or a virtual one: an Xvfb server (it picks a free display number) started once
  for this process, stopped at its exit. Raises ConfigError where Xvfb is missing or fails."""
  if os.environ.get("DISPLAY"):
    return os.environ["DISPLAY"]
  exe = shutil.which("Xvfb")
  if exe is None:
    raise ConfigError("recording GFootball renders with OpenGL and needs an X display: install "
                      "Xvfb (apt-get install xvfb; .ci/setup.sh does) or set DISPLAY")
  read_fd, write_fd = os.pipe()
  try:
    # Its own session: a terminal's Ctrl-C, which the run handles, does not stop it.
    with _exec_child():
      proc = subprocess.Popen([exe, "-displayfd", str(write_fd), "-screen", "0", "1280x720x24",
                               "-nolisten", "tcp"], pass_fds=(write_fd,),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    os.close(write_fd)
    number = b""
    while not number.endswith(b"\n"):
      ready, _, _ = select.select([read_fd], [], [], timeout_s)
      chunk = os.read(read_fd, 16) if ready else b""
      if not chunk:
        break
      number += chunk
  finally:
    os.close(read_fd)
  if not number.strip().isdigit():
    proc.kill()
    err = proc.communicate()[1].decode(errors="replace").strip().splitlines()
    raise ConfigError(f"Xvfb did not start a display for GFootball's renderer"
                      f"{': ' + err[-1] if err else ''}")
  _XVFB.append(proc)
  if len(_XVFB) == 1:
    atexit.register(stop_displays)
  os.environ["DISPLAY"] = f":{int(number)}"
  return os.environ["DISPLAY"]


def stop_displays() -> None:
  """Stops the Xvfb servers this process started."""
  while _XVFB:
    proc = _XVFB.pop()
    proc.terminate()
    try:
      proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()


# ------------------------------------------------------------------ the video file
@dataclasses.dataclass(frozen=True)
class Recording:
  """A recorded episode: its file, frame count, fps and a downscaled preview `[T', h, w, 3]`
  (every `preview_stride`-th frame) for TensorBoard."""
  path: str
  frames: int
  fps: float
  preview: np.ndarray
  preview_stride: int

  @property
  def preview_fps(self) -> float:
    return self.fps / self.preview_stride


def ffmpeg_exe() -> Optional[str]:
  """The ffmpeg binary imageio-ffmpeg ships (None where it is not installed or not found)."""
  try:
    import imageio_ffmpeg  # pylint: disable=import-outside-toplevel
    return imageio_ffmpeg.get_ffmpeg_exe()
  except (ImportError, RuntimeError):
    return None


class VideoFile:
  """Frames `[H, W, 3]` uint8, one `add` each, to `<stem>.mp4` (H.264, streamed through ffmpeg) or,
  where no ffmpeg runs, `<stem>.gif` of the preview frames. `close()` returns the Recording."""

  def __init__(self, stem: str, fps_: float):
    self.stem, self.fps = stem, float(fps_)
    os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
    self._mp4 = None  # imageio-ffmpeg's write_frames generator, opened at the first frame
    self._use_gif = ffmpeg_exe() is None
    self._frames = 0
    self._preview: List[np.ndarray] = []
    self._stride = 1
    self._shape = None

  def add(self, frame: np.ndarray) -> None:
    frame = np.ascontiguousarray(frame, np.uint8)
    if self._shape is None:
      self._shape = frame.shape
      if not self._use_gif:
        self._open_mp4(frame.shape)
    if frame.shape != self._shape:
      raise ValueError(f"frame {self._frames} has shape {frame.shape}, not {self._shape}")
    if self._mp4 is not None:
      self._mp4.send(_even(frame))
    if self._frames % self._stride == 0:
      self._preview.append(downscale(frame, PREVIEW_SIDE))
      if len(self._preview) > PREVIEW_FRAMES:  # keep every other one: the stride doubles
        self._preview = self._preview[::2]
        self._stride *= 2
    self._frames += 1

  def _open_mp4(self, shape) -> None:
    import imageio_ffmpeg  # pylint: disable=import-outside-toplevel
    h, w = shape[0] - shape[0] % 2, shape[1] - shape[1] % 2
    _unlink_planted(f"{self.stem}.mp4")  # ffmpeg opens its output itself, following a link
    try:
      gen = imageio_ffmpeg.write_frames(f"{self.stem}.mp4", (w, h), fps=self.fps,
                                        codec="libx264", macro_block_size=1,
                                        ffmpeg_log_level="error")
      with _exec_child():
        gen.send(None)  # starts ffmpeg
      self._mp4 = gen
    except (OSError, RuntimeError):  # no runnable ffmpeg: a GIF instead
      self._use_gif = True

  def close(self) -> Recording:
    preview = (np.stack(self._preview) if self._preview else np.zeros((0, 1, 1, 3), np.uint8))
    if self._mp4 is not None:
      self._mp4.close()
      path = f"{self.stem}.mp4"
    else:
      path = f"{self.stem}.gif"
      data = gif_bytes(preview, self.fps / self._stride)
      files.write_atomic(path, lambda f: f.write(data), mode="wb")
    return Recording(path, self._frames, self.fps, preview, self._stride)


def _unlink_planted(path: str) -> None:
  """Removes a link, FIFO or device planted where a video will be written (the entry goes, not
  what a link points to)."""
  try:
    files.check_regular(path)
  except files.NotRegular:
    with contextlib.suppress(OSError):  # a folder stays: ffmpeg then fails on it, in one line
      os.remove(path)


def _even(frame: np.ndarray) -> np.ndarray:
  """H.264 in yuv420p needs even sides: an odd row or column is cut."""
  h, w = frame.shape[:2]
  return frame[:h - h % 2, :w - w % 2]


def downscale(frame: np.ndarray, side: int) -> np.ndarray:
  """Every k-th pixel, k the smallest integer that brings both sides to at most `side`."""
  k = -(-max(frame.shape[:2]) // side)
  return frame[::k, ::k] if k > 1 else frame


def gif_bytes(frames: np.ndarray, fps_: float) -> bytes:
  """An animated GIF (looping) of `frames` `[T, H, W, 3]` uint8."""
  from PIL import Image  # pylint: disable=import-outside-toplevel
  images = [Image.fromarray(f) for f in frames]
  if not images:
    images = [Image.new("RGB", (1, 1))]
  buf = io.BytesIO()
  images[0].save(buf, format="GIF", save_all=True, append_images=images[1:],
                 duration=max(20, int(round(1000 / max(fps_, 1e-3)))), loop=0)
  return buf.getvalue()
