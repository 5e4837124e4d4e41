"""Evaluation on separate env replicas, in a background thread of the main process.

It takes a snapshot of the params (immutable JAX arrays) and its own env replicas seeded by
`seeding.eval_env_seed`, and shares no random stream, storage or queue with training: it cannot
perturb training, not even its determinism (tests check the hash with and without evaluation).
Episodes run in lockstep, batched through one fixed-shape policy step.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Dict, List, Optional

import jax
import numpy as np

from hts_jax import envs, seeding
from hts_jax.runtime import distributed
from hts_jax.runtime.policy import make_policy_step

# Hard cap on steps per evaluation episode (envs without a time limit).
MAX_EPISODE_STEPS = 108_000


class Evaluator:
  """`submit(env_steps, wall_time_s, params)` queues an evaluation; `results` collects them."""

  def __init__(self, env: str, env_kwargs: Dict[str, Any], apply_fn: Callable, episodes: int,
               seed: int, greedy: bool = True, results: Optional[List[Dict[str, Any]]] = None,
               num_agents: int = 1, sharding=None):
    self.env_name, self.env_kwargs = env, env_kwargs
    self.episodes = episodes
    self.seed = seed
    self.num_agents = num_agents
    self.policy = make_policy_step(apply_fn, episodes * num_agents, greedy=greedy)
    self.sharding = sharding  # where evaluated params are placed (the first actor device)
    self.results: List[Dict[str, Any]] = list(results or [])
    self._restored = len(self.results)
    self.submitted = 0
    self.error: Optional[str] = None
    self._queue: "queue.Queue" = queue.Queue()
    self._cancel = threading.Event()
    self._thread = threading.Thread(target=self._loop, name="evaluator", daemon=True)
    self._thread.start()

  def submit(self, env_steps: int, wall_time_s: float, params) -> None:
    self.submitted += 1
    self._queue.put((env_steps, wall_time_s, self._placed(params)))

  def _placed(self, params):
    params = distributed.local_copy(params)  # a multi-process learner's replicated params
    return params if self.sharding is None else jax.device_put(params, self.sharding)

  def evaluate_now(self, params) -> List[float]:
    """Evaluates `params` in the calling thread (not a result of the run's schedule)."""
    return self.evaluate(self._placed(params))

  def compile(self, params, obs_shape, obs_dtype) -> None:
    """Compiles the policy step for `params` placed as evaluations place them."""
    rows = self.policy.batch_size
    self.policy.run_actions(self._placed(params), np.zeros((rows,) + tuple(obs_shape), obs_dtype),
                            np.zeros((rows, 2), np.uint32))

  def finished(self, n: int) -> bool:
    """Whether the first `n` evaluations submitted in this session have finished (in order)."""
    return self.error is not None or len(self.results) - self._restored >= n

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

  def latest(self) -> Optional[float]:
    return self.results[-1]["mean_return"] if self.results else None

  def _loop(self) -> None:
    try:
      while True:
        item = self._queue.get()
        try:
          if item is None:
            return
          env_steps, wall, params = item
          if self._cancel.is_set():
            continue
          returns = self.evaluate(params)
          if self._cancel.is_set():
            continue  # abandoned part-way: not a result
          self.results.append({"env_steps": int(env_steps), "wall_time_s": float(wall),
                               "mean_return": float(np.mean(returns)),
                               "returns": [float(r) for r in returns]})
        finally:
          self._queue.task_done()
    except Exception as e:  # pylint: disable=broad-except
      self.error = f"evaluator: {type(e).__name__}: {e}"
      while True:  # drain what is submitted until close()
        item = self._queue.get()
        self._queue.task_done()
        if item is None:
          return

  def evaluate(self, params) -> List[float]:
    """Runs `episodes` episodes (episode i reset with `eval_env_seed(seed, i)`); returns the raw
    episode returns the envs report (`info["episode_return"]`)."""
    n, a = self.episodes, self.num_agents
    replicas = [envs.make_env(self.env_name, self.env_kwargs, train=False) for _ in range(n)]
    try:
      first = [env.reset(seed=seeding.eval_env_seed(self.seed, i))[0] for i, env in
               enumerate(replicas)]
      shape = np.shape(first[0])[1:] if a > 1 else np.shape(first[0])
      obs = np.zeros((n * a,) + shape, np.asarray(first[0]).dtype)
      obs[:] = np.reshape(first, (n * a,) + shape)
      streams = np.array([seeding.eval_env_seed(self.seed, r) for r in range(n * a)], np.uint32)
      returns = np.zeros(n)
      running = np.ones(n, bool)
      for t in range(MAX_EPISODE_STEPS):
        if self._cancel.is_set():
          break
        actions = self.policy.run_actions(params, obs,
                                          seeding.row_seeds(streams, np.full(n * a, t)))
        for i in np.flatnonzero(running):
          act = actions[i * a:(i + 1) * a]
          o, _, terminated, truncated, info = replicas[i].step(
              int(act[0]) if a == 1 else act.tolist())
          obs[i * a:(i + 1) * a] = np.reshape(o, (a,) + shape)
          if "episode_return" in info:
            returns[i] = info["episode_return"]
          if terminated or truncated:
            running[i] = False
        if not running.any():
          break
      return returns.tolist()
    finally:
      for env in replicas:
        env.close()
