"""A grid of training runs as paired blocks, run one at a time and found again for the report.

A block is one seed's runs of every method on one task, run back to back on one host in an order
seeded by the block's name (`provenance.block_order`), so no method always runs first or last and
a block's wall times compare. Runs live in `<results>/runs/<task>/<method>/seed<k>/` (a grid with
one task leaves the task level out) and each is started by `launch.launch`: a grid resumed in a
later sitting runs only what is missing.
"""

import dataclasses
import glob
import json
import os
import shutil
import statistics
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence

from hts_jax.analysis import metrics, stats
from hts_jax.results import guard, launch, provenance
from hts_jax.runtime import host


SHARED = "shared_machine.json"  # a run's mark, by its driver, that other work shared the machine


class GridError(ValueError):
  """A bad option of a grid (one line: `hts-reproduce` prints it and exits 2)."""


def check_methods(methods: Iterable[str], known: Iterable[str]) -> None:
  unknown = sorted(set(methods) - set(known))
  if unknown:
    raise GridError(f"--methods: unknown {unknown}; expected some of {sorted(known)}")


def check_tasks(flag: str, tasks: Iterable[str], known: Sequence[str], what: str) -> None:
  """One line naming the unknown tasks (games, scenarios) of `flag` and the known ones."""
  unknown = sorted(set(tasks) - set(known))
  if unknown:
    raise GridError(f"{flag}: unknown {unknown}; {what} are {list(known)}")


def parse_seeds(values: Iterable[str]) -> List[int]:
  """`--seeds` as integers (a bad one: one line)."""
  try:
    return [int(s) for s in values]
  except ValueError as e:
    raise GridError(f"--seeds: {e}") from None


@dataclasses.dataclass(frozen=True)
class Run:
  task: Optional[str]  # None: a one-task grid
  method: str
  seed: int
  flags: Mapping[str, Any]  # the launcher's flags (no --logdir)

  @property
  def block(self) -> str:
    return f"{self.task}/seed{self.seed}" if self.task else f"seed{self.seed}"

  def logdir(self, results: str) -> str:
    return run_dir(results, self.task, self.method, self.seed)


def run_dir(results: str, task: Optional[str], method: str, seed: int) -> str:
  return os.path.join(results, "runs", *([task] if task else []), method, f"seed{seed}")


def paired_blocks(tasks: Sequence[Optional[str]], methods: Sequence[str], seeds: Sequence[int],
                  make: Callable[[Optional[str], str, int], Mapping[str, Any]]) -> List[Run]:
  """Every (task, method, seed) run, seed-major, each block's methods in its seeded order;
  `make(task, method, seed)` gives a run's flags."""
  out = []
  for seed in seeds:
    for task in tasks:
      block = Run(task, "", seed, {}).block
      for method in provenance.block_order(block, methods):
        out.append(Run(task, method, seed, make(task, method, seed)))
  return out


def _summary(path: str) -> Optional[Dict[str, Any]]:  # quiet: `run_all` names a bad one
  try:
    return guard.load_summary(path)
  except ValueError:
    return None


def to_do(runs: Sequence[Run], results: str) -> List[Run]:
  """The runs of `runs` with no summary.json under `results` yet."""
  return [r for r in runs if _summary(os.path.join(r.logdir(results), "summary.json")) is None]


