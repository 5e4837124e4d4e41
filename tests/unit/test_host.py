"""The host record's core count: the affinity mask capped by the cgroup's CPU quota; the host kind
that decides which wall times compare."""

import math
import os

import pytest

from hts_jax.analysis import metrics
from hts_jax.runtime import host


def _cgroup(tmp_path, v2=None, v1=None):
  if v2 is not None:
    (tmp_path / "cpu.max").write_text(v2 + "\n")
  if v1 is not None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(f"{v1[0]}\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(f"{v1[1]}\n")
  return str(tmp_path)


@pytest.mark.parametrize("v2,v1,cores", [
    ("200000 100000", None, 2.0),   # --cpus=2 under cgroup v2
    ("150000 100000", None, 1.5),
    ("max 100000", None, None),     # v2, no quota
    (None, (400000, 100000), 4.0),  # v1
    (None, (-1, 100000), None),     # v1, no quota
    (None, None, None),             # no cgroup files
    ("garbage", None, None),        # unreadable: no quota rather than an error
])
def test_cpu_quota_cores_reads_cgroup_v2_and_v1(tmp_path, v2, v1, cores):
  assert host.cpu_quota_cores(_cgroup(tmp_path, v2, v1)) == cores


def test_usable_cores_is_the_affinity_mask_capped_by_the_quota(tmp_path):
  affinity = len(os.sched_getaffinity(0))
  assert host.usable_cores(_cgroup(tmp_path)) == affinity  # no quota
  quota = tmp_path / "quota"
  quota.mkdir()
  # 0.5 cores keeps one core busy part of the time: 1, never 0.
  assert host.usable_cores(_cgroup(quota, v2="50000 100000")) == 1
  big = tmp_path / "big"
  big.mkdir()
  assert host.usable_cores(_cgroup(big, v2=f"{(affinity + 8) * 100000} 100000")) == affinity
  odd = tmp_path / "odd"
  odd.mkdir()
  assert host.usable_cores(_cgroup(odd, v2="150000 100000")) == min(affinity, math.ceil(1.5))


def test_a_run_over_machines_of_two_kinds_is_mixed():
  """A multi-process run's processes on other machines (`other_processes`) count like a resumed
  run's earlier sessions: one kind when they match, "mixed (...)" when they differ."""
  amd = {"cpu_model": "AMD EPYC", "usable_cores": 2}
  assert metrics.host_kind(dict(amd, other_processes=[dict(amd)])) == "AMD EPYC x2"
  assert metrics.host_kind(dict(amd, other_processes=[dict(amd, cpu_model="Intel Xeon")])) == \
      "mixed (AMD EPYC x2; Intel Xeon x2)"
