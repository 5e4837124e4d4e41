"""Medians of the one-sampler before/after runs beside this file (`run.sh` wrote them), by case
and mode, with their after/before ratio and each side's [min, max]; writes summary.json.

  python results/benchmarks/one_sampler/summary.py
"""

import collections
import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
runs = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(HERE, "*_*.json"))):
  side = os.path.basename(path).split("_", 1)[0]
  if side not in ("before", "after"):
    continue
  with open(path) as f:
    saved = json.load(f)
  for row in saved["rows"]:
    for mode in ("hts", "hts_lag0", "sync"):
      runs[(row["case"], mode, side, saved["commit"][:12])].append(row[f"sps_{mode}"])
out = collections.defaultdict(dict)
for (case, mode, side, commit), sps in sorted(runs.items()):
  out[f"{case} {mode}"][side] = {"commit": commit, "median_sps": statistics.median(sps),
                                 "min_max": [min(sps), max(sps)], "n": len(sps)}
for cell in out.values():
  cell["after_over_before"] = round(cell["after"]["median_sps"] / cell["before"]["median_sps"], 3)
with open(os.path.join(HERE, "summary.json"), "w") as f:
  json.dump(out, f, indent=1)
  f.write("\n")
for name, cell in out.items():
  print(f"{name:26s} {cell['after_over_before']:.3f}  before {cell['before']['min_max']}  "
        f"after {cell['after']['min_max']}")
