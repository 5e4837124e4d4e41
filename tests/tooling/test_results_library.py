"""Experiments as a library (hts_jax/runs, hts_jax/results, `hts-reproduce`): paired blocks in a
seeded order, the one launch path and its failures, the dispatcher's one-line errors, the band of
the curves, and that no script imports another script."""

import ast
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from hts_jax.analysis import plots
from hts_jax.results import grid, provenance, publish
from hts_jax.runs import blocks, launch
from hts_jax.runtime import host
from tests.support import ROOT



def test_paired_blocks_run_each_seed_and_task_back_to_back_in_the_blocks_seeded_order():
  runs = blocks.paired_blocks(["A", "B"], ["m1", "m2", "m3"], [0, 1],
                              lambda t, m, s: {"env": t, "seed": s, "method": m})
  names = [r.block for r in runs]
  assert names == ["A/seed0"] * 3 + ["B/seed0"] * 3 + ["A/seed1"] * 3 + ["B/seed1"] * 3
  for i in range(0, 12, 3):
    block = runs[i:i + 3]
    assert [r.method for r in block] == provenance.block_order(block[0].block, ["m1", "m2", "m3"])
    assert all(r.flags == {"env": r.task, "seed": r.seed, "method": r.method} for r in block)
  orders = {tuple(r.method for r in runs[i:i + 3]) for i in range(0, 12, 3)}
  assert len(orders) > 1  # not one fixed order for every block
  one_task = blocks.paired_blocks([None], ["a", "b"], [3], lambda t, m, s: {})
  assert {r.block for r in one_task} == {"seed3"}
  assert one_task[0].logdir("res") == os.path.join("res", "runs", one_task[0].method, "seed3")


def test_finished_runs_skip_unfinished_ones_and_keep_the_methods_order(tmp_path):
  for task, method, seed, done in (("t", "b", 0, True), ("t", "a", 0, True), ("t", "a", 1, False)):
    d = grid.run_dir(str(tmp_path), task, method, seed)
    os.makedirs(d)
    if done:
      with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump({"seed": seed}, f)
  found = list(grid.finished_runs(str(tmp_path), methods=["b", "a"]))
  assert [(f.task, f.method, f.summary["seed"]) for f in found] == [("t", "b", 0), ("t", "a", 0)]


def test_the_dry_run_estimates_the_hours_left_from_finished_runs_on_this_host_kind(tmp_path):
  """Each run to do: its budget over the median SPS of its task and method's finished runs on
  the host kind, else its method's; runs of another host kind are not used."""
  amd, intel = {"cpu_model": "AMD", "usable_cores": 2}, {"cpu_model": "Intel", "usable_cores": 2}
  for task, method, seed, sps, host in (("t", "a", 0, 100.0, amd), ("t", "b", 0, 50.0, amd),
                                        ("t", "b", 1, 10.0, intel)):
    d = grid.run_dir(str(tmp_path), task, method, seed)
    os.makedirs(d)
    with open(os.path.join(d, "summary.json"), "w") as f:
      json.dump({"seed": seed, "sps": sps, "host": host}, f)
  runs = blocks.paired_blocks(["t", "u"], ["a", "b", "c"], [0, 1],
                              lambda t, m, s: {"total_steps": 360_000})
  # To do: t/a/1 (100 SPS: 1 h), u/a/0 and u/a/1 (a's 100: 1 h each), u/b/0 and u/b/1 (b's 50 on
  # AMD: 2 h each; t/b/1 finished, on Intel); c has no finished run (4 runs).
  assert blocks.estimate(runs, str(tmp_path), "AMD x2") == (
      "9 of 12 runs to do: about 7.0 h on AMD x2 (each run's budget over the whole-run SPS of "
      "the finished runs of its task and method there, else of its method); 4 with no finished "
      "run to go by")
  unknown = [r for r in runs if r.method == "c"]
  assert blocks.estimate(unknown, str(tmp_path), "AMD x2") == (
      "4 of 4 runs to do on AMD x2: no finished run of their tasks or methods there to go by "
      "for an estimate")
  done = [r for r in runs if (r.task, r.method) == ("t", "b")]
  assert blocks.estimate(done, str(tmp_path), "AMD x2") == "nothing to run: every run has finished"


