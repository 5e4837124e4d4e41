"""`hts-reproduce gfootball` (results/gfootball/grid.toml): the grid's launcher flags, the paper's
metrics from summary.json files (golden values by hand), the rendered tables and README block,
resume (hts_jax/runs/launch.py)."""

import json
import os
import re
import subprocess
import sys

import pytest

from hts_jax.results import (compare, driver, grid, named, paper_parts, paper_report, publish,
                             render, spec)
from hts_jax.runs import driver as runs_driver
from hts_jax.runs import launch
from tests.support import ROOT
from tests.support.cli import launcher_configs

SCALE = dict(num_envs=8, num_executors=4, ppo_actors=1, impala_actors=4,
             representation="simple115v2", extra=[])
GRID = spec.load("gfootball")
LABELS = {m.name: m.short for m in GRID.methods if m.short}
SPEC = GRID.paper.spec
DOCS, README = GRID.tables


def behind(report, scenario, t):
  """Where HTS-PPO is not ahead, in `report` (HTS-PPO the reference)."""
  return named.words("gfootball", "behind", t=t, labels=LABELS, sc=scenario,
                     out=dict(report, reference="hts_ppo"))


def _report(**parts):
  """A GFootball report with no scenarios but `parts`."""
  return {"grid": "gfootball", "tasks": {}, "protocol": {"settings": {"targets": ["0.4", "0.8"]}},
          **parts}


def ratio_cell(report, *args):
  return paper_parts.ratio_cell(dict(report, reference="hts_ppo"), *args)


def flags_of(method, scenario, seed, steps, **scale):
  return GRID.run_flags(scenario, method, seed, steps, dict(SCALE, **scale))


def flat(text: str) -> str:
  """A rendered table with tabulate's padding collapsed to one space."""
  return re.sub(r" +", " ", re.sub(r"-{3,}", "---", text))


def test_every_method_is_a_valid_launcher_config_at_this_scale():
  hts, sync, impala, delayed, behaviour = launcher_configs(
      [flags_of(m, "academy_empty_goal", 1, 300_000)
       for m in ("hts_ppo", "sync_ppo", "impala", "hts_ppo_delayed", "hts_ppo_behaviour")])
  for c in (hts, sync, impala):
    assert c["env"] == "gfootball:academy_empty_goal"
    assert c["env_kwargs"] == {"representation": "simple115v2", "stacked": False}
    assert (c["num_envs"], c["num_executors"], c["seed"]) == (8, 4, 1)
    assert (c["total_steps"], c["eval_every"], c["eval_episodes"]) == (300_000, 6_000, 10)
    assert not c["eval_greedy"] and not c["tensorboard"]
    assert c["learner"]["gamma"] == 0.993
  assert (hts["mode"], sync["mode"], impala["mode"]) == ("hts", "sync", "async")
  # Only the runtime and the correction (which sync replaces by its own) differ between HTS-PPO
  # and sync PPO.
  same = lambda c: {k: dict(v, correction=None) if k == "learner" else v
                    for k, v in c.items() if k != "mode"}
  assert same(hts) == same(sync)
  assert (hts["alpha"], hts["num_actors"], hts["learner"]["clip_eps"]) == (128, 1, 0.08)
  # IMPALA: Table A6's unroll 32 and batch 8 one-env unrolls (4 actors x 2 envs: 4 unrolls).
  assert (impala["alpha"], impala["num_actors"], impala["async_batch_unrolls"]) == (32, 4, 4)
  assert impala["alpha"] * impala["num_envs"] // impala["num_actors"] * \
      impala["async_batch_unrolls"] == 32 * 8
  assert impala["learner"]["entropy_coef"] == 0.00087453
  assert impala["learner"]["learning_rate"] == 0.00019896
  # Linear decay to 0 over the paper's 5M env steps (PROTOCOL.md), whatever the run's budget.
  assert hts["learner"]["lr_decay_updates"] == -(-5_000_000 // 1024) * 2 * 8
  assert impala["learner"]["lr_decay_updates"] == -(-5_000_000 // 256)
  assert hts["learner"]["correction"] == "none"  # the corrections study's pick, named
  assert behaviour["learner"]["correction"] == "behaviour"  # the released code's (PROTOCOL.md)
  assert {k: v for k, v in behaviour["learner"].items() if k != "correction"} == \
         {k: v for k, v in hts["learner"].items() if k != "correction"}
  assert {k: v for k, v in delayed["learner"].items() if k != "correction"} == \
         {k: v for k, v in hts["learner"].items() if k != "correction"}
  assert delayed["learner"]["correction"] == "delayed"


def test_bad_options_are_one_line_errors():
  with pytest.raises(grid.GridError, match="impala"):
    flags_of("impala", "academy_empty_goal", 0, 10, impala_actors=3)
  with pytest.raises(grid.GridError, match="--extra"):
    flags_of("hts_ppo", "academy_empty_goal", 0, 10, extra=["seed"])
  with pytest.raises(grid.GridError, match="--steps"):
    runs_driver._budgets(["academy_empty_goal"])
  assert runs_driver._budgets(["5", "academy_corner=7"]) == {None: 5, "academy_corner": 7}
  # A TASK= this run does not have is an error, not a budget silently unused; a budget that is
  # the protocol's keeps the grid on its protocol.
  close, run = "academy_empty_goal_close", "academy_run_to_score"
  with pytest.raises(grid.GridError, match="not a task this run has"):
    runs_driver._budgets([f"{close.upper()}=4000"], GRID, [close])
  assert runs_driver._budgets([f"{close}=400000", f"{run}=5"], GRID, [close, run]) == {run: 5}
  assert runs_driver._budgets(["400000"], GRID, [close]) == {}
  assert runs_driver._budgets(["400000"], GRID, [close, run]) == {None: 400_000}
  with pytest.raises(grid.GridError, match="--actor_counts"):
    runs_driver._counts(["1", "0"])
  # A scenario outside the protocol runs with its own budget, and only with one.
  with pytest.raises(grid.GridError, match="no budget"):
    GRID.run_flags("academy_corner", "hts_ppo", 0)
  assert flags_of("hts_ppo", "academy_corner", 0, 5)["env"] == "gfootball:academy_corner"
  proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", "gfootball",
                         "--methods=a3c", "--dry_run"], cwd=ROOT, capture_output=True, text=True)
  assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
      "error: --methods: unknown ['a3c']; expected some of ['hts_ppo', 'hts_ppo_behaviour', "
      "'hts_ppo_delayed', 'impala', 'sync_ppo', 'sync_ppo_r1']"]


