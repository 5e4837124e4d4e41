r"""The paper's GFootball learning results (Table 2 / A10, Table A9, Figs. A5/A6) on this machine.

  hts-reproduce gfootball                     # the whole grid, then the report
  hts-reproduce gfootball --scenarios=academy_empty_goal_close --seeds=0
  hts-reproduce gfootball --report_only       # tables, plots, JSON from the runs
  hts-reproduce gfootball --actor_counts=1,2,4 --methods= --scenarios=

(from a clone: `python -m experiments.reproduce gfootball ...`). Runs the grid method x scenario x
seed as paired blocks (`hts_jax.results.grid`: each (scenario, seed)'s methods back to back in an
order seeded by the block), each run one fresh training process, into
`<results>/runs/<scenario>/<method>/seed<k>/`. A run with a `summary.json` is finished and never
run again, so the grid fills over several sittings; a run directory without one (an interrupted
run) is deleted and run again from the start: a run's wall time must come from one uninterrupted
sitting. Runs go one at a time (the wall-time metrics need a machine nothing else loads).

Methods, each from its preset (`hts_jax/presets.py`, every value cited there):
  hts_ppo   `gfootball_ppo`                 HTS-PPO (Table A6 + the released 3-vs-1 script)
  sync_ppo  `gfootball_ppo --mode=sync`     synchronous PPO: the same hyperparameters
  impala    `gfootball_impala`              IMPALA (Table A6's column, TorchBeast where silent)
Scale (the same for every method, flags below): 8 envs, simple115v2 observations and the MLP on
a 2-core CPU, against the paper's 16 envs, extracted maps and CNN on a 4-GPU desktop. Budgets per
scenario (BUDGETS) scale the paper's 5M steps to what reaches the targets here; evaluations keep
the paper's 50 per run (every 100k of 5M), 10 sampled episodes each.

Then writes, from the runs' `summary.json` only, into `<results>/`:
  results.json                every number: per run and per method (mean over seeds, 95% bootstrap
                              interval), the paper's figures, machine and commit
  tables.md                   the required time table (minutes to a running-average score of 0.4 /
                              0.8: Table 2 / A10), env steps to 0.4 / 0.8, the final time metric at
                              IMPALA's mean wall time (Table A9), throughput and idle time
  score_vs_env_steps.png      Fig. A6-style curves: mean evaluation score, 95% interval over seeds
  score_vs_wall_time.png      Fig. A5-style
and the README's Results block (between its `gfootball-results` markers) from the same JSON.

`--actor_counts=1,2,4` (Tables 4/5 on a real env) runs one scenario and seed of HTS-PPO with each
actor count into `<results>/actor_counts/actors<n>/` and reports the `param_sha256`s, the
evaluation scores and SPS side by side.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence

from absl import flags

from hts_jax.analysis import metrics, plots
from hts_jax.results import grid, launch, publish

# method -> (preset, extra flags at every scale)
METHODS = {
    "hts_ppo": ("gfootball_ppo", {"mode": "hts"}),
    "sync_ppo": ("gfootball_ppo", {"mode": "sync"}),
    "impala": ("gfootball_impala", {}),
}
LABELS = {"hts_ppo": "HTS-PPO", "sync_ppo": "PPO (sync)", "impala": "IMPALA"}
# Env-step budgets here: the paper's 5M scaled to what reaches the targets on this machine's scale.
BUDGETS = {"academy_empty_goal_close": 150_000, "academy_empty_goal": 600_000,
           "academy_run_to_score": 1_000_000}
EVALS_PER_RUN = 50  # the paper: every 100k of 5M steps
TARGETS = (0.4, 0.8)  # Table 2 / A10
# The paper's figures for these scenarios (Liu, Yeh & Schwing 2020; 4 GPUs, 16 envs, extracted
# maps): Table A10 (= Table 2) required minutes to 0.4 / 0.8 (None: '-'), Table A9 final time
# metric at IMPALA's 5M-step time (mean, +-).
PAPER = {
    "academy_empty_goal_close": {"required_min": {"impala": (1.7, 2.6), "sync_ppo": (5.4, 15.5),
                                                  "hts_ppo": (1.0, 2.0)},
                                 "final_time": {"impala": (1.00, 0.00), "sync_ppo": (1.00, 0.00),
                                                "hts_ppo": (1.00, 0.00)}},
    "academy_empty_goal": {"required_min": {"impala": (8.4, 11.7), "sync_ppo": (12.8, 19.2),
                                            "hts_ppo": (2.0, 3.9)},
                           "final_time": {"impala": (1.00, 0.00), "sync_ppo": (0.89, 0.05),
                                          "hts_ppo": (0.94, 0.04)}},
    "academy_run_to_score": {"required_min": {"impala": (27.0, 34.6), "sync_ppo": (16.2, 32.5),
                                              "hts_ppo": (6.3, 11.4)},
                             "final_time": {"impala": (0.65, 0.42), "sync_ppo": (0.89, 0.05),
                                            "hts_ppo": (0.93, 0.03)}},
}
BLOCK = publish.Block("gfootball-results", "gfootball")

def define_flags() -> None:
  """This script's flags, defined only when it runs as the program: importing the module
  (tests, notebooks) leaves absl's global flags to `experiments.train`, whose names
  (num_envs, seed...) some of these share."""
  flags.DEFINE_list("scenarios", ["academy_empty_goal_close", "academy_empty_goal"],
                    f"Scenarios to run (budgets: {BUDGETS}).")
  flags.DEFINE_list("methods", list(METHODS), f"Methods to run: {list(METHODS)}.")
  flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds to run.")
  flags.DEFINE_list("steps", [], "SCENARIO=STEPS budget overrides (the same for every method).")
  flags.DEFINE_string("results", "results/gfootball", "Results folder (runs, JSON, tables, PNGs).")
  flags.DEFINE_integer("num_envs", 8, "Envs of every method.")
  flags.DEFINE_integer("num_executors", 4, "Executor processes of every method.")
  flags.DEFINE_integer("ppo_actors", 1, "Actor threads of HTS-PPO and sync PPO.")
  flags.DEFINE_integer("impala_actors", 4, "IMPALA's actors (each owns whole executors).")
  flags.DEFINE_string("representation", "simple115v2",
                      "GFootball observations: simple115v2 (MLP) or extracted (the paper's CNN).")
  flags.DEFINE_list("extra", [], "More launcher flags for every run, e.g. learner_devices=0,1.")
  flags.DEFINE_bool("report_only", False, "Write the report from the finished runs; run nothing.")
  flags.DEFINE_bool("dry_run", False, "Print the commands of the runs still to do; run nothing.")
  flags.DEFINE_bool("readme", True, "Rewrite README.md's Results block from results.json.")
  flags.DEFINE_list("actor_counts", [], "Also run HTS-PPO with each of these actor counts.")
  flags.DEFINE_string("identity_scenario", "academy_empty_goal_close",
                      "--actor_counts: the scenario.")
  flags.DEFINE_integer("identity_seed", 0, "--actor_counts: the seed.")
  flags.DEFINE_integer("identity_steps", 0, "--actor_counts: env steps (0: the scenario's budget).")
  flags.DEFINE_integer("resamples", 10_000, "Bootstrap resamples.")


FLAGS = flags.FLAGS


def budget_of(scenario: str, overrides: Dict[str, int]) -> int:
  if scenario in overrides:
    return overrides[scenario]
  if scenario not in BUDGETS:
    raise grid.GridError(f"no budget for scenario {scenario!r}: give --steps={scenario}=N")
  return BUDGETS[scenario]


def _parse_steps(pairs: Sequence[str]) -> Dict[str, int]:
  out = {}
  for p in pairs:
    name, sep, value = p.partition("=")
    try:
      if not sep or not name or int(value) < 1:
        raise ValueError
      out[name] = int(value)
    except ValueError:
      raise grid.GridError(f"--steps: expected SCENARIO=STEPS (STEPS >= 1), got {p!r}") from None
  return out


def run_flags(method: str, scenario: str, seed: int, steps: int, *, num_envs: int,
              num_executors: int, ppo_actors: int, impala_actors: int, representation: str,
              num_actors: Optional[int] = None, extra: Sequence[str] = ()) -> Dict[str, Any]:
  """The launcher flags of one run (before --logdir)."""
  if method not in METHODS:
    raise grid.GridError(f"unknown method {method!r}; known: {list(METHODS)}")
  preset, fixed = METHODS[method]
  stacked = representation not in ("simple115", "simple115v2")
  out: Dict[str, Any] = {
      "preset": preset, **fixed, "env": f"gfootball:{scenario}",
      "env_kwargs": json.dumps({"representation": representation, "stacked": stacked},
                               separators=(",", ":")),
      "num_envs": num_envs, "num_executors": num_executors, "total_steps": steps, "seed": seed,
      "eval_every": max(1, steps // EVALS_PER_RUN), "tensorboard": False, "log_every_s": 60}
  if min(num_envs, num_executors, ppo_actors, impala_actors, num_actors or 1) < 1:
    raise grid.GridError("--num_envs, --num_executors, --ppo_actors, --impala_actors and "
                    "--actor_counts must be >= 1")
  if method == "impala":
    # Each actor owns num_envs / impala_actors envs (whole executors); a batch of Table A6's 8
    # unrolls of one env is 8 env-sequences of 32 steps, whatever the actors' share.
    if num_envs % impala_actors or num_executors % impala_actors or 8 % (num_envs //
                                                                         impala_actors):
      raise grid.GridError(f"impala: {impala_actors} actors must divide num_envs ({num_envs}) "
                           f"and num_executors ({num_executors}), each actor's envs dividing 8")
    out.update(num_actors=impala_actors, async_batch_unrolls=8 // (num_envs // impala_actors))
  else:
    out["num_actors"] = num_actors or ppo_actors
  for item in extra:
    name, sep, value = item.partition("=")
    if not sep:
      raise grid.GridError(f"--extra: expected NAME=VALUE, got {item!r}")
    out[name] = value
  return out


# ---------------------------------------------------------------------------------------------
# The report: from summary.json files only.

def _run_record(path: str, results: str, scenario: str, method: str) -> Dict[str, Any]:
  run = metrics.load_run(path)
  s = run.summary
  req = {str(t): metrics.required_time_metric(run, t) for t in TARGETS}
  return {
      "scenario": scenario, "method": method, "seed": run.seed,
      "path": os.path.relpath(path, results), "network": s.get("network"),
      "total_steps": (s.get("config") or {}).get("total_steps", s["env_steps"]),
      "env_steps": s["env_steps"], "wall_time_s": s["wall_time_s"], "sps": s["sps"],
      "updates": s["updates"], "param_sha256": s["param_sha256"],
      "num_envs": s.get("num_envs"), "num_actors": s.get("num_actors"),
      "num_executors": s.get("num_executors"), "alpha": s.get("alpha"),
      "policy_lag": s.get("policy_lag"), "idle": s.get("idle"), "idle_share": _idle_share(s),
      "host": run.host, "host_recorded": bool(s.get("host")),
      "required": {t: {"minutes": q["wall_time_s"] / 60, "env_steps": q["env_steps"]}
                   for t, q in req.items()},
      "final": metrics.final_metric(run),
      "evals": [{"env_steps": e["env_steps"], "wall_time_s": e["wall_time_s"],
                 "score": e["mean_return"]} for e in run.evals],
  }


def load_runs(results: str) -> List[Dict[str, Any]]:
  """Every finished run under `<results>/runs/<scenario>/<method>/seed<k>`, in a fixed order."""
  return [_run_record(f.logdir, results, f.task, f.method)
          for f in grid.finished_runs(results, methods=list(METHODS))]


def _ci(values: Sequence[float], resamples: int) -> Optional[Dict[str, float]]:
  return metrics.bootstrap_ci(values, resamples=resamples) if values else None


def _reached(values: Sequence[float], resamples: int) -> Dict[str, Any]:
  """Mean and interval over the seeds when every seed reached the target (the paper's '-'
  otherwise: a mean over the seeds that happened to reach it would flatter the method), and how
  many did; `mean_of_reached` keeps the figure over those that did."""
  hit = [v for v in values if math.isfinite(v)]
  out: Dict[str, Any] = {"mean": None}
  if hit and len(hit) == len(values):
    out = dict(_ci(hit, resamples))
  elif hit:
    out["mean_of_reached"] = sum(hit) / len(hit)
  return {**out, "reached": len(hit), "runs": len(values)}


def summarize(runs: List[Dict[str, Any]], resamples: int = 10_000) -> Dict[str, Any]:
  """Per scenario and method: the paper's metrics, mean over seeds with 95% bootstrap intervals.
  The final time metric's limit (Table A9: "the time when IMPALA finishes training for 5M
  steps") is IMPALA's mean wall time over its seeds for the other methods, where IMPALA ran;
  IMPALA's own value is each seed's final metric (its limit is its own end). A seed with no
  evaluation before the limit has no score: `reached` says how many had one."""
  out: Dict[str, Any] = {}
  for scenario in dict.fromkeys(r["scenario"] for r in runs):
    here = [r for r in runs if r["scenario"] == scenario]
    impala = [r["wall_time_s"] for r in here if r["method"] == "impala"]
    limit = sum(impala) / len(impala) if impala else None
    rows = {}
    for method in (m for m in METHODS if any(r["method"] == m for r in here)):
      mine = [r for r in here if r["method"] == method]
      row: Dict[str, Any] = {
          "seeds": [r["seed"] for r in mine],
          "env_steps": [r["env_steps"] for r in mine],
          "sps": _ci([r["sps"] for r in mine], resamples),
          "wall_time_min": _ci([r["wall_time_s"] / 60 for r in mine], resamples),
          "final": _ci([r["final"] for r in mine if r["final"] is not None], resamples),
          "required_min": {t: _reached([r["required"][t]["minutes"] for r in mine], resamples)
                           for t in map(str, TARGETS)},
          "required_steps": {t: _reached([r["required"][t]["env_steps"] for r in mine],
                                         resamples) for t in map(str, TARGETS)},
          "idle_share": _idle(mine)}
      if limit is not None:
        scores = []
        for r in mine:
          run = metrics.Run(path=r["path"], summary={}, evals=tuple(
              {"env_steps": e["env_steps"], "wall_time_s": e["wall_time_s"],
               "mean_return": e["score"]} for e in r["evals"]))
          v = r["final"] if method == "impala" else metrics.final_time_metric(run, limit)
          if v is not None:
            scores.append(v)
        row["final_time"] = {**(_ci(scores, resamples) or {"mean": None}),
                             "reached": len(scores), "runs": len(mine)}
      rows[method] = row
    out[scenario] = {"budget": max(r["total_steps"] for r in here), "time_limit_s": limit,
                     "methods": rows}
  return out


# summary.json's idle seconds are summed over the executors and over the actor threads.
IDLE_PARTS = (("executors_waiting_for_actions", "num_executors"),
              ("executors_at_barrier", "num_executors"), ("actors", "num_actors"),
              ("learner", None))


def _idle_share(s: Dict[str, Any]) -> Dict[str, float]:
  """The share of the run's wall time each executor, actor and the learner spent waiting (mean
  over executors and actors). `--mode=async` measures no executor waits: left out."""
  idle, wall = s.get("idle") or {}, float(s.get("wall_time_s") or 0)
  out = {}
  for key, per in IDLE_PARTS:
    if key in idle and wall > 0 and not (s.get("mode") == "async" and key.startswith("exec")):
      out[key] = float(idle[key]) / (wall * (int(s.get(per) or 1) if per else 1))
  return out


def _idle(runs: List[Dict[str, Any]]) -> Dict[str, float]:
  """Mean over seeds of each part's idle share (`_idle_share`)."""
  keys = [k for k, _ in IDLE_PARTS if all(k in r["idle_share"] for r in runs)]
  return {k: sum(r["idle_share"][k] for r in runs) / len(runs) for k in keys}


