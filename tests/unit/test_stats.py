"""The statistics rules of the grids' reports, by golden values: the n < 6 [min, max]
label, censored medians and ratios, the geometric mean over blocks, floors, the shared-machine
flag, the provenance commit, and the across-task aggregates (IQM, probability of improvement)."""

import math
import subprocess

import numpy as np
import pytest

from hts_jax.analysis import stats
from hts_jax.analysis.stats import Censored


def test_three_seeds_get_their_min_and_max_labelled_so_never_a_95_interval():
  s = stats.spread([100_000, 200_000, 330_000])
  assert s["values"] == [100_000, 200_000, 330_000] and s["median"] == 200_000
  assert s["interval"] == {"kind": "min-max", "lo": 100_000, "hi": 330_000}
  assert stats.interval_cell(s) == "210,000 [100,000, 330,000] (min-max)"
  assert stats.spread([1, 2, 3, 4, 5])["interval"]["kind"] == "min-max"


def test_six_seeds_get_scipys_percentile_bootstrap():
  s = stats.spread([1, 2, 3, 4, 5, 9.5])
  assert s["interval"]["kind"] == "95% bootstrap"
  assert s["interval"]["lo"] == pytest.approx(2.1666667) and s["interval"]["hi"] == pytest.approx(
      6.4166667)


def test_a_missed_target_is_censored_at_the_budget_and_counts():
  runs = [Censored.of(88_064, 400_000), Censored.of(None, 400_000),
          Censored.of(math.inf, 400_000), Censored.of(120_000, 400_000)]
  assert runs[1] == Censored(400_000, True) and runs[1].cell() == "≥400,000"
  assert stats.censored_median(runs) == Censored(260_000, True)  # (120k + ≥400k) / 2
  assert stats.censored_median(runs[:1] + runs[3:] + runs[1:2]) == Censored(120_000, False)


def test_time_ratios_are_geometric_means_and_a_miss_makes_a_bound():
  measured = [(Censored(2.0), Censored(1.0)), (Censored(8.0), Censored(1.0))]
  r = stats.ratio(measured)
  assert r["mean"] == pytest.approx(4.0) and r["bound"] is None  # arithmetic: 5
  assert stats.ratio_cell(r) == "4.00x [2.00, 8.00] (n=2)"
  missed = stats.ratio(measured + [(Censored(2.0), Censored(4.0, True))])
  assert missed["mean"] == pytest.approx(2.0) and missed["bound"] == "upper"
  assert stats.ratio_cell(missed) == "≤2.00x [0.50, 8.00] (n=3)"
  assert stats.ratio_cell(stats.ratio(measured[:1])) == "2.00x (n=1)"
  assert stats.ratio_cell(stats.ratio([])) == "-"
  both = stats.ratio([(Censored(2.0, True), Censored(1.0)), (Censored(1.0), Censored(2.0, True))])
  assert both["bound"] == "none" and stats.ratio_cell(both).startswith("~1.00x")


def test_steps_at_the_first_full_window_are_a_floor():
  assert stats.is_floor(80_000, 80_000) and not stats.is_floor(88_000, 80_000)
  assert not stats.is_floor(None, 80_000) and not stats.is_floor(math.inf, 80_000)


def test_a_run_that_shared_the_machine_is_flagged():
  kind = [{"calibration_ms": c, "load": [l, 0.0], "usable_cores": 2}
          for c, l in ((60, 2.0), (62, 2.1), (58, 1.9), (164, 2.0), (61, 7.5))]
  assert stats.shared(kind[0], kind) is None
  assert stats.shared(kind[3], kind) == (
      "calibration 164 ms > 1.5 x the host kind's median 61 ms")
  assert stats.shared(kind[4], kind) is None  # a start load left by the block's previous run
  assert stats.shared(kind[0], kind, marked=True) == "marked"


def test_a_pair_is_left_out_when_marked_or_calibrated_apart():
  quiet, slow_quiet, busy = ({"calibration_ms": c} for c in (65.0, 126.0, 200.0))
  # A host twice its kind's median when quiet: its pair still counts (the ratio cancels speed).
  assert stats.pair_shared(slow_quiet, dict(slow_quiet, calibration_ms=130.0)) is None
  assert stats.pair_shared(quiet, dict(quiet, calibration_ms=97.5)) is None  # exactly 1.5x
  assert stats.pair_shared(busy, quiet) == "calibrations 200 and 65 ms, more than 1.5x apart"
  assert stats.pair_shared(quiet, dict(quiet, marked="tests ran beside")) == "marked"
  assert stats.pair_shared({}, quiet) is None  # no calibration (older runs): the mark decides


