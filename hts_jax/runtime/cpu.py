"""What the host's CPU is and how many cores a process may use (host side): the CPU's model name
and identity from /proc/cpuinfo, memory, and the cgroup's CPU quota over the affinity mask.
`host.start_record` records them in summary.json's `host` block.
"""

from __future__ import annotations

import math
import os
import platform
import time
from typing import Any, Dict, Optional, Sequence


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
