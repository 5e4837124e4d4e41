"""Run tracking beyond metrics.csv (host side): TensorBoard event files in the logdir and an
optional Weights & Biases run, fed the same scalars, text and videos.

`Tracker` hands everything to its sinks on a thread of its own: tensorboardX spends ~150-200 us
on one update's row (protobufs and its own queue), time the controller thread, which the rollout
waits for at every boundary, should not spend. A sink that fails is dropped with one warning
line; it never stops training.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import sys
import threading
import uuid
from typing import Any, Dict, List, Optional

import numpy as np

from hts_jax.config import ConfigError
from hts_jax.runtime.outputs import files, video as video_lib
from hts_jax.runtime import errors
from hts_jax.runtime.errors import RunError


class TensorBoardSink:
  """Event files in `logdir` (tensorboardX): one event per row of scalars, text, and videos as
  animated GIFs (TensorBoard's images tab plays them). `purge_step`: a resumed run hides the
  events at and after it that the interrupted session wrote."""

  def __init__(self, logdir: str, purge_step: Optional[int] = None):
    from tensorboardX import SummaryWriter  # pylint: disable=import-outside-toplevel
    self._writer = SummaryWriter(logdir, purge_step=purge_step, flush_secs=10)

  def _add(self, values: List[Any], step: int) -> None:
    from tensorboardX.proto.summary_pb2 import Summary  # pylint: disable=import-outside-toplevel
    # tensorboardX's add_* write one event per value; a row is one event here.
    self._writer._get_file_writer().add_summary(Summary(value=values), step)  # pylint: disable=protected-access

  def scalars(self, values: Dict[str, float], step: int) -> None:
    from tensorboardX.proto.summary_pb2 import Summary  # pylint: disable=import-outside-toplevel
    self._add([Summary.Value(tag=k, simple_value=v) for k, v in values.items()], step)

  def text(self, tag: str, text: str) -> None:
    self._writer.add_text(tag, text, 0)

  def video(self, tag: str, recording: video_lib.Recording, step: int) -> None:
    from tensorboardX.proto.summary_pb2 import Summary  # pylint: disable=import-outside-toplevel
    _, h, w, c = recording.preview.shape
    image = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=(
        video_lib.gif_bytes(recording.preview, recording.preview_fps)))
    self._add([Summary.Value(tag=tag, image=image)], step)

  def flush(self) -> None:
    self._writer.flush()

  def close(self) -> None:
    self._writer.close()

  def abandon(self) -> None:
    """After a failed write (a full disk): stops tensorboardX's event writers without the final
    flush, which would fail again at exit (its atexit hook) as a traceback."""
    for writer in (self._writer.all_writers or {}).values():
      events = writer.event_writer
      if not events._closed:  # pylint: disable=protected-access
        events._closed = True  # pylint: disable=protected-access
        with contextlib.suppress(Exception):
          events._worker.stop()  # pylint: disable=protected-access


class WandbSink:
  """A W&B run named after the logdir, its files in `<logdir>/wandb`, the run's config as its
  config; every value is logged against `env_steps`. Its id is kept in `<logdir>/wandb/run_id`, so
  a resumed run (`--resume`) continues the same W&B run."""

  def __init__(self, logdir: str, config: Dict[str, Any], project: str, entity: str = "",
               mode: str = "online"):
    import wandb  # pylint: disable=import-outside-toplevel
    self._wandb = wandb
    root = os.path.join(os.path.abspath(logdir), "wandb")
    os.makedirs(root, exist_ok=True)
    id_path = os.path.join(root, "run_id")
    run_id = uuid.uuid4().hex[:12]
    if os.path.lexists(id_path):
      with files.open_read(id_path, "r") as f:
        run_id = f.read(64).strip()
    # console="off": W&B does not wrap stdout/stderr, which the runtime's threads and processes
    # share; the progress lines stay the launcher's.
    self._run = wandb.init(project=project, entity=entity or None, dir=os.path.dirname(root),
                           name=os.path.basename(os.path.abspath(logdir)), id=run_id,
                           resume="allow", config=config, mode=mode,
                           settings=wandb.Settings(console="off", silent=True))
    files.write_atomic(id_path, lambda f: f.write(run_id + "\n"))
    self._run.define_metric("env_steps")
    self._run.define_metric("*", step_metric="env_steps")

  def scalars(self, values: Dict[str, float], step: int) -> None:
    self._run.log(dict(values, env_steps=step))

  def text(self, tag: str, text: str) -> None:
    del tag, text  # the config is the W&B run's config

  def video(self, tag: str, recording: video_lib.Recording, step: int) -> None:
    fmt = os.path.splitext(recording.path)[1].lstrip(".")
    self._run.log({tag: self._wandb.Video(recording.path, format=fmt), "env_steps": step})

  def flush(self) -> None:
    pass  # W&B's own process writes as it goes

  def close(self) -> None:
    self._run.finish()


class Tracker:
  """Scalars (`{tag: number}` at an env step), text and videos to every sink, written on the
  tracker's thread in the order given; `flush()` waits for what is queued."""

  def __init__(self, sinks: List[Any]):
    self.sinks = list(sinks)
    self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
    self._thread = threading.Thread(target=self._loop, name="tracker", daemon=True)
    self._thread.start()

  def scalars(self, values: Dict[str, Any], step: int) -> None:
    """Queues the numeric values (None and non-numbers are left out)."""
    numbers = {k: float(v) for k, v in values.items()
               if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)}
    if numbers:
      self._queue.put(("scalars", numbers, int(step)))

  def text(self, tag: str, text: str) -> None:
    self._queue.put(("text", tag, text))

  def video(self, tag: str, recording: video_lib.Recording, step: int) -> None:
    self._queue.put(("video", tag, recording, int(step)))

  def flush(self) -> None:
    done = threading.Event()
    self._queue.put(("flush", done))
    done.wait()

  def close(self) -> None:
    self._queue.put(None)
    self._thread.join()

  def _loop(self) -> None:
    while True:
      item = self._queue.get()
      if item is None:
        break
      kind, *args = item
      if kind == "flush":
        self._call("flush")
        args[0].set()
        continue
      self._call(kind, *args)
    self._call("close")

  def _call(self, method: str, *args) -> None:
    for sink in list(self.sinks):
      try:
        getattr(sink, method)(*args)
      except Exception as e:  # pylint: disable=broad-except
        self.sinks.remove(sink)
        with contextlib.suppress(Exception):
          getattr(sink, "abandon", lambda: None)()
        if errors.is_full_disk(e):  # the run stops with one line (Controller._notify)
          errors.record_output_error(e)
          continue
        print(f"warning: {type(sink).__name__} stopped: {type(e).__name__}: {e}".splitlines()[0],
              file=sys.stderr, flush=True)