def test_the_shared_machine_mark_goes_beside_the_runs_that_finish_now_only(tmp_path, monkeypatch):
  """`--shared_machine`: `run_all` writes the mark beside each run that finishes in this call;
  a run finished before, and a run that failed, get none; the failed one's logdir is returned."""
  def fake_launch(flag_values, logdir, *, dry_run=False):  # a run "finishes" unless seed 2
    if os.path.exists(os.path.join(logdir, "summary.json")) or flag_values["seed"] == 2:
      return flag_values["seed"] != 2
    os.makedirs(logdir, exist_ok=True)
    with open(os.path.join(logdir, "summary.json"), "w") as f:
      json.dump({"seed": flag_values["seed"]}, f)
    return True
  monkeypatch.setattr(launch, "launch", fake_launch)
  runs = blocks.paired_blocks(["t"], ["a"], [0, 1, 2], lambda t, m, s: {"seed": s})
  fake_launch({"seed": 0}, runs[0].logdir(str(tmp_path)))  # seed 0 finished before
  failed = blocks.run_all(runs, str(tmp_path), "a benchmark on the other core")
  marks = [os.path.exists(os.path.join(r.logdir(str(tmp_path)), grid.SHARED)) for r in runs]
  assert marks == [False, True, False]
  assert failed == [runs[2].logdir(str(tmp_path))]
  with open(os.path.join(runs[1].logdir(str(tmp_path)), grid.SHARED)) as f:
    assert json.load(f) == {"note": "a benchmark on the other core"}


def test_a_run_whose_block_finished_on_another_host_kind_is_named_before_it_runs(tmp_path):
  """Run to score's block 2: its HTS run ran on an Intel host, its sync run an hour later on an
  AMD one, and the block's times did not pair. The driver now says so before the run starts."""
  intel, amd = {"cpu_model": "Intel", "usable_cores": 2}, {"cpu_model": "AMD", "usable_cores": 2}
  for method, seed, host in (("hts", 2, intel), ("kept", 2, amd), ("hts", 1, amd)):
    d = grid.run_dir(str(tmp_path), "t", method, seed)
    os.makedirs(d)
    with open(os.path.join(d, "summary.json"), "w") as f:
      json.dump({"seed": seed, "host": host}, f)
  runs = blocks.paired_blocks(["t"], ["hts", "sync"], [1, 2], lambda t, m, s: {})
  # Block 1's partner ran here; "kept" is no partner; the finished runs themselves are not named.
  assert blocks.other_host_kinds(runs, str(tmp_path), ["hts", "sync"], here="AMD x2") == [
      "warning: t/seed2: hts ran on Intel x2, this host is AMD x2: sync's times here will not "
      "pair with them (paired ratios need one host kind)"]
  assert blocks.other_host_kinds(runs, str(tmp_path), ["hts", "sync"], here="Intel x2") == [
      "warning: t/seed1: hts ran on AMD x2, this host is Intel x2: sync's times here will not "
      "pair with them (paired ratios need one host kind)"]


def test_the_host_s_steal_and_calibration_are_measured_before_the_runs(tmp_path):
  """An Intel host lost 7-37% of its CPU time to other VMs under load (0% idle) and ran Pong's
  HTS-A2C at 250-300 SPS against 817 on AMD; stopped, it read 0.1% steal and calibrated at 130 ms
  (its kind's quiet runs: 62-88). The driver now measures both before the runs and warns where
  the statistics rules would count its runs as shared."""
  runs = blocks.paired_blocks(["t"], ["a"], [0], lambda t, m, s: {})
  for method, seed, cpu, ms in (("b", 0, "Intel", 60.0), ("b", 1, "Intel", 70.0),
                                ("b", 2, "Intel", 80.0), ("b", 3, "AMD", 300.0)):
    d = grid.run_dir(str(tmp_path), "t", method, seed)
    os.makedirs(d)
    with open(os.path.join(d, "summary.json"), "w") as f:
      json.dump({"seed": seed, "host": {"cpu_model": cpu, "usable_cores": 2,
                                        "calibration": {"total_ms": ms}}}, f)
  probed = []
  def check(share, ms, here="Intel x2", seconds=10):
    def probe(s):
      probed.append(s)
      return share
    return blocks.host_check(runs, str(tmp_path), seconds, probe, lambda: {"total_ms": ms}, here)
  assert check(0.23, 130.0) == [
      "warning: 23% of this host's CPU time under load went to other VMs (steal, 10 s probe), "
      "above the 5% at which a run counts as shared: its times will not count in paired ratios",
      "warning: this host calibrates at 130 ms, 1.9x the 70 ms median of 3 finished run(s) of "
      "Intel x2 here: above 1.5x, its runs count as shared wherever they are not paired"]
  assert check(0.004, 64.0) == [  # the AMD run is another kind's
      "CPU steal under load: 0.4% (10 s probe)",
      "calibration: 64 ms (70 ms: the median of 3 finished run(s) of Intel x2 here)"]
  assert check(None, 105.0) == [  # no steal field in /proc/stat; exactly 1.5x is not above
      "calibration: 105 ms (70 ms: the median of 3 finished run(s) of Intel x2 here)"]
  assert check(0.0, 90.0, here="ARM x2")[1] == (
      "calibration: 90 ms (no finished run of ARM x2 here to compare)")
  assert probed == [10, 10, 10, 10]
  assert check(0.5, 500.0, seconds=0) == [] and len(probed) == 4  # --host_probe_s=0
  d = grid.run_dir(str(tmp_path), "t", "a", 0)
  os.makedirs(d)
  with open(os.path.join(d, "summary.json"), "w") as f:
    json.dump({"seed": 0}, f)
  assert check(0.5, 500.0) == [] and len(probed) == 4  # every run has finished
  real = host.steal_probe(0.2, workers=1)  # the real probe: a share, or None without the field
  assert real is None or 0.0 <= real <= 1.0


