"""The headline's words, rendered from results/headline.json only (`hts_jax.results.headline`
builds the JSON). Two blocks: README's `plain` (three sentences a new reader takes in at a glance,
and the figure) and docs/results.md's `details` (the bottom line with its statistics, what each
cell is, the table of ratios and the table of final scores)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from hts_jax.analysis import stats
from hts_jax.results.paper_parts import short

SYNC = ("sync_ppo", "a2c")  # the synchronous baselines (the bottom line's comparison)
JSON, FIGURE = "results/headline.json", "results/headline.png"
PLAIN = {"sync_ppo": "synchronous PPO", "a2c": "synchronous A2C"}  # their names in plain words
GRID_NAMES = {"gfootball": "GFootball", "atari": "Atari"}
WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
DETAILS = "docs/results.md#the-headline"  # where README's block sends a reader for the rest


def ratio(cell: Dict[str, Any], blocks: bool = True) -> str:
  """A ratio as '1.05x' with its mark ('≥', '≤', '~': a bound, see `stats.ratio_cell`)."""
  if cell.get("mean") is None:
    return "-"
  n = f" (n={cell['n']})" if blocks else ""
  return f"{stats.BOUND_MARK[cell.get('bound')]}{cell['mean']:.2f}x{n}"


def neither(m: Dict[str, Any], cell: Dict[str, Any]) -> bool:
  """Every block of the cell had both runs miss the target (its ratio is the runs' lengths')."""
  return bool(cell.get("n")) and len(m["neither"]) >= cell["n"]


def spread(m: Dict[str, Any], key: str = "time") -> str:
  """'1.02x [0.88, 1.18] (n=2 of 3)': of 3 blocks with both runs, 2 count (the rest ran on two
  host kinds, or were marked or calibrated apart: `compare.paired`)."""
  cell = m[key]
  apart = len(cell.get("left_out") or ())
  if cell.get("mean") is None:
    shared = len(cell.get("shared") or ())
    return (f"no block counts yet ({shared} left out by the pair rule)" if shared
            else "no paired block yet" + (f" ({apart} on two host kinds)" if apart else ""))
  total = len(cell.get("could") or ()) + apart
  n = f"n={cell['n']}" + (f" of {total}" if total > cell["n"] else "")
  if neither(m, cell):
    return f"neither reached it ({n})"
  lo_hi = f" [{cell['lo']:.2f}, {cell['hi']:.2f}]" if cell["n"] > 1 else ""
  return f"{ratio(cell, False)}{lo_hi} ({n})"


def task_name(task: str) -> str:
  return short(task) if task.startswith("academy_") else task.split("/")[-1]


def _stage(shares: Dict[str, float]) -> str:
  """'stepping envs 70% (waiting for actions 16%, at the barrier 14%)': the largest first."""
  parts = sorted(((k, v) for k, v in shares.items() if k != "runs"), key=lambda kv: -kv[1])
  return f"{parts[0][0]} {parts[0][1]:.0%} (" + ", ".join(f"{k} {v:.0%}" for k, v in parts[1:]) \
      + ")"


def not_sooner(m: Dict[str, Any]) -> bool:
  """HTS is measured not sooner: a time ratio at most 1 that is measured or an upper bound, in a
  block where some run reached the target."""
  cell = m["time"]
  return (cell.get("mean") is not None and cell["mean"] <= 1.0
          and cell.get("bound") in (None, "upper") and not neither(m, cell))


def sooner(m: Dict[str, Any]) -> bool:
  """HTS is measured sooner: a time ratio above 1 that is measured or a lower bound."""
  cell = m["time"]
  return (cell.get("mean") is not None and cell["mean"] > 1.0
          and cell.get("bound") in (None, "lower") and not neither(m, cell))


def _why_not(m: Dict[str, Any]) -> str:
  through, steps = m["throughput"].get("mean"), m["steps"].get("mean")
  if through is not None and through <= 1.0:
    return f"no throughput lead, {through:.2f}x"
  if steps is not None and steps < 1.0:
    at_least = "≥" if m["steps"].get("bound") == "upper" else ""  # HTS missed: a bound
    return (f"its {through:.2f}x throughput does not make up for needing "
            f"{at_least}{1 / steps:.2f}x the env steps")
  return "its throughput and sample efficiency are not behind: the blocks differ"


def _against_sync(out: Dict[str, Any]) -> List[Tuple[Dict[str, Any], str, Dict[str, Any]]]:
  """(task row, the sync method's key, its cells) for every task, in the JSON's order."""
  return [(t, k, m) for t in out["tasks"] for k, m in t["methods"].items() if k in SYNC]


def bottom_line(out: Dict[str, Any]) -> List[str]:
  """docs/results.md's bottom line, at most 6 lines, each from the JSON."""
  sync = [(t, m) for t, _, m in _against_sync(out)]
  lines = ["**Time to target**, sync's over HTS's (paired blocks, geometric mean [min, max]; "
           "> 1: HTS sooner): " + "; ".join(
               f"{task_name(t['task'])} ({t['target']}) {spread(m)}" for t, m in sync) + "."]
  lines.append("**Why** (time ratio ≈ throughput x sample efficiency): HTS's SPS over sync's / "
               "sync's env steps to the target over HTS's: " + "; ".join(
                   f"{task_name(t['task'])} {ratio(m['throughput'], False)} / "
                   + ("neither reached it" if neither(m, m["steps"]) else ratio(m["steps"], False))
                   for t, m in sync) + ".")
  ratios, cores = out["sampler"]["ratios"], (out["sampler"]["machine"] or {}).get("cores")
  bounds = [f"{grid} {_stage(sh)}" for grid, sh in out["executors"].items() if sh]
  if ratios:
    lag_0 = list((out["sampler"].get("lag_0_ratios") or {}).values())
    lines.append(f"**Throughput** on {len(ratios)} rollout benchmark cases ({cores} "
                 f"cores, sampler.json): HTS/sync {min(ratios.values()):.2f}-"
                 f"{max(ratios.values()):.2f}x" + (f" (lag 0: {min(lag_0):.2f}-{max(lag_0):.2f}x)"
                 if lag_0 else "") + ". What bounds HTS (its executors' time): "
                 + ("; ".join(bounds) or "no run yet") + ".")
  var = out["variance"]["rows"]
  if var:
    lines.append("**The paper's 2-6x** comes from step-time variance over envs that leave the "
                 "cores idle: on a synthetic env whose steps sleep, at var/mean² "
                 + ", ".join(f"{r['var_over_mean2']:g}" for r in var) + " HTS is "
                 + ", ".join(f"{r['speedup']:.2f}x" for r in var) + " sync (speedup.json).")
  behind = [f"{task_name(t['task'])} ({_why_not(m)})" for t, m in sync if not_sooner(m)]
  if behind:
    lines.append("**Not sooner** on " + "; ".join(behind) + ".")
  earlier = earlier_rules_line(out)
  return lines + ([earlier] if earlier else [])


def _where(t: Dict[str, Any]) -> str:
  """'GFootball's Empty goal'."""
  grid = GRID_NAMES.get(t["grid"], t["grid"])
  return f"{grid}'s {task_name(t['task'])}" if grid else task_name(t["task"])


def _first(out: Dict[str, Any]) -> Optional[str]:
  """Where HTS reached the target soonest against sync, and by how much; the rest's range."""
  timed = [(t, k, m) for t, k, m in _against_sync(out) if m["time"].get("mean") is not None]
  ahead = [(t, k, m) for t, k, m in timed if sooner(m)]
  if not ahead:
    return None
  t, k, m = max(ahead, key=lambda x: x[2]["time"]["mean"])
  at_least = "at least " if m["time"].get("bound") == "lower" else ""
  rest = sorted(x[2]["time"]["mean"] for x in ahead if x[2] is not m)
  count = WORDS[len(rest)] if len(rest) < len(WORDS) else str(len(rest))
  span = (f"{rest[0]:.2f} to {rest[-1]:.2f}" if f"{rest[0]:.2f}" != f"{rest[-1]:.2f}"
          else f"{rest[0]:.2f}") if rest else ""
  others = (f" ({span} times on the other {count})" if len(rest) > 1
            else f" ({span} times on the other one)" if rest else "")
  of = (f"all {len(timed)}" if len(ahead) == len(timed) else f"{len(ahead)} of the "
        f"{len(timed)}")
  return (f"HTS reached the target score sooner than synchronous training on {of} tasks timed "
          f"here, most of all on {_where(t)}, where "
          f"{PLAIN.get(k, m['label'])} took {at_least}{m['time']['mean']:.2f} times as long as "
          f"{t['label']} to reach a score of {t['target']}{others}.")


def _second(out: Dict[str, Any]) -> Optional[str]:
  """How many more env steps a second HTS collects, on the benchmark's cases and as step times
  vary (the paper's setting)."""
  ratios, var = out["sampler"]["ratios"], out["variance"]["rows"]
  if not ratios:
    return None
  cores = (out["sampler"]["machine"] or {}).get("cores")
  varied = (f", and up to {max(r['speedup'] for r in var):.2f} times as many where environment "
            "step times vary widely, as in the paper" if var else "")
  return (f"Per second, HTS collects {min(ratios.values()):.2f} to {max(ratios.values()):.2f} "
          f"times as many environment steps as synchronous training in {len(ratios)} benchmark "
          f"cases on {cores} cores{varied}.")


def _before_change(m: Dict[str, Any]) -> Optional[Tuple[Dict[str, Any], str]]:
  """The time ratio's reading just before the last pair-rule change that moved it, and that
  change's date (`stats.PAIR_RULES`); None where no change moved it."""
  since = [r.since for r in stats.PAIR_RULES]
  got = m.get("earlier_rules") or []
  if not got:
    return None
  last = max(got, key=lambda e: since.index(e["since"]))
  return last, since[since.index(last["since"]) + 1]


def _reading(t: Dict[str, Any], cell: Dict[str, Any]) -> str:
  if cell["mean"] is None:
    return f"{task_name(t['task'])} had no block that counted"
  at = {"upper": "at most ", "lower": "at least "}.get(cell.get("bound"), "")
  blocks = WORDS[cell["n"]] if cell["n"] < len(WORDS) else str(cell["n"])
  return (f"{task_name(t['task'])} read {at}{cell['mean']:.2f} times from {blocks} "
          f"block{'s' if cell['n'] != 1 else ''}")


def _fourth(out: Dict[str, Any]) -> Optional[str]:
  """Each time ratio above as it read before a change of the pair rules made after its runs:
  both readings, the earliest change first."""
  got = sorted(((t, *_before_change(m)) for t, _, m in _against_sync(out) if _before_change(m)),
               key=lambda x: x[2])
  if not got:
    return None
  parts = [f"{_reading(t, cell)} (before {date})" for t, cell, date in got]
  listed = "; ".join(parts)
  return ("The rule for which runs pair changed after some of these runs were made; under the "
          f"rules before, {listed}.")


def earlier_rules_line(out: Dict[str, Any]) -> Optional[str]:
  """docs/results.md's line of each time ratio that read otherwise before the last pair-rule
  change that moved it (`_before_change`)."""
  cells = [f"{task_name(t['task'])} {m['label']} {ratio(cell)} (before {date})"
           for t in out["tasks"] for m in t["methods"].values()
           for cell, date in [_before_change(m) or (None, None)] if cell]
  if not cells:
    return None
  return ("**Earlier pair rules** (`stats.PAIR_RULES`), each time ratio that read otherwise: "
          + "; ".join(cells) + ".")


def _steps_cost(t: Dict[str, Any], m: Dict[str, Any], than: str = "") -> str:
  """'needed at least 1.08 times as many environment steps [as synchronous A2C] to reach ...'."""
  at_least = "at least " if m["steps"].get("bound") == "upper" else ""
  return (f"needed {at_least}{1 / m['steps']['mean']:.2f} times as many environment steps"
          f"{than} to reach a score of {t['target']}, the cost of learning from experience one "
          "update old")


def _third(out: Dict[str, Any]) -> Optional[str]:
  """Where HTS was not sooner, and whether speed or environment steps are why; where no block
  could be timed, what the env steps (every block counts) say."""
  parts, untimed = [], []
  for t, k, m in _against_sync(out):
    through, steps = m["throughput"].get("mean"), m["steps"].get("mean")
    sync = PLAIN.get(k, m["label"])
    if m["time"].get("mean") is None and steps is not None and steps < 1.0:
      untimed.append(f"On {_where(t)} no block could be timed "
                     f"(each block ran on two host kinds or had a run that shared its machine), but {t['label']} "
                     f"{_steps_cost(t, m, f' as {sync}')}.")
      continue
    if not not_sooner(m):
      continue
    if through is not None and through <= 1.0:
      why = f"{t['label']} ran no faster than {sync}"
    elif steps is not None and steps < 1.0:
      why = f"{t['label']} ran {through:.2f} times as fast as {sync} but {_steps_cost(t, m)}"
    else:
      why = "the runs differ more than HTS's speed and its environment steps explain"
    parts.append(f"on {_where(t)}: {why}")
  return " ".join(([f"It was not faster {'; '.join(parts)}."] if parts else []) + untimed) or None


def plain_sentences(out: Dict[str, Any]) -> List[str]:
  """README's sentences: what HTS does faster, by how much and on which task; how many more env
  steps it collects a second; where it was not faster, and why; and how those time ratios read
  before the pair-rule changes made after their runs."""
  return [s for s in (_first(out), _second(out), _third(out), _fourth(out)) if s]


def plain(out: Dict[str, Any]) -> str:
  """README's `headline` block: the sentences, the figure and the one link to the rest."""
  return ("\n".join(plain_sentences(out)) + "\n\n"
          f"![time to each task's target score, HTS against synchronous training]({FIGURE})\n\n"
          f"How these figures are measured, how much they vary, and the final scores of every "
          f"task: [docs/results.md]({DETAILS}).\n")


def table(out: Dict[str, Any]) -> str:
  """A row per task and compared method; at most two numbers a cell."""
  rows = [[f"{task_name(t['task'])} ({t['target']}; {t['planned_seeds']})",
           f"{m['label']} ({len(m['seeds'])}) / {t['label']} ({len(t['hts_seeds'])})",
           "neither reached it" if neither(m, m["time"]) else ratio(m["time"]),
           ratio(m["throughput"], False),
           "neither reached it" if neither(m, m["steps"]) else ratio(m["steps"], False)]
          for t in out["tasks"] for m in t["methods"].values()]
  return stats.markdown(["task (target; the protocol's seeds)", "compared (seeds run)",
                         "time to target",
                         "throughput", "sample efficiency"], rows)


def scores_table(out: Dict[str, Any]) -> str:
  """The final metric of HTS (the presets' correction) and of sync, per task: two numbers a cell."""
  def cell(side: Dict[str, Any], fmt: str) -> str:
    return "-" if side["mean"] is None else f"{fmt.format(side['mean'])} ({side['seeds']})"
  rows = []
  for r in out["scores"]:
    fmt = "{:,.0f}" if max(abs(r[s]["mean"] or 0) for s in ("hts", "sync")) >= 100 else "{:.2f}"
    rows.append([f"{r['grid']}: {task_name(r['task'])}",
                 f"`{r['hts_method']}` / `{r['sync_method']}`",
                 cell(r["hts"], fmt), cell(r["sync"], fmt)])
  return stats.markdown(["task", "HTS / sync", "HTS's final metric (seeds)",
                         "sync's final metric (seeds)"], rows)


def details(out: Dict[str, Any]) -> str:
  """docs/results.md's `headline-details` block: everything README's three sentences stand on."""
  srcs = ", ".join(f"`{s['path']}` (runs as committed in `{(s['runs_commit'] or '-')[:12]}`)"
                   for s in out["sources"].values())
  return ("\n".join(f"- {line}" for line in bottom_line(out)) + "\n\n"
          "Each cell is the compared method's figure over HTS's, a geometric mean over paired "
          "blocks (n: blocks whose two runs ran on one host kind, where "
          f"{stats.PAIR_RULES[-1].text}: the statistics rules of {stats.PAIR_RULES[-1].since}; "
          "≥ / ≤: a bound where a run missed the target). "
          "Time to target: its time over HTS's. Throughput: HTS's SPS over its SPS. Sample "
          "efficiency: its env steps to the target over HTS's, over every block (env steps "
          "depend on neither the host nor a shared machine). "
          f"Source: `{JSON}`, from {srcs}. The figure in README: `{FIGURE}`.\n\n"
          + table(out) + "\n"
          "The same score? Each grid's final metric as its protocol defines it (the mean over "
          "seeds), HTS with the presets' correction against sync; the definitions, the spreads "
          "and every other method are in the grids' sections below.\n\n"
          + scores_table(out))
