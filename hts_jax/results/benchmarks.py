r"""Renders the committed benchmark JSON into docs/benchmarks.md's blocks (the throughput and
determinism block between its `benchmark-results` markers, and the CleanRL block,
`cleanrl-benchmark`) and results/benchmarks/tables.md: the figures they show are never typed by
hand. results/benchmarks/render.toml says which parts each block holds, in order (each part a
JSON file rendered by its function of `RENDERERS`), and names the benchmarks' cases. The JSON
comes from the benchmark scripts' `--save` (`experiments.bench_cleanrl` for cleanrl.json):

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
import json
import os
import statistics
import sys
import tomllib
from typing import Any, Dict, List

from absl import flags

from hts_jax.analysis import stats
from hts_jax.results import guard, headline, provenance, publish

RESULTS = os.path.join(provenance.ROOT, "results", "benchmarks")
with open(os.path.join(RESULTS, "render.toml"), "rb") as _f:
  SPEC = tomllib.load(_f)
BLOCK, DOCS_BLOCK = (publish.Block(b["name"], "benchmarks") for b in SPEC["blocks"])
SOURCES = tuple(p for p in SPEC["blocks"][0]["parts"] if p.endswith(".json"))
SAMPLER_CASES = SPEC["cases"]


def _source(data: Dict[str, Any], name: str) -> str:
  m = data["machine"]
  commit = data["commit"][:12] + ("+dirty" if data["commit"].endswith("+dirty") else "")
  return (f"`results/benchmarks/{name}`, {data['date']}, commit {commit}, {m['cores']} cores "
          f"({m['cpu'] or m['platform']}). Command: `{data['command']}`")


def _int(x: float) -> str:
  return f"{x:,.0f}"


def render_speedup(data: Dict[str, Any]) -> str:
  rows = sorted((r for r in data["rows"] if r["grid"] == "variance"),
                key=lambda r: r["var_over_mean2"])
  s = data["settings"]
  mean_ms = rows[0]["step_time_mean_s"] * 1e3 if rows else 0
  lines = [
      f"**HTS vs synchronous A2C as env step times vary** (the paper's Fig. 3 and Claim 1). "
      f"The `vstep` env: {rows[0]['num_envs'] if rows else '?'} envs with one executor each, "
      f"a mean step of {mean_ms:g} ms, gamma-distributed (exponential at var/mean² = 1). HTS "
      f"syncs every {s['hts_alpha']} steps, sync every step; median of {s['repeats']} "
      f"interleaved runs; the prediction is Eq. 7's, rollout only"
      + ("; HTS lag 0 (`--policy_lag=0`, no learning overlapped) is batch synchronization "
         "alone" if rows and "sps_hts_lag0" in rows[0] else "") + ". "
      f"Source: {_source(data, 'speedup.json')}.",
      "",
  ]
  lag_0 = all("sps_hts_lag0" in r for r in rows)  # HTS at --policy_lag=0, where the JSON has it
  return "\n".join(lines) + "\n" + stats.markdown(
      ["step-time var / mean²", "HTS SPS"] + (["HTS lag 0 SPS"] if lag_0 else [])
      + ["sync SPS", "HTS / sync"] + (["HTS lag 0 / sync"] if lag_0 else [])
      + ["Eq. 7 prediction"],
      [[f"{r['var_over_mean2']:g}", _int(r["sps_hts"])]
       + ([_int(r["sps_hts_lag0"])] if lag_0 else []) + [_int(r["sps_sync"]),
                                                          f"{r['speedup']:.2f}x"]
       + ([f"{r['speedup_lag0']:.2f}x"] if lag_0 else [])
       + [f"{r['predicted_speedup']:.2f}x"] for r in rows])


def render_sampler(data: Dict[str, Any]) -> str:
  """The rollout benchmark: sync, HTS at --policy_lag=0 and at --policy_lag=1 side by side, HTS's
  gain split into batch synchronization (lag 0 over sync) and concurrent learning (lag 1 over lag
  0), what bounds each HTS run, and the planner's predictions where --plan ran."""
  planned = any("plan" in r for r in data["rows"])
  lines = [
      f"**The rollout hot path: sync, HTS at `--policy_lag=0` and HTS at `--policy_lag=1` on the "
      f"same envs** (A2C unless a case says PPO; only `--mode` and `--policy_lag` differ; median "
      f"of {data['repeats']} interleaved runs each). HTS's gain over sync splits in two: *batch "
      f"synchronization*, lag 0 over sync (the same run, bit for bit, so only the rollout "
      f"differs), and *concurrent learning*, lag 1 over lag 0 (the learner beside the rollout, "
      f"which costs the one-update lag). Learner busy: its share of the run's wall time. Bound: "
      f"the largest of the executors' shares stepping envs and waiting for actor calls, and the "
      f"learner's busy share. Envs' own SPS: the same executors, envs and storages with actions "
      f"drawn inside the executors, no actor calls and no learner (`hts_jax/runtime/ceiling.py`)."
      + (" Planner's miss: `hts-plan`'s prediction from its probe (at most 60 s of running per "
         "case) against the measured median, the largest of its three (sync, lag 0, lag 1)."
         if planned else "")
      + f" Source: {_source(data, 'sampler.json')}.",
      "",
  ]
  rows = []
  for r in data["rows"]:
    lag_0, lag_1 = r["hts_lag0"], r["hts"]
    busy = lambda run: run["shares"]["learner"]
    row = [SAMPLER_CASES.get(r["case"], r["case"]), _int(r["sps_sync"]), _int(r["sps_hts_lag0"]),
           _int(r["sps_hts"]), f"{r['lag0_over_sync']:.2f}x", f"{r['hts_over_lag0']:.2f}x",
           f"{max(r['sps_hts'], r['sps_hts_lag0']) / r['sps_sync']:.2f}x",
           f"{busy(lag_0):.0%} / {busy(lag_1):.0%}",
           f"{lag_0['shares']['bound']} / {lag_1['shares']['bound']}".replace("_", " "),
           _int(r["sps_ceiling"]) if "sps_ceiling" in r else "-"]
    if planned:  # the largest miss of the three predictions
      p = r.get("plan", {}).get("predicted_over_measured")
      worst = p and max(p, key=lambda m: abs(p[m] - 1))
      row.append(f"{p[worst] - 1:+.0%} ({worst.replace('_', ' ')})" if p else "-")
    rows.append(row)
  header = ["case", "sync SPS", "HTS lag 0 SPS", "HTS lag 1 SPS", "batch sync (lag 0 / sync)",
            "concurrent learning (lag 1 / lag 0)", "faster lag / sync",
            "learner busy, lag 0 / lag 1", "bound, lag 0 / lag 1", "envs' own SPS"]
  return "\n".join(lines) + "\n" + stats.markdown(
      header + (["planner's miss"] if planned else []), rows)