def test_a_failed_run_raises_its_last_error_line_and_keeps_its_stderr(tmp_path):
  logdir = tmp_path / "bad"
  with pytest.raises(launch.RunFailed, match=r"^exit 2: error: .*--algo"):
    launch.run_process(["--env=CartPole-v1", "--algo=nope"], str(logdir), timeout_s=120)
  assert "--algo" in (logdir / "stderr.txt").read_text()
  # The grid's launch reports it and goes on (False), and a dry run runs nothing.
  assert not launch.launch({"env": "CartPole-v1", "algo": "nope"}, str(tmp_path / "g"))
  assert not launch.launch({"env": "CartPole-v1"}, str(tmp_path / "dry"), dry_run=True)
  assert not os.path.exists(tmp_path / "dry")


def test_a_summary_that_does_not_parse_is_named_in_one_line_and_its_run_redone(tmp_path):
  """A truncated summary.json stopped `hts-reproduce` with a 40-line
  traceback naming no file, and the grid counted the run as done. Here the redone run fails at
  once (--steps=0), so the grid names it as failed."""
  logdir = grid.run_dir(str(tmp_path), None, "sync_ff", 0)
  os.makedirs(logdir)
  with open(os.path.join(logdir, "summary.json"), "w") as f:
    f.write('{"env_steps": 4096, "sps": 1')  # truncated
  proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", "memory",
                         "--methods=sync_ff", "--seeds=0", "--steps=0", f"--results={tmp_path}",
                         "--noreadme", "--host_probe_s=0"], cwd=ROOT, capture_output=True,
                        text=True, timeout=300)
  assert "Traceback" not in proc.stderr, proc.stderr
  path = os.path.join(logdir, "summary.json")
  assert [l.strip() for l in proc.stdout.splitlines()[:2]] == [
      f"{path} does not parse (Expecting ',' delimiter: line 1 column 29 (char 28)): the run "
      "counts as unfinished", f"removing the unfinished run in {logdir}"], proc.stdout
  assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
      f"error: 1 run(s) failed (their stderr.txt says why): {logdir}"], proc.stderr
  assert "total_steps must be >= 1" in open(os.path.join(logdir, "stderr.txt")).read()
  assert not os.path.exists(path) and list(grid.finished_runs(str(tmp_path), tasks=False)) == []


def test_a_sigint_whose_keyboard_interrupt_was_lost_still_stops_the_grid(tmp_path, monkeypatch):
  """A SIGINT the handler saw is recorded, whatever became of its KeyboardInterrupt (a full suite
  under load once saw hts-reproduce end "1 run(s) failed", exit 1, after Ctrl-C), and a grid
  starts no further run after it."""
  monkeypatch.setattr(launch, "SIGINTS", [signal.SIGINT])
  with pytest.raises(KeyboardInterrupt):
    launch.launch({"env": "CartPole-v1", "total_steps": 64}, str(tmp_path / "run"))
  assert not os.path.exists(tmp_path / "run")