def _body(results):
  """The runs, their cells and paired ratios, as the driver builds them (`driver.build`)."""
  runs = driver.run_table(GRID, results)
  return {"runs": runs, "tasks": paper_report.summarize(runs, SPEC, 500),
          "paired": compare.paired_ratios(runs, SPEC)}


def _fake_run(results, scenario, method, seed, scores, dt_s, *, sps=100.0, host=None):
  path = grid.run_dir(str(results), scenario, method, seed)
  os.makedirs(path)
  evals = [{"env_steps": 1000 * (k + 1), "wall_time_s": dt_s * (k + 1), "mean_return": s,
            "returns": [s] * 10} for k, s in enumerate(scores)]
  summary = {"seed": seed, "env": f"gfootball:{scenario}", "mode": method, "env_steps":
             1000 * len(scores), "wall_time_s": dt_s * len(scores), "sps": sps, "updates": 3,
             "param_sha256": f"{method}{seed}", "num_envs": 8, "num_actors": 1,
             "num_executors": 4, "alpha": 128, "policy_lag": {"mean": 1.0},
             "idle": {"executors_waiting_for_actions": 0.1 * dt_s * len(scores) * 4,
                      "actors": 0.5 * dt_s * len(scores), "learner": 0.25 * dt_s * len(scores)},
             "episode_returns": {}, "eval": evals}
  if method == "impala":
    summary["mode"] = "async"
  if host:
    summary["host"] = {"cpu_model": host, "usable_cores": 2}
  with open(os.path.join(path, "summary.json"), "w") as f:
    json.dump(summary, f)


def test_metrics_golden_values(tmp_path):
  sc = "academy_empty_goal_close"
  # Running averages over full windows of 10 only: seed 0's first is 1.0 (the 10th evaluation,
  # minute 10) although every evaluation scored 1; seed 1's first is 8/10 (minute 10 too).
  _fake_run(tmp_path, sc, "hts_ppo", 0, [1.0] * 12, 60)
  _fake_run(tmp_path, sc, "hts_ppo", 1, [0.0, 0.0] + [1.0] * 10, 60)
  # IMPALA never reaches 0.4; its mean wall time ((300 + 360) / 2 s) is the final-time limit.
  _fake_run(tmp_path, sc, "impala", 0, [0.1] * 10, 30)
  _fake_run(tmp_path, sc, "impala", 1, [0.2] * 10, 36)
  os.makedirs(grid.run_dir(str(tmp_path), sc, "sync_ppo", 0))  # unfinished: ignored
  runs = driver.run_table(GRID, str(tmp_path))
  s = paper_report.summarize(runs, SPEC, resamples=2_000)[sc]
  assert s["time_limit_s"] == 330 and s["budget"] == 12_000
  assert list(s["methods"]) == ["hts_ppo", "impala"]
  hts, impala = s["methods"]["hts_ppo"], s["methods"]["impala"]
  assert hts["required_min"]["0.4"] == dict(mean=10.0, lo=10.0, hi=10.0, n=2, reached=2, runs=2,
                                            kind="min-max")
  assert hts["required_min"]["0.8"] == dict(mean=10.0, lo=10.0, hi=10.0, n=2, reached=2, runs=2,
                                            kind="min-max")
  assert hts["required_steps"]["0.8"]["mean"] == 10_000
  # Missed by both seeds: counted at their runs' ends (5.0 and 6.0 minutes), a lower bound.
  assert impala["required_min"]["0.4"] == {"mean": None, "censored_mean": 5.5, "reached": 0,
                                           "runs": 2}
  # By the wall time of the same block's IMPALA run: seed 0 within 300 s scored 1.0 five
  # times; seed 1 within 360 s 0, 0, 1, 1, 1, 1 (4/6): mean 5/6.
  assert hts["final_time"]["mean"] == pytest.approx(5 / 6)
  assert (hts["final_time"]["reached"], hts["final_time"]["runs"]) == (2, 2)
  # IMPALA's own final time metric is its final metric: each seed's limit is its own end.
  assert impala["final_time"]["mean"] == pytest.approx(0.15)
  assert hts["final_metric"]["mean"] == pytest.approx((1.0 + 1.0) / 2)
  # Idle seconds are summed over the 4 executors: a share of 0.1 each; async measures none.
  assert hts["idle_share"] == pytest.approx(
      {"executors_waiting_for_actions": 0.1, "actors": 0.5, "learner": 0.25})
  assert impala["idle_share"] == pytest.approx({"actors": 0.5, "learner": 0.25})


