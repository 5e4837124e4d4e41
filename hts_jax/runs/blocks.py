"""A grid's training runs as paired blocks, run one at a time.

A block is one seed's runs of every method on one task, run back to back on one host in an order
seeded by the block's name (`provenance.block_order`), so no method always runs first or last and
a block's wall times compare. Each run is started by `launch.launch` into its folder
(`grid.run_dir`): a grid resumed in a later sitting runs only what is missing.
"""

import dataclasses
import glob
import json
import os
import shutil
import statistics
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from hts_jax.analysis import metrics, stats
from hts_jax.results import grid, provenance
from hts_jax.runs import launch
from hts_jax.runtime import host


@dataclasses.dataclass(frozen=True)
class Run:
  """One training run of a grid: its task, method, seed and flags."""
  task: Optional[str]  # None: a one-task grid
  method: str
  seed: int
  flags: Mapping[str, Any]  # the launcher's flags (no --logdir)

  @property
  def block(self) -> str:
    return f"{self.task}/seed{self.seed}" if self.task else f"seed{self.seed}"

  def logdir(self, results: str) -> str:
    return grid.run_dir(results, self.task, self.method, self.seed)


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


def to_do(runs: Sequence[Run], results: str) -> List[Run]:
  """The runs of `runs` with no summary.json under `results` yet (quiet: `run_all` names a bad
  one)."""
  return [r for r in runs if grid.read_summary(r.logdir(results), quiet=True) is None]


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
  summaries = (grid.read_summary(os.path.dirname(p), quiet=True) for p in sorted(glob.glob(
      os.path.join(results, "runs", "**", "summary.json"), recursive=True)))
  kind = [h for h in map(provenance.run_host, filter(None, summaries))
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
    for logdir in sorted(glob.glob(grid.run_dir(results, r.task, "*", r.seed))):
      method = os.path.basename(os.path.dirname(logdir))
      if method == r.method or method not in partners:
        continue
      done = grid.read_summary(logdir, quiet=True)
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


def run_all(runs: Sequence[Run], results: str, shared_machine: str = "", *,
            dry_run: bool = False) -> List[str]:
  """Launches each run not finished yet, one at a time, in order, and writes `shared_machine`
  (what else ran on the machine) as the `grid.SHARED` mark beside each run that finishes now;
  returns the failed ones' logdirs (their stderr.txt says why). `dry_run` prints the commands
  and, last, `estimate` of them all."""
  failed = []
  for run in runs:
    logdir = run.logdir(results)
    done = os.path.join(logdir, "summary.json")
    fresh = not os.path.exists(done)
    if not launch.launch(run.flags, logdir, dry_run=dry_run) and not dry_run:
      failed.append(logdir)
    if fresh and shared_machine and os.path.exists(done):
      with open(os.path.join(logdir, grid.SHARED), "w") as f:
        json.dump({"note": shared_machine}, f)
  if dry_run:
    print(estimate(runs, results, metrics.host_kind(host.start_record(calibration=False))))
  return failed


def estimate(runs: Sequence[Run], results: str, kind: str) -> str:
  """How long the runs not finished yet would take on host kind `kind`: each its budget over
  the median whole-run SPS (evaluations included) of the finished runs of its task and method
  on that kind, else of its method; runs with neither are counted apart (and where every run is,
  the line gives no hours rather than 0.0)."""
  done: Dict[tuple, List[float]] = {}
  for f in grid.finished_runs(results, tasks=any(r.task for r in runs)):
    if metrics.host_kind(f.summary.get("host")) == kind and f.summary.get("sps"):
      done.setdefault((f.task, f.method), []).append(f.summary["sps"])
      done.setdefault((None, f.method), []).append(f.summary["sps"])
  todo = [r for r in runs if not grid.finished(r.logdir(results))]
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
