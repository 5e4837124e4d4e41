"""The host a run ran on and the code it ran (host side): summary.json's `host` block.

Wall times are only comparable on one host: 2-core machines of this project's kind have given ~3x
different SPS for the same config (AMD EPYC vs Intel Xeon), and float reductions make `param_sha256`
differ between CPU models. So every run records its CPU model and identity, the cores the process
may use (its affinity mask capped by its cgroup's CPU quota, as in a container: `cpu_model`,
`cpu_identity`, `usable_cores`) and memory, the load average at its start and end, the code
(`code`: the commit and whether it had uncommitted changes, or the installed version) and library
versions, and a calibration: the time of a fixed, seeded CPU workload run before anything of the
run starts (`calibrate`), so SPS from different hosts can be compared or normalised, and again at
its end. A host that slowed inside the run shows there, and in the run's CPU steal share
(`cpu_times`: the time the hypervisor gave this VM's CPUs to other VMs, as vmstat's `st`
column). Reports group wall-time figures by `hts_jax.analysis.metrics.host_kind` (CPU model and
usable cores). A resumed run's block keeps each earlier session's record, its code included.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time
from typing import Any, Dict, Optional, Sequence

import numpy as np

import hts_jax

# Libraries whose versions a result depends on; the env packages are recorded where installed.
PACKAGES = ("jax", "jaxlib", "flax", "optax", "numpy", "gymnasium", "ale-py", "envpool",
            "gfootball", "mujoco", "minatar")
# Each calibration part is timed `REPEATS` times after one warm-up; the median is reported.
REPEATS = 5


def versions() -> Dict[str, str]:
  out = {}
  for name in PACKAGES:
    try:
      out[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      pass
  return out


# The clone's root, where git says the commit (hts_jax/ is one level below it), and the paths whose
# uncommitted changes make a run's code dirty (results, logs and notebooks are not code).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(hts_jax.__file__)))
CODE_PATHS = ("hts_jax", "experiments", "pyproject.toml", "requirements.txt")


def _git(*args: str) -> str:
  return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True,
                        timeout=30).stdout.strip()


def code() -> Dict[str, Any]:
  """The code that runs: hts_jax's `version` and, from a clone (the package inside a git work
  tree), its `commit` and whether the code (CODE_PATHS) has uncommitted changes (`dirty`, new
  files included). Installed outside a clone, the commit is the one pip recorded when it installed
  from a git URL (PEP 610's direct_url.json) and `dirty` is None; None both where unknown."""
  out: Dict[str, Any] = {"version": hts_jax.__version__, "commit": None, "dirty": None}
  try:
    if os.path.realpath(_git("rev-parse", "--show-toplevel")) == os.path.realpath(ROOT):
      out["commit"] = _git("rev-parse", "HEAD")
      out["dirty"] = bool(_git("status", "--porcelain", "--", *CODE_PATHS))
      return dict(out, source="clone")
  except (OSError, subprocess.SubprocessError):
    pass
  try:
    direct = json.loads(importlib.metadata.distribution("hts_jax").read_text("direct_url.json")
                        or "{}")
    out["commit"] = (direct.get("vcs_info") or {}).get("commit_id")
  except (importlib.metadata.PackageNotFoundError, ValueError):
    pass
  return dict(out, source="installed")


def code_label(record: Dict[str, Any]) -> str:
  """A `code` record as one string: the commit (`+dirty` where the code had uncommitted changes),
  else `version <v>`, else "not recorded" (runs from before summary.json recorded it)."""
  if not record:
    return "not recorded"
  if record.get("commit"):
    return record["commit"] + ("+dirty" if record.get("dirty") else "")
  return f"version {record.get('version')}"


# What the CPU is and how many cores a process may use: the CPU's model name and identity from
# /proc/cpuinfo, memory, and the cgroup's CPU quota over the affinity mask.

def _first_processor(path: str = "/proc/cpuinfo") -> Optional[Dict[str, str]]:
  """/proc/cpuinfo's fields for its first processor; None where it is unreadable."""
  fields: Dict[str, str] = {}
  try:
    with open(path) as f:
      for line in f:
        if not line.strip():
          break  # the first processor only
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
  except OSError:
    return None
  return fields


def cpu_model() -> str:
  """The CPU's model name from /proc/cpuinfo (platform.processor() elsewhere)."""
  return ((_first_processor() or {}).get("model name")
          or platform.processor() or platform.machine())


# ISA extensions XLA's CPU code generation uses (vector width, int8/bf16 dot products, matrix
# tiles): two CPUs of one generic model name ("Intel(R) Xeon(R) Processor") can differ in them.
ISA_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16")


def cpu_identity(path: str = "/proc/cpuinfo") -> Dict[str, Any]:
  """What tells CPUs of one model name apart, from /proc/cpuinfo's first processor: its vendor,
  family, model and stepping numbers, cache size (KB) and which of ISA_FLAGS it has; empty
  where /proc/cpuinfo is unreadable. Recorded, not part of the host kind: a 2-core "Intel(R)
  Xeon(R) Processor" host has calibrated at 63-93 ms and at 109-136 ms, and the runs before
  2026-12-03 recorded no more than the name."""
  fields = _first_processor(path)
  if fields is None:
    return {}
  out: Dict[str, Any] = {}
  if "vendor_id" in fields:
    out["vendor"] = fields["vendor_id"]
  for key, name in (("cpu family", "family"), ("model", "model"), ("stepping", "stepping")):
    if fields.get(key, "").isdigit():
      out[name] = int(fields[key])
  cache = fields.get("cache size", "").split()
  if cache and cache[0].isdigit():
    out["cache_kb"] = int(cache[0])
  if "flags" in fields:
    have = set(fields["flags"].split())
    out["isa"] = [f for f in ISA_FLAGS if f in have]
  return out


def tree_cpu_s(pids: Sequence[int]) -> float:
  """CPU seconds (user + system) this process (all its threads: actors, learner, XLA, envpool's
  pool) and the processes `pids` (executors) have used so far; a process that is gone counts 0.
  Read from /proc (Linux): the planner's stage costs (`analysis.planner`)."""
  total = time.process_time()
  tick = os.sysconf("SC_CLK_TCK")
  for pid in pids:
    try:
      with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
      total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    except (OSError, IndexError, ValueError):
      continue
  return total


def memory_gib() -> float:
  try:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
  except (ValueError, OSError, AttributeError):
    return float("nan")


def cpu_quota_cores(root: str = "/sys/fs/cgroup") -> Optional[float]:
  """The CPU time the process's cgroup may use, in cores (its quota over its period), or None
  where no quota is set: cgroup v2's `cpu.max` ("200000 100000"; "max ..." is no quota), else
  v1's `cpu/cpu.cfs_quota_us` over `cpu/cpu.cfs_period_us` (-1 is no quota). A container started
  with `--cpus=4` on a 64-core host has 64 cores in its affinity mask and 4 in its quota."""
  pairs = ((os.path.join(root, "cpu.max"), None),
           (os.path.join(root, "cpu", "cpu.cfs_quota_us"),
            os.path.join(root, "cpu", "cpu.cfs_period_us")))
  for quota_path, period_path in pairs:
    try:
      with open(quota_path) as f:
        fields = f.read().split()
      if period_path is not None:
        with open(period_path) as f:
          fields.append(f.read().strip())
      quota, period = fields[0], float(fields[1])
    except (OSError, IndexError, ValueError):
      continue
    if quota in ("max", "-1") or period <= 0:
      return None
    try:
      return float(quota) / period
    except ValueError:
      return None
  return None


def usable_cores(root: str = "/sys/fs/cgroup") -> int:
  """The cores the process can keep busy: its affinity mask, capped by its cgroup's CPU quota
  (rounded up: a quota of 1.5 cores keeps 2 busy part of the time)."""
  return capped(cpu_quota_cores(root))


def capped(quota: Optional[float]) -> int:
  """The affinity mask's cores, capped by `quota` (cores; None: no quota)."""
  try:
    cores = len(os.sched_getaffinity(0))
  except AttributeError:
    cores = os.cpu_count() or 1
  return cores if quota is None else min(cores, max(1, math.ceil(quota)))


def _median_s(fn, repeats: int = REPEATS) -> float:
  fn()  # warm-up (and compilation, for jitted parts)
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    fn()
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def _nature_cnn_loss(params, frames):
  """Nature-CNN's shape (Mnih et al. 2015: 8x8/4 32, 4x4/2 64, 3x3/1 64, 512, heads) on uint8
  frames, written with lax directly: a workload, not a network of the run's."""
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  x = frames.astype(jnp.float32) / 255.0
  for w, stride in zip(params["convs"], (4, 2, 1)):
    x = jax.nn.relu(jax.lax.conv_general_dilated(x, w, (stride, stride), "VALID",
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC")))
  x = jax.nn.relu(x.reshape(x.shape[0], -1) @ params["dense"])
  return jnp.mean(jnp.square(x @ params["head"]))


def _mlp_loss(params, x):
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  for w in params:
    x = jax.nn.tanh(x @ w)
  return jnp.mean(jnp.square(x))


def calibrate() -> Dict[str, float]:
  """Times a fixed, seeded CPU workload (about a second on a 2-core machine, compilation
  included): a Nature-CNN gradient (batch 32 of 84x84x4 frames: XLA's convolutions, what bounds
  CNN runs on CPU), an MLP gradient (batch 2048 through 64-64-64: the small-network learner), a
  float32 numpy matmul (BLAS) and a pure-Python loop (the executors' and actors' interpreter
  work). Each part's median over `REPEATS` timings after a warm-up, in milliseconds; `total_ms`
  is their sum, `wall_s` the whole calibration's time."""
  import jax  # pylint: disable=import-outside-toplevel

  with jax.default_device(jax.devices("cpu")[0]):  # a CPU figure, whatever the accelerators
    return _calibrate(jax)


def _calibrate(jax) -> Dict[str, float]:
  start = time.perf_counter()
  rng = np.random.default_rng(0)
  normal = lambda *shape: (rng.normal(size=shape) / np.sqrt(np.prod(shape[:-1]))).astype(
      np.float32)
  cnn = {"convs": [normal(8, 8, 4, 32), normal(4, 4, 32, 64), normal(3, 3, 64, 64)],
         "dense": normal(7 * 7 * 64, 512), "head": normal(512, 7)}
  frames = rng.integers(0, 256, (32, 84, 84, 4)).astype(np.uint8)
  mlp = [normal(64, 64) for _ in range(3)]
  features = rng.normal(size=(2048, 64)).astype(np.float32)
  cnn_grad, mlp_grad = jax.jit(jax.grad(_nature_cnn_loss)), jax.jit(jax.grad(_mlp_loss))
  a = rng.normal(size=(512, 512)).astype(np.float32)

  def python_loop():
    x = 0
    for i in range(500_000):
      x = (x + i * 7) % 1_000_003
    return x

  out = {"cnn_grad_ms": _median_s(lambda: jax.block_until_ready(cnn_grad(cnn, frames))),
         "mlp_grad_ms": _median_s(lambda: jax.block_until_ready(mlp_grad(mlp, features))),
         "numpy_matmul_ms": _median_s(lambda: a @ a @ a @ a),
         "python_loop_ms": _median_s(python_loop)}
  out = {k: round(1000.0 * v, 3) for k, v in out.items()}
  out["total_ms"] = round(sum(out.values()), 3)
  out["wall_s"] = round(time.perf_counter() - start, 3)
  return out


def accelerators() -> Dict[str, int]:
  """The accelerators JAX sees, by device kind (e.g. {"NVIDIA H100": 1}); empty on CPU."""
  import jax  # pylint: disable=import-outside-toplevel
  kinds: Dict[str, int] = {}
  for d in jax.devices():
    if d.platform != "cpu":
      kinds[d.device_kind] = kinds.get(d.device_kind, 0) + 1
  return kinds


def cpu_times(path: str = "/proc/stat") -> Optional[Dict[str, int]]:
  """The machine's CPU time since boot in clock ticks, all CPUs together: `steal` (time the
  hypervisor ran another VM on this VM's CPUs) and `total` (user, nice, system, idle, iowait,
  irq, softirq and steal); None where /proc/stat is unreadable or has no steal field."""
  try:
    with open(path) as f:
      fields = f.readline().split()
    if fields[0] != "cpu" or len(fields) < 9:
      return None
    ticks = [int(v) for v in fields[1:9]]  # guest time is already inside user time
  except (OSError, ValueError, IndexError):
    return None
  return {"steal": ticks[7], "total": sum(ticks)}


def steal_share(start: Optional[Dict[str, int]],
                end: Optional[Dict[str, int]]) -> Optional[float]:
  """The share of the CPU time between two `cpu_times` readings that was stolen (0: the VM had
  its CPUs to itself; 0.5: half of it ran another VM); None without both readings."""
  return whole_steal_share([(start, end)])


def whole_steal_share(spans: Sequence[tuple]) -> Optional[float]:
  """The stolen share of the CPU time of several (start, end) `cpu_times` spans together (each
  span on its own machine: ticks are only subtracted within one), over the spans that have both
  readings and some time; None where none has."""
  stolen = total = 0
  for start, end in spans:
    if start and end and end["total"] > start["total"]:
      stolen += end["steal"] - start["steal"]
      total += end["total"] - start["total"]
  return round(stolen / total, 4) if total else None


def steal_probe(seconds: float, workers: Optional[int] = None) -> Optional[float]:
  """The CPU steal share while `workers` (default: the usable cores) pure-Python busy loops load
  the machine for `seconds`: steal shows only under load (a host whose other VMs take 7-37% of
  its CPUs when busy reads 0% idle). None where /proc/stat has no steal field."""
  loop = (f"import time\nend = time.monotonic() + {float(seconds)!r}\n"
          "while time.monotonic() < end: pass")
  start = cpu_times()
  procs = [subprocess.Popen([sys.executable, "-c", loop])
           for _ in range(workers or usable_cores())]
  for p in procs:
    p.wait()
  return steal_share(start, cpu_times())


def start_record(calibration: bool = True) -> Dict[str, Any]:
  """The host block at start-up (before the run spawns or compiles anything: the calibration
  should have the machine to itself)."""
  quota = cpu_quota_cores()
  record: Dict[str, Any] = {
      "cpu_model": cpu_model(), "cpu_identity": cpu_identity(),
      "usable_cores": capped(quota), "cpu_quota_cores": quota,
      "logical_cpus": os.cpu_count(), "memory_gib": round(memory_gib(), 2),
      "hostname": platform.node(), "platform": platform.platform(),
      "python": platform.python_version(), "load_start": list(os.getloadavg()),
      "code": code(), "versions": versions(), "accelerators": accelerators(),
      "cpu_times_start": cpu_times()}
  if calibration:
    record["calibration"] = calibrate()
  return record


def saved_record(record: Dict[str, Any]) -> Dict[str, Any]:
  """A session's record as a checkpoint keeps it: with `cpu_times_saved`, the machine's CPU times
  when the checkpoint's work was done, so a resumed run can count that session's steal (from its
  start to the checkpoint it resumed from: the work it kept)."""
  return dict(record, cpu_times_saved=cpu_times())


def finish_record(record: Dict[str, Any],
                  earlier: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
  """The block with the load average at the end of the run, `cpu_steal_share` and, where the run
  calibrated at start-up, `calibration_end`: the same workload timed again once the run has
  stopped stepping. Both show a host that slowed inside the run; the statistics rules read only
  the start's calibration. A resumed run's block also lists the host records of its `earlier`
  sessions (its wall time sums theirs), each with its own `cpu_steal_share` from its start to
  its last checkpoint (`saved_record`). `cpu_steal_share` is the whole run's: the CPU time stolen
  by other VMs over the CPU time of every session that has both readings (`steal_share`; an
  earlier session checkpointed before 2026-12-03 has no `cpu_times_saved` and is not counted)."""
  spans = [(e.get("cpu_times_start"), e.get("cpu_times_saved")) for e in earlier]
  spans.append((record.get("cpu_times_start"), cpu_times()))
  out = dict(record, load_end=list(os.getloadavg()), cpu_steal_share=whole_steal_share(spans))
  if "calibration" in record:
    out["calibration_end"] = calibrate()
  if earlier:
    out["earlier_sessions"] = [dict(e, cpu_steal_share=steal_share(*span))
                               for e, span in zip(earlier, spans)]
  return out

