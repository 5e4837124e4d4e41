"""The host record's core count: the affinity mask capped by the cgroup's CPU quota; the host kind
that decides which wall times compare; the code a run ran."""

import math
import os
import subprocess

import pytest

import hts_jax
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


def test_the_end_record_calibrates_again_only_where_the_start_did(monkeypatch):
  """`calibration_end`: the start's workload timed again at the end (a host that slowed inside
  the run shows there), only for a run that calibrated at start-up (`--host_calibration`); a
  grid's results.json carries both totals."""
  from hts_jax.results import provenance
  monkeypatch.setattr(host, "calibrate", lambda: {"total_ms": 90.0})
  monkeypatch.setattr(host, "cpu_times", lambda: {"steal": 150, "total": 1100})
  start = {"cpu_model": "Intel Xeon", "usable_cores": 2, "calibration": {"total_ms": 60.0},
           "cpu_times_start": {"steal": 100, "total": 1000}}
  end = host.finish_record(start)
  assert end["calibration"] == {"total_ms": 60.0} and end["calibration_end"] == {"total_ms": 90.0}
  assert end["cpu_steal_share"] == 0.5  # 50 of the run's 100 ticks ran another VM
  assert "calibration_end" not in host.finish_record({"cpu_model": "Intel Xeon"})
  assert host.finish_record({"cpu_model": "Intel Xeon"})["cpu_steal_share"] is None
  assert "calibration_end" not in start  # the start record is left as it was
  row = provenance.run_host({"host": end})
  assert (row["calibration_ms"], row["calibration_end_ms"], row["steal_share"]) == (60.0, 90.0, 0.5)
  assert provenance.run_host({"host": {}})["calibration_end_ms"] is None


@pytest.mark.parametrize("line,times", [
    ("cpu  100 5 50 800 10 1 2 32 7 0", {"steal": 32, "total": 1000}),  # guest (7) is in user
    ("cpu  100 5 50 800 10 1 2", None),  # a kernel without the steal field
    ("intr 12 3", None),
    ("cpu  a b c d e f g h", None),
])
def test_cpu_times_reads_proc_stat_s_first_line(tmp_path, line, times):
  stat = tmp_path / "stat"
  stat.write_text(line + "\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
  assert host.cpu_times(str(stat)) == times
  assert host.cpu_times(str(tmp_path / "missing")) is None


def test_the_steal_share_is_the_stolen_part_of_the_cpu_time_between_two_readings():
  assert host.steal_share({"steal": 10, "total": 1000}, {"steal": 10, "total": 3000}) == 0.0
  assert host.steal_share({"steal": 10, "total": 1000}, {"steal": 510, "total": 2000}) == 0.5
  assert host.steal_share(None, {"steal": 1, "total": 2}) is None
  assert host.steal_share({"steal": 1, "total": 2}, {"steal": 1, "total": 2}) is None  # no time
  here = host.cpu_times()  # this machine's /proc/stat (Linux: CI and the dev machines)
  assert here is None or (0 <= here["steal"] <= here["total"])


def test_a_resumed_run_s_steal_share_counts_every_session_up_to_its_checkpoint(monkeypatch):
  """A resumed run's `cpu_steal_share` is its sessions' together, each from its start to the
  checkpoint the next resumed from (`saved_record`), weighted by their CPU time; each earlier
  session keeps its own share. A session checkpointed without the reading is left out."""
  monkeypatch.setattr(host, "cpu_times", lambda: {"steal": 1000, "total": 5000})
  first = host.saved_record({"cpu_model": "Intel Xeon", "cpu_times_start": {"steal": 0,
                                                                           "total": 1000}})
  assert first["cpu_times_saved"] == {"steal": 1000, "total": 5000}  # 25% of 4000 ticks stolen
  monkeypatch.setattr(host, "cpu_times", lambda: {"steal": 20, "total": 3000})
  last = {"cpu_model": "Intel Xeon", "cpu_times_start": {"steal": 20, "total": 2000}}  # rebooted
  end = host.finish_record(last, [first, {"cpu_model": "Intel Xeon"}])
  assert [e["cpu_steal_share"] for e in end["earlier_sessions"]] == [0.25, None]
  assert end["cpu_steal_share"] == 0.2  # (1000 + 0) stolen of (4000 + 1000) ticks
  assert host.finish_record(last)["cpu_steal_share"] == 0.0  # its own session only
  assert host.whole_steal_share([(None, None), ({"steal": 1, "total": 2}, None)]) is None


def test_the_cpu_identity_tells_cpus_of_one_model_name_apart(tmp_path):
  info = tmp_path / "cpuinfo"
  info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
                  "model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 8\n"
                  "cache size\t: 107520 KB\nflags\t\t: fpu sse avx avx2 fma avx512f amx_tile\n\n"
                  "processor\t: 1\nmodel\t\t: 85\n")
  assert host.cpu_identity(str(info)) == {
      "vendor": "GenuineIntel", "family": 6, "model": 143, "stepping": 8, "cache_kb": 107520,
      "isa": ["avx", "avx2", "fma", "avx512f", "amx_tile"]}
  assert host.cpu_identity(str(tmp_path / "missing")) == {}
  assert host.start_record(calibration=False)["cpu_identity"] == host.cpu_identity()


def test_the_code_record_is_the_clone_s_commit_and_says_when_the_code_had_changes(
    tmp_path, monkeypatch):
  """summary.json's `host.code`: from a clone, the commit and whether hts_jax, experiments or the
  pins had uncommitted changes (a new file counts; results and logs do not); outside a clone, the
  version alone."""
  git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True,
                                  text=True).stdout.strip()
  git("init", "-q")
  (tmp_path / "hts_jax").mkdir()
  (tmp_path / "hts_jax" / "a.py").write_text("x = 1\n")
  git("add", ".")
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
  monkeypatch.setattr(host, "ROOT", str(tmp_path))
  clean = host.code()
  assert clean == {"version": hts_jax.__version__, "commit": git("rev-parse", "HEAD"),
                   "dirty": False, "source": "clone"}
  assert host.code_label(clean) == clean["commit"]
  (tmp_path / "results").mkdir()
  (tmp_path / "results" / "r.json").write_text("{}")  # a result is not code
  assert host.code()["dirty"] is False
  (tmp_path / "hts_jax" / "b.py").write_text("y = 2\n")  # a new module is
  assert host.code()["dirty"] is True and host.code_label(host.code()).endswith("+dirty")
  monkeypatch.setattr(host, "ROOT", str(tmp_path / "hts_jax"))  # not a clone's root
  installed = host.code()
  assert installed["source"] == "installed" and installed["dirty"] is None
  assert host.code_label({}) == "not recorded"
  assert host.code_label({"version": "0.1.0", "commit": None}) == "version 0.1.0"