def identity_report(results: str) -> Optional[Dict[str, Any]]:
  root = os.path.join(results, "actor_counts")
  if not os.path.isdir(root):
    return None
  rows = []
  names = [n for n in os.listdir(root) if n.startswith("actors") and n[len("actors"):].isdigit()]
  for name in sorted(names, key=lambda n: int(n[len("actors"):])):
    path = os.path.join(root, name)
    if launch.finished(path):
      with open(os.path.join(path, "summary.json")) as f:
        s = json.load(f)
      rows.append({"num_actors": s["num_actors"], "env": s["env"], "seed": s["seed"],
                   "env_steps": s["env_steps"], "sps": s["sps"],
                   "param_sha256": s["param_sha256"],
                   "eval_scores": [e["mean_return"] for e in s["eval"]],
                   "episode_returns_sha256": _sha([s["episode_returns"]])})
  if not rows:
    return None
  return {"runs": rows, "identical": len({(r["param_sha256"], tuple(r["eval_scores"]),
                                           r["episode_returns_sha256"]) for r in rows}) == 1}


def _sha(obj) -> str:
  import hashlib  # pylint: disable=import-outside-toplevel
  return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def build_report(results: str, resamples: int, settings: Dict[str, Any]) -> Dict[str, Any]:
  runs = load_runs(results)
  return {"title": "HTS-RL GFootball learning results (Table 2 / A10, Table A9, Figs. A5/A6)",
          "settings": settings, "targets": list(TARGETS), "paper": PAPER,
          "summary": summarize(runs, resamples), "identity": identity_report(results),
          "runs": runs}


