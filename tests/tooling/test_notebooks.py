"""Both ablation notebooks execute end to end (tiny settings), through a real Jupyter kernel."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support import ROOT



@pytest.mark.slow  # executes whole notebooks (tooling); CI runs them
@pytest.mark.parametrize("name,expect", [
    ("alpha_sweep", "ok: 8 runs ran their budget; policy lag as asked"),
    ("actor_sweep", "identical across [1, 2] actors for every seed and lag"),
])
def test_notebook_executes(name, expect, tmp_path, monkeypatch):
  monkeypatch.setenv("HTS_NOTEBOOK_TINY", "1")
  monkeypatch.setenv("HTS_NOTEBOOK_LOGROOT", str(tmp_path / "runs"))
  monkeypatch.delenv("XLA_FLAGS", raising=False)  # the runs choose their own devices
  nb = nbformat.read(os.path.join(ROOT, "experiments", "notebooks", f"{name}.ipynb"), as_version=4)
  NotebookClient(nb, timeout=600, kernel_name="python3",
                 resources={"metadata": {"path": os.path.join(ROOT, "experiments", "notebooks")}}
                 ).execute()
  text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []))
  assert expect in text, text[-2000:]
  assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []))
  runs = sorted(os.listdir(tmp_path / "runs"))
  assert len(runs) == 8 and "policy_lag=0,seed=1" in runs[1], runs  # 2 settings x 2 lags x 2 seeds
