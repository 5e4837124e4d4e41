r"""What the statistics rules (issue 52) changed in the committed grids' time ratios: each paired
ratio before the rules (at `--before`, the commit before they were applied: arithmetic means over
the blocks where both runs reached the target, shared machines counted) against the one committed
now (geometric means over the blocks where neither run shared the machine, a miss censored at its
run's end and the ratio marked as a bound). Only the cells that moved are listed. Writes
results/rules_changes.json and docs/results.md's `rules-changes` block from it.

  python -m experiments.rules_changes              # needs the git history (not a shallow clone)
"""

import json
import subprocess
import sys

from absl import app
from absl import flags

from hts_jax.analysis import stats
from hts_jax.cli import common as cli
from hts_jax.results import memory, provenance, publish

flags.DEFINE_string("before", "466d6af^", "The commit before the rules were applied.")
FLAGS = flags.FLAGS

PATH = "results/rules_changes.json"
BLOCK = publish.Block("rules-changes", "", by="python -m experiments.rules_changes")
PAPER_GRIDS = ("gfootball", "minatar", "atari")  # results.json's `paired`: task, method, target
RECORD_GRIDS = ("memory",)  # results.json's `table` cells' `time_ratio` (one target)


def _load(commit, grid):
  path = f"results/{grid}/results.json"
  text = (open(provenance.ROOT + "/" + path).read() if commit is None else subprocess.run(
      ["git", "show", f"{commit}:{path}"], cwd=provenance.ROOT, capture_output=True, text=True,
      check=True).stdout)
  return json.loads(text)


def _ratio(cell):
  """(mean, blocks, bound) of a paired ratio in either format; None where there is none."""
  if not cell:
    return None
  mean = cell.get("mean", cell.get("geomean"))
  return None if mean is None else (mean, cell.get("n", 0), cell.get("bound"))


def changes(before):
  """Every time ratio whose value, block count or bound moved between `before` and now."""
  rows = []
  for grid in PAPER_GRIDS + RECORD_GRIDS:
    old, new = _load(before, grid), _load(None, grid)
    if grid in PAPER_GRIDS:  # the method's time over the reference's (HTS's)
      ratio = "{method} / " + new["reference"]
      cells = [(task, m, t, c.get(m, {}).get(t), cell)
               for task, ms in new["paired"].items() for m, ts in ms.items()
               for t, cell in ts.items() for c in [old["paired"].get(task, {})]]
    else:
      ratio = memory.GRID.reference + " / {method}"  # the reference's time over the method's
      cells = [(task, m, "475", old["table"].get(task, {}).get(m, {}).get("time_ratio"),
                c.get("time_ratio")) for task, ms in new["table"].items() for m, c in ms.items()]
    for task, method, target, was, now in cells:
      a, b = _ratio(was), _ratio(now)
      if a != b and (a or b):
        rows.append({"grid": grid, "task": task, "ratio": ratio.format(method=method),
                     "target": target, "before": a, "now": b})
  return rows


def _cell(r):
  if r is None:
    return "-"
  mean, n, bound = r
  return stats.ratio_cell({"mean": mean, "n": n, "bound": bound})


def render(out):
  rows = [[r["grid"], r["task"], r["ratio"], r["target"],
           "-" if r["before"] is None else f"{r['before'][0]:.2f}x (n={r['before'][1]})",
           _cell(r["now"])] for r in out["rows"]]
  return (f"The time ratios the statistics rules moved (`hts_jax/analysis/stats.py`), before "
          f"them (`{out['before']}`: arithmetic "
          "means over the blocks where both runs reached the target, shared machines counted) "
          "and now (geometric means over the blocks where neither run shared the machine, a "
          "miss counted at its run's end and the ratio marked a bound). Source: "
          f"`{PATH}`, {out['date']}, `python -m experiments.rules_changes`.\n\n"
          + stats.markdown(["grid", "task", "time ratio", "target", "before", "now"], rows))


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    rows = changes(FLAGS.before)
  except subprocess.CalledProcessError as e:
    cli.fail(f"git show {FLAGS.before}: {e.stderr.strip() or e} (a shallow clone lacks it)")
  out = provenance.save(provenance.ROOT + "/" + PATH, {"before": FLAGS.before, "rows": rows})
  if not BLOCK.write(publish.docs_path(), render(out)):
    print(f"warning: docs/results.md has no {BLOCK.begin!r} block", file=sys.stderr)
  print(render(out))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
