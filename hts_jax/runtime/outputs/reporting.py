"""Run outputs (host side): metrics.csv, summary.json, progress lines, and the parameter hash that
determinism is judged by. TensorBoard and W&B: `hts_jax.runtime.outputs.tracking`."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
import time
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

from hts_jax.runtime.outputs import files


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
  """Writes `path` whole or not at all, through `<path>.tmp` (`files.write_atomic`: no link
  followed, removed if the write fails)."""
  files.write_atomic(path, lambda f: json.dump(obj, f, indent=1, default=_to_builtin))


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
  row. The file is made new, in `metrics.csv.tmp` renamed onto `metrics.csv`, and its descriptor
  kept to append to: a link planted at either name is replaced, never written through, and a
  resumed run's kept rows are never truncated in place (a kill at any moment leaves the old
  file or the new one)."""

  def __init__(self, logdir: str, keep_updates: Optional[int] = None):
    """`keep_updates`: resuming, keep the existing rows up to this many updates and append."""
    self.path = os.path.join(logdir, "metrics.csv")
    kept = [] if keep_updates is None else kept_rows(self.path, keep_updates)
    # The env steps of the last row kept (0: none): a resumed TensorBoard log purges what follows.
    self.last_env_steps = max([int(float(r["env_steps"])) for r in kept], default=0)
    self._file = files.open_temporary(self.path, newline="")
    self._writer: Optional[csv.DictWriter] = None
    try:
      if kept:
        self._writer = csv.DictWriter(self._file, fieldnames=list(kept[0]), extrasaction="ignore")
        self._writer.writeheader()
        self._writer.writerows(kept)
      files.replace_from_temporary(self._file, self.path)
    except BaseException:
      self._file.close()
      raise

  def write(self, row: Dict[str, Any]) -> None:
    if self._writer is None:
      self._writer = csv.DictWriter(self._file, fieldnames=list(row), extrasaction="ignore")
      self._writer.writeheader()
    self._writer.writerow({k: _fmt(v) for k, v in row.items()})
    self._file.flush()

  def close(self) -> None:
    self._file.close()


def kept_rows(path: str, keep_updates: int) -> List[Dict[str, str]]:
  """The rows of an earlier session's metrics.csv up to `keep_updates` updates. A malformed tail
  (a last row cut short by a kill, a row with too few or too many fields or without numbers, a
  file without the `updates` column) is dropped with one warning line naming the rows kept."""
  try:
    with files.open_read(path, "r", newline="") as f:
      text = f.read()
  except FileNotFoundError:
    return []
  lines = text.splitlines(keepends=True)
  rows = list(csv.DictReader(lines))
  good = 0
  for r in rows:
    if None in r or None in r.values() or not _numbers(r):
      break
    good += 1
  # A row is written whole with its line end: one without is a row cut short.
  if good == len(rows) and lines and not lines[-1].endswith(("\n", "\r")) and rows:
    good -= 1
  kept = [r for r in rows[:good] if int(float(r["updates"])) <= keep_updates]
  if good < len(rows):
    print(f"warning: {path} ends in {len(rows) - good} malformed row(s) (cut short, or "
          f"without the updates column): dropped; {len(kept)} rows kept",
          file=sys.stderr, flush=True)
  return kept


def _numbers(row: Dict[str, str]) -> bool:
  try:
    float(row["updates"]), float(row["env_steps"])
  except (KeyError, TypeError, ValueError):
    return False
  return True


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