def host_check(runs: Sequence[Run], results: str, seconds: float,
               probe: Callable[[float], Optional[float]] = host.steal_probe,
               calibrate: Callable[[], Dict[str, float]] = host.calibrate,
               here: Optional[str] = None) -> List[str]:
  """Two lines on this host (`here`, default: its kind) before the runs, nothing when no run is
  to do or `seconds` is 0, so a sitting learns them before the run's hours:
  - the CPU steal share that `probe` measures under load for `seconds`, a `warning:` above
    `stats.STEAL_SHARED` (such runs count as shared and leave the paired ratios);
  - its calibration's total against the median of the finished runs of its kind under `results`,
    a `warning:` above `stats.CALIBRATION_SHARED` times it (a host that slowed without steal
    showing: noisy neighbours; its runs count as shared wherever they are not paired)."""
  if seconds <= 0 or not to_do(runs, results):
    return []
  lines = []
  share = probe(seconds)
  if stats.stolen({"steal_share": share}):
    lines.append(f"warning: {share:.0%} of this host's CPU time under load went to other VMs "
                 f"(steal, {seconds:g} s probe), above the {stats.STEAL_SHARED:.0%} at which a "
                 "run counts as shared: its times will not count in paired ratios")
  elif share is not None:
    lines.append(f"CPU steal under load: {share:.1%} ({seconds:g} s probe)")
  here = here or metrics.host_kind(host.start_record(calibration=False))
  kind = [h for h in (provenance.run_host(s) for s in map(_summary, sorted(glob.glob(
      os.path.join(results, "runs", "**", "summary.json"), recursive=True))) if s)
          if h["host"] == here and h["calibration_ms"]]  # the grids' reading of each run's host
  ms = calibrate()["total_ms"]
  if not kind:
    return lines + [f"calibration: {ms:.0f} ms (no finished run of {here} here to compare)"]
  median = statistics.median(h["calibration_ms"] for h in kind)
  if stats.shared({"calibration_ms": ms}, kind):  # the rule that would flag its runs
    return lines + [f"warning: this host calibrates at {ms:.0f} ms, {ms / median:.1f}x the "
                    f"{median:.0f} ms median of {len(kind)} finished run(s) of {here} here: "
                    f"above {stats.CALIBRATION_SHARED:g}x, its runs count as shared wherever "
                    "they are not paired"]
  return lines + [f"calibration: {ms:.0f} ms ({median:.0f} ms: the median of {len(kind)} "
                  f"finished run(s) of {here} here)"]


def other_host_kinds(runs: Sequence[Run], results: str, partners: Sequence[str],
                     here: Optional[str] = None) -> List[str]:
  """A line for each run not finished yet whose block has a finished run of one of `partners`
  (the methods it pairs with) on another host kind than `here` (default: this host's): a paired
  ratio needs its two runs on one kind (`compare.paired`), so a sitting on the other kind learns
  it before the run's hours, not after."""
  todo = to_do(runs, results)
  if not todo:
    return []
  here = here or metrics.host_kind(host.start_record(calibration=False))
  lines = []
  for r in todo:
    apart = []
    for path in sorted(glob.glob(os.path.join(run_dir(results, r.task, "*", r.seed),
                                              "summary.json"))):
      method = os.path.basename(os.path.dirname(os.path.dirname(path)))
      done = _summary(path) if method != r.method and method in partners else None
      kind = metrics.host_kind((done or {}).get("host"))
      if done and kind != here:
        apart.append(f"{method} ran on {kind}")
    if apart:
      lines.append(f"warning: {r.block}: {'; '.join(apart)}, this host is {here}: {r.method}'s "
                   "times here will not pair with them (paired ratios need one host kind)")
  return lines


def before_runs(runs: Sequence[Run], results: str, partners: Sequence[str],
                seconds: float) -> List[str]:
  """What a sitting should know before the runs still to do of `runs` (nothing when none is):
  `other_host_kinds`' lines, then `host_check`'s, on this host's kind, read once."""
  if not to_do(runs, results):
    return []
  here = metrics.host_kind(host.start_record(calibration=False))
  return (other_host_kinds(runs, results, partners, here)
          + host_check(runs, results, seconds, here=here))


def run_all(runs: Sequence[Run], results: str, *, dry_run: bool = False) -> List[str]:
  """Launches each run not finished yet, one at a time, in order; returns the failed ones'
  logdirs (their stderr.txt says why). `dry_run` prints the commands and, last, `estimate`."""
  failed = []
  for run in runs:
    logdir = run.logdir(results)
    if not launch.launch(run.flags, logdir, dry_run=dry_run) and not dry_run:
      failed.append(logdir)
  if dry_run:
    print(estimate(runs, results, metrics.host_kind(host.start_record(calibration=False))))
  return failed


