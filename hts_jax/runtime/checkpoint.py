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

Multi-process runs (`process` given): the state (replicated over every process's learner devices)
and the run's config and segment go to `<logdir>/checkpoints/<updates>/`, written together by
all processes (orbax's multi-process save); each process's own part (its storage columns, its
env replicas, its book) goes to `<logdir>/checkpoints-process-<p>/<updates>/` as plain files
(`storage.npz`, `envs.npz`, `host.json`; orbax writes host-local arrays from process 0 only),
written by that process alone.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Dict, Optional

import numpy as np
import orbax.checkpoint as ocp

from hts_jax.config import RunConfig, resumable_fields

def directory(logdir: str) -> str:
  return os.path.join(os.path.abspath(logdir), "checkpoints")


def process_directory(logdir: str, process: int) -> str:
  return os.path.join(os.path.abspath(logdir), f"checkpoints-process-{process}")


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


# The host fields every process of a multi-process run shares (the rest is per process).
SHARED_HOST = ("segment", "learned", "config")


def save(logdir: str, step: int, train_state, storage: Dict[str, np.ndarray],
         env_states: Optional[Dict[int, bytes]], host: Dict[str, Any],
         process: Optional[int] = None) -> str:
  """Saves a checkpoint; in a multi-process run every process calls it (with its `process`)."""
  # Envs that cannot be pickled leave a placeholder (orbax refuses an empty tree); a resume then
  # rebuilds them (`env_states_saved` False).
  envs = {"none": np.zeros((1,), np.uint8)} if env_states is None else {
      str(e): np.frombuffer(b, np.uint8).copy() for e, b in env_states.items()}
  host = dict(host, env_states_saved=env_states is not None)
  own = dict(storage=ocp.args.StandardSave({k: np.asarray(v) for k, v in storage.items()}),
             envs=ocp.args.StandardSave(envs))
  if process is None:
    _save(_manager(logdir), step, state=ocp.args.StandardSave(train_state), **own,
          host=ocp.args.JsonSave(host))
  else:
    # Each process's own part first: a step the shared manager lists is complete everywhere.
    _save_own(logdir, process, step, storage, envs,
              {k: v for k, v in host.items() if k not in SHARED_HOST})
    _save(_manager(logdir), step, state=ocp.args.StandardSave(train_state),
          host=ocp.args.JsonSave({k: host[k] for k in SHARED_HOST}))
  return os.path.join(directory(logdir), str(step))


def _save_own(logdir: str, process: int, step: int, storage, envs, host) -> None:
  """A process's own part, as plain files (orbax writes host-local arrays from process 0 only):
  written to a temporary folder, then renamed; the two newest are kept."""
  root = process_directory(logdir, process)
  tmp = os.path.join(root, f".{step}.tmp")
  shutil.rmtree(tmp, ignore_errors=True)
  os.makedirs(tmp)
  np.savez(os.path.join(tmp, "storage.npz"), **{k: np.asarray(v) for k, v in storage.items()})
  np.savez(os.path.join(tmp, "envs.npz"), **envs)
  with open(os.path.join(tmp, "host.json"), "w") as f:
    json.dump(host, f)
  final = os.path.join(root, str(step))
  shutil.rmtree(final, ignore_errors=True)
  os.rename(tmp, final)
  steps = sorted(int(d) for d in os.listdir(root) if d.isdigit())
  for old in steps[:-2]:
    shutil.rmtree(os.path.join(root, str(old)), ignore_errors=True)


def _restore_own(logdir: str, process: int, step: int) -> Dict[str, Any]:
  path = os.path.join(process_directory(logdir, process), str(step))
  with np.load(os.path.join(path, "storage.npz")) as z:
    storage = {k: z[k] for k in z.files}
  with np.load(os.path.join(path, "envs.npz")) as z:
    envs = {k: z[k] for k in z.files}
  with open(os.path.join(path, "host.json")) as f:
    host = json.load(f)
  return {"storage": storage, "envs": envs, "host": host}


def _save(mngr: ocp.CheckpointManager, step: int, **items) -> None:
  try:
    mngr.save(step, args=ocp.args.Composite(**items))
    mngr.wait_until_finished()
  finally:
    mngr.close()


def restore(logdir: str, abstract_state, step: Optional[int] = None,
            process: Optional[int] = None) -> Dict[str, Any]:
  """Restores the newest (or `step`) checkpoint: {'state', 'storage', 'envs', 'host', 'step'};
  in a multi-process run, this `process`'s part with the shared state."""
  mngr = _manager(logdir)
  try:
    step = mngr.latest_step() if step is None else step
    if step is None:
      raise FileNotFoundError(f"no checkpoint in {directory(logdir)}")
    if process is None:
      out = mngr.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(abstract_state), storage=ocp.args.StandardRestore(),
          envs=ocp.args.StandardRestore(), host=ocp.args.JsonRestore()))
    else:
      out = dict(mngr.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(abstract_state), host=ocp.args.JsonRestore())))
  finally:
    mngr.close()
  if process is not None:
    mine = _restore_own(logdir, process, step)
    out.update(storage=mine["storage"], envs=mine["envs"], host=dict(out["host"], **mine["host"]))
  host = out["host"]
  env_states = None
  if host.get("env_states_saved"):
    env_states = {int(e): np.asarray(b, np.uint8).tobytes() for e, b in out["envs"].items()}
  return {"state": out["state"], "storage": {k: np.asarray(v) for k, v in out["storage"].items()},
          "envs": env_states, "host": host, "step": step}


def saved_host(logdir: str) -> Dict[str, Any]:
  """The newest checkpoint's shared host record (its config among it), read alone: a resume
  compares configs before restoring a state whose tree the config shapes."""
  mngr = _manager(logdir)
  try:
    return dict(mngr.restore(mngr.latest_step(), args=ocp.args.Composite(
        host=ocp.args.JsonRestore()))["host"])
  finally:
    mngr.close()


def incompatible_changes(saved: Dict[str, Any], current: Dict[str, Any]) -> Dict[str, Any]:
  """Config fields that differ between a checkpoint and a resumed run and may not. A field the
  checkpoint's config lacks (added to RunConfig or LearnerConfig since it was written) counts as
  its default: the code that wrote it behaved so."""
  defaults = json.loads(json.dumps(RunConfig().to_dict()))  # as a checkpoint stores it
  saved = {**defaults, **saved}
  resumable = resumable_fields()
  if isinstance(saved.get("learner"), dict):
    saved["learner"] = {**defaults["learner"], **saved["learner"]}
  out = _differing(saved, current, resumable | {"learner"})
  if isinstance(saved.get("learner"), dict) and isinstance(current.get("learner"), dict):
    # Named by the learner field that differs (its flag's name), not by the whole section.
    out.update(_differing(saved["learner"], current["learner"], resumable))
  elif saved.get("learner") != current.get("learner"):
    out["learner"] = (saved.get("learner"), current.get("learner"))
  return out


def _differing(saved: Dict[str, Any], current: Dict[str, Any], skip: frozenset) -> Dict[str, Any]:
  return {k: (saved.get(k), current.get(k)) for k in set(saved) | set(current)
          if k not in skip and saved.get(k) != current.get(k)}