# ---------------------------------------------------------------------------------------------
# Markdown, from results.json only.

def _fmt(ci: Optional[Dict[str, Any]], fmt: str = "{:.1f}") -> str:
  if not ci or ci.get("mean") is None:
    if ci and "runs" in ci:
      return f"- ({ci['reached']}/{ci['runs']})"
    return "-"
  s = fmt.format(ci["mean"])
  if ci.get("n", 1) > 1:
    s += f" [{fmt.format(ci['lo'])}, {fmt.format(ci['hi'])}]"
  if "reached" in ci and ci["reached"] < ci["runs"]:
    s += f" ({ci['reached']}/{ci['runs']})"
  return s


def _short(scenario: str) -> str:
  return scenario.replace("academy_", "").replace("_", " ").capitalize()


def render_markdown(report: Dict[str, Any]) -> str:
  """The tables of `report` (results.json) as markdown."""
  summ, paper = report["summary"], report["paper"]
  methods = [m for m in METHODS if any(m in s["methods"] for s in summ.values())]
  st = report["settings"]
  commit = report["commit"]
  commit = commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")
  networks = sorted({str(r.get("network")) for r in report["runs"]}) or ["-"]
  lines = [
      f"Runs on {report['machine']['cores']} CPU cores "
      f"({report['machine']['cpu'] or report['machine']['platform']}), one at a time; report "
      f"written {report['date']} at commit `{commit}`. Every method: {st['num_envs']} envs, "
      f"{st['representation']} observations, network {'/'.join(networks)}. Cells: mean over "
      "seeds [95% bootstrap interval]; '-' where a seed's budget ran out before the target "
      "(k/n: seeds that reached it). Paper (Liu et al. 2020): 4 GPUs, 16 envs, extracted maps "
      "and the CNN, 5M steps, 5 seeds; its ± is a spread over seeds whose statistic it does "
      "not state.", ""]
  runs = report.get("runs", [])
  if any(not r.get("host_recorded") for r in runs):
    lines[0:0] = ["**These runs are to be re-run** (the GFootball protocol issue): they were made "
                  "before evaluations played new episodes (every evaluation of a run replayed the "
                  "same 10 episodes, so the last-10-evaluations metrics are over 10 different "
                  "episodes, not 100) and before runs recorded their host (the wall-time columns "
                  "mix hosts about 3x apart in speed). The running averages below count full "
                  "windows of 10 evaluations only.", ""]
  if not summ:
    return "\n".join(lines + ["No finished runs yet."]) + "\n"
  head = "| scenario (budget) | " + " | ".join(LABELS[m] for m in methods)
  sep = "|---" * (len(methods) + 1) + "|"

  def table(title, cell, paper_cell=None, final_time=False):
    """One row per scenario; `paper_cell(paper figures, method)` adds the paper's beside ours."""
    lines.extend([f"**{title}**", "", head + " |", sep])
    for scenario, s in summ.items():
      cells = []
      for m in methods:
        here = cell(s["methods"][m]) if m in s["methods"] else ""
        if paper_cell and paper.get(scenario):
          here += f" (paper: {paper_cell(paper[scenario], m)})"
        cells.append(here)
      limit = f"; IMPALA {s['time_limit_s'] / 60:.1f} min" if final_time and \
          s["time_limit_s"] else ""
      lines.append(f"| {_short(scenario)} ({s['budget']:,} steps{limit}) | " +
                   " | ".join(cells) + " |")
    lines.append("")

  def paper_req(p, m):
    return " / ".join("-" if v is None else f"{v:.1f}" for v in p["required_min"][m])

  table("Required time (minutes to a running-average score of 0.4 / 0.8, over full windows of 10 "
        "evaluations; Table 2 / A10)",
        lambda r: " / ".join(_fmt(r["required_min"][t]) for t in ("0.4", "0.8")), paper_req)
  table("Env steps to a running-average score of 0.4 / 0.8, over full windows of 10 evaluations "
        "(data efficiency, Appendix H)",
        lambda r: " / ".join(_fmt(r["required_steps"][t], "{:,.0f}") for t in ("0.4", "0.8")))
  if any(s["time_limit_s"] for s in summ.values()):
    table("Final time metric (score of the last 10 evaluations by IMPALA's mean wall time, "
          "which the first column gives; IMPALA's own: its final metric; Table A9)",
          lambda r: _fmt(r.get("final_time"), "{:.2f}"),
          lambda p, m: "{:.2f} ± {:.2f}".format(*p["final_time"][m]), final_time=True)
  table("Final metric (last 10 evaluations x 10 episodes) and SPS",
        lambda r: f"{_fmt(r['final'], '{:.2f}')}; {_fmt(r['sps'], '{:,.0f}')} SPS")
  names = {"executors_waiting_for_actions": "executors wait for actions",
           "executors_at_barrier": "at the barrier", "actors": "actors", "learner": "learner"}
  table("Wall time of the whole budget (minutes); share of it each part waited (executors and "
        "actors: mean over them)", lambda r: _fmt(r["wall_time_min"]) + "; " + ", ".join(
            f"{names[k]} {v:.0%}" for k, v in r["idle_share"].items()))
  ident = report.get("identity")
  if ident:
    lines.extend(["**The same run with 1, 2 and 4 actors (Tables 4/5)**", "",
                  "| actors | env | seed | env steps | SPS | param_sha256 | evaluation scores |",
                  "|---|---|---|---|---|---|---|"])
    for r in ident["runs"]:
      scores = ", ".join(f"{x:.1f}" for x in r["eval_scores"][-5:])
      lines.append(f"| {r['num_actors']} | {r['env']} | {r['seed']} | {r['env_steps']:,} | "
                   f"{r['sps']:,.0f} | `{r['param_sha256'][:16]}` | ... {scores} |")
    lines.extend(["", "Identical parameters and scores: " +
                  ("yes" if ident["identical"] else "**no**"), ""])
  return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------
