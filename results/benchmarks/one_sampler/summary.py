"""Medians of the one-sampler before/after runs beside this file (`run.sh` wrote them), by case
and mode, with their after/before ratio and each side's [min, max]; and, by case and side, the
ratios each run measured side by side (HTS over sync, lag 0 over sync) and the stage that bounds
them; writes summary.json.

  python results/benchmarks/one_sampler/summary.py
"""

import collections
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
runs = collections.defaultdict(list)
side_by_side = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sorted(glob.glob(os.path.join(HERE, "*_*.json"))):
  side = os.path.basename(path).split("_", 1)[0]
  if side not in ("before", "after"):
    continue
  with open(path) as f:
    saved = json.load(f)
  for row in saved["rows"]:
    for mode in ("hts", "hts_lag0", "sync"):
      runs[(row["case"], mode, side, saved["commit"][:12])].append(row[f"sps_{mode}"])
      side_by_side[(row["case"], side)][f"bound_{mode}"].append(row[mode]["shares"]["bound"])
    for ratio in ("hts_over_sync", "lag0_over_sync"):
      side_by_side[(row["case"], side)][ratio].append(row[ratio])
out = collections.defaultdict(dict)
for (case, mode, side, commit), sps in sorted(runs.items()):
  out[f"{case} {mode}"][side] = {"commit": commit, "median_sps": statistics.median(sps),
                                 "min_max": [min(sps), max(sps)], "n": len(sps)}
for cell in out.values():
  cell["after_over_before"] = round(cell["after"]["median_sps"] / cell["before"]["median_sps"], 3)
for (case, side), measured in sorted(side_by_side.items()):
  out[f"{case} side by side"][side] = {
      name: sorted(set(v)) if name.startswith("bound_") else
      {"median": statistics.median(v), "min_max": [min(v), max(v)], "n": len(v)}
      for name, v in measured.items()}
with open(os.path.join(HERE, "summary.json"), "w") as f:
  json.dump(out, f, indent=1)
  f.write("\n")
for name, cell in out.items():
  if "after_over_before" not in cell:
    continue
  print(f"{name:26s} {cell['after_over_before']:.3f}  before {cell['before']['min_max']}  "
        f"after {cell['after']['min_max']}")