def test_scenarios_come_in_the_protocols_order(tmp_path):
  """The tables list scenarios as PROTOCOL.md does (close, empty goal, run to score), not by
  name; a scenario outside the protocol comes last."""
  for sc in ("academy_run_to_score", "academy_corner", "academy_empty_goal",
             "academy_empty_goal_close"):
    _fake_run(tmp_path, sc, "hts_ppo", 0, [0.5] * 10, 60)
  runs = driver.run_table(GRID, str(tmp_path))
  assert [r["task"] for r in runs] == ["academy_empty_goal_close", "academy_empty_goal",
                                           "academy_run_to_score", "academy_corner"]
  assert list(paper_report.summarize(runs, SPEC, resamples=100)) == \
      [r["task"] for r in runs]


def test_a_target_some_seeds_miss_has_a_censored_mean():
  """No mean over only the seeds that reached the target (it would flatter): the mean with each
  miss counted at its run's end, a lower bound, shown as ≥ beside k/n."""
  got = paper_report._reached([2.0, float("inf"), 4.0], [10.0, 9.0, 10.0], 100)
  assert got == {"mean": None, "censored_mean": 5.0, "mean_of_reached": 3.0, "reached": 2,
                 "runs": 3}
  assert publish.fmt_ci(got) == "≥5.0 (2/3)"
  assert publish.fmt_ci(paper_report._reached([float("inf")] * 2, [8.0, 10.0], 100)) == \
      "≥9.0 (0/2)"
  assert publish.fmt_ci({"mean": None, "reached": 1, "runs": 2}) == "- (1/2)"  # no ends known
  assert publish.fmt_ci(paper_report._reached([2.0, 4.0], [9.0, 9.0], 100)) == "3.0 [2.0, 4.0]"


def test_resume_refuses_a_finished_run_with_other_settings(tmp_path):
  values = flags_of("hts_ppo", "academy_empty_goal", 1, 300_000)
  logdir = str(tmp_path / "run")
  os.makedirs(logdir)
  config = {"env": "gfootball:academy_empty_goal", "mode": "hts", "num_envs": 8,
            "num_executors": 4, "num_actors": 1, "total_steps": 300_000, "seed": 1,
            "eval_every": 6_000, "env_kwargs": {"representation": "simple115v2",
                                                "stacked": False}}
  with open(os.path.join(logdir, "summary.json"), "w") as f:
    json.dump({"config": config}, f)
  assert launch.settings_mismatch(values, logdir) == []
  assert launch.launch(values, logdir)  # done before: nothing runs
  other = flags_of("hts_ppo", "academy_empty_goal", 1, 150_000, num_envs=4)
  assert launch.settings_mismatch(other, logdir) == [
      "num_envs: ran 8, grid wants 4", "total_steps: ran 300000, grid wants 150000",
      "eval_every: ran 6000, grid wants 3000"]
  assert not launch.launch(other, logdir)  # refused, and the finished run is kept
  assert os.path.exists(os.path.join(logdir, "summary.json"))


