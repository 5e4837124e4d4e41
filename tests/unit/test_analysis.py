"""Claims 1 and 2 (formulas against their simulators), the paper's metrics on run directories with
known answers, bootstrap intervals, and the two analysis CLIs."""

import math

import numpy as np
import pytest

from hts_jax.analysis import lag_model
from hts_jax.analysis import metrics
from hts_jax.analysis import runtime_model
from tests.support.runs import write_run_summary


# ---- Claim 1 -------------------------------------------------------------------------------------

def test_expected_max_gamma_golden_values():
  # alpha = 1: the max of n exponentials has mean H_n / beta; n = 1: the Gamma mean alpha / beta.
  for n in (1, 4, 16, 64):
    harmonic = sum(1.0 / k for k in range(1, n + 1))
    assert runtime_model.expected_max_gamma(n, 1, 2.0) == pytest.approx(harmonic / 2.0, rel=1e-9)
  for alpha in (1, 7, 512):
    assert runtime_model.expected_max_gamma(1, alpha, 0.5) == pytest.approx(alpha / 0.5, rel=1e-9)
  # n = 2, alpha = 2, beta = 1: int 1 - (1 - e^-x (1 + x))^2 dx = 4 - int e^-2x (1 + x)^2 dx = 11/4.
  assert runtime_model.expected_max_gamma(2, 2, 1.0) == pytest.approx(11 / 4, rel=1e-9)


def test_eq7_golden_and_limits():
  # K / (n alpha) rounds of (E[max] + alpha c): sync (alpha = 1), n = 4, beta = 1, c = 0.01.
  h4 = 1 + 1 / 2 + 1 / 3 + 1 / 4
  assert runtime_model.expected_runtime(1000, 4, 1, 1.0, 0.01) == pytest.approx(
      1000 / 4 * (h4 + 0.01), rel=1e-9)
  # Large alpha: every env runs at its own mean pace, K / n / beta.
  assert runtime_model.expected_runtime(10**6, 16, 4096, 2.0) == pytest.approx(
      10**6 / 16 / 2.0, rel=0.03)
  # More variance (smaller beta) costs more; syncing less often (larger alpha) costs less.
  assert runtime_model.predicted_speedup(16, 4, 2.0) > 1.5
  assert runtime_model.predicted_speedup(16, 64, 2.0) > runtime_model.predicted_speedup(16, 4, 2.0)
  with pytest.raises(ValueError, match="beta > 0"):
    runtime_model.expected_runtime(100, 4, 4, 0.0)


@pytest.mark.parametrize("n", [4, 16, 64])
def test_eq7_matches_simulation(n):
  """Eq. 7 against the Monte Carlo simulator within 10% over beta in [0.5, 8], alpha in
  [1, 512] (with and without actor time)."""
  worst = 0.0
  for beta in (0.5, 1.0, 2.0, 4.0, 8.0):
    for alpha in (1, 2, 4, 16, 64, 128, 512):
      for c in (0.0, 0.1 / beta):
        formula = runtime_model.expected_runtime(100_000, n, alpha, beta, c)
        sim = runtime_model.simulate_runtime(100_000, n, alpha, beta, c, repeats=3, seed=alpha)
        worst = max(worst, abs(sim["mean_s"] / formula - 1))
  assert worst < 0.10
  assert worst < 0.03  # in fact much closer


def test_simulation_is_seeded_and_counts_partial_rounds():
  a = runtime_model.simulate_runtime(1000, 4, 8, 1.0, repeats=2, seed=3)
  assert a == runtime_model.simulate_runtime(1000, 4, 8, 1.0, repeats=2, seed=3)
  # K smaller than one round: the time of the K-th arrival, well below a full round's max.
  part = runtime_model.simulate_runtime(4, 4, 64, 1.0, repeats=50)["mean_s"]
  assert part < 0.2 * runtime_model.expected_max_gamma(4, 64, 1.0)


# ---- Claim 2 -------------------------------------------------------------------------------------

def test_lag_formula_golden():
  assert lag_model.expected_lag(20, 100, 4000) == pytest.approx(1.0)  # rho = 0.5
  assert lag_model.expected_lag(1, 100, 4000) == pytest.approx(0.025 / 0.975)
  assert lag_model.expected_lag(40, 100, 4000) == math.inf
  assert lag_model.lag_from_utilization(0.8) == pytest.approx(4.0)


