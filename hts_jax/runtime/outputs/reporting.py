"""Run outputs (host side): metrics.csv, summary.json, progress lines, and the parameter hash that
determinism is judged by. TensorBoard and W&B: `hts_jax.runtime.outputs.tracking`."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import sys
import time
from typing import Any, Dict, Iterable, List, Optional

import numpy as np


def param_sha256(params) -> str:
  """sha256 over the params' bytes, leaves in `jax.tree.leaves` order (fixed for a given model;
  dicts by key). Any tree: a checkpoint's digest (`integrity`) hashes its parts with it too. An
  array replicated over several processes' devices is hashed as this process's copy."""
  import jax  # pylint: disable=import-outside-toplevel
  h = hashlib.sha256()
  for leaf in jax.tree.leaves(params):
    if hasattr(leaf, "is_fully_addressable") and not leaf.is_fully_addressable:
      leaf = leaf.addressable_data(0)
    h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
  return h.hexdigest()


def write_json_atomic(path: str, obj: Any) -> None:
  """Writes `path` whole or not at all: through `<path>.tmp`, which a failed write (a full disk)
  removes before the error goes on."""
  tmp = f"{path}.tmp"
  try:
    with open(tmp, "w") as f:
      json.dump(obj, f, indent=1, default=_to_builtin)
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(OSError):
      os.remove(tmp)  # a link there goes, not what it points to
    raise


def _to_builtin(x):
  if isinstance(x, (np.integer,)):
    return int(x)
  if isinstance(x, (np.floating,)):
    return float(x)
  if isinstance(x, np.ndarray):
    return x.tolist()
  raise TypeError(f"not JSON serialisable: {type(x)}")


class MetricsWriter:
  """Appends one row per learner update to `<logdir>/metrics.csv`. Columns are fixed by the first
  row."""

  def __init__(self, logdir: str, keep_updates: Optional[int] = None):
    """`keep_updates`: resuming, keep the existing rows up to this many updates and append."""
    self.path = os.path.join(logdir, "metrics.csv")
    kept: List[Dict[str, str]] = []
    if keep_updates is not None and os.path.exists(self.path):
      with open(self.path, newline="") as f:
        kept = [r for r in csv.DictReader(f) if int(r["updates"]) <= keep_updates]
    # The env steps of the last row kept (0: none): a resumed TensorBoard log purges what follows.
    self.last_env_steps = max([int(float(r["env_steps"])) for r in kept], default=0)
    self._file = open(self.path, "w", newline="")
    self._writer: Optional[csv.DictWriter] = None
    if kept:
      self._writer = csv.DictWriter(self._file, fieldnames=list(kept[0]), extrasaction="ignore")
      self._writer.writeheader()
      self._writer.writerows(kept)

  def write(self, row: Dict[str, Any]) -> None:
    if self._writer is None:
      self._writer = csv.DictWriter(self._file, fieldnames=list(row), extrasaction="ignore")
      self._writer.writeheader()
    self._writer.writerow({k: _fmt(v) for k, v in row.items()})
    self._file.flush()

  def close(self) -> None:
    self._file.close()


def _fmt(v):
  if isinstance(v, (float, np.floating)):
    return f"{float(v):.6g}"
  return v


class Progress:
  """Prints a progress line with SPS at most every `every_s` seconds (and always at the end)."""

  def __init__(self, total_steps: int, every_s: float, prefix: str, stream=None):
    self.total = total_steps
    self.every_s = every_s
    self.prefix = prefix
    self.stream = stream or sys.stdout
    self._last = -float("inf")

  def update(self, steps: int, wall: float, updates: int, train_return: Optional[float],
             eval_return: Optional[float], force: bool = False) -> None:
    now = time.monotonic()
    if not force and now - self._last < self.every_s:
      return
    self._last = now
    frac = min(1.0, steps / max(1, self.total))
    bar = "#" * int(20 * frac) + "-" * (20 - int(20 * frac))
    parts = [f"[{self.prefix}] [{bar}] {steps:,}/{self.total:,} steps",
             f"{steps / max(wall, 1e-9):,.0f} sps", f"{updates} updates", f"{wall:.1f}s"]
    if train_return is not None:
      parts.append(f"train return {train_return:.1f}")
    if eval_return is not None:
      parts.append(f"eval return {eval_return:.1f}")
    print(" | ".join(parts), file=self.stream, flush=True)


def lag_summary(lags: Iterable[int]) -> Dict[str, Any]:
  lags = list(lags)
  if not lags:
    return {"per_update": [], "histogram": {}, "min": None, "mean": None, "max": None}
  values, counts = np.unique(np.asarray(lags), return_counts=True)
  return {"per_update": lags,
          "histogram": {str(int(v)): int(c) for v, c in zip(values, counts)},
          "min": int(min(lags)), "mean": float(np.mean(lags)), "max": int(max(lags))}


def mean_or_none(xs: List[float]) -> Optional[float]:
  return float(np.mean(xs)) if xs else None