def test_the_grid_module_imports_beside_the_launcher():
  """Its flags are defined only when it runs as the program: `train`'s share names with them."""
  code = ("from hts_jax.results import spec; from hts_jax.runs import driver; "
          "spec.load('gfootball'); import experiments.train")
  subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_tables_and_readme_block_render_from_the_json(tmp_path):
  sc = "academy_empty_goal_close"
  _fake_run(tmp_path, sc, "hts_ppo", 0, [1.0] * 12, 60)
  _fake_run(tmp_path, sc, "hts_ppo", 1, [0.0, 0.0] + [1.0] * 10, 60)
  _fake_run(tmp_path, sc, "impala", 0, [0.1] * 10, 30)
  os.makedirs(tmp_path / "actor_counts" / "notes")  # not a run of --actor_counts: ignored
  docs = tmp_path / "docs" / "results.md"  # both blocks: README shows the headline
  docs.parent.mkdir()
  docs.write_text(f"# y\n{README.block.begin}\nold\n{README.block.end}\ntail\n"
                  f"{DOCS.block.begin}\n{DOCS.block.end}\n")
  report = driver.report(GRID, str(tmp_path), str(tmp_path), 2_000, {})
  md = (tmp_path / "tables.md").read_text()
  row = next(l for l in flat(md).splitlines() if l.startswith("| Empty goal close")
             and "/ 10.0" in l)
  # The protocol's 5 seeds, not the most any method has, say how partial each cell is.
  assert row == ("| Empty goal close (12,000 steps) | (2 of 5 seeds) 10.0 [10.0, 10.0] / 10.0 "
                 "[10.0, 10.0] (paper: 1.0 / 2.0) | (1 of 5 seeds) ≥5.0 (0/1) / ≥5.0 (0/1) "
                 "(paper: 1.7 / 2.6) |")
  assert sorted(os.path.basename(p) for p in report["plots"]) == [
      "score_vs_env_steps.png", "score_vs_wall_time.png"]
  assert all(os.path.getsize(p) > 1000 for p in report["plots"])
  with open(tmp_path / "results.json") as f:
    saved = json.load(f)
  assert render.render_markdown(GRID, saved) == md
  block = render.render_table(GRID, README, saved)
  assert docs.read_text() == f"# y\n{README.block.wrap(block)}\ntail\n{DOCS.block.wrap(md)}\n"
  summary = flat(block).splitlines()
  # No benchmark here: the ratio from its SPS is '-'; seed 1 has no IMPALA run to time it by;
  # IMPALA's cells say it has fewer seeds than the scenario.
  assert summary[4] == ("| Empty goal close (12,000, 5) | (2 of 5 seeds) 10,000 [10,000, 10,000] "
                        "(floor); "
                        "1 / -; 1.00 [1.00, 1.00] / 1.00 (1/2) | (1 of 5 seeds) ≥10,000 (0/1); "
                        "- / -; 0.10 / 0.10 |")
  assert summary[7] == "- Empty goal close: it is ahead of every baseline in every cell."
  assert saved["tasks"][sc]["methods"]["impala"]["required_min"]["0.8"]["mean"] is None
  assert saved["identity"] is None


def test_readme_says_where_hts_ppo_is_not_ahead():
  """The issue's "say plainly where HTS-PPO is not faster or learns less than a baseline": every
  cell a baseline wins is named, and a target the baseline reached in more seeds is said so."""
  def ci(mean, lo=None, hi=None, reached=2):
    return {"mean": mean, "lo": mean if lo is None else lo, "hi": mean if hi is None else hi,
            "n": 2, "reached": reached, "runs": 2}
  sc = "academy_empty_goal"
  report = {"tasks": {sc: {"methods": {
      "hts_ppo": {"required_steps": {"0.8": ci(200_000)}, "final_metric": ci(0.9, 0.8, 0.95),
                  "final_time": ci(0.8)},
      "sync_ppo": {"required_steps": {"0.8": ci(100_000)}, "final_metric": ci(0.92, 0.9, 0.94),
                   "final_time": ci(0.7)},
      "impala": {"required_steps": {"0.8": ci(300_000)}, "final_metric": ci(0.5),
                 "final_time": ci(0.5)}}}},
      "paired": {sc: {"sync_ppo": {"0.8": {"mean": 0.5, "lo": 0.4, "hi": 0.6, "n": 2,
                                   "could": [0, 1]}},
                      "impala": {"0.8": {"mean": 1.5, "lo": 1.4, "hi": 1.6, "n": 2,
                                 "could": [0, 1]}}}},
      "throughput_minutes": {sc: {"hts_ppo": {"0.8": 4.0}, "sync_ppo": {"0.8": 3.0},
                                  "impala": {"0.8": 2.0}}}}
  assert behind(report, sc, "0.8") == (
      "PPO (sync) needs fewer env steps to 0.8 (100,000 [100,000, 100,000] vs HTS-PPO's 200,000 "
      "[200,000, 200,000]), takes less time to 0.8 (paired 0.50x [0.40, 0.60] (n=2); steps over "
      "benchmark SPS 0.75x), ends higher (final metric 0.92 vs 0.90, within the intervals); "
      "IMPALA takes less time to 0.8 (steps over benchmark SPS 0.50x).")
  report["tasks"][sc]["methods"]["hts_ppo"]["required_steps"]["0.8"] = {
      "mean": None, "reached": 1, "runs": 2}
  report["tasks"][sc]["methods"]["sync_ppo"].update(final_metric=ci(0.5), final_time=ci(0.5))
  report["throughput_minutes"] = {}
  report["paired"] = {}
  assert behind(report, sc, "0.8") == (
      "PPO (sync) reaches 0.8 in more seeds (2/2, at 100,000 env steps; HTS-PPO 1/2); "
      "IMPALA reaches 0.8 in more seeds (2/2, at 300,000 env steps; HTS-PPO 1/2).")
  # Neither with a mean (some seeds of each missed): more seeds that reached it still counts, and
  # as many or fewer says nothing.
  methods = report["tasks"][sc]["methods"]
  methods["hts_ppo"]["required_steps"]["0.8"] = {"mean": None, "reached": 0, "runs": 2}
  methods["sync_ppo"]["required_steps"]["0.8"] = {"mean": None, "reached": 0, "runs": 2}
  methods["impala"]["required_steps"]["0.8"] = {"mean": None, "mean_of_reached": 300_000.0,
                                                "reached": 1, "runs": 2}
  assert behind(report, sc, "0.8") == (
      "IMPALA reaches 0.8 in more seeds (1/2; HTS-PPO 0/2).")


