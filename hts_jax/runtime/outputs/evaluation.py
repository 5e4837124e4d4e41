"""Evaluation on separate env replicas, in a background thread of the main process.

It takes a snapshot of the params (immutable JAX arrays) and its own env replicas, and shares no
random stream, storage or queue with training: it cannot perturb training, not even its
determinism (tests check the hash with and without evaluation). Episodes run in lockstep, batched
through one fixed-shape policy step.

Evaluation k of a run (k = 0, 1, ... in submission order, counting a resumed run's restored ones)
resets its episode i with `seeding.eval_episode_seed(seed, k, i)` and samples row r's actions from
`seeding.eval_action_stream(seed, k, r)`: every evaluation plays new episodes (the paper's running
average over the last 10 evaluations is then over 100 different episodes), and evaluation k of the
same run is reproducible.

Videos (`submit_video`) run in the same thread: the first episode of the latest evaluation
submitted (its seed, its row of the same fixed-shape policy step, so the same actions) replayed on
a recording env (`hts_jax.runtime.outputs.video`), saved to `<video_dir>/eval-<env steps>.mp4`.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import jax
import numpy as np

from hts_jax import envs, losses, seeding
from hts_jax.heads import Head
from hts_jax.runtime import distributed
from hts_jax.runtime.errors import error_line
from hts_jax.runtime.outputs import video as video_lib
from hts_jax.runtime.policy import make_policy_step

# Hard cap on steps per evaluation episode (envs without a time limit).
MAX_EPISODE_STEPS = 108_000
# Seconds between the progress lines of a long evaluation (none for one that ends sooner).
PROGRESS_S = 30.0


class Evaluator:
  """`submit(env_steps, wall_time_s, params)` queues an evaluation; `results` collects them.
  `submit_video(env_steps, params)` queues a recorded episode; `videos` collects them. Both go to
  `tracker` (`hts_jax.runtime.outputs.tracking`) where one is given. An episode still running after
  `max_steps` steps (0: MAX_EPISODE_STEPS) is cut: its return so far counts, the result has
  `"cut"`, and one line says so; an evaluation that takes long prints progress every PROGRESS_S."""

  def __init__(self, env: str, env_kwargs: Dict[str, Any], apply_fn: Callable, episodes: int,
               seed: int, greedy: bool = True, results: Optional[List[Dict[str, Any]]] = None,
               num_agents: int = 1, sharding=None, tracker=None, video_dir: Optional[str] = None,
               max_steps: int = 0, head: Head = losses.CATEGORICAL, core_size: int = 0):
    self.env_name, self.env_kwargs = env, env_kwargs
    self.episodes = episodes
    self.max_steps = min(max_steps, MAX_EPISODE_STEPS) if max_steps > 0 else MAX_EPISODE_STEPS
    self._cap = "--eval_max_steps" if 0 < max_steps <= MAX_EPISODE_STEPS else "the hard cap"
    self.last_cut = 0  # episodes cut at max_steps in the latest evaluation of this thread's
    self.seed = seed
    self.num_agents = num_agents
    self.policy = make_policy_step(apply_fn, episodes * num_agents, greedy=greedy,
                                   head=head, recurrent=core_size > 0)
    self.core_size = core_size  # a recurrent policy's state per row (0: feed-forward)
    self.sharding = sharding  # where evaluated params are placed (the first actor device)
    self.results: List[Dict[str, Any]] = list(results or [])
    self._restored = len(self.results)
    self.submitted = 0
    self.tracker, self.video_dir = tracker, video_dir
    self.videos: List[Dict[str, Any]] = []
    self.videos_submitted = 0
    self.error: Optional[str] = None
    self._queue: "queue.Queue" = queue.Queue()
    self._cancel = threading.Event()
    self._thread = threading.Thread(target=self._loop, name="evaluator", daemon=True)
    self._thread.start()

  def submit(self, env_steps: int, wall_time_s: float, params) -> None:
    index = self._restored + self.submitted  # this evaluation's k (the module doc)
    self.submitted += 1
    self._queue.put((self._evaluate, env_steps, wall_time_s, self._placed(params), index))

  def submit_video(self, env_steps: int, params, final: bool = False) -> None:
    """Queues the recording of one episode of `params` (into `video_dir`): episode 0 of the latest
    evaluation submitted."""
    self.videos_submitted += 1
    index = max(0, self._restored + self.submitted - 1)
    self._queue.put((self._record, env_steps, final, self._placed(params), index))

  def _placed(self, params):
    params = distributed.local_copy(params)  # a multi-process learner's replicated params
    return params if self.sharding is None else jax.device_put(params, self.sharding)

  def evaluate_now(self, params, index: int = 0) -> List[float]:
    """Evaluates `params` in the calling thread (not a result of the run's schedule) on the
    episodes of evaluation number `index`."""
    return self.evaluate(self._placed(params), index=index)

  def compile(self, params, obs_shape, obs_dtype) -> None:
    """Compiles the policy step for `params` placed as evaluations place them."""
    rows = self.policy.batch_size
    self.policy.run_step(self._placed(params), np.zeros((rows,) + tuple(obs_shape), obs_dtype),
                         np.zeros((rows, 2), np.uint32),
                         np.zeros((rows, self.core_size), np.float32))

  def finished(self, n: int) -> bool:
    """Whether the first `n` evaluations submitted in this session have finished (in order)."""
    return self.error is not None or len(self.results) - self._restored >= n

  def wait_videos(self, wait) -> List[Dict[str, Any]]:
    """Every video submitted, waited for with `wait(predicate)` (a failed recording is an entry
    with its `error`; it does not stop the run)."""
    wait(lambda: self.error is not None or len(self.videos) >= self.videos_submitted)
    return self.videos

  def results_upto(self, n: int, wait) -> List[Dict[str, Any]]:
    """Every result up to the `n`-th evaluation submitted in this session, waiting for them with
    `wait(predicate)` (the supervisor's liveness- and signal-aware wait)."""
    wait(lambda: self.finished(n))
    if self.error:
      raise RuntimeError(self.error)
    return self.results[:self._restored + n]

  def close(self, wait: bool = True) -> None:
    """Finishes the evaluations already submitted (`wait`) or abandons them within one env step
    (a failed or interrupted run). Either way the thread has ended on return: a thread still
    inside an XLA call when the interpreter exits aborts the process."""
    if not wait:
      self._cancel.set()
    self._queue.put(None)
    self._thread.join()

  def summary(self) -> List[Dict[str, Any]]:
    """summary.json's `eval`: every evaluation's steps, wall time (at its submission), mean return,
    returns, and its cost: seconds it took (`eval_s`) and the evaluator thread's CPU seconds in it
    (`eval_cpu_s`, env construction and stepping included)."""
    keys = ("env_steps", "wall_time_s", "mean_return", "returns", "eval_s", "eval_cpu_s")
    return [{k: r[k] for k in keys if k in r} for r in self.results]

  def timing(self) -> Dict[str, float]:
    """summary.json's `timing` entries for evaluation: the seconds and evaluator-thread CPU
    seconds of every evaluation (those restored by a resume included, where recorded). On a
    machine with few cores they come out of training's share: a run's SPS is below a benchmark's
    without evaluation by about that much."""
    return {"eval_s": float(sum(r.get("eval_s", 0.0) for r in self.results)),
            "eval_cpu_s": float(sum(r.get("eval_cpu_s", 0.0) for r in self.results))}

  def latest(self) -> Optional[float]:
    return self.results[-1]["mean_return"] if self.results else None

  def _loop(self) -> None:
    try:
      while True:
        item = self._queue.get()
        try:
          if item is None:
            return
          job, *args = item
          if not self._cancel.is_set():
            job(*args)
        finally:
          self._queue.task_done()
    except Exception as e:  # pylint: disable=broad-except
      self.error = f"evaluator (env {self.env_name}): {error_line(e)}"
      while True:  # drain what is submitted until close()
        item = self._queue.get()
        self._queue.task_done()
        if item is None:
          return

  def _evaluate(self, env_steps: int, wall: float, params, index: int) -> None:
    label = f"evaluation at {env_steps:,} env steps"
    start, start_cpu = time.perf_counter(), time.thread_time()
    returns = self.evaluate(params, index=index, label=label)
    if self._cancel.is_set():
      return  # abandoned part-way: not a result
    result = {"env_steps": int(env_steps), "wall_time_s": float(wall),
              "mean_return": float(np.mean(returns)), "returns": [float(r) for r in returns],
              "eval_s": time.perf_counter() - start, "eval_cpu_s": time.thread_time() - start_cpu}
    if self.last_cut:
      result["cut"] = self.last_cut
      print(f"{label}: cut {self.last_cut} of {len(returns)} episodes at {self.max_steps:,} "
            f"steps ({self._cap}; their returns so far are counted)", flush=True)
    self.results.append(result)
    if self.tracker is not None:
      self.tracker.scalars({"eval/mean_return": result["mean_return"],
                            "eval/min_return": min(returns), "eval/max_return": max(returns),
                            "eval/wall_time_s": wall, "eval/eval_s": result["eval_s"]},
                           env_steps)

  def _record(self, env_steps: int, final: bool, params, index: int) -> None:
    entry: Dict[str, Any] = {"env_steps": int(env_steps), "final": final}
    try:
      entry.update(self.record(params, env_steps, index))
    except Exception as e:  # pylint: disable=broad-except
      entry["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
      print(f"warning: the video at {env_steps:,} env steps failed: {entry['error']}",
            file=sys.stderr, flush=True)
    self.videos.append(entry)

  def evaluate(self, params, index: int = 0, label: Optional[str] = None) -> List[float]:
    """Runs the `episodes` episodes of evaluation number `index` (episode i reset with
    `eval_episode_seed(seed, index, i)`); returns the raw episode returns the envs report (`info["episode_return"]`; the return so far of an episode
    cut at `max_steps`, counted in `last_cut`). With a `label`, a long evaluation prints progress
    lines under it."""
    replicas = [envs.make_env(self.env_name, self.env_kwargs, train=False)
                for _ in range(self.episodes)]
    try:
      returns, self.last_cut = self._play(params, replicas, index, label=label)
      return returns
    finally:
      for env in replicas:
        env.close()

  def record(self, params, env_steps: int, index: int = 0) -> Dict[str, Any]:
    """Plays episode 0 of evaluation number `index` on a recording env, its frames (after the reset and after every
    step, at most `video.MAX_FRAMES`) into `<video_dir>/eval-<env_steps>.mp4` (or `.gif`);
    reports its file, frame count and return (None for an episode cut at MAX_FRAMES or at
    max_steps), and sends it to the tracker."""
    env = video_lib.make_recording_env(self.env_name, self.env_kwargs)
    out = video_lib.VideoFile(os.path.join(self.video_dir, f"eval-{env_steps:012d}"),
                              video_lib.fps(self.env_name, env))
    try:
      returns, cut = self._play(params, [env], index, on_frame=out.add,
                                max_frames=video_lib.MAX_FRAMES)
    finally:
      env.close()
      recording = out.close()
    if self.tracker is not None and not self._cancel.is_set():
      self.tracker.video("eval/video", recording, env_steps)
    cut = cut or recording.frames >= video_lib.MAX_FRAMES  # the episode did not end: no return
    return {"path": recording.path, "frames": recording.frames,
            "return": None if cut else returns[0]}

  def _play(self, params, replicas, index: int, on_frame=None, max_frames: int = 0,
            label: Optional[str] = None) -> Tuple[List[float], int]:
    """Episodes of evaluation number `index` on `replicas` (at most `episodes`; replica i reset
    with `eval_episode_seed(seed, index, i)`, its rows of the fixed-shape policy step those of the
    evaluation's episode i, whatever the replica count) in lockstep, each for
    at most `max_steps` steps; `on_frame(replica 0's render())` after the reset and every step of
    replica 0, which stops after `max_frames` frames where that is > 0. Returns the raw episode
    returns (of an episode cut at `max_steps`: its return so far) and how many were cut there.
    With a `label`, prints `<label>: k/n episodes done, t steps, s s` every PROGRESS_S."""
    n, a = len(replicas), self.num_agents
    first = [env.reset(seed=seeding.eval_episode_seed(self.seed, index, i))[0] for i, env in
             enumerate(replicas)]
    shape = np.shape(first[0])[1:] if a > 1 else np.shape(first[0])
    rows = self.policy.batch_size  # episodes * agents; rows past n * a stay zero
    obs = np.zeros((rows,) + shape, np.asarray(first[0]).dtype)
    obs[:n * a] = np.reshape(first, (n * a,) + shape)
    streams = np.array([seeding.eval_action_stream(self.seed, index, r) for r in range(rows)],
                       np.uint32)
    returns = np.zeros(n)
    running = np.ones(n, bool)
    core = np.zeros((rows, self.core_size), np.float32)  # each episode's LSTM starts at zero
    lives: List[Optional[int]] = [None] * n
    frames = 0
    if on_frame is not None:
      on_frame(replicas[0].render())
      frames = 1
    start = next_line = time.monotonic()
    next_line += PROGRESS_S
    for t in range(self.max_steps):
      if self._cancel.is_set():
        break
      if label is not None and time.monotonic() >= next_line:
        next_line += PROGRESS_S
        print(f"{label}: {n - int(running.sum())}/{n} episodes done, {t:,} steps, "
              f"{time.monotonic() - start:.0f} s", flush=True)
      actions, after = self.policy.run_step(params, obs,
                                            seeding.row_seeds(streams, np.full(rows, t)), core)
      if after is not None:
        core = np.array(after)  # writable: a lost life zeroes rows of it
      for i in np.flatnonzero(running):
        act = actions[i * a:(i + 1) * a]
        o, _, terminated, truncated, info = replicas[i].step(
            act[0].tolist() if a == 1 else act.tolist())
        obs[i * a:(i + 1) * a] = np.reshape(o, (a,) + shape)
        if self.core_size and "lives" in info:
          # Training ends an episode at a lost life (Atari's episodic life), and the executors
          # zero the row's state there: so does the evaluation, though the game goes on.
          if lives[i] is not None and info["lives"] < lives[i]:
            core[i * a:(i + 1) * a] = 0.0
          lives[i] = info["lives"]
        if "episode_return" in info:
          returns[i] = info["episode_return"]
        if terminated or truncated:
          running[i] = False
        if i == 0 and on_frame is not None:
          on_frame(replicas[0].render())
          frames += 1
          if frames == max_frames:
            running[0] = False  # cut: its return so far is not reported
      if not running.any():
        break
    cut = np.flatnonzero(running) if not self._cancel.is_set() else []
    for i in cut:
      returns[i] = replicas[i].get_wrapper_attr("return_so_far")
    return returns.tolist(), len(cut)
