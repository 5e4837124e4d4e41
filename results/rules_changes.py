r"""What a change of the statistics rules (`hts_jax/analysis/stats.py`) moved in the committed
grids' paired time ratios, from the JSON before (at the change's `before` commit) and now; only
the cells that moved are listed. `--change`:

- `rules` (2026-11-27): before them, arithmetic means over the blocks where both runs
  reached the target, shared machines counted; after, geometric means over the blocks where
  neither run shared the machine, a miss censored at its run's end and the ratio marked a bound.
- `pairs` (2026-11-29): a paired ratio's block counted where neither run was flagged by its host
  kind's median calibration; now where neither run was marked and the two runs' calibrations are
  within 1.5x of each other. Rendered before any new run was added.
- `marks` (2026-12-05): not a rule, the rule applied: two runs whose commit messages disclosed
  other work on their machine are marked as the rule says.

Both sides are read from git: "before" at the change's `before` commit and "now" at its `now`
commit (the one that applied it), so a re-run writes the same table whatever runs were added since
(`--now=worktree` reads the working tree's JSON instead, for a change being applied). Each writes
its JSON and docs/results.md's block.

  python -m results.rules_changes --change=pairs    # needs the git history (no shallow clone)
"""

import json
import subprocess
import sys
from typing import NamedTuple, Tuple

from absl import app
from absl import flags

from hts_jax.analysis import stats
from hts_jax.cli import common as cli
from hts_jax.results import provenance, publish, spec


WORKTREE = "worktree"  # `--now`: the working tree's JSON, not a commit's


class Change(NamedTuple):
  before: str  # the commit whose committed JSON is "before"
  now: str  # the commit that applied the change: its committed JSON is "now"
  path: str
  block: publish.Block
  text: str  # what "before" and "now" were
  record_grids: Tuple[str, ...]  # the `RECORD_GRIDS` it reads
  before_bounds: bool = True  # False: "before" was an arithmetic mean, shown without a bound


CHANGES = {
    "rules": Change(
        "466d6af^", "2ddbe4f", "results/rules_changes.json",
        publish.Block("rules-changes", "", by="python -m results.rules_changes"),
        "The time ratios the statistics rules moved (`hts_jax/analysis/stats.py`), before them "
        "(`{before}`: arithmetic means over the blocks where both runs reached the target, shared "
        "machines counted) and now (`{now}`: geometric means over the blocks where neither run "
        "shared the machine, a miss counted at its run's end and the ratio marked a bound).",
        ("memory",), before_bounds=False),
    "pairs": Change(
        "629a4ef", "fcf351d", "results/pair_rule_changes.json",
        publish.Block("pair-rule-changes", "",
                      by="python -m results.rules_changes --change=pairs"),
        "The time ratios the pair rule of 2026-11-29 moved (`stats.pair_shared`), before it "
        "(`{before}`: a block counted where neither run calibrated above 1.5x its host kind's "
        "median) and now (`{now}`: where neither run was marked and the two runs' calibrations "
        "are within 1.5x of each other), on the same runs.", ("memory", "corrections")),
    "marks": Change(
        "324c9d5", "db8e47c", "results/marks_changes.json",
        publish.Block("marks-changes", "", by="python -m results.rules_changes --change=marks"),
        "The time ratios moved on 2026-12-05 by marking the two runs whose commit messages had "
        "disclosed other work on their machine but carried no `shared_machine.json` (Pong's "
        "`a2c` seed 0: 024dddd; run to score's `sync_ppo` seed 1: 87cfbc3, whose twin `impala` "
        "seed 1 was marked on 2026-11-27), before (`{before}`) and after (`{now}`), under the "
        "rules of 2026-12-02.", ("memory", "corrections")),
}
flags.DEFINE_enum("change", "rules", list(CHANGES), "Which change of the rules to list.")
flags.DEFINE_string("before", None, "The commit before the change (default: the change's own).")
flags.DEFINE_string("now", None, "The commit that applied the change (default: the change's "
                    f"own); {WORKTREE!r}: the working tree's JSON.")
FLAGS = flags.FLAGS