def test_a_higher_final_metric_is_shown_apart_from_the_other():
  """'ends higher (final metric 0.79 vs 0.79)' said nothing: the figures get the decimals that
  tell them apart."""
  assert paper_parts._apart(0.7925, 0.7905) == "0.792 vs 0.790"
  assert paper_parts._apart(0.92, 0.9) == "0.92 vs 0.90"
  assert paper_parts._apart(0.50004, 0.50001) == "0.5000 vs 0.5000"  # 4 decimals at most
  # Equal but for float sums (two means of 0.79): not 'higher' at all.
  ci = lambda m: {"mean": m, "n": 1}  # pylint: disable=unnecessary-lambda-assignment
  sc, t = "academy_empty_goal", "0.8"
  steps = {t: {"mean": 5.0, "reached": 1, "runs": 1}}
  report = {"tasks": {sc: {"methods": {
      "hts_ppo": {"required_steps": steps, "final_metric": ci(0.79)},
      "sync_ppo": {"required_steps": steps, "final_metric": ci(0.79 + 1e-12)}}}}}
  assert behind(report, sc, t) == "it is ahead of every baseline in every cell."
  # A scenario with HTS-PPO's runs only (a block begun) is not 'ahead of every baseline'.
  del report["tasks"][sc]["methods"]["sync_ppo"]
  assert behind(report, sc, t) == "no baseline has a run yet."


def test_the_committed_json_holds_every_committed_run():
  """Every committed run is in results/gfootball/results.json, and nothing else is (the tables
  are its render: tests/tooling/test_grids.py)."""
  with open(os.path.join(ROOT, "results", "gfootball", "results.json")) as f:
    report = json.load(f)
  runs = driver.run_table(GRID, os.path.join(ROOT, "results", "gfootball"))
  assert [(r["task"], r["method"], r["seed"]) for r in runs] == \
         [(r["task"], r["method"], r["seed"]) for r in report["runs"]]


@pytest.mark.slow
def test_a_tiny_real_grid_resumes(tmp_path):
  """Two real GFootball runs through the launcher; a second call runs nothing; an unfinished run
  directory is run again from the start."""
  cmd = [sys.executable, "-m", "experiments.reproduce", "gfootball", f"--results={tmp_path}",
         "--scenarios=academy_empty_goal_close", "--methods=hts_ppo,impala", "--seeds=0",
         "--steps=academy_empty_goal_close=2048", "--num_envs=4", "--num_executors=2",
         "--impala_actors=2", "--extra=eval_episodes=2", "--noreadme", "--resamples=100",
         "--host_probe_s=0"]
  first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
  assert first.returncode == 0, first.stderr[-2000:]
  assert first.stdout.count("$ python") == 2
  with open(tmp_path / "results.json") as f:
    report = json.load(f)
  assert [(r["method"], r["env_steps"]) for r in report["runs"]] == [
      ("hts_ppo", 2048), ("impala", 2048)]
  # 2048 steps of 4 envs at alpha 128: 4 segments, an evaluation (of 2 episodes, --extra) at
  # each boundary.
  assert len(report["runs"][0]["evals"]) == 4 and report["commit"]
  assert report["protocol"]["settings"]["options"]["extra"] == ["eval_episodes=2"]
  hts_dir = grid.run_dir(str(tmp_path), "academy_empty_goal_close", "hts_ppo", 0)
  sha = report["runs"][0]["param_sha256"]
  os.remove(os.path.join(hts_dir, "summary.json"))  # as if interrupted
  again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
  assert again.returncode == 0, again.stderr[-2000:]
  assert again.stdout.count("$ python") == 1 and "done before" in again.stdout
  assert "removing the unfinished run" in again.stdout
  with open(tmp_path / "results.json") as f:
    assert json.load(f)["runs"][0]["param_sha256"] == sha  # HTS is deterministic


