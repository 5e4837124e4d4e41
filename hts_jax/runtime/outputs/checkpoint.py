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
Checkpoints live in `<logdir>/checkpoints/<updates>/`; the two newest are kept, and a finished
run's last checkpoint beside the two before it (`Controller.finish`).

Integrity (`integrity`): each checkpoint records the sha256 of each of its parts when written
(`digest`: the state's leaves in a fixed order, the storage, the envs, the host JSON, the params'
`param_sha256`); `restore` recomputes them and raises `CorruptCheckpoint` (one line) on a mismatch
or an unreadable part. `--resume` then sets it aside (`<logdir>/checkpoints-corrupt/`, never
through a symlink) and falls back to the newest older one that verifies (`Runner._restore`). One
without a digest is refused (`Unverified`) unless `--resume_unverified`. Before orbax reads
anything, the folder must hold only folders and regular files (a link, FIFO or device would be
read without end) and each file must match the size and sha256 in `files.json`.

Trust (`signing`): the digests live in the checkpoint they protect, so they catch corruption, not
tampering. The env states, the one part that is unpickled, are signed with a key kept outside the
logdir; `restore` reports whether the signature verifies and the runner refuses to hand unsigned
ones to the executors unless `--resume_unsigned`.

Multi-process runs (`process` given): the state (replicated over every process's learner devices)
and the run's config and segment go to `<logdir>/checkpoints/<updates>/`, written together by
all processes (orbax's multi-process save); each process's own part (its storage columns, its
env replicas, its book) goes to `<logdir>/checkpoints-process-<p>/<updates>/` as plain files
(`storage.npz`, `envs.npz`, `host.json`; orbax writes host-local arrays from process 0 only),
written by that process alone.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict, List, Optional

import numpy as np
import orbax.checkpoint as ocp

from hts_jax.choices import ConfigError
from hts_jax.runtime.outputs import checkpoint_own as process_part, integrity, signing
from hts_jax.runtime.outputs.checkpoint_own import process_directory
from hts_jax.runtime.outputs.integrity import CorruptCheckpoint  # what callers catch


def directory(logdir: str) -> str:
  return os.path.join(os.path.abspath(logdir), "checkpoints")


def _manager(logdir: str, step: Optional[int] = None, keep: int = 2) -> ocp.CheckpointManager:
  """Orbax's manager, made once each checkpoint folder holds only folders and regular files (it
  reads their metadata): CorruptCheckpoint for `step`'s folder, ConfigError for another's."""
  if step is not None:
    integrity.check_tree(os.path.join(directory(logdir), str(step)))
  for other in steps(logdir):
    path = os.path.join(directory(logdir), str(other))
    try:
      integrity.check_tree(path)
    except CorruptCheckpoint as e:
      if os.path.lexists(path):  # not one deleted meanwhile
        raise ConfigError(f"{e}: remove it, or move it out of {directory(logdir)}") from None
  return ocp.CheckpointManager(
      directory(logdir),
      options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                           enable_async_checkpointing=False))


def latest_step(logdir: str) -> Optional[int]:
  if not os.path.isdir(directory(logdir)):
    return None
  mngr = _manager(logdir)
  try:
    return mngr.latest_step()
  finally:
    mngr.close()


def steps(logdir: str) -> List[int]:
  """The steps of the checkpoint folders in `<logdir>/checkpoints`, newest first (whether orbax
  would list them or not: a folder whose metadata is gone is still a checkpoint, a corrupt one)."""
  root = directory(logdir)
  if not os.path.isdir(root):
    return []
  return sorted((int(d) for d in os.listdir(root) if d.isdigit()), reverse=True)


def _move_aside(source: str, logdir: str, *below: str) -> str:
  """Moves `source` to `<logdir>/checkpoints-corrupt/<below...>/<its name>`, replacing an older
  copy there. A symlink on the way is refused (ConfigError): the older copy would be deleted and
  the checkpoint moved outside the logdir, through the link. The move may cross file systems
  (`checkpoints/` kept on another disk through a link)."""
  root = os.path.join(os.path.abspath(logdir), "checkpoints-corrupt")
  folder = os.path.join(root, *below)
  target = os.path.join(folder, os.path.basename(source))
  for path in dict.fromkeys((root, folder, target)):
    if os.path.islink(path):
      raise ConfigError(f"{path} is a symlink: a corrupt checkpoint is not moved through one "
                        "(make it a folder)")
  os.makedirs(folder, exist_ok=True)
  shutil.rmtree(target, ignore_errors=True)
  shutil.move(source, target)
  return target


def set_aside(logdir: str, step: int) -> str:
  """Moves checkpoint `step` out of the way (into `<logdir>/checkpoints-corrupt/`, kept for a
  look); returns where it went (ConfigError: not through a symlink)."""
  return _move_aside(os.path.join(directory(logdir), str(step)), logdir)


def set_aside_own(logdir: str, process: int, step: int) -> Optional[str]:
  """Moves `process`'s own part of checkpoint `step` (if there) into
  `<logdir>/checkpoints-corrupt/process-<process>/`; returns where it went."""
  source = os.path.join(process_directory(logdir, process), str(step))
  return _move_aside(source, logdir, f"process-{process}") if os.path.isdir(source) else None


def precheck(logdir: str, step: int, process: int) -> Optional[str]:
  """A multi-process resume's check of `step` by one process before the collective restore
  (which every process must enter with the same step): the shared host record, the shared
  folder's files against `files.json`, and this process's own part, read and digest-checked.
  The problem in one line, or None."""
  own = os.path.join(process_directory(logdir, process), str(step))
  try:
    saved_host(logdir, step)
    integrity.check_files(os.path.join(directory(logdir), str(step)))
    process_part.restore(logdir, process, step)
  except CorruptCheckpoint as e:
    return str(e)
  except Exception as e:  # pylint: disable=broad-except
    return f"checkpoint {own} (process {process}'s part) cannot be read: {integrity.read_error(e)}"
  return None


# The host fields every process of a multi-process run shares (the rest is per process).
SHARED_HOST = ("segment", "learned", "config")


def save(logdir: str, step: int, train_state, storage: Dict[str, np.ndarray],
         env_states: Optional[Dict[int, bytes]], host: Dict[str, Any],
         process: Optional[int] = None) -> str:
  """Saves a checkpoint; in a multi-process run every process calls it (with its `process`).
  The two newest are kept; with a finished run's last (`host["final"]`), the two before it too."""
  keep = 3 if host.get("final") else 2
  # Envs that cannot be pickled leave a placeholder (orbax refuses an empty tree); a resume then
  # rebuilds them (`env_states_saved` False).
  envs = {"none": np.zeros((1,), np.uint8)} if env_states is None else {
      str(e): np.frombuffer(b, np.uint8).copy() for e, b in env_states.items()}
  host = dict(host, env_states_saved=env_states is not None,
              envs_signature=None if env_states is None else signing.sign(envs))
  storage = {k: np.asarray(v) for k, v in storage.items()}
  own = dict(storage=ocp.args.StandardSave(storage), envs=ocp.args.StandardSave(envs))
  if process is None:
    _save(_manager(logdir, keep=keep), step, state=ocp.args.StandardSave(train_state), **own,
          host=ocp.args.JsonSave(host),
          digest=ocp.args.JsonSave(integrity.digest(train_state, storage, envs, host)))
  else:
    # Each process's own part first: a step the shared manager lists is complete everywhere.
    process_part.save(logdir, process, step, storage, envs,
              {k: v for k, v in host.items() if k not in SHARED_HOST})
    shared = {k: host[k] for k in SHARED_HOST}
    _save(_manager(logdir, keep=keep), step, state=ocp.args.StandardSave(train_state),
          host=ocp.args.JsonSave(shared),
          digest=ocp.args.JsonSave(integrity.digest(train_state, host=shared)))
  path = os.path.join(directory(logdir), str(step))
  if not process:  # one writer; orbax has finished every process's files when process 0's returns
    integrity.write_files(path)
  return path


def _save(mngr: ocp.CheckpointManager, step: int, **items) -> None:
  try:
    mngr.save(step, args=ocp.args.Composite(**items))
    mngr.wait_until_finished()
  finally:
    mngr.close()


class Unverified(ConfigError):
  """A checkpoint with no digest to verify it against, restored only when accepted (one line)."""


def restore(logdir: str, abstract_state, step: Optional[int] = None,
            process: Optional[int] = None, accept_unverified: bool = False) -> Dict[str, Any]:
  """Restores the newest (or `step`) checkpoint: {'state', 'storage', 'envs', 'host', 'step',
  'verified', 'signed'} ('signed': its pickled env states carry this machine's key's signature,
  `signing`; True where it has none); multi-process: this `process`'s part and the shared state.
  Unreadable or not matching its digest: CorruptCheckpoint; without a digest: Unverified unless
  `accept_unverified`."""
  if step is None:
    step = (steps(logdir) or [None])[0]
    if step is None:
      raise FileNotFoundError(f"no checkpoint in {directory(logdir)}")
  path = os.path.join(directory(logdir), str(step))
  return _reading(path, lambda: _restore(logdir, abstract_state, step, process, path,
                                         accept_unverified))


def _reading(path: str, read):
  """`read()`, any failure but a refusal as CorruptCheckpoint (one line)."""
  try:
    return read()
  except (CorruptCheckpoint, Unverified):
    raise
  except Exception as e:  # pylint: disable=broad-except
    raise CorruptCheckpoint(f"checkpoint {path} cannot be read: {integrity.read_error(e)}") from e


def restore_state(logdir: str, abstract_state, step: int):
  """Checkpoint `step`'s TrainState alone, checked against its files and digest (`hts-eval
  --checkpoint`: no storage read, no env state unpickled); CorruptCheckpoint if it fails."""
  path = os.path.join(directory(logdir), str(step))

  def read():
    integrity.check_files(path)
    out = _read_items(logdir, step, dict(state=ocp.args.StandardRestore(abstract_state)))
    if "digest" in out:
      integrity.verify(path, dict(out["digest"]), integrity.digest(out["state"]))
    return out["state"]
  return _reading(path, read)


def _read_items(logdir: str, step: int, items) -> Dict[str, Any]:
  """Orbax's restore of `items` of checkpoint `step`, with its digest where it has one."""
  if os.path.isdir(os.path.join(directory(logdir), str(step), "digest")):
    items = dict(items, digest=ocp.args.JsonRestore())
  mngr = _manager(logdir, step)
  try:
    return dict(mngr.restore(step, args=ocp.args.Composite(**items)))
  finally:
    mngr.close()


def _restore(logdir, abstract_state, step, process, path, accept_unverified) -> Dict[str, Any]:
  integrity.check_files(path)
  verified = os.path.isdir(os.path.join(path, "digest"))
  if not verified and not accept_unverified:
    raise Unverified(f"--resume: checkpoint {path} has no digest to verify it against (written "
                     "before checkpoints had one, or its digest/ deleted): pass "
                     "--resume_unverified to restore it unchecked")
  items = dict(state=ocp.args.StandardRestore(abstract_state), host=ocp.args.JsonRestore())
  if process is None:
    items.update(storage=ocp.args.StandardRestore(), envs=ocp.args.StandardRestore())
  out = _read_items(logdir, step, items)
  if verified:
    integrity.verify(path, dict(out["digest"]), integrity.digest(
        out["state"], out.get("storage"), out.get("envs"), out["host"]))
  if process is not None:
    mine = process_part.restore(logdir, process, step)
    out.update(storage=mine["storage"], envs=mine["envs"], host=dict(out["host"], **mine["host"]))
  host = out["host"]
  integrity.check_host(path, host)
  env_states, signed = None, True
  if host.get("env_states_saved"):
    envs = {e: np.asarray(b, np.uint8) for e, b in out["envs"].items()}
    signed = signing.verifies(envs, host.get("envs_signature"))
    env_states = {int(e): b.tobytes() for e, b in envs.items()}
  return {"state": out["state"], "storage": {k: np.asarray(v) for k, v in out["storage"].items()},
          "envs": env_states, "host": host, "step": step, "verified": verified, "signed": signed}


def saved_host(logdir: str, step: Optional[int] = None) -> Dict[str, Any]:
  """The newest (or `step`) checkpoint's shared host record (its config among it), read alone: a
  resume compares configs before restoring a state whose tree the config shapes. Raises
  CorruptCheckpoint if it cannot be read or its segment is not one."""
  step = steps(logdir)[0] if step is None else step
  path = os.path.join(directory(logdir), str(step))
  mngr = _manager(logdir, step)
  try:
    host = dict(mngr.restore(step, args=ocp.args.Composite(host=ocp.args.JsonRestore()))["host"])
  except Exception as e:  # pylint: disable=broad-except
    raise CorruptCheckpoint(f"checkpoint {path} cannot be read: {integrity.read_error(e)}") from e
  finally:
    mngr.close()
  integrity.check_host(path, host)
  return host

