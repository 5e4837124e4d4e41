"""Where a committed result came from: the date, the machine, the commit and the command. Every
JSON under `results/` carries these (the README's figures are rendered from such JSON only)."""

import datetime
import json
import os
import platform
import random
import subprocess
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from hts_jax.analysis import metrics
from hts_jax.runtime.host import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def machine() -> Dict[str, Any]:
  return {"cores": os.cpu_count(), "cpu": cpu_model(), "platform": platform.platform(),
          "python": platform.python_version()}


def block_order(block: str, methods: Sequence[str]) -> List[str]:
  """A paired block's methods (one seed's runs of every method, back to back on one host) in a
  random order seeded by the block's name, so no method always runs first or last."""
  order = list(methods)
  random.Random(block).shuffle(order)
  return order


def run_host(summary: Dict[str, Any]) -> Dict[str, Any]:
  """A run's host for a grid's results.json: its kind (`metrics.host_kind`), its calibration
  total and its load average at the start and the end (None where the run did not record them)."""
  host = summary.get("host") or {}
  return {"host": metrics.host_kind(host),
          "calibration_ms": (host.get("calibration") or {}).get("total_ms"),
          "load": [host.get("load_start", [None])[0], host.get("load_end", [None])[0]]}


def check_hosts(runs: Sequence[Dict[str, Any]], allow_mixed: bool) -> List[str]:
  """The host kinds of a grid's runs (dicts with `host`); more than one is refused in one line
  (SystemExit 2) unless `allow_mixed`: the SPS columns would put hosts ~3x apart side by side."""
  kinds = list(dict.fromkeys(r["host"] for r in runs))
  if len(kinds) > 1 and not allow_mixed:
    print(f"error: the runs come from {len(kinds)} host kinds ({'; '.join(kinds)}): their "
          "SPS are not comparable; re-run on one host kind or pass --mixed_hosts (the table "
          "then says so)", file=sys.stderr)
    raise SystemExit(2)
  return kinds


def commit() -> str:
  """HEAD's hash, `+dirty` when the code (hts_jax, experiments) has uncommitted changes."""
  try:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "hts_jax", "experiments"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    return out + ("+dirty" if dirty else "")
  except (OSError, subprocess.CalledProcessError):
    return "unknown"


def stamp(argv: Optional[List[str]] = None) -> Dict[str, Any]:
  """The provenance fields: date, commit, machine and the command (`python -m <module> <args>`)."""
  argv = sys.argv if argv is None else argv
  module = os.path.relpath(os.path.abspath(argv[0]), ROOT)[:-len(".py")].replace(os.sep, ".")
  return {"date": datetime.date.today().isoformat(), "commit": commit(), "machine": machine(),
          "command": " ".join(["python", "-m", module, *argv[1:]])}


def save(path: str, payload: Dict[str, Any]) -> Dict[str, Any]:
  """Writes `payload` with the provenance fields to `path` (JSON); returns what it wrote."""
  out = dict(stamp(), **payload)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
  return out


def with_block(text: str, begin: str, end: str, markdown: str) -> Optional[str]:
  """`text` with the part from the marker `begin` to the marker `end` (README's script-written
  blocks) replaced by `begin`, `markdown`, `end`; None when the markers are missing."""
  start, stop = text.find(begin), text.find(end)
  if start < 0 or stop < start:
    return None
  return text[:start] + f"{begin}\n{markdown}{end}" + text[stop + len(end):]


def replace_block(path: str, begin: str, end: str, markdown: str) -> bool:
  """`with_block` on the file at `path`, in place; False when the markers are missing."""
  with open(path) as f:
    text = with_block(f.read(), begin, end, markdown)
  if text is None:
    return False
  with open(path, "w") as f:
    f.write(text)
  return True


def run_missing(runs: Iterable[Tuple[str, List[str]]]) -> None:
  """Runs each `(logdir, command)` whose logdir holds no summary.json yet, one at a time in the
  repo root, in the order given (a grid script's paired blocks; a resumed grid skips what is
  done)."""
  for logdir, cmd in runs:
    if os.path.exists(os.path.join(logdir, "summary.json")):
      continue
    if os.path.exists(logdir):  # an interrupted run: it starts again from scratch
      cmd = [*cmd, "--overwrite"]
    print(" ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)


def publish(results: str, payload: Dict[str, Any], render: Callable[[Dict[str, Any]], str],
            readme: Optional[str], begin: str, end: str) -> Dict[str, Any]:
  """A grid's report: `payload` with its provenance to `<results>/results.json`, `render(it)` to
  `<results>/table.md` and into the `readme`'s block between the markers (if `readme`); returns
  what it saved."""
  out = save(os.path.join(results, "results.json"), payload)
  markdown = render(out)
  with open(os.path.join(results, "table.md"), "w") as f:
    f.write(markdown)
  if readme and not replace_block(readme, begin, end, markdown):
    print(f"warning: {readme} has no {begin!r} block; not updated", file=sys.stderr)
  return out