def test_the_ppo_update_diagnostics_golden_values(tmp_path):
  """Why HTS-PPO learns slower (docs' table): per PPO run, the means over the
  updates of the budget's first quarter, and the entropy over that quarter's last fifth; IMPALA's
  rows carry no clip_frac and are left out."""
  sc = "academy_empty_goal_close"
  _fake_run(tmp_path, sc, "sync_ppo", 1, [0.5] * 12, 60)  # no metrics.csv: not counted
  for method, seed, clip in (("hts_ppo", 0, 0.2), ("hts_ppo", 1, 0.4), ("sync_ppo", 0, 0.1),
                             ("impala", 0, None)):
    _fake_run(tmp_path, sc, method, seed, [0.5] * 12, 60)  # a budget of 12,000 env steps
    path = grid.run_dir(str(tmp_path), sc, method, seed)
    head = "env_steps,entropy" + (",clip_frac,ratio_abs_dev,approx_kl" if clip else "")
    rows = [f"{1000 * k},{3.0 - 0.1 * k}" + (f",{clip * k},0.05,0.001" if clip else "")
            for k in range(1, 13)]
    with open(os.path.join(path, "metrics.csv"), "w") as f:
      f.write("\n".join([head] + rows) + "\n")
    with open(os.path.join(path, "summary.json")) as f:
      summary = json.load(f)
    summary["config"] = {"learner": {"clip_eps": 0.08}}
    with open(os.path.join(path, "summary.json"), "w") as f:
      json.dump(summary, f)
  runs = driver.run_table(GRID, str(tmp_path))
  d = paper_parts.update_diagnostics(str(tmp_path), runs, 2_000)[sc]
  assert (d["window_steps"], d["clip_eps"]) == ([3_000], [0.08])
  assert list(d["methods"]) == ["hts_ppo", "sync_ppo"]
  assert d["methods"]["sync_ppo"]["seeds"] == [0]
  hts, sync = d["methods"]["hts_ppo"], d["methods"]["sync_ppo"]
  # The rows at 1,000, 2,000 and 3,000 steps: mean clip (1 + 2 + 3) / 3 x clip = 2 x clip.
  assert hts["clip_frac"]["mean"] == pytest.approx((0.4 + 0.8) / 2)
  assert sync["clip_frac"]["mean"] == pytest.approx(0.2)
  assert hts["ratio_abs_dev"]["mean"] == pytest.approx(0.05) and hts["seeds"] == [0, 1]
  # Entropy over steps 2,400-3,000: the row at 3,000 only.
  assert sync["entropy"]["mean"] == pytest.approx(2.7) and sync["entropy"]["n"] == 1
  out = {"grid": "gfootball", "update_diagnostics": {sc: d}}
  update_cell = next(s for s in DOCS.sections if s.kind == "update").cell
  assert paper_parts.update_row(sc, d) == "Empty goal close (3,000, 0.08)"
  assert update_cell(sc, "hts_ppo", hts, out).startswith(
      "clipped 0.600 [0.400, 0.800]; \\|ρ - 1\\| 0.050 [0.050, 0.050]; KL 0.0010")
  assert update_cell(sc, "sync_ppo", sync, out) == (
      "(1 of 2 seeds) clipped 0.200; \\|ρ - 1\\| 0.050; KL 0.0010; entropy 2.70")


def test_the_impala_validation_reads_its_runs_and_diagnostics(tmp_path):
  """PROTOCOL.md's IMPALA validation: where each seed's running average first reached 0.9, and
  the diagnostics per env step when the loss is summed over the batch (TorchBeast's)."""
  for seed, scores in ((0, [0.5] * 5 + [1.0] * 10), (1, [0.5] * 12)):
    path = tmp_path / paper_parts.VALIDATION / f"seed{seed}"
    os.makedirs(path)
    evals = [{"env_steps": 100 * (k + 1), "wall_time_s": k + 1.0, "mean_return": x,
              "returns": [x] * 10} for k, x in enumerate(scores)]
    config = {"total_steps": 10_000, "alpha": 32, "num_envs": 8, "num_actors": 4,
              "async_batch_unrolls": 4, "learner": {"loss_reduction": "sum"}}
    with open(path / "summary.json", "w") as f:
      json.dump({"seed": seed, "env": "gfootball:academy_empty_goal_close", "env_steps": 1500,
                 "updates": 6, "sps": 10.0, "eval": evals, "config": config}, f)
    (path / "metrics.csv").write_text("env_steps,entropy,rho_clipped_frac,value_loss\n"
                                      "256,753.6,0.5,25.6\n512,256.0,0.3,2.56\n")
  val = paper_parts.validation_report(str(tmp_path))
  assert not val["passed"]  # seed 1 never reached 0.9
  first, second = val["runs"]
  # Full windows of 10: the first reaching 0.9 ends at the 13th evaluation (2 x 0.5, 8 x 1.0).
  assert first["reached_0.9_at_steps"] == 1_300 and second["reached_0.9_at_steps"] is None
  d = first["diagnostics"]  # per step: a batch of 32 x 2 x 4 = 256 env steps
  assert d["entropy"]["first"] == pytest.approx(753.6 / 256) and d["entropy"]["last"] == 1.0
  assert d["value_loss"]["first"] == pytest.approx(0.1)
  assert d["rho_clipped_frac"]["mean"] == pytest.approx(0.4)
  assert "**not passed**" in named.words("gfootball", "docs_tail", out=_report(validation=val))
  # README's line: the verdict, where each seed reached 0.9 and its diagnostics.
  assert named.words("gfootball", "readme_tail", out=_report(validation=val),
                     labels=LABELS).split("\n")[-1] == (
      "IMPALA validation on academy_empty_goal_close (a running average of 0.9 within 1M steps, "
      "2 seeds): not passed (seed 0 at 1,300 steps, seed 1 at -); its diagnostics, seed by seed "
      "(first → last update): entropy per step (uniform 2.94) 2.94 → 1.00 / 2.94 → 1.00, ρ "
      "clipped (share, mean over updates) 0.40 / 0.40, value loss per step 0.100 → 0.010 / "
      "0.100 → 0.010.")