@pytest.mark.parametrize("n_rho0", [0.1, 0.3, 0.5, 0.7, 0.8])
def test_lag_formula_matches_queue_simulation(n_rho0):
  """E[L] = n rho0 / (1 - n rho0) against the queue simulator within 5% (paper's lambda0 = 100,
  mu = 4000; n follows from the load)."""
  lambda0, mu = 100.0, 4000.0
  n = int(round(n_rho0 * mu / lambda0))
  sim = lag_model.simulate_lag(n, lambda0, mu, num_unrolls=1_000_000, seed=n)
  assert sim["mean"] == pytest.approx(lag_model.expected_lag(n, lambda0, mu), rel=0.05)


# ---- Metrics -------------------------------------------------------------------------------------


def test_metrics_known_answers(tmp_path):
  run = metrics.load_run(write_run_summary(str(tmp_path / "r"), seed=0,
                                    returns=[10.0 * i for i in range(15)]))
  assert metrics.final_metric(run) == pytest.approx(np.mean([10.0 * i for i in range(5, 15)]))
  assert metrics.final_metric(run, last=1) == 140.0
  # Within 7.5 s: evaluations at t = 0..7 (returns 0..70).
  assert metrics.final_time_metric(run, 7.5) == pytest.approx(35.0)
  assert metrics.final_time_metric(run, -1.0) is None
  assert metrics.required_time_metric(run, 100.0, window=1) == {"wall_time_s": 10.0,
                                                                 "env_steps": 11000.0}
  # Window 3: mean of (90, 100, 110) is the first >= 100.
  assert metrics.required_time_metric(run, 100.0, window=3)["wall_time_s"] == 11.0
  # The paper's default, 10 evaluations: (40 + ... + 130) / 10 = 85, (50 + ... + 140) / 10 = 95.
  assert metrics.required_time_metric(run, 90.0)["wall_time_s"] == 14.0
  assert metrics.required_time_metric(run, 100.0)["wall_time_s"] == math.inf
  # A partial window does not count: no average before the 10th evaluation, so a run that hits
  # the target early reaches it at its 10th evaluation at the earliest.
  assert metrics.running_averages([4.0, 0.0, 2.0]) == [None, None, None]
  assert metrics.running_averages([4.0, 0.0, 2.0], window=2) == [None, 2.0, 1.0]
  assert metrics.first_reached([200.0] * 12, 100.0) == 9
  assert metrics.required_time_metric(run, 0.0)["wall_time_s"] == 9.0
  assert metrics.required_time_metric(run, 1e9)["wall_time_s"] == math.inf
  # Per-episode returns win over the stored mean when both are present.
  ep = metrics.Run(run.path, run.summary, ({"env_steps": 1, "wall_time_s": 0.0, "mean_return": 0.0,
                                            "returns": [1.0, 3.0]},))
  assert metrics.final_metric(ep) == 2.0


def test_seed_interval_follows_the_n_rule():
  """Below 6 seeds the [min, max], labelled so (a percentile bootstrap over 3 values is exactly
  that, and covers about 75%); from 6 scipy's 95% percentile bootstrap of the mean."""
  ci = metrics.seed_interval([3.0] * 5)
  assert ci == {"mean": 3.0, "lo": 3.0, "hi": 3.0, "n": 5, "kind": "min-max"}
  assert metrics.seed_interval([1.0, 2.0, 3.0, 4.0, 10.0]) == {
      "mean": 4.0, "lo": 1.0, "hi": 10.0, "n": 5, "kind": "min-max"}
  x = [1.0, 2.0, 3.0, 4.0, 10.0, 5.0]
  assert metrics.seed_interval(x, seed=1) == metrics.seed_interval(x, seed=1)
  ci = metrics.seed_interval(x)
  assert ci["kind"] == "95% bootstrap" and 1.0 <= ci["lo"] < ci["mean"] < ci["hi"] <= 10.0
  # Seeded coverage check: 10 seeds from N(5, 2); the 95% interval holds the true mean in most
  # of 200 repetitions (the percentile bootstrap under-covers a little at 10 samples).
  rng = np.random.default_rng(0)
  hits = 0
  for i in range(200):
    c = metrics.seed_interval(rng.normal(5.0, 2.0, size=10), resamples=2000, seed=i)
    hits += c["lo"] <= 5.0 <= c["hi"]
  assert 0.85 <= hits / 200 <= 0.99
  with pytest.raises(ValueError):
    metrics.seed_interval([])