PAPER_GRIDS = ("gfootball", "minatar", "atari")  # results.json's `paired`: task, method, target
# results.json's cells' `time_ratio` (one target): the reference's time over the method's; its
# cells are `tasks`' `methods` since 2026-12-05, `table`'s before.
RECORD_GRIDS = {"memory": spec.load("memory"), "corrections": spec.load("corrections")}


def _load(commit, grid):
  path = f"results/{grid}/results.json"
  text = (open(provenance.ROOT + "/" + path).read() if commit == WORKTREE else subprocess.run(
      ["git", "show", f"{commit}:{path}"], cwd=provenance.ROOT, capture_output=True, text=True,
      check=True).stdout)
  return json.loads(text)


def _cells(report):
  """{task: {method: cell}} of a record grid's results.json in either schema."""
  if "table" in report:
    return report["table"]
  return {task: t["methods"] for task, t in report["tasks"].items()}


def _ratio(cell):
  """(mean, blocks, bound) of a paired ratio in either format; None where there is none."""
  if not cell:
    return None
  mean = cell.get("mean", cell.get("geomean"))
  return None if mean is None else (mean, cell.get("n", 0), cell.get("bound"))


def changes(before, now, record_grids=tuple(RECORD_GRIDS)):
  """Every time ratio whose value, block count or bound moved between `before` and `now`."""
  rows = []
  for grid in PAPER_GRIDS + record_grids:
    old, new = _load(before, grid), _load(now, grid)
    if grid in PAPER_GRIDS:  # the method's time over the reference's (HTS's)
      ratio = "{method} / " + new["reference"]
      cells = [(task, m, t, c.get(m, {}).get(t), cell)
               for task, ms in new["paired"].items() for m, ts in ms.items()
               for t, cell in ts.items() for c in [old["paired"].get(task, {})]]
    else:
      g = RECORD_GRIDS[grid]
      ratio = g.reference + " / {method}"  # the reference's time over the method's
      targets = {t.name or t.env: "-" if t.target is None else f"{t.target:g}" for t in g.tasks}
      cells = [(task, m, targets[task], _cells(old).get(task, {}).get(m, {}).get("time_ratio"),
                c.get("time_ratio")) for task, ms in _cells(new).items() for m, c in ms.items()
               if isinstance(c, dict)]
    for task, method, target, old_cell, new_cell in cells:
      a, b = _ratio(old_cell), _ratio(new_cell)
      if a != b and (a or b):
        rows.append({"grid": grid, "task": task, "ratio": ratio.format(method=method),
                     "target": target, "before": a, "now": b})
  return rows


def _cell(r):
  if r is None:
    return "-"
  mean, n, bound = r
  return stats.ratio_cell({"mean": mean, "n": n, "bound": bound})


def render(out, change="rules"):
  c = CHANGES[change]
  before = _cell if c.before_bounds else (
      lambda r: "-" if r is None else f"{r[0]:.2f}x (n={r[1]})")
  rows = [[r["grid"], r["task"], r["ratio"], r["target"], before(r["before"]),
           _cell(r["now"])] for r in out["rows"]]
  return (c.text.format(before=out["before"], now=out["now"])
          + f" Source: `{c.path}`, {out['date']}, `{c.block.by}`.\n\n"
          + (stats.markdown(["grid", "task", "time ratio", "target", "before", "now"], rows)
             if rows else "No ratio moved.\n"))


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  c = CHANGES[FLAGS.change]
  before, now = FLAGS.before or c.before, FLAGS.now or c.now
  try:
    rows = changes(before, now, c.record_grids)
  except subprocess.CalledProcessError as e:
    cli.fail(f"git show {e.cmd[-1]}: {e.stderr.strip() or e} (a shallow clone lacks it)")
  out = provenance.save(provenance.ROOT + "/" + c.path,
                        {"before": before, "now": now, "rows": rows})
  if not c.block.write(publish.docs_path(), render(out, FLAGS.change)):
    print(f"warning: docs/results.md has no {c.block.begin!r} block", file=sys.stderr)
  print(render(out, FLAGS.change))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
