r"""Paper-style tables and learning curves from finished runs.

  hts-report runs/a2c_s0 runs/a2c_s1 runs/hts_s0 runs/hts_s1 \
      --targets=CartPole-v1=475 --time_limit=60 --out=runs/report

Runs that differ only in their seed are one group; each group is one method column, each env one
row (as the paper's Tables 1, 2 and A7-A10). Three tables: the final metric (last 10 evaluated
policies x their evaluation episodes), the final time metric (the same within --time_limit seconds
of wall time), the required time metric (seconds until the evaluation return first reaches the
env's target); each cell is the mean over seeds with its [min, max] below 6 seeds, else the 95%
bootstrap interval.
Also draws return vs env steps and return vs wall time (paper Fig. 5) and a throughput bar chart
(SPS per method) into --out, and writes report.json there. It reads summary.json (and nothing
TensorBoard wrote). `--json` prints that JSON instead of the tables.

Every run's host (CPU model and usable cores from summary.json's host block, with its calibration
time) is listed under the tables. Wall-time figures (SPS, the final time and required time
metrics) from different host kinds are refused in one line unless `--mixed_hosts` is given; the
tables then say that they mix hosts.
"""

import json
import math
import os
from typing import Any, Dict, List

from absl import flags

from hts_jax.cli import common as cli

flags.DEFINE_list("targets", [], "ENV=RETURN pairs for the required time metric; ENV may be '*'.")
flags.DEFINE_float("time_limit", None, "Wall-time limit (s) for the final time metric.")
flags.DEFINE_integer("last", 10, "Evaluated policies in the final metric.")
flags.DEFINE_integer("window", 10, "Required time metric: evaluations in the running average "
                     "compared with the target (the paper: the 10 most recent, 100 episodes).")
flags.DEFINE_integer("resamples", 10_000, "Bootstrap resamples.")
flags.DEFINE_integer("seed", 0, "Bootstrap seed.")
flags.DEFINE_string("out", None, "Directory for the PNGs and report.json (none: no files).")
flags.DEFINE_bool("json", False, "Print JSON instead of tables.")
flags.DEFINE_bool("mixed_hosts", False, "Report runs made on different host kinds together (their "
                  "wall-time figures are then not comparable, and the tables say so).")
FLAGS = flags.FLAGS


def _targets(pairs: List[str]) -> Dict[str, float]:
  out = {}
  for p in pairs:
    env, sep, value = p.rpartition("=")
    try:
      if not sep or not env:
        raise ValueError
      out[env] = float(value)
    except ValueError:
      cli.fail(f"--targets: expected ENV=RETURN, got {p!r}")
  return out


def _cell(ci: Any, fmt: str = "{:.1f}") -> str:
  if not ci:
    return "-"
  if not math.isfinite(ci["mean"]):
    few = ci.get("too_few_evaluations")
    return f"not reached (0/{ci.get('runs', '?')}" + (
        f"; {few} with fewer evaluations than the window)" if few else ")")
  s = f"{fmt.format(ci['mean'])} [{fmt.format(ci['lo'])}, {fmt.format(ci['hi'])}]"
  if "reached" in ci and ci["reached"] < ci["runs"]:
    s += f" ({ci['reached']}/{ci['runs']} reached)"
  if ci.get("too_few_evaluations"):
    s += f" ({ci['too_few_evaluations']} with fewer evaluations than the window)"
  return s


def _env_label(env: str, rows: List[Dict[str, Any]], key: str) -> str:
  targets = {r["target"] for r in rows if r["env"] == env and "target" in r}
  return f"{env} (target {min(targets):g})" if key == "required_time" and targets else env


def format_tables(rows: List[Dict[str, Any]]) -> str:
  """Env rows x method columns, one table per metric present."""
  methods = list(dict.fromkeys(r["method"] for r in rows))
  envs = list(dict.fromkeys(r["env"] for r in rows))
  by = {(r["env"], r["method"]): r for r in rows}
  specs = [("final", "Final metric (mean eval return, last policies)", "{:.1f}")]
  if any("final_time" in r for r in rows):
    specs.append(("final_time", f"Final time metric (within {rows[0].get('time_limit_s')} s)",
                  "{:.1f}"))
  if any("required_time" in r for r in rows):
    specs.append(("required_time", "Required time metric (s to reach the target)", "{:.1f}"))
  specs.append(("sps", "Throughput (env steps / s, mean over seeds)", None))
  out = []
  for key, title, fmt in specs:
    header = ["env"] + methods
    lines = [header]
    for env in envs:
      line = [_env_label(env, rows, key)]
      for m in methods:
        r = by.get((env, m))
        if r is None:
          line.append("")
        elif fmt is None:
          line.append(f"{r[key]:,.0f}")
        else:
          line.append(_cell(r.get(key), fmt))
      lines.append(line)
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(header))]
    out.append(title if fmt is None else f"{title}; per cell: mean over seeds [min, max] below 6 "
               "seeds, else [95% bootstrap CI]")
    for i, l in enumerate(lines):
      out.append("  ".join(str(c).ljust(w) for c, w in zip(l, widths)).rstrip())
      if i == 0:
        out.append("  ".join("-" * w for w in widths))
    out.append("")
  return "\n".join(out)