def test_groups_and_summary(tmp_path):
  runs = [metrics.load_run(write_run_summary(str(tmp_path / f"hts{s}"), seed=s, mode="hts",
                                      returns=[0, 50, 100 + s, 200])) for s in range(3)]
  runs += [metrics.load_run(write_run_summary(str(tmp_path / f"sync{s}"), seed=s, mode="sync",
                                       returns=[0, 10, 20, 30 + s], times=[0, 2, 4, 6]))
           for s in range(2)]
  groups = metrics.group_runs(runs)
  assert len(groups) == 2
  rows = {r["method"]: r for r in metrics.summarize(groups, last=2, time_limit_s=2.5,
                                                    targets={"*": 100.0}, resamples=1000,
                                                    window=1)}
  assert set(rows) == {"HTS-RL (A2C)", "A2C (sync)"}
  hts = rows["HTS-RL (A2C)"]
  assert hts["seeds"] == [0, 1, 2]
  assert hts["final"]["mean"] == pytest.approx(np.mean([(100 + s + 200) / 2 for s in range(3)]))
  assert hts["final_time"]["mean"] == pytest.approx(np.mean([(50 + 100 + s) / 2 for s in range(3)]))
  assert hts["required_time"]["mean"] == 2.0 and hts["required_time"]["reached"] == 3
  sync = rows["A2C (sync)"]
  assert sync["required_time"]["reached"] == 0 and sync["required_time"]["mean"] == math.inf
  assert sync["final_time"]["mean"] == 5.0  # evaluations at t = 0, 2


def test_load_run_errors(tmp_path):
  with pytest.raises(metrics.RunDirError, match="no summary.json"):
    metrics.load_run(str(tmp_path))
  (tmp_path / "summary.json").write_text("{\"eval\": 3}")
  with pytest.raises(metrics.RunDirError, match="no evaluation history"):
    metrics.load_run(str(tmp_path))


# ---- CLIs ----------------------------------------------------------------------------------------


def test_eq7_with_gamma_steps_matches_simulation():
  """The fixed-mean variance grid of bench_speedup: Gamma(k) steps (k = mean^2 / variance)."""
  for k in (0.1, 0.25, 4.0, 10.0):
    for alpha in (1, 16, 160):
      beta = k / 4e-3  # mean 4 ms
      f = runtime_model.expected_runtime(50_000, 16, alpha, beta, step_shape=k)
      sim = runtime_model.simulate_runtime(50_000, 16, alpha, beta, repeats=3, step_shape=k)
      assert sim["mean_s"] == pytest.approx(f, rel=0.05), (k, alpha)
  # Exponential is shape 1; more variance at the same mean, more to gain from syncing less often.
  assert runtime_model.expected_runtime(100, 4, 4, 2.0, step_shape=1.0) == \
      runtime_model.expected_runtime(100, 4, 4, 2.0)
  gains = [runtime_model.predicted_speedup(16, 160, k / 4e-3, step_shape=k) for k in (10, 1, 0.1)]
  assert 1.3 < gains[0] < gains[1] < gains[2] and gains[2] > 5


def test_early_update_golden_values(tmp_path):
  """The PPO update over the first quarter of the budget (the GFootball and MuJoCo reports' why):
  means over the window's rows, entropy over its last fifth; None for an update without a
  clipped ratio (IMPALA's) or without metrics.csv."""
  rows = "\n".join(f"{1000 * k},{0.1 * k},{0.01 * k},{4.0 - 0.1 * k}" for k in range(1, 21))
  (tmp_path / "metrics.csv").write_text("env_steps,clip_frac,approx_kl,entropy\n" + rows + "\n")
  run = metrics.Run(str(tmp_path), {"config": {"total_steps": 20_000}, "env_steps": 20_480}, ())
  got = metrics.early_update(run)
  # Rows at 1,000-5,000 steps: means 0.3 and 0.03; entropy over 4,000-5,000: the row at 5,000.
  assert got == pytest.approx({"window_steps": 5_000, "clip_frac": 0.3, "approx_kl": 0.03,
                               "entropy": 3.5})
  assert metrics.early_update(run, 0.5)["window_steps"] == 10_000
  assert metrics.early_update(run, keys=("rho_clipped_frac",)) is None
  assert metrics.early_update(metrics.Run(str(tmp_path / "none"), {}, ())) is None


def test_a_runs_files_are_read_only_when_regular(tmp_path):
  """A FIFO or a link at a run's summary.json or metrics.csv is refused in one line (a report
  reading it hung until killed)."""
  import os  # pylint: disable=import-outside-toplevel
  run = write_run_summary(str(tmp_path / "run"), seed=0, returns=[1.0, 2.0])
  os.mkfifo(os.path.join(run, "metrics.csv"))
  with pytest.raises(metrics.RunDirError, match="metrics.csv: unreadable: .* is a FIFO"):
    metrics.load_run(run).train_curve()
  os.replace(os.path.join(run, "summary.json"), str(tmp_path / "elsewhere.json"))
  os.symlink(str(tmp_path / "elsewhere.json"), os.path.join(run, "summary.json"))
  with pytest.raises(metrics.RunDirError, match="summary.json: unreadable: .* is a symlink"):
    metrics.load_run(run)
