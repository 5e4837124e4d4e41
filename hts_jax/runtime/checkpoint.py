"""Checkpoints of a whole HTS run at a segment boundary, with orbax (host side).

A checkpoint is taken when the executors have finished segment `seg` and the learner has finished
its update on segment `seg - 1` (the swap point, where nothing is in flight). It holds:
  state    the TrainState (θ_j, θ_{j-1}, optimizer state, update counter, learner key);
  storage  storage `seg`, collected but not yet learned;
  envs     each env replica's pickled state and its last observation (CartPole, the gymnasium
           classic-control envs and ALE envs pickle with their RNGs, so a resumed run continues
           bit for bit); None where an env cannot be pickled (those restart from a fresh reset);
  host     JSON: the segment index, episode returns so far, evaluation history, lags, idle/timing
           sums, the config. Action keys derive from (seed, env, global step), so the segment
           index is the position of every action seed stream.
Checkpoints live in `<logdir>/checkpoints/<updates>/`; the two newest are kept.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

import numpy as np
import orbax.checkpoint as ocp

# Config fields a resumed run may change (they do not change the computation).
RESUMABLE_CHANGES = {"total_steps", "logdir", "num_actors", "num_executors", "log_every_s",
                     "eval_every", "eval_episodes", "checkpoint_every", "executor_delay_s",
                     "executor_jitter_s", "learner_delay_s"}


def directory(logdir: str) -> str:
  return os.path.join(os.path.abspath(logdir), "checkpoints")


def _manager(logdir: str) -> ocp.CheckpointManager:
  return ocp.CheckpointManager(
      directory(logdir),
      options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True,
                                           enable_async_checkpointing=False))


def latest_step(logdir: str) -> Optional[int]:
  if not os.path.isdir(directory(logdir)):
    return None
  mngr = _manager(logdir)
  try:
    return mngr.latest_step()
  finally:
    mngr.close()


def save(logdir: str, step: int, train_state, storage: Dict[str, np.ndarray],
         env_states: Optional[Dict[int, bytes]], host: Dict[str, Any]) -> str:
  envs = {} if env_states is None else {
      str(e): np.frombuffer(b, np.uint8).copy() for e, b in env_states.items()}
  mngr = _manager(logdir)
  try:
    mngr.save(step, args=ocp.args.Composite(
        state=ocp.args.StandardSave(train_state),
        storage=ocp.args.StandardSave({k: np.asarray(v) for k, v in storage.items()}),
        envs=ocp.args.StandardSave(envs),
        host=ocp.args.JsonSave(dict(host, env_states_saved=env_states is not None))))
    mngr.wait_until_finished()
  finally:
    mngr.close()
  return os.path.join(directory(logdir), str(step))


def restore(logdir: str, abstract_state, step: Optional[int] = None) -> Dict[str, Any]:
  """Restores the newest (or `step`) checkpoint: {'state', 'storage', 'envs', 'host', 'step'}."""
  mngr = _manager(logdir)
  try:
    step = mngr.latest_step() if step is None else step
    if step is None:
      raise FileNotFoundError(f"no checkpoint in {directory(logdir)}")
    out = mngr.restore(step, args=ocp.args.Composite(
        state=ocp.args.StandardRestore(abstract_state), storage=ocp.args.StandardRestore(),
        envs=ocp.args.StandardRestore(), host=ocp.args.JsonRestore()))
  finally:
    mngr.close()
  host = out["host"]
  env_states = None
  if host.get("env_states_saved"):
    env_states = {int(e): np.asarray(b, np.uint8).tobytes() for e, b in out["envs"].items()}
  return {"state": out["state"], "storage": {k: np.asarray(v) for k, v in out["storage"].items()},
          "envs": env_states, "host": host, "step": step}


def incompatible_changes(saved: Dict[str, Any], current: Dict[str, Any]) -> Dict[str, Any]:
  """Config fields that differ between a checkpoint and a resumed run and may not."""
  out = {}
  for k in set(saved) | set(current):
    if k in RESUMABLE_CHANGES:
      continue
    if saved.get(k) != current.get(k):
      out[k] = (saved.get(k), current.get(k))
  return out