# Curves.

def plot_curves(report: Dict[str, Any], out_dir: str, resamples: int = 2_000) -> List[str]:
  """Score vs env steps (Fig. A6) and vs wall time (Fig. A5): per method the mean evaluation
  score over seeds (each seed's last score carried forward) and its 95% bootstrap band."""
  scenarios = list(report["summary"])
  if not scenarios:
    return []
  paths = []
  for axis, xlabel, name, scale in (("env_steps", "env steps", "score_vs_env_steps", 1.0),
                                    ("wall_time_s", "wall time (minutes)", "score_vs_wall_time",
                                     1 / 60)):
    panels = [(_short(scenario), {
        LABELS[m]: [([e[axis] * scale for e in r["evals"]], [e["score"] for e in r["evals"]])
                    for r in report["runs"]
                    if r["scenario"] == scenario and r["method"] == m and r["evals"]]
        for m in METHODS}) for scenario in scenarios]
    paths.append(plots.band_figure(os.path.join(out_dir, f"{name}.png"), panels, xlabel=xlabel,
                                   ylabel="evaluation score (10 episodes)", ylim=(-0.05, 1.05),
                                   resamples=resamples))
  return paths


def write_report(results: str, resamples: int, settings: Dict[str, Any],
                 readme: Optional[str]) -> Dict[str, Any]:
  """results.json (with its provenance), tables.md, README's block and the curves."""
  report = publish.publish(results, build_report(results, resamples, settings), render_markdown,
                           BLOCK, readme, table="tables.md")
  report["plots"] = plot_curves(report, results)
  return report


