r"""Renders the committed benchmark JSON into docs/benchmarks.md's blocks (the throughput and
determinism block between its `benchmark-results` markers, and the CleanRL block,
`cleanrl-benchmark`) and results/benchmarks/tables.md: the figures they show are never typed by
hand. results/benchmarks/render.toml says which parts each block holds, in order, and each part's
note and columns (each part a JSON file, its rows as they are or from its function of `ROWS`),
and names the benchmarks' cases. The JSON comes from the benchmark scripts' `--save`
(`experiments.bench_cleanrl` for cleanrl.json):

  python -m experiments.bench_speedup --grids=variance --repeats=3 \
      --save=results/benchmarks/speedup.json
  python -m experiments.bench_sampler --save=results/benchmarks/sampler.json
  hts-reproduce benchmarks            # rewrite the blocks and tables.md (and the headline)
  hts-reproduce benchmarks --check    # exit 1 when they are out of date

(from a clone: `python -m experiments.reproduce benchmarks ...`; the learning grids have blocks of
their own). tests/tooling/test_render_results.py fails when a rendered table is out of date with
its JSON.
"""

import glob
import os
import statistics
import sys
import tomllib
from typing import Any, Callable, Dict, List, Optional, Tuple

from absl import flags

from hts_jax.results import headline, provenance, publish

RESULTS = os.path.join(provenance.ROOT, "results", "benchmarks")
with open(os.path.join(RESULTS, "render.toml"), "rb") as _f:
  SPEC = tomllib.load(_f)
BLOCKS = tuple(publish.Block(b["name"], "benchmarks") for b in SPEC["blocks"])
BLOCK, DOCS_BLOCK = BLOCKS
SOURCES = tuple(p for p in SPEC["blocks"][0]["parts"] if p.endswith(".json"))
CASES = SPEC["cases"]


def _source(data: Dict[str, Any], name: str) -> str:
  m, commit = data["machine"], publish.short_commit(data["commit"])
  return (f"`results/benchmarks/{name}`, {data['date']}, commit {commit}, {m['cores']} cores "
          f"({m['cpu'] or m['platform']}). Command: `{data['command']}`")


