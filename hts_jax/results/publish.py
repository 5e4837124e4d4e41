"""What a grid publishes: its results.json (with provenance), the markdown rendered from that JSON
only, and the README (or docs) block between a pair of markers, so that no figure in them is ever
typed by hand. `stale` is the check the tests make on every committed block."""

import dataclasses
import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from hts_jax.results import provenance


@dataclasses.dataclass(frozen=True)
class Block:
  """A script-written block of a markdown file: everything between `begin` and `end`."""
  name: str  # e.g. "mujoco-results"
  grid: str  # the `hts-reproduce` grid that writes it

  @property
  def begin(self) -> str:
    return f"<!-- {self.name}:begin (hts-reproduce {self.grid} writes this) -->"

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
    """`into` on the file at `path`, in place; False (and the file untouched) when the markers
    are missing."""
    with open(path) as f:
      text = self.into(f.read(), markdown)
    if text is None:
      return False
    with open(path, "w") as f:
      f.write(text)
    return True


def readme_path() -> str:
  return os.path.join(provenance.ROOT, "README.md")


def publish(results: str, payload: Dict[str, Any], render: Callable[[Dict[str, Any]], str],
            block: Block, readme: Optional[str], table: str = "table.md") -> Dict[str, Any]:
  """A grid's report: `payload` with its provenance to `<results>/results.json`, `render(it)`
  (from the JSON as written) to `<results>/<table>` and into the `readme`'s block (if `readme`);
  returns what it saved."""
  out = provenance.save(os.path.join(results, "results.json"), payload)
  markdown = render(out)
  with open(os.path.join(results, table), "w") as f:
    f.write(markdown)
  if readme and not block.write(readme, markdown):
    print(f"warning: {readme} has no {block.begin!r} block; not updated", file=sys.stderr)
  return out


def stale(results: str, render: Callable[[Dict[str, Any]], str], block: Block,
          table: str = "table.md", readme: Optional[str] = None) -> List[str]:
  """What is out of date with `<results>/results.json`: the table file and README's block, each
  named; empty when both are the JSON rendered."""
  with open(os.path.join(results, "results.json")) as f:
    markdown = render(json.load(f))
  out = []
  path = os.path.join(results, table)
  if not os.path.exists(path) or open(path).read() != markdown:
    out.append(path)
  readme = readme or readme_path()
  if block.wrap(markdown) not in open(readme).read():
    out.append(f"{readme} ({block.name})")
  return out


def spread(xs: Sequence[float]) -> Dict[str, Any]:
  """Mean, min, max and count of `xs` (a table cell over seeds)."""
  xs = list(xs)
  return {"mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def cell(s: Optional[Dict[str, Any]]) -> str:
  """A `spread` as `mean [min, max]` with thousands separators; empty for none."""
  if not s:
    return ""
  return f"{s['mean']:,.0f} [{s['min']:,.0f}, {s['max']:,.0f}]"


def host_note(out: Dict[str, Any]) -> str:
  """`runs on <hosts>` for a table's source line, saying when the hosts were mixed."""
  hosts = out.get("hosts") or [out["machine"].get("cpu", "?")]
  return (f"runs on {'; '.join(hosts)}"
          + (" (MIXED hosts: SPS not comparable across them)" if len(hosts) > 1 else ""))
