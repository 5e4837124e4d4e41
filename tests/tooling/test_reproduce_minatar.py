"""`hts-reproduce minatar` (results/minatar/grid.toml): every run is a valid launcher config at
the protocol's budget, the blocks hold Table A1's corrections on its games only, the targets are
40% / 80% of A2C's own final metric, and the tables render from the JSON (golden values by hand)."""

import json
import os
import re
import subprocess
import sys

import pytest

from hts_jax.results import compare, driver, grid, paper_report, spec
from tests.support import ROOT
from tests.support.cli import launcher_configs

GRID = spec.load("minatar")
SPEC = GRID.paper.spec
NAMES = [m.name for m in GRID.methods]


def flat(text: str) -> str:
  """A rendered table with tabulate's padding collapsed to one space."""
  return re.sub(r" +", " ", re.sub(r"-{3,}", "---", text))


def test_every_method_is_a_valid_launcher_config_at_the_protocols_budget():
  steps = GRID.task("Seaquest").budget
  cfgs = dict(zip(NAMES, launcher_configs([GRID.run_flags("Seaquest", m, 2) for m in NAMES])))
  for c in cfgs.values():
    assert c["env"] == "minatar:Seaquest" and c["network"] == "minatar"
    assert (c["seed"], c["total_steps"], c["eval_every"], c["eval_episodes"]) == \
        (2, steps, steps // 50, 10)
  assert [cfgs[m]["mode"] for m in NAMES] == ["hts", "sync", "async", "hts", "hts"]
  assert [cfgs[m]["learner"]["correction"] for m in ("hts_a2c", "hts_a2c_tis", "hts_a2c_none")] \
      == ["delayed", "truncated_is", "none"]
  # A shorter budget keeps the 50 evaluations.
  assert GRID.run_flags("Breakout", "a2c", 0, 4000)["eval_every"] == 80
  # Only the runtime and the correction differ between the A2C methods.
  strip = lambda c: {k: v for k, v in c.items() if k not in ("mode", "learner")}  # noqa: E731
  assert strip(cfgs["hts_a2c"]) == strip(cfgs["a2c"]) == strip(cfgs["hts_a2c_none"])
  # A2C's rate is constant; IMPALA's decays over the presets' 5M steps, not over the run's 2M.
  assert cfgs["a2c"]["learner"]["lr_decay_updates"] == 0
  impala = cfgs["impala"]
  per_update = impala["alpha"] * impala["async_batch_unrolls"]
  assert impala["learner"]["lr_decay_updates"] == -(-5_000_000 // per_update)


def test_blocks_add_table_a1s_corrections_on_its_games_only():
  """Table A1's methods run in Breakout's and Seaquest's blocks only (`Method.tasks`)."""
  proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", "minatar", "--dry_run",
                         "--games=Breakout,SpaceInvaders", "--seeds=0", "--results=/nonexistent",
                         "--host_probe_s=0"],
                        cwd=ROOT, capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr
  runs = [line for line in proc.stdout.splitlines() if line.startswith("$ python")]
  assert sum("minatar:Breakout" in r for r in runs) == 5
  assert sum("minatar:SpaceInvaders" in r for r in runs) == 3
  assert not any("SpaceInvaders" in r and "--correction=truncated_is" in r for r in runs)
  # One estimate, of all of them, after the commands (it was printed after each run).
  assert [line for line in proc.stdout.splitlines() if "runs to do" in line] == [
      proc.stdout.splitlines()[-1]]
  assert proc.stdout.splitlines()[-1].startswith("8 of 8 runs to do")


def _fake(results, game, method, seed, scores, dt_s):
  path = grid.run_dir(str(results), game, method, seed)
  os.makedirs(path)
  evals = [{"env_steps": 1000 * (k + 1), "wall_time_s": dt_s * (k + 1), "mean_return": x,
            "returns": [x] * 10} for k, x in enumerate(scores)]
  with open(os.path.join(path, "summary.json"), "w") as f:
    json.dump({"seed": seed, "env": f"minatar:{game}", "mode": "hts", "env_steps":
               1000 * len(scores), "wall_time_s": dt_s * len(scores), "sps": 100.0,
               "updates": 3, "param_sha256": f"{method}{seed}", "eval": evals,
               "episode_returns": {}, "idle": {},
               "host": {"cpu_model": "Test CPU", "usable_cores": 2}}, f)


def test_targets_come_from_a2cs_final_metric_and_the_tables_render(tmp_path):
  # A2C's final metric (last 10 evaluations) is 10 in both seeds: targets 4 and 8.
  for seed in (0, 1):
    _fake(tmp_path, "Breakout", "a2c", seed, [0.0] * 2 + [10.0] * 10, 60)
    _fake(tmp_path, "Breakout", "hts_a2c", seed, [5.0] * 2 + [10.0] * 10, 30)
  _fake(tmp_path, "Breakout", "impala", 0, [1.0] * 12, 45)
  runs = driver.run_table(GRID, str(tmp_path))
  assert runs[0]["targets"] == {"40%": 4.0, "80%": 8.0}
  summary = paper_report.summarize(runs, SPEC, resamples=500)["Breakout"]
  # HTS-A2C: the first full window (10 evaluations) averages 9 >= 8: minute 5 (10 x 30 s).
  hts = summary["methods"]["hts_a2c"]
  assert hts["required_min"]["80%"]["mean"] == pytest.approx(5.0)
  # A2C's first full window averages 8.0: minute 10; the paired ratio A2C / HTS-A2C is 2.
  paired = compare.paired_ratios(runs, SPEC)["Breakout"]
  assert paired["a2c"]["80%"]["mean"] == pytest.approx(2.0)
  # IMPALA never reached it: it counts at its run's end (12 x 45 s), a lower bound of 9 / 5 min.
  assert paired["impala"]["80%"]["mean"] == pytest.approx(1.8)
  assert paired["impala"]["80%"]["bound"] == "lower"
  readme, docs = tmp_path / "README.md", tmp_path / "docs" / "results.md"
  docs.parent.mkdir()
  readme.write_text(f"{GRID.tables[1].block.begin}\n{GRID.tables[1].block.end}\n")
  docs.write_text(f"{GRID.tables[0].block.begin}\n{GRID.tables[0].block.end}\n")
  out = driver.report(GRID, str(tmp_path), str(tmp_path), 500, {})
  tables = flat((tmp_path / "tables.md").read_text())
  assert "| Breakout (12,000) | 1 (reference) | 2.00x [2.00, 2.00] (n=2) / 2.00x [2.00, 2.00] " \
      "(n=2) | ≥1.80x (n=1) / ≥1.80x (n=1) |" in tables
  assert "Targets (40% / 80% of A2C's final metric in this grid): Breakout 4.00 / 8.00." in tables
  assert "(paper: 415)" in tables  # Table A1's delayed gradient on Breakout
  assert (tmp_path / "PROTOCOL.md").read_text().startswith("# HTS-RL's Atari tables on MinAtar")
  assert [os.path.basename(p) for p in out["plots"]] == ["return_vs_env_steps.png",
                                                          "return_vs_wall_time.png"]


def test_bad_options_are_one_line_errors():
  for args, message in ((["--games=Pong"], "error: --games: unknown ['Pong']; the protocol's "
                         "tasks are ['Breakout', 'Seaquest', 'SpaceInvaders', 'Asterix', "
                         "'Freeway']"),
                        (["--methods=dqn"], "error: --methods: unknown ['dqn']; expected some of "
                         "['a2c', 'hts_a2c', 'hts_a2c_none', 'hts_a2c_tis', 'impala']")):
    proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", "minatar", *args,
                           "--dry_run"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [message]


@pytest.mark.slow
def test_a_tiny_real_grid_runs_every_method_and_reports(tmp_path):
  """One real block on Breakout (every method, Table A1's too) through the launcher at a tiny
  budget, then the report; a second call runs nothing."""
  cmd = [sys.executable, "-m", "experiments.reproduce", "minatar", f"--results={tmp_path}",
         "--games=Breakout", "--seeds=0", "--steps=4000", "--noreadme", "--resamples=100",
         "--host_probe_s=0"]
  first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200)
  assert first.returncode == 0, first.stderr[-2000:]
  assert first.stdout.count("$ python") == 5
  with open(tmp_path / "results.json") as f:
    report = json.load(f)
  assert sorted(r["method"] for r in report["runs"]) == sorted(NAMES)
  # An evaluation every 80 steps at segment boundaries: 50 for the A2C methods; IMPALA evaluates
  # at its updates' boundaries (640 env steps each).
  assert all(r["env_steps"] >= 4000 and len(r["evals"]) >= (5 if r["method"] == "impala" else 50)
             for r in report["runs"])
  assert report["protocol"]["deviations"] == {"budget": 4000}
  again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert again.returncode == 0 and again.stdout.count("done before") == 5