def render_confirmations(root: str = provenance.ROOT) -> str:
  """`--policy_lag=0`'s confirmation runs (results/policy_lag/*/confirmation.json,
  `experiments.confirm_lag0`): a grid run again as sync and as lag 0, back to back."""
  rows = []
  for path in sorted(glob.glob(os.path.join(root, "results", "policy_lag", "*",
                                            "confirmation.json"))):
    c = json.loads(guard.read_regular(path))  # a FIFO there would block the render
    if "lag0_time_over_sync" in c:
      rows.append([os.path.relpath(c["run"], "results"), f"{c['sync']['wall_time_s']:,.0f}",
                   f"{c['lag0']['wall_time_s']:,.0f}", f"{c['lag0_time_over_sync']:.2f}x",
                   "yes" if c["same_param_sha256"] and c["same_eval"] else "NO",
                   c["sync"]["cpu_model"]])
  if not rows:
    return ""
  return ("**`--policy_lag=0` is sync's run, sooner**: a grid run again as sync and as HTS at lag "
          "0, back to back on one host (`results/policy_lag/`, `experiments/confirm_lag0.py`). "
          "For an identical run the time to any target is in the ratio of the wall times.\n\n"
          + stats.markdown(["run (the grid's config)", "sync s", "lag 0 s", "lag 0 / sync",
                            "same hash and evaluations", "host"], rows))