def run_all_marked(runs: Sequence[Run], results: str, shared_machine: str = "", *,
                   dry_run: bool = False) -> List[str]:
  """`run_all`, one run at a time, writing `shared_machine` (what else ran on the machine) as the
  SHARED mark beside each run that finishes now; returns the failed runs' logdirs."""
  failed = []
  for run in runs:
    done = os.path.join(run.logdir(results), "summary.json")
    fresh = not os.path.exists(done)
    failed += run_all([run], results, dry_run=dry_run)
    if fresh and shared_machine and os.path.exists(done):
      with open(os.path.join(run.logdir(results), SHARED), "w") as f:
        json.dump({"note": shared_machine}, f)
  return failed


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


def estimate(runs: Sequence[Run], results: str, kind: str) -> str:
  """How long the runs not finished yet would take on host kind `kind`: each its budget over
  the median whole-run SPS (evaluations included) of the finished runs of its task and method
  on that kind, else of its method; runs with neither are counted apart (and where every run is,
  the line gives no hours rather than 0.0)."""
  done: Dict[tuple, List[float]] = {}
  for f in finished_runs(results, tasks=any(r.task for r in runs)):
    if metrics.host_kind(f.summary.get("host")) == kind and f.summary.get("sps"):
      done.setdefault((f.task, f.method), []).append(f.summary["sps"])
      done.setdefault((None, f.method), []).append(f.summary["sps"])
  todo = [r for r in runs if not launch.finished(r.logdir(results))]
  hours, unknown = 0.0, 0
  for r in todo:
    sps = done.get((r.task, r.method)) or done.get((None, r.method))
    if sps and r.flags.get("total_steps"):
      hours += r.flags["total_steps"] / statistics.median(sps) / 3600
    else:
      unknown += 1
  if not todo:
    return "nothing to run: every run has finished"
  if unknown == len(todo):
    return (f"{len(todo)} of {len(runs)} runs to do on {kind}: no finished run of their tasks "
            "or methods there to go by for an estimate")
  line = (f"{len(todo)} of {len(runs)} runs to do: about {hours:.1f} h on {kind} (each run's "
          "budget over the whole-run SPS of the finished runs of its task and method there, "
          "else of its method)")
  return line + (f"; {unknown} with no finished run to go by" if unknown else "")


def throughput_benchmark(results: str, scenarios: Sequence[str], methods: Sequence[str],
                         make: Callable[[str, str, int], Mapping[str, Any]], repeats: int,
                         steps: int) -> Dict[str, Any]:
  """A protocol's throughput benchmark: per scenario, each method `repeats` times for `steps` env
  steps (`make(scenario, method, steps)` gives its flags; evaluations off), the methods' order
  shuffled per repeat (seeded), one training process each on this host; the SPS and their median
  per method into `<results>/throughput.json`, with the runs' host records. Returns what it
  saved."""
  out: Dict[str, Any] = {"repeats": repeats, "steps": steps, "scenarios": {}}
  hosts = []
  for scenario in scenarios:
    sps: Dict[str, List[float]] = {m: [] for m in methods}
    for r in range(repeats):
      for method in provenance.block_order(f"bench/{scenario}/{r}", methods):
        values = dict(make(scenario, method, steps), eval_every=0)
        logdir = os.path.join(results, "benchmark_runs", scenario, method)
        summary = launch.run_process(launch.flag_args(values), logdir, echo=True)
        sps[method].append(summary["sps"])
        hosts.append(provenance.run_host(summary))
    out["scenarios"][scenario] = {m: {"sps": v, "median_sps": statistics.median(v)}
                                  for m, v in sps.items()}
  out.update(host="; ".join(dict.fromkeys(h["host"] for h in hosts)), runs=hosts)
  saved = provenance.save(os.path.join(results, "throughput.json"), out)
  shutil.rmtree(os.path.join(results, "benchmark_runs"), ignore_errors=True)
  return saved


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
        summary = launch.read_summary(logdir)
        if summary is not None:
          yield Finished(task, method, logdir, summary)
