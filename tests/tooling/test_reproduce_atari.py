"""`hts-reproduce atari` (results/atari/grid.toml): every run is a valid launcher config at the
protocol's budget (envpool Pong, only the mode differs), the targets are the protocol's fixed
scores, and the tables render from the JSON (golden values by hand). The grid machinery it shares
(paired blocks, resume, the launch path) is run for real by the MinAtar grid's tiny-grid test."""

import json
import os
import re
import subprocess
import sys

import pytest

from hts_jax.results import compare, driver, grid, paper_report, spec
from tests.support import ROOT
from tests.support.cli import launcher_configs

GRID = spec.load("atari")
SPEC = GRID.paper.spec


def flat(text: str) -> str:
  """A rendered table with tabulate's padding collapsed to one space."""
  return re.sub(r" +", " ", re.sub(r"-{3,}", "---", text))


def _report(tmp_path, docs=False):
  """The report into tmp_path, the blocks into its README.md and docs/ where `docs`."""
  return driver.report(GRID, str(tmp_path), str(tmp_path) if docs else None, 500, {})


def test_every_method_is_a_valid_launcher_config_at_the_protocols_budget():
  steps = GRID.task("Pong").budget
  hts, a2c = launcher_configs([GRID.run_flags("Pong", m, 1) for m in ("hts_a2c", "a2c")])
  for c in (hts, a2c):
    assert c["env"] == "atari:Pong" and c["envpool"] and c["network"] == "cnn"
    assert (c["num_envs"], c["num_actors"], c["num_executors"], c["alpha"]) == (16, 2, 2, 5)
    assert (c["seed"], c["total_steps"], c["eval_every"], c["eval_episodes"]) == \
        (1, steps, steps // 40, 10)
    assert c["learner"]["lr_decay_updates"] == 0  # Kostrikov's constant rate
  assert (hts["mode"], a2c["mode"]) == ("hts", "sync")
  assert hts["learner"]["correction"] == "delayed"
  # Only the runtime and the correction differ.
  strip = lambda c: {k: v for k, v in c.items() if k not in ("mode", "learner")}  # noqa: E731
  assert strip(hts) == strip(a2c)
  assert {k: v for k, v in hts["learner"].items() if k != "correction"} == \
      {k: v for k, v in a2c["learner"].items() if k != "correction"}


def _fake(results, method, seed, scores, dt_s):
  path = grid.run_dir(str(results), "Pong", method, seed)
  os.makedirs(path)
  evals = [{"env_steps": 1000 * (k + 1), "wall_time_s": dt_s * (k + 1), "mean_return": x,
            "returns": [x] * 10} for k, x in enumerate(scores)]
  with open(os.path.join(path, "summary.json"), "w") as f:
    json.dump({"seed": seed, "env": "atari:Pong", "mode": "hts", "env_steps":
               1000 * len(scores), "wall_time_s": dt_s * len(scores), "sps": 100.0,
               "updates": 3, "param_sha256": f"{method}{seed}", "eval": evals,
               "episode_returns": {}, "idle": {},
               "host": {"cpu_model": "Test CPU", "usable_cores": 2}}, f)


def test_targets_are_the_protocols_scores_and_the_tables_render(tmp_path):
  for seed in (0, 1):
    _fake(tmp_path, "a2c", seed, [-21.0] * 2 + [18.0] * 10, 60)
    _fake(tmp_path, "hts_a2c", seed, [-5.0] * 2 + [18.0] * 10, 30)
  runs = driver.run_table(GRID, str(tmp_path))
  assert runs[0]["targets"] == {"0": 0.0, "15": 15.0}
  summary = paper_report.summarize(runs, SPEC, resamples=500)["Pong"]
  # HTS-A2C's first full window (10 evaluations): (2 x -5 + 8 x 18) / 10 = 13.4 < 15; the next
  # one, 15.7: at 11 evaluations, minute 5.5 (11 x 30 s), 11,000 env steps.
  hts = summary["methods"]["hts_a2c"]
  assert hts["required_min"]["15"]["mean"] == pytest.approx(5.5)
  assert hts["required_steps"]["15"]["mean"] == pytest.approx(11_000)
  # A2C: (2 x -21 + 8 x 18) / 10 = 10.2, then 14.1, then 18: minute 12 (12 x 60 s); ratio 12/5.5.
  paired = compare.paired_ratios(runs, SPEC)["Pong"]
  assert paired["a2c"]["15"]["mean"] == pytest.approx(12 / 5.5)
  # The final time metric's clock is A2C's wall time: HTS-A2C's final metric by then is its own.
  assert hts["final_time"]["mean"] == pytest.approx(18.0)
  docs = tmp_path / "docs" / "results.md"  # both blocks: README shows the headline
  docs.parent.mkdir()
  docs.write_text("".join(f"{t.block.begin}\n{t.block.end}\n" for t in GRID.tables))
  readme = docs
  out = _report(tmp_path, docs=True)
  tables = flat((tmp_path / "tables.md").read_text())
  # Score 0: both at the first full window (evaluation 10: a floor), minutes 5 and 10.
  assert "| env steps to 0 / 15 | 10,000 [10,000, 10,000] (floor) / 11,000 [11,000, 11,000] | " \
      "10,000 [10,000, 10,000] (floor) / 12,000 [12,000, 12,000] |" in tables
  assert "| time to 0 / 15 over HTS-A2C's in the block | 1 (reference) | 2.00x [2.00, 2.00] " \
      "(n=2) / 2.18x [2.18, 2.18] (n=2) |" in tables
  assert "| Pong (12,000, 2) | 18.00 [18.00, 18.00]; 11,000 [11,000, 11,000] | 18.00 " \
      "[18.00, 18.00]; 12,000 [12,000, 12,000] |" in flat(readme.read_text())
  assert [os.path.basename(p) for p in out["plots"]] == ["return_vs_env_steps.png",
                                                          "return_vs_wall_time.png"]
  # 2 of the protocol's 3 seeds: both renderings say so.
  assert "**Partial:** Pong has 2 of the protocol's 3 seeds so far." in tables
  assert "**Partial:** Pong has 2 of the protocol's 3 seeds so far." in readme.read_text()


def test_a_game_with_one_seed_is_labelled_as_such(tmp_path):
  _fake(tmp_path, "a2c", 0, [0.0] * 12, 60)
  _fake(tmp_path, "hts_a2c", 0, [0.0] * 12, 30)
  readme = tmp_path / "docs" / "results.md"  # the summary block's page
  readme.parent.mkdir()
  readme.write_text(f"{GRID.tables[1].block.begin}\n{GRID.tables[1].block.end}\n")
  _report(tmp_path, docs=True)
  label = ("**Partial:** Pong has 1 of the protocol's 3 seeds so far (one run per method: no "
           "interval, one block's time ratio).")
  assert label in readme.read_text() and label in (tmp_path / "tables.md").read_text()
  for seed in (1, 2):
    _fake(tmp_path, "a2c", seed, [0.0] * 12, 60)
    _fake(tmp_path, "hts_a2c", seed, [0.0] * 12, 30)
  _report(tmp_path, docs=True)
  assert "Partial" not in readme.read_text() + (tmp_path / "tables.md").read_text()
  # A method behind the other: each one's count.
  os.remove(os.path.join(grid.run_dir(str(tmp_path), "Pong", "a2c", 2), "summary.json"))
  _report(tmp_path, docs=True)
  assert ("**Partial:** Pong has 3 of `hts_a2c`, 2 of `a2c` of the protocol's 3 seeds so far."
          in readme.read_text())


def test_bad_options_are_one_line_errors():
  for args, message in ((["--games=Breakout"], "error: --games: unknown ['Breakout']; the "
                         "protocol's tasks are ['Pong']"),
                        (["--seeds=x"], "error: --seeds: invalid literal for int() with base 10: "
                         "'x'")):
    proc = subprocess.run([sys.executable, "-m", "experiments.reproduce", "atari", *args,
                           "--dry_run"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [message]
