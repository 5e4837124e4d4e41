"""README's result blocks are their committed JSON rendered (the MuJoCo and memory tables)."""

import os

import pytest

from tests.support import ROOT


def test_the_mujoco_update_statistics_render():
  """The PPO update over the first quarter of the budget, per task and method (docs' column and
  README's clipped-share line): per seed, [min, max] over the seeds whose metrics.csv logged it."""
  from hts_jax.results import named, spec  # pylint: disable=import-outside-toplevel
  runs = [{"early_update": {"window_steps": 250_000, "clip_frac": c, "approx_kl": 0.01,
                            "entropy": 3.0}} for c in (0.2, 0.3)] + [{"early_update": None}]
  early = named.early(runs)
  assert early["window_steps"] == 250_000 and early["clip_frac"]["n"] == 2
  assert early["clip_frac"]["mean"] == pytest.approx(0.25)
  assert named.early([{"early_update": None}]) is None
  mujoco = spec.load("mujoco")
  update = next(c for c in mujoco.tables[0].columns if c.kind == "early_update")
  assert update.cell({"early_update": early}) == (
      "clipped 0.250 [0.200, 0.300] (min-max); KL 0.0100 [0.0100, 0.0100] (min-max); entropy "
      "3.00 [3.00, 3.00] (min-max)")
  out = {"grid": "mujoco", "tasks": {"Hopper-v5": {"methods": {"sync_ppo": {"early_update": early},
                                             "hts_ppo": {"early_update": None}}}}}
  assert named.words("mujoco", "clipped_share", s=named.clip_shares(mujoco.ctx, out)) == (
      "Share of samples with a clipped ratio over the first quarter of the budget (mean over "
      "seeds; sync_ppo / hts_ppo): Hopper-v5 0.25 / -.")


def _reproduce(*flags):
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  return subprocess.run([sys.executable, "-m", "experiments.reproduce", *flags], cwd=ROOT,
                        capture_output=True, text=True, timeout=600)


def test_a_grid_in_another_folder_leaves_readme_and_docs_alone_and_names_its_source(tmp_path):
  """`hts-reproduce <grid> --results=<elsewhere>` replaced README's published
  block with the toy grid's, and the block still named `results/<grid>/results.json`."""
  import shutil  # pylint: disable=import-outside-toplevel
  docs = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "results.md")]
  before = [open(p).read() for p in docs]
  shutil.copytree(os.path.join(ROOT, "results", "memory", "runs"), tmp_path / "runs")
  shutil.rmtree(tmp_path / "runs" / "hts_lstm")  # another grid than the published one
  try:
    proc = _reproduce("memory", f"--results={tmp_path}", "--report_only")
    after = [open(p).read() for p in docs]
  finally:  # the repository's files as they were, whatever happened
    for p, text in zip(docs, before):
      with open(p, "w") as f:
        f.write(text)
  assert proc.returncode == 0, proc.stderr
  assert after == before
  assert (f"note: not the protocol's grid (--results={tmp_path}): README.md and docs/ are left "
          "as they are (--readme writes them, naming this grid's results.json)"
          ) in proc.stderr
  table = (tmp_path / "table.md").read_text()
  assert f"Source: `{tmp_path}/results.json`" in table and "results/memory/results.json" not in table