def _speedup(data: Dict[str, Any]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
  rows = sorted((r for r in data["rows"] if r["grid"] == "variance"),
                key=lambda r: r["var_over_mean2"])
  first = rows[0] if rows else {}
  return dict(num_envs=first.get("num_envs"),
              mean_ms=first.get("step_time_mean_s", 0) * 1e3), rows


def _sampler(data: Dict[str, Any]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
  rows = []
  for r in data["rows"]:
    p = r.get("plan", {}).get("predicted_over_measured")
    worst = p and max(p, key=lambda m: abs(p[m] - 1))
    rows.append(dict(r, faster=max(r["sps_hts"], r["sps_hts_lag0"]) / r["sps_sync"],
                     bounds=f"{r['hts_lag0']['shares']['bound']} / "
                            f"{r['hts']['shares']['bound']}".replace("_", " "),
                     **({"miss": f"{p[worst] - 1:+.0%} ({worst.replace('_', ' ')})"} if p else {})))
  return {}, rows


def _confirmations() -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
  rows = []
  for run in sorted(glob.glob(os.path.join(provenance.ROOT, "results", "policy_lag", "*"))):
    c = publish.read_json(run, "confirmation.json") or {}
    if "lag0_time_over_sync" in c:
      rows.append(dict(c, label=os.path.relpath(c["run"], "results"),
                       same="yes" if c["same_param_sha256"] and c["same_eval"] else "NO"))
  return {}, rows


def _cleanrl(data: Dict[str, Any]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
  rows = [{"program": p, "sps": sps, "over": "1" if p == "cleanrl" else
           f"{data['over_cleanrl'][p]:.2f}x", "startup": statistics.median(
               r["startup_s"] for r in data["runs"] if r["program"] == p)}
          for p, sps in data["median_sps"].items()]
  return {"patch_list": "; ".join(f"*{p['name']}* ({p['why']})" for p in data["patches"])}, rows


# A part's fields beyond its JSON's and its rows (default: the JSON's `rows`).
ROWS: Dict[str, Callable[[Dict[str, Any]], Tuple[Dict[str, Any], List[Dict[str, Any]]]]] = {
    "speedup.json": _speedup, "sampler.json": _sampler, "cleanrl.json": _cleanrl}


def render_part(name: str, data: Optional[Dict[str, Any]]) -> str:
  """A part of render.toml (`name`: its JSON file, `data` its content; or `policy_lag`: the
  confirmation runs under results/policy_lag/): its note with its fields, then its table; ''
  where its JSON is not here or it has no rows."""
  if data is None:
    return ""
  part = SPEC["parts"][name]
  fields, rows = (_confirmations() if name == "policy_lag"
                  else ROWS.get(name, lambda d: ({}, d["rows"]))(data))
  if not rows:
    return ""
  fields = {**data, **fields, "source": _source(data, name) if data else ""}
  have = {k for k in part.get("if", {}) if fields.get(k) or any(k in r for r in rows)}
  note = part["note"].format(**fields, **{f"if_{k}": v.format(**fields) if k in have else ""
                                          for k, v in part.get("if", {}).items()})
  columns = [c for c in part["columns"] if len(c) < 3 or c[2] in have]
  return f"{note}\n\n" + publish.table(columns, [
      {"label": CASES.get(r.get("case"), r.get("case")), **r} for r in rows])


def render_block(block: Dict[str, Any]) -> str:
  """A block of render.toml: its parts rendered, those whose JSON is here, or its `empty` text."""
  parts = (render_part(n, {} if n == "policy_lag" else publish.read_json(RESULTS, n))
           for n in block["parts"])
  return "\n".join(p for p in parts if p) or block["empty"]


def render_markdown() -> str:
  """The throughput and determinism block (`BLOCK`), which tables.md holds too."""
  return render_block(SPEC["blocks"][0])


def render_docs() -> str:
  """The CleanRL block (`DOCS_BLOCK`)."""
  return render_block(SPEC["blocks"][1])


def define_flags() -> None:
  flags.DEFINE_bool("check", False, "Only check that docs/benchmarks.md's blocks and tables.md "
                    "are up to date.")


def main(argv):
  """Renders each block of render.toml into its doc (and its `table` file beside the JSON), or
  with --check only says which are out of date."""
  if len(argv) > 1:
    print(f"error: unexpected arguments: {' '.join(argv[1:])}", file=sys.stderr)
    sys.exit(2)
  files: Dict[str, str] = {}  # path -> its new text
  for b, block in zip(SPEC["blocks"], BLOCKS):
    text, doc = render_block(b), os.path.join(provenance.ROOT, b["doc"])
    files[doc] = block.into(files.get(doc) or publish.read_text(doc) or "", text)
    if files[doc] is None:
      print(f"error: {doc} has no {block.begin!r} ... {block.end!r} block", file=sys.stderr)
      sys.exit(2)
    if "table" in b:
      files[os.path.join(RESULTS, b["table"])] = text
  if flags.FLAGS.check:
    stale = [p for p, new in files.items() if publish.read_text(p) != new]
    if stale:
      print(f"error: out of date with results/benchmarks/*.json: {', '.join(stale)} (run "
            "hts-reproduce benchmarks)", file=sys.stderr)
      sys.exit(1)
    return []
  for path, text in files.items():
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      f.write(text)
  print(f"wrote {', '.join(os.path.relpath(p, provenance.ROOT) for p in files)}")
  headline.refresh(provenance.ROOT)  # it reads sampler.json and speedup.json
  print(f"wrote {headline.JSON}, README's headline block and docs/results.md's headline-details")
  return []
