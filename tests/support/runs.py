"""The one builder of a small run's config, and readers of what runs write."""

import json
import os

import numpy as np

from hts_jax.config import RunConfig


def small_config(tmp_path, name=None, base=None, **kw) -> RunConfig:
  """A small in-process run: `base` (a test file's fixed run, e.g. `RUN = dict(env=..., alpha=...)`)
  updated with `kw`, in `tmp_path/name` (`tmp_path` itself without a name), with no periodic
  log line. A file binds its base once: `_cfg = functools.partial(small_config, base=RUN)`."""
  values = dict(logdir=str(tmp_path if name is None else tmp_path / name), log_every_s=1e9)
  values.update(base or {})
  values.update(kw)
  return RunConfig.make(**values)


def video_frames(path):
  """An mp4's frames `[T, H, W, 3]`, decoded by imageio-ffmpeg's ffmpeg."""
  import imageio_ffmpeg  # pylint: disable=import-outside-toplevel
  gen = imageio_ffmpeg.read_frames(path)
  w, h = next(gen)["size"]
  return np.stack([np.frombuffer(f, np.uint8).reshape(h, w, 3) for f in gen])


def cnn_evaluator(env, tmp_path, **kw):
  """An Evaluator of `env` with a freshly initialised CNN (and its params), recording videos
  into `tmp_path`."""
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  from hts_jax import envs, networks  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime.outputs import evaluation  # pylint: disable=import-outside-toplevel
  info = envs.env_info(env, {})
  net = networks.make_network("cnn", info.num_actions)
  params = net.init(jax.random.PRNGKey(0), jnp.zeros((1,) + info.obs_shape, info.obs_dtype))
  ev = evaluation.Evaluator(env, {}, net.apply, 1, seed=0, video_dir=str(tmp_path), **kw)
  return ev, params


def write_run_summary(path, *, seed, mode="hts", algo="a2c", env="CartPole-v1", returns,
                      times=None, steps_per_eval=1000, sps=1000.0, episodes=10, host=None):
  """A run directory holding only the summary.json that the analysis reads: evaluations with
  `returns` at `times` (one per `steps_per_eval` env steps), and a `host` record if given."""
  os.makedirs(path, exist_ok=True)
  times = times if times is not None else list(range(len(returns)))
  evals = [{"env_steps": (i + 1) * steps_per_eval, "wall_time_s": float(t),
            "mean_return": float(r), "returns": [float(r)] * episodes}
           for i, (r, t) in enumerate(zip(returns, times))]
  summary = {"env": env, "mode": mode, "algo": algo, "alpha": 5, "num_actors": 1, "num_envs": 8,
             "correction": "delayed", "seed": seed, "sps": sps, "eval": evals}
  if host is not None:
    summary["host"] = host
  with open(os.path.join(path, "summary.json"), "w") as f:
    json.dump(summary, f)
  return path
