"""What a grid publishes: its results.json (with provenance), the markdown rendered from that JSON
only, and the README (or docs) block between a pair of markers, so that no figure in them is ever
typed by hand."""

import dataclasses
import json
import os
import re
import sys
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from hts_jax.analysis import stats
from hts_jax.results import guard, provenance


@dataclasses.dataclass(frozen=True)
class Block:
  """A script-written block of a markdown file: everything between `begin` and `end`."""
  name: str  # e.g. "mujoco-results"
  grid: str  # the `hts-reproduce` grid that writes it
  by: str = ""  # the command that writes it, where not `hts-reproduce <grid>`

  @property
  def begin(self) -> str:
    return f"<!-- {self.name}:begin ({self.by or 'hts-reproduce ' + self.grid} writes this) -->"

  @property
  def end(self) -> str:
    return f"<!-- {self.name}:end -->"

  def wrap(self, markdown: str) -> str:
    return f"{self.begin}\n{markdown}{self.end}"

  def into(self, text: str, markdown: str) -> Optional[str]:
    """`text` with this block's part replaced by `markdown`; None when the markers are missing."""
    start, stop = text.find(self.begin), text.find(self.end)
    if start < 0 or stop < start:
      return None
    return text[:start] + self.wrap(markdown) + text[stop + len(self.end):]

  def write(self, path: str, markdown: str) -> bool:
    """`into` on the file at `path`, in place; False (and the file untouched) when it or the
    markers are missing."""
    old = read_text(path)
    text = None if old is None else self.into(old, markdown)
    if text is None:
      return False
    with open(path, "w") as f:
      f.write(text)
    return True


def cell(template: str, row: Mapping[str, Any]) -> str:
  """A table's cell: `template` formatted from `row`'s fields; '-' where the row lacks one, or
  holds None where the template formats a number."""
  try:
    return template.format(**row)
  except (KeyError, TypeError):
    return "-"


def table(columns: Sequence[Sequence[str]], rows: Sequence[Mapping[str, Any]]) -> str:
  """A markdown table of `rows`: a column per (header, cell template, ...) of `columns`, each cell
  `cell` of its template over the row."""
  return stats.markdown([c[0] for c in columns], [[cell(c[1], r) for c in columns] for r in rows])


def lines(text: str) -> str:
  """`text`'s paragraphs (text up to a blank line), one a line, their whitespace single: what lets
  a template write over several lines a sentence that renders as one."""
  return "\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip())


def templates(folder: str) -> Any:
  """The Jinja templates under `folder` as every renderer here loads them (a tag's own line and
  indent dropped, a file's last newline kept), with the shared filters: `fmt` (a value formatted,
  '-' for None), `ci` (`fmt_ci`), `steps` (`fmt_steps`) and `lines` (`lines`)."""
  import jinja2  # pylint: disable=import-outside-toplevel
  env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), trim_blocks=True,
                           lstrip_blocks=True, keep_trailing_newline=True, auto_reload=False)
  env.filters.update(fmt=lambda x, fmt: "-" if x is None else fmt.format(x), ci=fmt_ci,
                     steps=fmt_steps, lines=lines)
  return env


def read_text(path: str) -> Optional[str]:
  """The text of the file at `path`; None where there is none."""
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return f.read()


Target = Tuple[str, Block, Callable[[Dict[str, Any]], str]]  # (markdown file, its block, render)


def publish(results: str, payload: Dict[str, Any], render: Callable[[Dict[str, Any]], str],
            targets: Sequence[Target] = (), table: str = "table.md") -> Dict[str, Any]:
  """A grid's report: `payload` with its provenance to `<results>/results.json`, `render(it)`
  (from the JSON as written) to `<results>/<table>`, and each target's render of it into that
  file's block (README's summary, docs/results.md's tables); returns what it saved."""
  path = os.path.join(results, "results.json")
  out = provenance.save(path, dict(payload, source=source_name(path)))
  with open(os.path.join(results, table), "w") as f:
    f.write(render(out))
  for path, block, render_block in targets:
    if not block.write(path, render_block(out)):
      print(f"warning: {path} has no {block.begin!r} block; not updated", file=sys.stderr)
  return out


def read_json(results: str, name: str) -> Any:
  """`<results>/<name>` as JSON (a grid's throughput.json, a benchmark's), None when absent;
  guard.UnsafeFile where it is not a regular file, guard.Refused where it does not parse."""
  path = os.path.join(results, name)
  if not os.path.lexists(path):
    return None
  try:  # a planted FIFO or device would block the report, a link show another file
    return json.loads(guard.read_regular(path))
  except ValueError as e:
    raise guard.Refused(f"{path} does not parse ({e})") from None


