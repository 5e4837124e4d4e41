"""Where a committed result came from: the date, the machine, the commit and the command. Every
JSON under `results/` carries these (the README's figures are rendered from such JSON only), and a
grid's runs carry their host records (`run_host`)."""

import datetime
import json
import os
import platform
import random
import sys
from typing import Any, Dict, List, Optional, Sequence

from hts_jax.analysis import metrics
from hts_jax.runtime import host as runtime_host

# The checkout's root (hts_jax/results/ is two levels below it): where git says the commit, and
# where a clone's `python -m experiments.<script>` runs.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def machine() -> Dict[str, Any]:
  """This machine as a result names it: its cores, CPU model, platform and Python."""
  return {"cores": os.cpu_count(), "cpu": runtime_host.cpu_model(), "platform": platform.platform(),
          "python": platform.python_version()}


def block_order(block: str, methods: Sequence[str]) -> List[str]:
  """A paired block's methods (one seed's runs of every method, back to back on one host) in a
  random order seeded by the block's name, so no method always runs first or last."""
  order = list(methods)
  random.Random(block).shuffle(order)
  return order


def run_host(summary: Dict[str, Any]) -> Dict[str, Any]:
  """A run's host for a grid's results.json: its kind (`metrics.host_kind`), its calibration
  total at the start and the end, its CPU steal share, and its load average at the start and the
  end (None where the run did not record them), and the code of each of its sessions
  (`host.code_label`: the commit, `+dirty` at an uncommitted tree, "not recorded" before runs
  recorded it)."""
  host = summary.get("host") or {}
  return {"host": metrics.host_kind(host),
          "calibration_ms": (host.get("calibration") or {}).get("total_ms"),
          "calibration_end_ms": (host.get("calibration_end") or {}).get("total_ms"),
          "steal_share": host.get("cpu_steal_share"),
          "load": [host.get("load_start", [None])[0], host.get("load_end", [None])[0]],
          "code": [runtime_host.code_label(h.get("code") or {})
                   for h in (*host.get("earlier_sessions", ()), host)]}


def commit() -> str:
  """HEAD's hash, `+dirty` when the code (hts_jax, experiments) has uncommitted changes;
  "unknown" outside a clone."""
  record = runtime_host.code()
  return runtime_host.code_label(record) if record["source"] == "clone" else "unknown"


def command_line(argv: Sequence[str]) -> str:
  """The command as a user types it again: `python -m <module> <args>` for a module of the
  checkout (a script, `hts_jax.cli.reproduce`), else the program's name and its args (an installed
  `hts-reproduce`)."""
  path = os.path.abspath(argv[0])
  if path.endswith(".py") and path.startswith(ROOT + os.sep):
    module = os.path.relpath(path, ROOT)[:-len(".py")].replace(os.sep, ".")
    return " ".join(["python", "-m", module, *argv[1:]])
  return " ".join([os.path.basename(argv[0]), *argv[1:]])


def stamp(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
  """The provenance fields: date, commit, machine and the command (`command_line`)."""
  return {"date": datetime.date.today().isoformat(), "commit": commit(), "machine": machine(),
          "command": command_line(sys.argv if argv is None else argv)}


def save(path: str, payload: Dict[str, Any]) -> Dict[str, Any]:
  """Writes `payload` with the provenance fields to `path` as strict JSON (inf and nan, a target
  never reached, as null); returns what a reader of the file gets."""
  out = metrics.json_safe(dict(stamp(), **payload))
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
  with open(path) as f:
    return json.load(f)
