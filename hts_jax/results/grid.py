"""A grid's runs found again for the report: where each lives,
`<results>/runs/<task>/<method>/seed<k>/` (a grid with one task leaves the task level out), its
summary.json read safely, its shared-machine mark, the finished ones in order. `hts_jax.runs`
starts them.
"""

import dataclasses
import json
import os
from typing import Any, Dict, Iterator, Optional, Sequence

from hts_jax.results import guard


SHARED = "shared_machine.json"  # a run's mark, by its driver, that other work shared the machine


class GridError(ValueError):
  """A bad option of a grid (one line: `hts-reproduce` prints it and exits 2)."""


def run_dir(results: str, task: Optional[str], method: str, seed: int) -> str:
  return os.path.join(results, "runs", *([task] if task else []), method, f"seed{seed}")


def read_summary(logdir: str, quiet: bool = False) -> Optional[Dict[str, Any]]:
  """The run's summary.json; None when there is none, or when it is not a regular file, does not
  parse (truncated by a full disk or a copy, say) or holds a field of the wrong type: that run
  counts as unfinished, named in one line on stdout unless `quiet` (`guard.load_summary`)."""
  path = os.path.join(logdir, "summary.json")
  if not os.path.lexists(path):
    return None
  try:
    return guard.load_summary(path)
  except ValueError as e:
    if not quiet:
      print(f"  {e}: the run counts as unfinished", flush=True)
    return None


def finished(logdir: str) -> bool:
  """Whether the run in `logdir` finished: its summary.json exists and parses."""
  return read_summary(logdir) is not None


def shared_note(logdir: str) -> str:
  """The SHARED mark's note beside a run ("" where it has none)."""
  path = os.path.join(logdir, SHARED)
  if not os.path.lexists(path):
    return ""
  try:  # a planted FIFO or link, or a mark that does not parse: no note, not a hang
    note = json.loads(guard.read_regular(path)).get("note")
  except (OSError, ValueError, AttributeError):
    return "(an unreadable mark)"
  return note if isinstance(note, str) else "(an unreadable mark)"


@dataclasses.dataclass(frozen=True)
class Finished:
  """A finished run found under `<results>/runs`."""
  task: Optional[str]
  method: str
  logdir: str
  summary: Dict[str, Any]


def finished_runs(results: str, tasks: bool = True,
                  methods: Optional[Sequence[str]] = None) -> Iterator[Finished]:
  """The finished runs under `<results>/runs` (with a task level unless `tasks` is False), sorted
  by task, method (`methods`' order if given, else by name) and seed directory."""
  base = os.path.join(results, "runs")

  def listed(path, order=None):
    if not os.path.isdir(path):
      return []
    names = sorted(os.listdir(path))
    return [n for n in order if n in names] if order is not None else names

  for task in listed(base) if tasks else [None]:
    here = os.path.join(base, task) if task else base
    for method in listed(here, methods):
      for seed_dir in listed(os.path.join(here, method)):
        logdir = os.path.join(here, method, seed_dir)
        summary = read_summary(logdir)
        if summary is not None:
          yield Finished(task, method, logdir, summary)
