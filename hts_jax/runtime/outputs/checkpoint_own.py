"""A process's own part of a multi-process checkpoint (`checkpoint`): its storage columns, its
env replicas and its book, as plain files in `<logdir>/checkpoints-process-<p>/<updates>/`
(`storage.npz`, `envs.npz`, `host.json`, `digest.json`; orbax writes host-local arrays from process
0 only), written by that process alone.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Dict

import numpy as np

from hts_jax.runtime.outputs import files, integrity


def process_directory(logdir: str, process: int) -> str:
  return os.path.join(os.path.abspath(logdir), f"checkpoints-process-{process}")


def save(logdir: str, process: int, step: int, storage, envs, host) -> None:
  """A process's own part, as plain files (orbax writes host-local arrays from process 0 only):
  written to a temporary folder, then renamed; the three newest are kept (it is written before
  the shared part: if the run dies between the two, the shared folder's two steps still have
  theirs)."""
  root = process_directory(logdir, process)
  tmp = os.path.join(root, f".{step}.tmp")
  shutil.rmtree(tmp, ignore_errors=True)
  os.makedirs(tmp)
  np.savez(os.path.join(tmp, "storage.npz"), **{k: np.asarray(v) for k, v in storage.items()})
  np.savez(os.path.join(tmp, "envs.npz"), **envs)
  with open(os.path.join(tmp, "host.json"), "w") as f:
    json.dump(host, f)
  with open(os.path.join(tmp, "digest.json"), "w") as f:
    json.dump(integrity.digest(storage=storage, envs=envs, host=host), f)
  final = os.path.join(root, str(step))
  shutil.rmtree(final, ignore_errors=True)
  os.rename(tmp, final)
  steps = sorted(int(d) for d in os.listdir(root) if d.isdigit())
  for old in steps[:-3]:
    shutil.rmtree(os.path.join(root, str(old)), ignore_errors=True)


def _npz(path: str) -> Dict[str, np.ndarray]:
  with files.open_read(path) as f, np.load(f) as z:
    return {k: z[k] for k in z.files}


def restore(logdir: str, process: int, step: int) -> Dict[str, Any]:
  path = os.path.join(process_directory(logdir, process), str(step))
  integrity.check_tree(path)
  storage, envs = (_npz(os.path.join(path, f"{part}.npz")) for part in ("storage", "envs"))
  with files.open_read(os.path.join(path, "host.json"), "r") as f:
    host = json.load(f)
  if os.path.exists(os.path.join(path, "digest.json")):
    with files.open_read(os.path.join(path, "digest.json"), "r") as f:
      integrity.verify(path, json.load(f), integrity.digest(storage=storage, envs=envs, host=host))
  return {"storage": storage, "envs": envs, "host": host}
