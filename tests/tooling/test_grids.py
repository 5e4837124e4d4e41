"""Every grid (results/<grid>/grid.toml and PROTOCOL.md.in, `hts_jax.results.spec`) by one test
each: its report built from its committed runs is its committed results.json and renders to its
committed tables, blocks and PROTOCOL.md, and its run flags are what its committed runs ran
with."""

import json
import os

import pytest

from hts_jax.results import driver, provenance, publish, render, spec
from tests.support import ROOT

GRIDS = [spec.load(name) for name in spec.names()]
PROVENANCE = ("date", "commit", "machine", "command", "source")


@pytest.mark.parametrize("g", GRIDS, ids=lambda g: g.name)
def test_the_committed_outputs_are_the_grid_rendered_from_its_runs(g):
  """The report from the committed runs (no training) holds the committed results.json's values
  (a field added since it was written aside), and renders to its committed table.md, its blocks
  and its PROTOCOL.md (`python -m experiments.reproduce <grid> --report_only` writes them)."""
  results = os.path.join(ROOT, g.results)
  with open(os.path.join(results, "results.json")) as f:
    committed = json.load(f)
  out = driver.build(g, results)
  out = json.loads(json.dumps(provenance.metrics.json_safe(out)))
  out.update({k: committed[k] for k in PROVENANCE})
  out["runs"] = [{k: r[k] for k in c} for r, c in zip(out["runs"], committed["runs"])]
  assert out == committed
  assert open(os.path.join(results, render.table_file(g))).read() == render.render_markdown(g, out)
  for t in (t for t in g.tables if t.block):
    assert t.block.wrap(render.render_table(g, t, out)) in open(os.path.join(ROOT, t.doc)).read()
  assert open(os.path.join(results, "PROTOCOL.md")).read() == render.protocol_markdown(g)


@pytest.mark.parametrize("g", GRIDS, ids=lambda g: g.name)
def test_the_run_table_has_one_record_shape_for_both_kinds_of_grid(g):
  """Every grid's run table holds each run with every column of both kinds of results.json (a
  paper-style grid's runs also their targets and times to them); results.json keeps its kind's."""
  table = driver.run_table(g, os.path.join(ROOT, g.results))
  both = {*driver.PAPER_COLUMNS, *driver.GRID_COLUMNS}
  if not g.paper:
    both -= {"targets", "required"}
  assert table and all(both <= set(r) for r in table)


@pytest.mark.parametrize("g", GRIDS, ids=lambda g: g.name)
def test_the_committed_runs_ran_with_the_grids_flags(g):
  """Each committed run's config holds every flag the grid gives it (a grid that drifted from its
  runs would re-run them differently)."""
  with open(os.path.join(ROOT, g.results, "results.json")) as f:
    runs = json.load(f)["runs"]
  assert runs
  for r in runs:  # a paper-style grid's runs name their logdir `path`
    logdir = r.get("logdir") or os.path.join(g.results, r["path"])
    with open(os.path.join(ROOT, logdir, "summary.json")) as f:
      config = json.load(f)["config"]
    flat = {**config, **config.get("learner", {})}
    given = g.run_flags(r["task"], r["method"], r["seed"])
    for name, value in given.items():
      if name in flat:
        if isinstance(value, str) and isinstance(flat[name], dict):  # --env_kwargs, as JSON
          value = json.loads(value)
        assert flat[name] == value, (logdir, name, flat[name], value)


def test_aggregates_across_tasks_with_unequal_seed_counts():
  """GFootball's scenarios have 5 and 3 seeds: the probability of improvement per task,
  averaged, and the IQM over every run normalised by the reference's median there; a task
  where a method lacks the reference's seeds is left out of that method's aggregate only."""
  from hts_jax.results import compare  # pylint: disable=import-outside-toplevel
  runs = [{"task": sc, "method": m, "seed": k, "final": v}
          for sc, m, values in (("a", "hts", (2.0, 4.0)), ("a", "sync", (1.0, 3.0)),
                                ("b", "hts", (1.0, 1.0, 1.0)), ("b", "sync", (1.0, 1.0, 1.0)),
                                ("b", "other", (5.0,)), ("a", "other", (1.0, 3.0)))
          for k, v in enumerate(values)]
  got = compare.aggregates(compare.by_seed(runs, "final"), ["hts", "sync", "other"],
                           "sync", "the final metric")
  # a: 2 > 1, 2 < 3, 4 > 1, 4 > 3: 3/4; b: all ties, 1/2; normalised runs 1, 2, 1, 1, 1: IQM 1.
  assert got["methods"]["hts"] == {"tasks": ["a", "b"], "seeds": [2, 3], "iqm_normalised": 1.0,
                                   "probability_of_improvement": 0.625}
  assert got["methods"]["other"]["tasks"] == ["a"] and "sync" not in got["methods"]
  line = compare.aggregates_line(got, str.upper)
  assert line.startswith("Across tasks (Agarwal et al. 2021, rliable's metrics; the final metric, "
                         "normalised by SYNC's median") and "HTS over a, b: IQM 1.00" in line


