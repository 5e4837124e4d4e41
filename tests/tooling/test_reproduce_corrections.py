"""The corrections study's grid (`hts-reproduce corrections`): its runs' flags are PROTOCOL.md's,
its report reads env steps to target over full windows (misses censored, never dropped), the
committed GFootball runs count, a shared machine is recorded, and the decision rule picks as the
protocol says."""

import json
import os

import pytest

from hts_jax.results import driver, grid, named, spec
from tests.support import ROOT

GRID = spec.load("corrections")
CLOSE = "academy_empty_goal_close"


def test_run_flags_are_the_protocols():
  protocol = open(os.path.join(ROOT, "results", "corrections", "PROTOCOL.md")).read()
  close = GRID.run_flags(CLOSE, "decoupled", 3)
  assert close["total_steps"] == 400_000 and close["eval_every"] == 8_000
  assert close["lr_decay_steps"] == 5_000_000 and close["num_envs"] == 8
  assert (close["mode"], close["correction"], close["seed"]) == ("hts", "decoupled", 3)
  assert GRID.run_flags(CLOSE, "sync_ppo", 0)["mode"] == "sync"
  hopper = GRID.run_flags("Hopper-v5", "none", 1)
  assert (hopper["preset"], hopper["eval_every"], hopper["total_steps"]) == (
      "mujoco_hts_ppo", 50_000, 1_000_000)
  memory = GRID.run_flags("CartPoleNoVel", "behaviour", 2)
  assert (memory["eval_every"], memory["eval_episodes"], memory["eval_greedy"]) == (2_000, 5, False)
  for task in GRID.tasks:
    assert task.name in protocol
  for method in GRID.methods:
    assert f"`{method.name}`" in protocol


def _fake_run(logdir, seed, returns, every, clip=0.1):
  os.makedirs(logdir)
  evals = [{"env_steps": every * (i + 1), "wall_time_s": float(i), "mean_return": r}
           for i, r in enumerate(returns)]
  with open(os.path.join(logdir, "summary.json"), "w") as f:
    json.dump({"seed": seed, "eval": evals, "env_steps": every * len(returns), "sps": 1.0,
               "wall_time_s": 1.0, "param_sha256": "0" * 64, "config": {}}, f)
  rows = "\n".join(f"{every * (i + 1)},{clip},0.01" for i in range(len(returns)))
  with open(os.path.join(logdir, "metrics.csv"), "w") as f:
    f.write("env_steps,clip_frac,kl_lag\n" + rows + "\n")


def test_report_windows_censors_and_reads_the_committed_runs(tmp_path):
  results = tmp_path / "results" / "corrections"
  # 50 evaluations every 2,000 steps: 475 first reached by the full-window average at eval 12.
  hits = [0.0] * 2 + [500.0] * 48
  _fake_run(results / "runs" / "CartPoleNoVel" / "decoupled" / "seed0", 0, hits, 2_000)
  _fake_run(results / "runs" / "CartPoleNoVel" / "none" / "seed0", 0, [100.0] * 50, 2_000)
  with open(results / "runs" / "CartPoleNoVel" / "none" / "seed0" / grid.SHARED, "w") as f:
    json.dump({"note": "tests ran beside"}, f)
  committed = (tmp_path / "results" / "gfootball" / "runs" / CLOSE / "hts_ppo_behaviour"
               / "seed4")
  _fake_run(committed, 4, [1.0] * 50, 8_000)
  out = driver.report(GRID, str(results))
  runs = {(r["task"], r["method"], r["seed"]): r for r in out["runs"]}
  assert runs[("CartPoleNoVel", "decoupled", 0)]["steps_to_target"] == 12 * 2_000
  miss = runs[("CartPoleNoVel", "none", 0)]
  assert miss["steps_to_target"] is None and miss["marked"] == "tests ran beside"
  assert miss["shared"]
  assert runs[(CLOSE, "behaviour", 4)]["steps_to_target"] == 10 * 8_000
  assert runs[(CLOSE, "behaviour", 4)]["quarters"][0] == pytest.approx(
      {"clip_frac": 0.1, "kl_lag": 0.01})
  assert out["decision"]["winner"] is None  # no task has every method's 5 seeds
  table = open(results / "table.md").read()
  assert "≥100,000" in table and "24,000;" in table and "80,000 (floor)" in table


def _table(steps, finals):
  table = {"CartPoleNoVel": {}, CLOSE: {}}
  for task in ("Hopper-v5", "Walker2d-v5", "HalfCheetah-v5"):
    table[task] = {m: {"seeds": list(range(5)), "final_metric": f} for m, f in finals.items()}
  for task in ("CartPoleNoVel", CLOSE):
    table[task] = {m: {"seeds": list(range(5)), "steps_to_target": s} for m, s in steps.items()}
  return table