def docs_path() -> str:
  return os.path.join(provenance.ROOT, "docs", "results.md")


def fmt_ci(ci: Optional[Dict[str, Any]], fmt: str = "{:.1f}") -> str:
  """A mean over seeds with its interval (`metrics.seed_interval`: [min, max] below 6 seeds) as
  `mean [lo, hi]`; where only k of n seeds reached a target, `≥mean (k/n)` with each miss counted
  at its run's end (`censored_mean`: a lower bound), `- (k/n)` where there is none; `-` where
  there is nothing."""
  if not ci or ci.get("mean") is None:
    if ci and "runs" in ci:
      bound = ("-" if ci.get("censored_mean") is None
               else "≥" + fmt.format(ci["censored_mean"]))
      return f"{bound} ({ci['reached']}/{ci['runs']})"
    return "-"
  s = fmt.format(ci["mean"])
  if ci.get("n", 1) > 1:
    s += f" [{fmt.format(ci['lo'])}, {fmt.format(ci['hi'])}]"
  if "reached" in ci and ci["reached"] < ci["runs"]:
    s += f" ({ci['reached']}/{ci['runs']})"
  return s


def fmt_steps(ci: Optional[Dict[str, Any]]) -> str:
  """Env steps to a target (`fmt_ci` with thousands separators), marked where seeds reached it at
  their first full window of evaluations (`paper_report._floor`): '(floor)' when every seed that
  reached it did, '(k at the floor)' when some did; such steps measure the cadence, not learning."""
  cell = fmt_ci(ci, "{:,.0f}")
  floors, reached = (ci or {}).get("floors", 0), (ci or {}).get("reached", 0)
  if floors and floors >= reached:
    return f"{cell} (floor)"
  return f"{cell} ({floors} at the floor)" if floors else cell


def source_name(path: str) -> str:
  """A results.json's path as tables name it: from the repository's root when inside it."""
  rel = os.path.relpath(os.path.abspath(path), provenance.ROOT)
  return os.path.abspath(path) if rel.startswith("..") else rel


def short_commit(commit: str) -> str:
  """A stamped commit as sources name it: 12 hex digits, and '+dirty' where it was."""
  return commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")


def source(report: Dict[str, Any], name: str, mixed: str = "MIXED host kinds") -> str:
  """A report's source line: its results.json (as recorded when it was written, else `name`),
  date, the commit it was rendered at and the one holding its runs (the provenance: `stats.
  provenance_commit`), the runs' host kinds (`mixed` said where there are several)."""
  name, commit = report.get("source", name), short_commit(report["commit"])
  hosts = report.get("hosts") or []
  runs = ("" if "runs_commit" not in report else "; the runs as committed in "
          + (f"`{report['runs_commit'][:12]}`" if report["runs_commit"] else "no commit yet"))
  return (f"`{name}`, {report['date']}, commit `{commit}`{runs}; runs on "
          f"{'; '.join(hosts) or '-'}" + (f" ({mixed})" if len(hosts) > 1 else "")
          + code_of(report.get("runs") or ()))


def code_of(runs: Sequence[Dict[str, Any]]) -> str:
  """'; code: `abc123def456` (4 runs), not recorded for 2 of 6 runs (...); 1 run at an uncommitted
  tree (hts_ppo seed 3)': the commits the runs' sessions ran (`provenance.run_host`'s `code`),
  each run that ran at an uncommitted tree named. Empty without runs."""
  if not runs:
    return ""
  labels = [tuple(r.get("code") or ("not recorded",)) for r in runs]
  old = sum(all(c == "not recorded" for c in run) for run in labels)
  commits: Dict[str, int] = {}
  for run in labels:
    for c in dict.fromkeys(c.split("+")[0][:12] for c in run if c != "not recorded"):
      commits[c] = commits.get(c, 0) + 1
  dirty = [r for r, run in zip(runs, labels) if any(c.endswith("+dirty") for c in run)]
  parts = [f"`{c}` ({k} run{'s' if k > 1 else ''})" for c, k in commits.items()]
  if old:
    parts.append(f"not recorded for {old} of {len(runs)} runs (they predate the record)")
  out = "; code: " + ", ".join(parts)
  if dirty:
    out += (f"; {len(dirty)} run{'s' if len(dirty) > 1 else ''} at an uncommitted tree ("
            + ", ".join(f"{r.get('method')} seed {r.get('seed')}" for r in dirty) + ")")
  return out