def open_tracker(config, purge_step: Optional[int] = None) -> Optional[Tracker]:
  """The run's tracker (None when neither TensorBoard nor W&B is on); the config goes to both
  (TensorBoard: as text). Raises RunError (one line) where W&B cannot start a run."""
  config_dict = json.loads(json.dumps(config.to_dict()))
  sinks: List[Any] = []
  if config.outputs.tensorboard:
    sinks.append(TensorBoardSink(config.outputs.logdir, purge_step))
  if config.outputs.wandb_project:
    try:
      sinks.append(WandbSink(config.outputs.logdir, config_dict, config.outputs.wandb_project,
                             config.outputs.wandb_entity, config.outputs.wandb_mode))
    except Exception as e:  # pylint: disable=broad-except
      for sink in sinks:
        sink.close()
      raise RunError(f"W&B: {type(e).__name__}: {e}".splitlines()[0]) from e
  if not sinks:
    return None
  tracker = Tracker(sinks)
  tracker.text("config", "```\n" + json.dumps(config_dict, indent=1, sort_keys=True) + "\n```")
  return tracker


def check_packages(config) -> None:
  """Refuses (ConfigError, one line) an output option whose package is not installed:
  --tensorboard needs tensorboardX, --wandb_project wandb. Checked where a run starts
  (`modes.make_runner`), not when a config is built, so configs can be made on any machine."""
  for flag, module, extra, wanted in (
      ("tensorboard", "tensorboardX", "", config.outputs.tensorboard),
      ("wandb_project", "wandb", "tracking", bool(config.outputs.wandb_project))):
    if wanted and importlib.util.find_spec(module) is None:
      how = f'pip install "hts_jax[{extra}]"' if extra else f"pip install {module}"
      raise ConfigError(f"--{flag} needs the {module} package: {how} (a clone: "
                        "pip install -r requirements.txt)")