def test_decision_rule():
  """Passes counted per task (steps: median ≤ 1.1x sync's, misses as ∞; MuJoCo: median ≥ sync's
  worst seed), ties by the geometric mean of q, then `behaviour`."""
  sync = [100, 100, 110, 120, None]
  steps = {"sync_ppo": sync, "behaviour": [200, 190, 210, None, None],
           "decoupled": [105, 115, 118, 90, None], "none": [None, None, None, 100, 100]}
  finals = {"sync_ppo": [3000, 2900, 3100, 2800, 3050], "behaviour": [2300] * 5,
            "decoupled": [2850] * 5, "none": [2700] * 5}
  d = named.decide(GRID.ctx, _table(steps, finals))
  assert d["winner"] == "decoupled"
  assert len(d["passes"]["decoupled"]) == 5 and d["passes"]["none"] == []
  assert d["passes"]["behaviour"] == []
  # A tie on passes (none passes anything) goes to the higher geometric mean of q.
  finals["decoupled"] = [2000] * 5
  steps["decoupled"] = [None] * 5
  d = named.decide(GRID.ctx, _table(steps, finals))
  assert d["winner"] == "behaviour" and d["geometric_mean_q"]["behaviour"] > d[
      "geometric_mean_q"]["none"]
  # Where sync PPO's median misses, every correction passes that task; q is 1 for a miss.
  steps["sync_ppo"] = [None, None, None, 100, 100]
  d = named.decide(GRID.ctx, _table(steps, finals))
  assert set(d["passes"]["none"]) == {"CartPoleNoVel", CLOSE}
  assert named.score_q(float("inf"), float("inf")) == 1.0 and named.score_q(100.0, 1.0) == 10.0


def test_readme_cells_give_the_rules_median_and_verdict():
  """README's table: per task and method the median the rule reads with the seeds' [min, max], how
  many seeds where fewer than 5, and the verdict only once the task is complete."""
  steps = {m: [100, 100, 110, 120, None] for m in ("sync_ppo", "none")}
  steps.update(behaviour=[200, 190, 210, None, None], decoupled=[105, 115, 118, 90, None])
  finals = {m: [3000.0, 2900.0, 3100.0, 2800.0, 3050.0] for m in steps}
  table = _table(steps, finals)
  table["Hopper-v5"]["none"] = {"seeds": [0, 1], "final_metric": [2500.0, None]}
  d = named.decide(GRID.ctx, table)
  assert d["passes_by_task"][CLOSE] == {"behaviour": False, "decoupled": True, "none": True}
  assert d["passes_by_task"]["Hopper-v5"] == {"behaviour": None, "decoupled": None, "none": None}

  def cell(task, per_seed, passes=None):
    return named.rule_cell(GRID.tables[1].columns[0],
                           {"task": task, "per_seed": per_seed, "passes": passes})
  assert cell(CLOSE, {"steps_to_target": steps["behaviour"]}, False) == (
      "210 [190, ≥400,000]; misses")  # the middle seed reached it: the median is not a bound
  assert cell("Hopper-v5", {"final_metric": [2500.0, None]}) == (
      "2,500 [2,500, 2,500] (1 of 5 seeds)")
  assert cell("Walker2d-v5", {"final_metric": finals["sync_ppo"]}) == (
      "3,000 [2,800, 3,100]")


def test_question_three_compares_the_clip_fraction_ranges():
  cells = lambda d, s: {"decoupled": {"clip_frac": d}, "sync_ppo": {"clip_frac": s}}
  got = named.clip_overlap(GRID.ctx, {"a": cells([0.05, 0.07], [0.06, 0.09]),
                                      "b": cells([0.15, 0.17], [0.05, 0.06]),
                                      "c": cells([], [0.1])})
  assert got == {"a": True, "b": False, "c": None}


def test_blocks_run_seed_by_seed_across_tasks():
  """The study runs every task's block of a seed before the next seed's (PROTOCOL.md's order), in
  the record's method order whatever order --methods is typed in."""
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", "corrections", "--dry_run",
                         "--tasks=Hopper-v5,Walker2d-v5", "--methods=none,sync_ppo",
                         "--seeds=0,1", "--results=/nonexistent", "--host_probe_s=0"], cwd=ROOT,
                        capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr
  runs = [(l.split("--env=")[1].split()[0], l.split("--seed=")[1].split()[0])
          for l in proc.stdout.splitlines() if l.startswith("$ python")]
  assert [(t, s) for t, s in runs[::2]] == [("Hopper-v5", "0"), ("Walker2d-v5", "0"),
                                            ("Hopper-v5", "1"), ("Walker2d-v5", "1")]


def test_diagnostics_table_gives_each_quarters_median_over_the_seeds_that_recorded_it():
  q = lambda *v: [{"clip_frac": x, **({"kl_lag": x / 10} if x > 0.2 else {})} for x in v]
  runs = [{"quarters": q(0.1, 0.2, 0.3, 0.4)}, {"quarters": q(0.3, 0.4, 0.5, 0.6)},
          {"quarters": q(0.5, 0.6, 0.1, 0.2)}]
  got = named.quarter_medians(GRID.ctx, runs)
  assert got["clip_frac"] == {"seeds": 3, "median": [0.3, 0.4, 0.3, 0.4]}
  # kl_lag only where clip_frac > 0.2: run 0 from its quarter 3, run 1 everywhere, run 2 in 1-2.
  assert got["kl_lag"]["seeds"] == 3
  assert got["kl_lag"]["median"] == pytest.approx([0.04, 0.05, 0.04, 0.05])
  assert "entropy" not in got
  cells = {c.header: c.cell for c in GRID.tables[2].columns}
  cell = {"seeds": [0, 1, 2, 3], "quarters": got}
  assert cells["clip_frac"](cell) == "0.300 / 0.400 / 0.300 / 0.400 (3 seeds)"
  assert cells["entropy"](cell) == "-"