def test_ctrl_c_ends_hts_reproduce_in_one_line(tmp_path):
  """Ctrl-C on `hts-reproduce` (SIGINT to its process group) printed a
  KeyboardInterrupt traceback. Now one line, exit 130, and no training process is left."""
  proc = subprocess.Popen([sys.executable, "-m", "experiments.reproduce", "memory",
                           "--methods=sync_ff", "--seeds=0", "--steps=100000",
                           f"--results={tmp_path}", "--noreadme", "--host_probe_s=0"], cwd=ROOT,
                          text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
  deadline = time.monotonic() + 120
  while not psutil.Process(proc.pid).children():  # its training process has started
    assert proc.poll() is None and time.monotonic() < deadline
    time.sleep(0.05)
  children = psutil.Process(proc.pid).children(recursive=True)
  os.killpg(proc.pid, signal.SIGINT)
  _, err = proc.communicate(timeout=60)
  assert proc.returncode == 130, err
  assert err.strip().splitlines() == [
      "error: interrupted by SIGINT: the finished runs are kept; the same command goes on from "
      "there (the interrupted run starts over)"]
  assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


def test_the_dispatcher_names_its_grids_in_one_line():
  for args in ([], ["cartpole"]):
    proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: expected a grid, one of atari, corrections, gfootball, memory, minatar, mujoco, "
        f"benchmarks; got {repr(args[0]) if args else 'none'} (`<grid> --help` lists a grid's "
        "flags)"]
  proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", "benchmarks", "--check"],
                        cwd=ROOT, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr


def test_the_band_is_min_max_below_6_seeds_and_the_bootstrap_interval_from_6():
  curves = [([0, 10], [0.0, 1.0]), ([0, 10], [0.0, 3.0]), ([5, 10], [2.0, 2.0])]
  x, mean, lo, hi = plots.mean_band(curves, points=11)
  assert x[0] == 5 and x[-1] == 10  # only where every seed has a value
  assert mean[-1] == pytest.approx(2.0) and (lo[-1], hi[-1]) == (1.0, 3.0)  # [min, max]
  assert mean[0] == pytest.approx((0 + 0 + 2) / 3)
  six = [([0, 10], [0.0, float(v)]) for v in (1, 2, 3, 4, 5, 9)]
  _, mean, lo, hi = plots.mean_band(six, points=3)
  assert 1.0 < lo[-1] < mean[-1] < hi[-1] < 9.0  # a 95% interval of the mean, inside the range
  assert np.all(lo <= mean + 1e-12) and np.all(mean <= hi + 1e-12)


def test_blocks_refuse_missing_markers(tmp_path):
  block = publish.Block("x-results", "x")
  path = tmp_path / "R.md"
  path.write_text("no markers\n")
  assert not block.write(str(path), "table\n") and path.read_text() == "no markers\n"
  path.write_text(f"a\n{block.begin}\nold\n{block.end}\nb\n")
  assert block.write(str(path), "new\n")
  assert path.read_text() == f"a\n{block.wrap('new' + chr(10))}\nb\n"


def test_no_script_imports_another_script():
  """experiments/ holds scripts (and the clone's shims of the commands); what they share lives in
  hts_jax.results."""
  folder = os.path.join(ROOT, "experiments")
  for name in sorted(os.listdir(folder)):
    if not name.endswith(".py"):
      continue
    with open(os.path.join(folder, name)) as f:
      tree = ast.parse(f.read())
    for node in ast.walk(tree):
      names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
               [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
      assert not any(n == "experiments" or n.startswith("experiments.") for n in names), name


def test_a_table_s_source_names_the_code_its_runs_ran_and_each_run_at_a_dirty_tree():
  """Each run's sessions' code (summary.json's host.code, `provenance.run_host`): the commits,
  the runs that predate the record, and every run made at an uncommitted tree by name."""
  from hts_jax.results import provenance, publish  # pylint: disable=import-outside-toplevel
  code = lambda commit, dirty: {"version": "0.1.0", "commit": commit, "dirty": dirty}  # noqa
  runs = [dict(provenance.run_host({"host": {"code": code("a" * 40, False)}}), method="m",
               seed=0),
          dict(provenance.run_host({"host": {"code": code("b" * 40, True), "earlier_sessions": [
              {"code": code("a" * 40, False)}]}}), method="hts_ppo", seed=3),
          dict(provenance.run_host({"host": {}}), method="m", seed=2)]
  assert runs[1]["code"] == ["a" * 40, "b" * 40 + "+dirty"]  # a resumed run: both sessions
  assert publish.code_of(runs) == (
      f"; code: `{'a' * 12}` (2 runs), `{'b' * 12}` (1 run), not recorded for 1 of 3 runs (they "
      "predate the record); 1 run at an uncommitted tree (hts_ppo seed 3)")
  assert publish.code_of([]) == ""