def test_a_run_whose_cpus_other_vms_took_shared_the_machine():
  quiet = {"calibration_ms": 65.0, "steal_share": 0.001}  # stop 67's runs: 0.0% and 0.1%
  stolen = dict(quiet, steal_share=0.23)  # a 2-core Intel Xeon host under load: 7-37%
  kind = [quiet, dict(quiet, calibration_ms=62.0), stolen]
  assert stats.shared(quiet, kind) is None
  assert stats.shared(stolen, kind) == "CPU steal 23% > 5%"  # calibrated like the others
  assert stats.shared(dict(quiet, steal_share=0.05), kind) is None  # exactly the threshold
  assert stats.shared(dict(quiet, steal_share=None), kind) is None  # older runs recorded none
  assert stats.pair_shared(quiet, stolen) == stats.pair_shared(stolen, quiet) == (
      "CPU steal 23% > 5%")
  assert stats.pair_shared(quiet, dict(quiet, calibration_ms=70.0)) is None


def test_the_provenance_commit_holds_the_last_run_used(tmp_path):
  def git(*args):
    return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True,
                          text=True).stdout.strip()
  git("init", "-q")
  git("config", "user.email", "t@t")
  git("config", "user.name", "t")
  for run in ("runs/a", "runs/b"):
    (tmp_path / run).mkdir(parents=True)
    (tmp_path / run / "summary.json").write_text("{}")
    git("add", run)
    git("commit", "-qm", run)
  last = git("rev-parse", "HEAD")
  (tmp_path / "report.md").write_text("later")
  git("add", "report.md")
  git("commit", "-qm", "the report, after its runs")
  assert stats.provenance_commit(str(tmp_path), ["runs/a", "runs/b"]) == last
  assert stats.provenance_commit(str(tmp_path), ["runs/a"]) == git("rev-parse", "HEAD~2")
  (tmp_path / "runs" / "c").mkdir()
  (tmp_path / "runs" / "c" / "summary.json").write_text("{}")  # a run not committed yet
  assert stats.provenance_commit(str(tmp_path), ["runs/a", "runs/c"]) is None


def test_iqm_and_probability_of_improvement_across_tasks():
  assert stats.iqm(np.array([[1, 2], [3, 4], [5, 6], [7, 100]])) == 4.5  # middle 4 of 8
  # task 0: every X above every Y; task 1: pairs (4,4) half, (6,4) one, the rest none
  assert stats.probability_of_improvement(np.array([[3, 4], [5, 6]]),
                                          np.array([[1, 4], [2, 9]])) == 0.6875
  assert stats.stratified_interval([[1, 2, 3], [1, 2, 3]], np.mean) is None  # n < 6 per task
  ci = stats.stratified_interval([[1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7]],
                                 lambda t: stats.iqm(np.stack(t, 1)))
  assert ci["kind"] == "95% stratified bootstrap" and ci["lo"] < 4.0 < ci["hi"]


def test_markdown_tables_come_from_tabulate():
  assert stats.markdown(["task", "steps"], [["close", "≥400,000"]]) == (
      "| task   | steps    |\n|--------|----------|\n| close  | ≥400,000 |\n")


def test_aggregate_inverts_lower_better_tasks_and_takes_unequal_seed_counts():
  """env steps (lower better) normalise as the reference's median over the run's, and beat the
  reference when fewer; a task's seed count is its own."""
  got = stats.aggregate({"steps": ([50.0, 100.0], [100.0, 100.0]),
                         "final": ([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])}, lower_better=["steps"])
  # Normalised runs: 2, 1 (steps) and 1, 1, 1 (final): IQM of 1, 1, 1, 1, 2 is 1.
  assert got["iqm_normalised"] == 1.0 and got["seeds"] == [2, 3]
  # steps: 50 beats both 100s, 100 ties both: 3/4; final: 2 beats 1, ties 2, loses to 3: 1/2.
  assert got["probability_of_improvement"] == pytest.approx((0.75 + 0.5) / 2)
  assert stats.aggregate({"t": ([1.0], [0.0])})["iqm_normalised"] is None  # a median of 0


def test_a_spread_that_leaves_runs_out_says_how_many_of_how_many():
  s = stats.spread([1000.0, 2000.0, 3000.0, 4000.0])
  assert stats.interval_cell(s) == "2,500 [1,000, 4,000] (min-max)"
  assert stats.interval_cell(dict(s, of=5)) == "2,500 [1,000, 4,000] (min-max; 4 of 5 runs)"