def test_steps_at_the_first_full_window_are_marked_as_floors():
  ci = {"mean": 80_000, "lo": 80_000, "hi": 80_000, "n": 3, "reached": 3, "runs": 3}
  assert publish.fmt_steps(dict(ci, floors=3)) == "80,000 [80,000, 80,000] (floor)"
  assert publish.fmt_steps(dict(ci, floors=1)) == "80,000 [80,000, 80,000] (1 at the floor)"
  assert publish.fmt_steps(dict(ci, floors=0)) == "80,000 [80,000, 80,000]"


def test_the_rules_changes_block_is_its_json_rendered():
  """docs/results.md's tables of the time ratios each change of the statistics rules moved (issue
  52's, 2026-11-29's pair rule) are their JSON rendered (`python -m results.rules_changes
  --change=...` writes both)."""
  from results import rules_changes  # pylint: disable=import-outside-toplevel
  docs = open(publish.docs_path()).read()
  for name, change in rules_changes.CHANGES.items():
    with open(os.path.join(ROOT, change.path)) as f:
      out = json.load(f)
    assert (out["before"], out["now"]) == (change.before, change.now) and out["rows"]
    assert all(r["before"] != r["now"] for r in out["rows"])
    assert change.block.wrap(rules_changes.render(out, name)) in docs


def test_a_rules_change_rerun_writes_the_same_rows():
  """`rules_changes` reads both sides from git (the change's `before` and `now` commits), so a
  re-run after more runs were committed writes the committed table again; skipped in a clone that
  lacks those commits (a shallow one)."""
  import subprocess  # pylint: disable=import-outside-toplevel
  from results import rules_changes  # pylint: disable=import-outside-toplevel
  for change in rules_changes.CHANGES.values():
    try:  # what the script itself reports as a shallow clone
      rows = rules_changes.changes(change.before, change.now, change.record_grids)
    except subprocess.CalledProcessError:
      pytest.skip(f"this clone lacks {change.before} or {change.now}")
    with open(os.path.join(ROOT, change.path)) as f:
      assert json.loads(json.dumps(rows)) == json.load(f)["rows"], change.path


def test_a_new_grid_is_a_toml_and_its_protocol_template(tmp_path):
  """Two files make a grid: its methods' flags over its task's, the seed and budget, and
  PROTOCOL.md with the tables rendered from the TOML; a key the loader does not know fails."""
  folder = tmp_path / "toy"
  folder.mkdir()
  (folder / "grid.toml").write_text(
      'title = "Toy"\nreference = "sync"\n'
      '[[methods]]\nname = "sync"\nflags = {mode = "sync"}\nlabel = "synchronous"\n'
      '[[methods]]\nname = "hts"\nflags = {mode = "hts"}\nlabel = "HTS"\n'
      '[[tasks]]\nenv = "CartPole-v1"\nflags = {preset = "cartpole_ppo"}\nbudget = 4_000\n'
      'seeds = [0, 1]\neval_every = 1_000\ntarget = 475.0\n'
      '[[tables]]\nblock = "toy-results"\nnote = "Toy."\n'
      'columns = [{header = "seeds", kind = "count"}]\n')
  (folder / "PROTOCOL.md.in").write_text("# Toy\n{{methods}}\n{{tasks}}\nagainst `{{reference}}`\n")
  g = spec.load("toy", str(tmp_path))
  assert g.run_flags(None, "hts", 1) == {"preset": "cartpole_ppo", "mode": "hts", "seed": 1,
                                         "total_steps": 4_000}
  protocol = render.protocol_markdown(g)
  assert "| `hts`  | `--mode=hts`" in protocol and "475 (running average of 10)" in protocol
  assert protocol.endswith("against `sync`\n") and g.tables[0].block.grid == "toy"
  with open(folder / "grid.toml", "a") as f:
    f.write('\n[[methods]]\nname = "x"\nflags = {}\nlabel = "x"\ncolour = "red"\n')
  with pytest.raises(TypeError, match="colour"):
    spec.load("toy", str(tmp_path))