def test_whole_runs_against_the_benchmark_golden_values(tmp_path):
  """docs' table of why whole runs step slower than the benchmark: the runs' SPS over the
  benchmark's median, their mean episode length (env steps over finished training episodes),
  and what resets add to a step's env time at that length (env_costs.json's reset in steps)."""
  sc = "academy_empty_goal_close"
  for method, seed, sps, episodes, host in (
      ("hts_ppo", 0, 60.0, 100, "A"), ("hts_ppo", 1, 80.0, 50, "A"),
      ("hts_ppo", 2, 10.0, 40, "B"), ("sync_ppo", 0, 45.0, 200, "A")):
    _fake_run(tmp_path, sc, method, seed, [0.5] * 12, 60, sps=sps, host=host)  # 12,000 steps
    path = grid.run_dir(str(tmp_path), sc, method, seed)
    with open(os.path.join(path, "summary.json")) as f:
      summary = json.load(f)
    summary["episode_returns"] = [[1.0] * (episodes // 2), [0.0] * (episodes - episodes // 2)]
    with open(os.path.join(path, "summary.json"), "w") as f:
      json.dump(summary, f)
  runs = driver.run_table(GRID, str(tmp_path))
  assert [r["episodes"] for r in runs] == [100, 50, 40, 200]
  # Seed 2 ran on another host kind (B) than the benchmark (A): its SPS is left out of the share,
  # its episodes (host-independent) are not.
  bench = {"scenarios": {sc: {"hts_ppo": {"median_sps": 100.0}}}, "host": "A x2"}
  costs = {"envs": {f"gfootball:{sc}": {"reset_in_steps": 6.0, "random_episode_length": 120.0}}}
  d = paper_parts.run_throughput(runs, bench, costs, 2_000)[sc]
  assert d["random_reset_share"] == pytest.approx(0.05)
  hts, sync = d["methods"]["hts_ppo"], d["methods"]["sync_ppo"]
  assert hts["seeds"] == [0, 1, 2] and hts["sps_seeds"] == [0, 1]
  assert hts["sps_to_benchmark"] == pytest.approx(0.7)
  assert hts["episode_length"]["mean"] == pytest.approx((120 + 240 + 300) / 3)  # 12,000 / 100...
  assert hts["reset_share"] == pytest.approx(6.0 / 220)
  assert sync["sps_to_benchmark"] is None and sync["episode_length"]["mean"] == 60
  assert sync["reset_share"] == pytest.approx(0.1)
  out = _report(run_throughput={sc: d})
  throughput_title = lambda out: named.TITLES["run_throughput"]("", out)  # noqa: E731
  throughput_cell = next(s for s in DOCS.sections if s.kind == "run_throughput").cell
  assert "a reset costs Empty goal close 6.0 steps (a random policy's episodes: 120 steps, so " \
         "resets add 5% to a step's env time), results/gfootball/env_costs.json" in \
         throughput_title(out)
  assert throughput_cell(sc, "hts_ppo", hts, out) == (
      "70 [60, 80] SPS = 0.70 of 100 (the 2 of 3 seeds on the benchmark's host); episodes 220.0 "
      "[120.0, 300.0] steps; resets +3%")
  assert throughput_cell(sc, "sync_ppo", sync, out) == (
      "(1 of 3 seeds) 45 SPS; episodes 60.0 steps; resets +10%")
  # No run on the benchmark's host kind: no share at all.
  d = paper_parts.run_throughput(runs, {**bench, "host": "C x2"}, costs, 2_000)[sc]
  assert d["methods"]["hts_ppo"]["sps"] is None and "- SPS (no run on the benchmark's host, C " \
      "x2); episodes 220.0" in throughput_cell(sc, "hts_ppo", d["methods"]["hts_ppo"],
                                         _report(run_throughput={sc: d}))
  # Without env_costs.json the table says nothing of resets.
  d = paper_parts.run_throughput(runs, bench, None, 2_000)[sc]
  assert d["methods"]["hts_ppo"]["reset_share"] is None
  assert "a reset costs" not in throughput_title(_report(run_throughput={sc: d}))


def test_host_kinds_are_never_mixed_in_a_figure(tmp_path):
  """PROTOCOL.md: a pair counts in the paired ratios only when its two runs ran on one recorded
  host kind (its block's other runs may have run elsewhere: Changes, 2026-11-28); absolute SPS and minutes of different host kinds are never averaged together; a
  ratio over fewer blocks than could count says so ('n=k of N'), and HTS-PPO's own cell is '-'
  where none of its seeds reached the target."""
  sc = "academy_empty_goal_close"
  for seed, host in ((0, "A"), (1, "A"), (2, "B")):
    _fake_run(tmp_path, sc, "hts_ppo", seed, [1.0] * 12, 60, host=host)
    _fake_run(tmp_path, sc, "sync_ppo", seed, [1.0] * 12, 30 if seed else 120, host=host)
  # Seed 1's IMPALA misses the target; seed 2's IMPALA ran on another host than its block.
  _fake_run(tmp_path, sc, "impala", 0, [1.0] * 12, 120, host="A")
  _fake_run(tmp_path, sc, "impala", 1, [0.1] * 12, 120, host="A")
  _fake_run(tmp_path, sc, "impala", 2, [1.0] * 12, 120, host="A")
  body = _body(str(tmp_path))
  paired = body["paired"][sc]
  # Block 2's IMPALA ran on A, its PPO runs on B: IMPALA's pair is left out, sync PPO's counts.
  assert paired["sync_ppo"]["0.8"]["blocks"] == [0, 1, 2]
  assert paired["sync_ppo"]["0.8"]["left_out"] == []
  assert paired["sync_ppo"]["0.8"]["ratios"] == pytest.approx([2.0, 0.5, 0.5])
  assert paired["impala"]["0.8"]["blocks"] == [0, 1] and paired["impala"]["0.8"]["left_out"] == [2]
  # Block 1's IMPALA missed the target: it counts, at its run's end (24 min against HTS-PPO's
  # 10), which makes its ratio (2.4) and the geometric mean a lower bound.
  assert paired["impala"]["0.8"]["could"] == [0, 1]
  assert paired["sync_ppo"]["0.8"]["could"] == [0, 1, 2]
  assert paired["impala"]["0.8"]["bound"] == "lower"
  report = {"tasks": body["tasks"], "paired": body["paired"], "runs": body["runs"]}
  assert ratio_cell(report, sc, "impala", "0.8", "1") == "≥2.19x [2.00, 2.40] (n=2)"
  assert ratio_cell(report, sc, "hts_ppo", "0.8", "1") == "1"
  protocol = {"settings": {"tasks": {t.name: {"seeds": list(t.seeds)} for t in GRID.tasks}}}
  paper_parts.extras(str(tmp_path), dict(body, throughput=None, protocol=protocol), 500)
  s = body["tasks"][sc]
  assert s["planned_seeds"] == 5 and s["hosts"] == ["A x2", "B x2"]
  assert paper_parts.per_host(s["methods"]["hts_ppo"], "sps", "{:,.0f}", " SPS") == (
      "100 [100, 100] SPS on A x2 (seeds 0, 1); 100 SPS on B x2 (seed 2)")
  # One seed each: a higher final metric is said without claiming the intervals apart.
  one = {"mean": 0.9, "lo": 0.9, "hi": 0.9, "n": 1}
  report = {"tasks": {sc: {"methods": {
      "hts_ppo": {"required_steps": {"0.8": {"mean": None, "reached": 0, "runs": 1}},
                  "final_metric": {**one, "mean": 0.7, "lo": 0.7, "hi": 0.7}},
      "sync_ppo": {"required_steps": {"0.8": {"mean": None, "reached": 0, "runs": 1}},
                   "final_metric": one}}}}}
  assert behind(report, sc, "0.8") == (
      "PPO (sync) ends higher (final metric 0.90 vs 0.70, one seed: no interval).")
  assert ratio_cell(report, sc, "hts_ppo", "0.8", "1") == "-"
  # Runs without a host record never pair (two unknown hosts are not one host kind).
  for m in ("hts_ppo", "sync_ppo"):
    _fake_run(tmp_path / "unknown", sc, m, 0, [1.0] * 12, 60)
  unknown = _body(str(tmp_path / "unknown"))["paired"][sc]
  assert unknown["sync_ppo"]["0.8"]["blocks"] == []
  assert unknown["sync_ppo"]["0.8"]["left_out"] == [0] and unknown["sync_ppo"]["0.8"]["could"] == []