def main(argv):
  if len(argv) > 1:
    raise grid.GridError(f"unexpected arguments: {' '.join(argv[1:])}")
  try:
    overrides = _parse_steps(FLAGS.steps)
    seeds = [int(s) for s in FLAGS.seeds]
    scale = dict(num_envs=FLAGS.num_envs, num_executors=FLAGS.num_executors,
                 ppo_actors=FLAGS.ppo_actors, impala_actors=FLAGS.impala_actors,
                 representation=FLAGS.representation, extra=FLAGS.extra)
    runs = grid.paired_blocks(FLAGS.scenarios, FLAGS.methods, seeds, lambda sc, m, seed: run_flags(
        m, sc, seed, budget_of(sc, overrides), **scale))
    actor_counts = [int(n) for n in FLAGS.actor_counts]
    identity = [(n, run_flags("hts_ppo", FLAGS.identity_scenario, FLAGS.identity_seed,
                              FLAGS.identity_steps or budget_of(FLAGS.identity_scenario,
                                                                overrides),
                              num_actors=n, **scale)) for n in actor_counts]
  except ValueError as e:  # int()
    raise grid.GridError(str(e)) from None
  results = FLAGS.results
  failed = []
  if not FLAGS.report_only:
    failed = grid.run_all(runs, results, dry_run=FLAGS.dry_run)
    for n, values in identity:
      logdir = os.path.join(results, "actor_counts", f"actors{n}")
      if not launch.launch(values, logdir, dry_run=FLAGS.dry_run) and not FLAGS.dry_run:
        failed.append(logdir)
  if FLAGS.dry_run:
    return []
  settings = {**{k: v for k, v in scale.items() if k != "extra"}, "extra": list(FLAGS.extra),
              "budgets": {**BUDGETS, **overrides}, "evals_per_run": EVALS_PER_RUN,
              "eval_episodes": 10, "methods": {m: {"preset": p, **f} for m, (p, f)
                                               in METHODS.items()}}
  readme = publish.readme_path() if FLAGS.readme else None
  report = write_report(results, FLAGS.resamples, settings, readme)
  print(render_markdown(report), end="")
  for p in report["plots"]:
    print(f"wrote {p}")
  return failed
