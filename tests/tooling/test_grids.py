"""Every grid record (`hts_jax.results.record`) by one test each: its committed results.json
rendered is its table.md and README block, its PROTOCOL.md is the record rendered, and its run
flags are what its committed runs ran with."""

import functools
import json
import os

import pytest

from hts_jax.results import memory, mujoco, publish, record
from tests.support import ROOT

GRIDS = [memory.GRID, mujoco.GRID]


@pytest.mark.parametrize("g", GRIDS, ids=lambda g: g.name)
def test_the_committed_report_is_its_json_rendered(g):
  paths = {"readme": publish.readme_path(), "docs": publish.docs_path()}
  targets = [(paths[t.doc], t.block, functools.partial(record.render_table, g, t))
             for t in g.tables if t.block]
  assert publish.stale(os.path.join(ROOT, g.results), functools.partial(record.render_markdown, g),
                       targets) == []


@pytest.mark.parametrize("g", GRIDS, ids=lambda g: g.name)
def test_protocol_md_is_the_record_rendered(g):
  assert not record.protocol_stale(g), f"python -m experiments.reproduce {g.name} --report_only"


@pytest.mark.parametrize("g", GRIDS, ids=lambda g: g.name)
def test_the_committed_runs_ran_with_the_records_flags(g):
  """Each committed run's config holds every flag the record gives it (a record that drifted from
  its runs would re-run them differently)."""
  with open(os.path.join(ROOT, g.results, "results.json")) as f:
    runs = json.load(f)["runs"]
  assert runs
  for r in runs:
    with open(os.path.join(ROOT, r["logdir"], "summary.json")) as f:
      config = json.load(f)["config"]
    flat = {**config, **config.get("learner", {})}
    given = g.run_flags(r["task"], r["method"], r["seed"])
    for name, value in given.items():
      if name in flat:
        assert flat[name] == value, (r["logdir"], name)