def format_hosts(runs) -> str:
  """One line per run: its directory, seed, host kind, calibration time (at the start, and at
  the end where the run recorded it), CPU steal share and SPS."""
  from hts_jax.results import provenance  # pylint: disable=import-outside-toplevel
  lines = ["Hosts (summary.json's host block; calibration: a fixed CPU workload's time)"]
  for r in runs:
    h = provenance.run_host(r.summary)  # the grids' reading of the same block
    cal, end, steal = h["calibration_ms"], h["calibration_end_ms"], h["steal_share"]
    lines.append(f"  {r.path}: seed {r.seed}, {r.host}"
                 + (f", calibration {cal:,.0f} ms" if cal is not None else "")
                 + (f" ({end:,.0f} ms at the end)" if end is not None else "")
                 + (f", {steal:.0%} CPU steal" if steal is not None else "")
                 + f", {r.summary.get('sps', 0):,.0f} SPS")
  return "\n".join(lines) + "\n"


def _write_out(report: Dict[str, Any], runs) -> None:
  """The PNGs and report.json into --out (one line where it cannot be written)."""
  from hts_jax.analysis import metrics  # pylint: disable=import-outside-toplevel
  try:
    import matplotlib  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
  except ImportError:  # a lean install: the tables and report.json, and one line at the end
    report["no_figures"] = ("--out: the figures need matplotlib, which the analysis extra "
                            "installs: pip install \"hts_jax[analysis]\"")
  try:
    os.makedirs(FLAGS.out, exist_ok=True)
    groups = metrics.group_runs(runs)
    if "no_figures" not in report:
      from hts_jax.analysis import plots  # pylint: disable=import-outside-toplevel
      report["plots"] = plots.learning_curves(FLAGS.out, groups) + [
          plots.throughput(FLAGS.out, groups)]
    with open(os.path.join(FLAGS.out, "report.json"), "w") as f:
      json.dump(metrics.json_safe(report), f, indent=1)
  except OSError as e:
    cli.fail(f"--out={FLAGS.out}: cannot write {e.filename or 'it'} ({e.strerror or e})")


def main(argv):
  from hts_jax.analysis import metrics  # pylint: disable=import-outside-toplevel
  dirs = argv[1:]
  if not dirs:
    cli.fail("give one or more run directories (each with a summary.json)")
  targets = _targets(FLAGS.targets)
  from hts_jax.results import guard  # pylint: disable=import-outside-toplevel
  try:
    for d in dirs:  # read safely and type-checked before the analysis reads it again
      if os.path.lexists(os.path.join(d, "summary.json")):
        guard.load_summary(os.path.join(d, "summary.json"), evaluated=True)
    runs = [metrics.load_run(d) for d in dirs]
    hosts = metrics.check_one_host(runs, FLAGS.mixed_hosts)
    rows = metrics.summarize(metrics.group_runs(runs), last=FLAGS.last,
                             time_limit_s=FLAGS.time_limit, targets=targets or None,
                             window=FLAGS.window, resamples=FLAGS.resamples, seed=FLAGS.seed)
  except (metrics.RunDirError, ValueError) as e:
    cli.fail(str(e))
  report = {"rows": rows, "runs": dirs, "hosts": {r.path: r.summary.get("host") for r in runs},
            "mixed_hosts": len(hosts) > 1}
  if FLAGS.out:
    _write_out(report, runs)
  if FLAGS.json:
    print(json.dumps(metrics.json_safe(report)))
  else:
    if len(hosts) > 1:
      print(f"NOTE: wall-time figures below mix {len(hosts)} host kinds ({'; '.join(hosts)}): "
            "SPS and times are not comparable across them.\n")
    print(format_tables(rows), end="")
    print(format_hosts(runs), end="")
    for p in report.get("plots", []):
      print(f"wrote {p}")
  if "no_figures" in report:
    cli.fail(report["no_figures"])


def run():
  """The `hts-report` console command."""
  cli.run_main(main, __name__)


if __name__ == "__main__":
  run()
