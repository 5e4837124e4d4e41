"""The benchmark figures (docs/benchmarks.md's blocks; README's headline reads them too) are
results/benchmarks/*.json rendered by `hts-reproduce benchmarks` (hts_jax/results/benchmarks.py),
never typed: the blocks and tables.md must match their JSON."""

import os

from hts_jax.results import benchmarks as rr
from hts_jax.results import provenance, publish
from tests.support import ROOT


SPEEDUP = {
    "date": "2026-11-25", "commit": "0123456789abcdef+dirty", "command": "python -m x --y",
    "machine": {"cores": 2, "cpu": "", "platform": "Linux"},
    "settings": {"hts_alpha": 160, "repeats": 3},
    "rows": [{"grid": "variance", "num_envs": 16, "step_time_mean_s": 0.004, "var_over_mean2": v,
              "sps_hts": h, "sps_sync": s, "speedup": round(h / s, 2), "predicted_speedup": p}
             for v, h, s, p in ((10.0, 5300.4, 1000.0, 5.98), (0.1, 1620.0, 1000.0, 1.56))]
          + [{"grid": "envs", "var_over_mean2": 10.0}],
}


def test_the_docs_blocks_and_tables_md_are_the_committed_json_rendered():
  markdown = rr.render_markdown()
  with open(os.path.join(ROOT, "results", "benchmarks", "tables.md")) as f:
    assert f.read() == markdown
  with open(os.path.join(ROOT, "docs", "benchmarks.md")) as f:
    docs = f.read()
  assert rr.BLOCK.wrap(markdown) in docs, "run python -m experiments.reproduce benchmarks"
  assert rr.DOCS_BLOCK.wrap(rr.render_docs()) in docs
  with open(os.path.join(ROOT, "README.md")) as f:  # README keeps the headline only
    assert rr.BLOCK.begin not in f.read()
  for name in rr.SOURCES:  # every source is committed and carries its provenance
    data = publish.read_json(rr.RESULTS, name)
    assert data is not None, name
    assert {"date", "commit", "machine", "command", "rows"} <= set(data)


def test_speedup_rows_golden():
  out = rr.render_part("speedup.json", SPEEDUP).splitlines()
  cells = [[c.strip() for c in line.strip("|").split("|")] for line in out[-2:]]
  assert cells == [["0.1", "1,620", "1,000", "1.62x", "1.56x"],
                   ["10", "5,300", "1,000", "5.30x", "5.98x"]]  # variance grid only, sorted
  assert "commit 0123456789ab+dirty, 2 cores (Linux). Command: `python -m x --y`" in out[0]


def test_cleanrl_rows_golden():
  data = {"env": "Pong-v5", "steps": 6144, "repeats": 2, "warmup_iterations": 2,
          "cleanrl_script_sha256": "ab" * 32, "median_sps": {"cleanrl": 100.0, "hts_jax_hts": 150.0},
          "over_cleanrl": {"hts_jax_hts": 1.5}, "patches": [{"name": "no tyro", "why": "w"}],
          "runs": [{"program": p, "startup_s": s} for p, s in (
              ("cleanrl", 40.0), ("cleanrl", 50.0), ("hts_jax_hts", 20.0), ("hts_jax_hts", 30.0))],
          "date": "2026-11-28", "commit": "0123456789abcdef", "command": "python -m x",
          "machine": {"cores": 2, "cpu": "", "platform": "Linux"}}
  out = rr.render_part("cleanrl.json", data).splitlines()
  cells = [[c.strip() for c in line.strip("|").split("|")] for line in out[-2:]]
  assert cells == [["cleanrl", "100", "1", "45"], ["hts_jax_hts", "150", "1.50x", "25"]]
  assert "*no tyro* (w)" in out[0] and "sha256 `abababababab`" in out[0]


def test_replace_block_keeps_the_rest_and_refuses_a_missing_block():
  b = rr.BLOCK
  text = f"a\n{b.begin}\nold\n{b.end}\nb\n"
  assert b.into(text, "new\n") == f"a\n{b.begin}\nnew\n{b.end}\nb\n"
  assert b.into("no block", "new\n") is None


def test_provenance_names_the_command_as_a_module():
  stamp = provenance.stamp([os.path.join(ROOT, "experiments", "bench_sampler.py"), "--repeats=2"])
  assert stamp["command"] == "python -m experiments.bench_sampler --repeats=2"
  assert stamp["machine"]["cores"] == os.cpu_count() and len(stamp["commit"]) >= 7
  # The dispatcher from a clone, and the installed console command.
  assert provenance.command_line([os.path.join(ROOT, "hts_jax", "cli", "reproduce.py"), "mujoco",
                                  "--report_only"]) == \
      "python -m hts_jax.cli.reproduce mujoco --report_only"
  assert provenance.command_line(["/usr/bin/hts-reproduce", "memory"]) == "hts-reproduce memory"