def render_recurrent(data: Dict[str, Any]) -> str:
  size = data["variants"]["lstm"]["core_size"]
  lines = [
      f"**What the LSTM core costs** (HTS, A2C; `--core=lstm --core_size={size}` against the "
      f"feed-forward network, only `--core` differs; median of {data['repeats']} interleaved "
      f"runs each; the last two columns say which stage the core loads: the learner's unroll, "
      f"or the actors' policy calls that the executors wait for). Source: "
      f"{_source(data, 'recurrent.json')}.",
      "",
  ]
  rows = [[SAMPLER_CASES.get(r["case"], r["case"]), _int(r["sps_ff"]), _int(r["sps_lstm"]),
           f"{r['lstm_over_ff']:.2f}x", f"{r['lstm']['learn_s']:.1f} / {r['ff']['learn_s']:.1f}",
           f"{r['lstm']['idle_s']['executors_waiting_for_actions']:.1f} / "
           f"{r['ff']['idle_s']['executors_waiting_for_actions']:.1f}"] for r in data["rows"]]
  return "\n".join(lines) + "\n" + stats.markdown(
      ["case", "feed-forward SPS", "LSTM SPS", "LSTM / feed-forward",
       "learner busy s, LSTM / feed-forward",
       "executors waiting for actions s, LSTM / feed-forward"], rows)


def render_cleanrl(data: Dict[str, Any]) -> str:
  """`experiments.bench_cleanrl`'s JSON: each program's median steady SPS and start-up, and the
  patches CleanRL's script ran with."""
  programs = list(data["median_sps"])
  startup = {p: statistics.median(r["startup_s"] for r in data["runs"] if r["program"] == p)
             for p in programs}
  return (f"**`--preset=atari_ppo` against CleanRL's `ppo_atari_envpool_xla_jax.py`** (identical "
          f"work: {data['env']}, 8 envs x 128 steps per update, 4 epochs x 4 minibatches, the "
          f"Nature CNN; medians of {data['repeats']} interleaved runs of {data['steps']:,} env "
          f"steps; steady SPS: CleanRL's after its first {data['warmup_iterations']} iterations, "
          "which compile; hts_jax's over its wall time, which starts after its compile; start-up: "
          "those seconds). Source: " + _source(data, "cleanrl.json") + ". CleanRL's script "
          f"(sha256 `{data['cleanrl_script_sha256'][:12]}`) ran with these patches: "
          + "; ".join(f"*{p['name']}* ({p['why']})" for p in data["patches"]) + "."
          + (f" Shared machine: {data['shared_machine']}." if data.get("shared_machine") else "")
          + "\n\n"
          + stats.markdown(["program", "steady SPS", "over CleanRL", "start-up s"], [
              [p, _int(data["median_sps"][p]), "1" if p == "cleanrl" else
               f"{data['over_cleanrl'][p]:.2f}x", f"{startup[p]:.0f}"] for p in programs]))


RENDERERS = {"speedup.json": render_speedup, "sampler.json": render_sampler,
             "recurrent.json": render_recurrent, "cleanrl.json": render_cleanrl}


def render_block(block: Dict[str, Any], results: str = RESULTS) -> str:
  """A block of render.toml: its parts rendered, those whose JSON is here (`policy_lag`: the
  confirmation runs, where there are some), or its `empty` text."""
  parts: List[str] = []
  for name in block["parts"]:
    if name == "policy_lag":
      parts.append(render_confirmations())
    else:
      data = publish.read_json(results, name)
      parts.append(RENDERERS[name](data) if data is not None else "")
  return "\n".join(p for p in parts if p) or block["empty"]


def render_docs(results: str = RESULTS) -> str:
  return render_block(SPEC["blocks"][1], results)


def render_markdown(results: str = RESULTS) -> str:
  return render_block(SPEC["blocks"][0], results)


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
  for b in SPEC["blocks"]:
    text, doc = render_block(b), os.path.join(provenance.ROOT, b["doc"])
    if doc not in files:
      with open(doc) as f:
        files[doc] = f.read()
    block = publish.Block(b["name"], "benchmarks")
    files[doc] = block.into(files[doc], text)
    if files[doc] is None:
      print(f"error: {doc} has no {block.begin!r} ... {block.end!r} block", file=sys.stderr)
      sys.exit(2)
    if "table" in b:
      files[os.path.join(RESULTS, b["table"])] = text
  stale = [p for p, new in files.items()
           if not os.path.exists(p) or open(p).read() != new]
  if flags.FLAGS.check:
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
