r"""The paper's GFootball learning results (Table 2 / A10, Table A9, Tables 4/5, Figs. A5/A6) as a
grid record (`GRID`; results/gfootball/PROTOCOL.md is rendered from it).

  hts-reproduce gfootball                     # the protocol's grid, then the report
  hts-reproduce gfootball --scenarios=academy_empty_goal_close --seeds=0
  hts-reproduce gfootball --methods=hts_ppo_delayed    # the fourth column
  hts-reproduce gfootball --benchmark         # the interleaved throughput benchmark per scenario
  hts-reproduce gfootball --report_only       # tables, plots, JSON from the runs
  hts-reproduce gfootball --actor_counts=1,2,4 --methods= --scenarios=   # Tables 4/5

(from a clone: `python -m experiments.reproduce gfootball ...`). Each (scenario, seed) is a paired
block of its methods, each run one fresh training process into
`<results>/runs/<scenario>/<method>/seed<k>/`; a finished run is never run again, an interrupted
one is run again from the start (a run's wall time comes from one sitting). A scenario outside
the protocol runs with its `--steps=SCENARIO=N`. The report (`hts_jax.results.driver.paper` with
`gfootball_report`'s parts) writes results.json, tables.md (also docs/results.md's block), the
score curves (Figs. A5/A6) and README's summary block, from the runs' own files only.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Sequence

from hts_jax.results import compare, grid, paper_report, publish, render
from hts_jax.results import gfootball_markdown as md
from hts_jax.results.gfootball_markdown import partial, ratio_cell, short
from hts_jax.results.gfootball_report import LABELS, TARGETS, extras
from hts_jax.results.publish import fmt_ci, fmt_steps
from hts_jax.results.record import Grid, Identity, Method, Option, Paper, Section, Table, Task

BUDGETS = {"academy_empty_goal_close": 400_000, "academy_empty_goal": 800_000,
           "academy_run_to_score": 1_000_000}
SEEDS = {"academy_empty_goal_close": (0, 1, 2, 3, 4), "academy_empty_goal": (0, 1, 2),
         "academy_run_to_score": (0, 1, 2)}
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


def _task(name: str, budget: int = 0, seeds: Sequence[int] = ()) -> Task:
  return Task(name, f"gfootball:{name}", {"env": f"gfootball:{name}",
                                          "lr_decay_steps": 5_000_000, "tensorboard": False,
                                          "log_every_s": 60}, budget, tuple(seeds),
              budget // 50, evals=50)


def adjust(out: Dict[str, Any], method: str, o: Mapping[str, Any]) -> Dict[str, Any]:
  """The scale options over a run's flags: envs and executors of every method, the actors of
  PPO and IMPALA (each IMPALA actor owns whole executors; its batch is Table A6's 8 one-env
  unrolls of 32 steps, whatever the actors' share), the observations, extra flags."""
  envs, executors, ppo, impala = (o["num_envs"], o["num_executors"], o["ppo_actors"],
                                  o["impala_actors"])
  if min(envs, executors, ppo, impala) < 1:
    raise grid.GridError("--num_envs, --num_executors, --ppo_actors and --impala_actors "
                                "must be >= 1")
  stacked = o["representation"] not in ("simple115", "simple115v2")
  out = {**out, "env_kwargs": json.dumps({"representation": o["representation"],
                                          "stacked": stacked}, separators=(",", ":")),
         "num_envs": envs, "num_executors": executors, "num_actors": ppo}
  if out["preset"] == "gfootball_impala":
    if envs % impala or executors % impala or 8 % (envs // impala):
      raise grid.GridError(f"impala: {impala} actors must divide num_envs ({envs}) and "
                                  f"num_executors ({executors}), each actor's envs dividing 8")
    out.update(num_actors=impala, async_batch_unrolls=8 // (envs // impala))
  for item in o["extra"]:
    name, sep, value = item.partition("=")
    if not sep:
      raise grid.GridError(f"--extra: expected NAME=VALUE, got {item!r}")
    out[name] = value
  return out


_req = paper_report.paper_cell(
    PAPER, "required_min", lambda v: " / ".join("-" if x is None else f"{x:.1f}" for x in v))
_final_time = paper_report.paper_cell(PAPER, "final_time", lambda v: "{:.2f} ± {:.2f}".format(*v))
BOTH = " / ".join(TARGETS)


def _both(get) -> Any:
  """A cell: `partial` then `get(scenario, method, row, report, target)` for each target."""
  return lambda sc, m, r, out: partial(out["summary"][sc], m) + " / ".join(
      get(sc, m, r, out, t) for t in TARGETS)


def _one_host_title(out: Dict[str, Any]) -> Any:
  hosts = out.get("hosts") or []
  return (f"Required time as measured (minutes to {BOTH}, evaluations included) on {hosts[0]}"
          if len(hosts) == 1 else None)


def _final_time_row(sc: str, s: Dict[str, Any]) -> str:
  limit = (f"; IMPALA {s['time_limit_s'] / 60:.1f} min"
           if s["time_limit_s"] and len(s.get("hosts", ())) < 2 else "")
  return f"{short(sc)} ({s['budget']:,} steps{limit})"


def _notes(out: Dict[str, Any]) -> str:
  o = out["protocol"]["settings"]["options"]
  networks = sorted({str(r.get("network")) for r in out["runs"]}) or ["-"]
  redo = ("**These runs are to be re-run** (the GFootball protocol issue): they were made before "
          "evaluations played new episodes and before runs recorded their host. "
          if any(not r.get("host_recorded") for r in out["runs"]) else "")
  return (f"{redo}Protocol: `results/gfootball/PROTOCOL.md` (budgets, seeds and schedules fixed "
          f"before the runs; every method's learning rate over the paper's 5M-step schedule). "
          f"Every method: {o['num_envs']} envs, {o['representation']} observations, network "
          f"{'/'.join(networks)}; each (scenario, seed) a block of its methods back to back on "
          "one host. Cells: mean over seeds [min, max] (fewer than 6 seeds: no interval "
          "claimed); '≥' where a seed's budget ran out before the target: each miss counted at "
          "its run's end, a lower bound (k/n: seeds that reached it). Paper (Liu et al. 2020): "
          "4 GPUs, 16 envs, extracted maps and the CNN, "
          "5M steps, 5 seeds; its ± is a spread over seeds whose statistic it does not state.")


def _steps_row(sc: str, s: Dict[str, Any]) -> str:
  return f"{short(sc)} ({s['budget']:,} steps)"


PROSE = (
    ("Scale",
     "Every value of the presets is cited in `hts_jax/presets.py`. Deviations from Table A6 at "
     "this scale: 8 envs instead of 16, `simple115v2` observations and the MLP instead of "
     "extracted maps and the CNN (a 2-core CPU, not the paper's 4-GPU desktop); PPO with 1 actor "
     "thread; IMPALA with 4 actors each owning one executor of 2 envs, a learner batch of 4 "
     "two-env unrolls of 32 steps (= 8 one-env unrolls, Table A6's batch 8); budgets below 5M. "
     "The options `--num_envs`, `--num_executors`, `--ppo_actors`, `--impala_actors`, "
     "`--representation` and `--extra` change the scale (off the protocol)."),
    ("Schedule, evaluation, targets",
     "Every method decays its learning rate linearly to 0 over the paper's 5M env steps "
     "(`--lr_decay_steps=5000000`), so each run is the beginning of the paper's schedule (at 400k "
     "steps the rate is still 92% of its start): the paper compares the methods on one 5M-step "
     "schedule, and decaying each to 0 over a short budget would change them unequally (IMPALA "
     "takes about 4x fewer optimizer steps per env step than PPO here). Evaluation: 50 per run "
     "(the paper's every 100k of 5M), 10 episodes each with sampled actions (the released "
     "evaluation), every evaluation new episodes. Targets: 0.4 and 0.8 of the running average "
     "over full windows of the 10 most recent evaluations (Table 2 / A10); the final metric is "
     "the mean of the last 10 evaluations; the final time metric (Table A9) is the final metric "
     "by the wall time of the same block's IMPALA run. Tables 4/5: HTS-PPO on "
     "`academy_empty_goal_close`, seed 0, 100,000 steps, with 1, 2 and 4 actors "
     "(`--actor_counts=1,2,4`): identical `param_sha256` and scores expected."),
    ("Time metrics",
     "Wall time depends on the host, so required time is given two ways and two hosts' minutes "
     "are never side by side: paired ratios per block (each method's minutes to a target over "
     "HTS-PPO's in the same block, on one host kind), and env steps to a target (host-"
     "independent) over the method's median SPS in one interleaved throughput benchmark on one "
     "host (`--benchmark`: 3 repeats of 30,000 steps each, no evaluation), minutes on that host, "
     "training only. A block split across sittings keeps its finished runs; one whose runs "
     "differ in host kind is left out of the paired ratios and listed."),
    ("IMPALA validation",
     "Table A5's \"the reported IMPALA results match the original papers\": `gfootball_impala` "
     "at this scale on `academy_empty_goal_close`, seeds 0 and 1, a 1,000,000-step budget with "
     "the 5M-step schedule, an evaluation every 20,000 steps, stopping once the running average "
     "over a full window of 10 evaluations reaches 0.9 (`--stop_at_return=0.9`). It passes when "
     "both seeds stop there within the budget. The runs started at commit ddc1190, before this "
     "protocol, with that command (`results/gfootball/impala_validation/`)."))
IDLE = {"executors_waiting_for_actions": "executors wait for actions",
        "executors_at_barrier": "at the barrier", "actors": "actors", "learner": "learner"}
DOCS = Table(
    columns=(), head="scenario (budget)", row=_steps_row, notes=_notes, doc="docs/results.md",
    block=publish.Block("gfootball-tables", "gfootball"), after=md.docs_tail, sections=(
        Section(f"Env steps to a running-average score of {BOTH}, over full windows of 10 "
                "evaluations (host-independent; data efficiency, Appendix H)",
                _both(lambda sc, m, r, out, t: fmt_steps(r["required_steps"][t]))),
        Section(f"Required time relative to HTS-PPO's, to {BOTH}: per block (one seed, one host) "
                "the method's minutes over HTS-PPO's; geometric mean over blocks [min, max] (n: "
                "blocks on one host kind, no run marked, calibrations within 1.5x; ≥ / ≤: a "
                "bound, where a run missed the target and counts at its end)",
                _both(lambda sc, m, r, out, t: ratio_cell(out, sc, m, t, "1 (reference)"))),
        Section(paper_report.bench_title(
                    f"Required minutes from env steps to {BOTH} over the benchmark's SPS on "
                    "{host} (training only, no evaluations; the benchmark's median SPS in "
                    "parentheses; Table 2 / A10)"),
                lambda sc, m, r, out: partial(out["summary"][sc], m)
                + paper_report.bench_minutes(sc, m, out) + md.bench_sps(out, sc, m)
                + _req(sc, m)),
        Section(_one_host_title, lambda sc, m, r, out: _both(
            lambda sc, m, r, out, t: fmt_ci(r["required_min"][t]))(sc, m, r, out)
                + _req(sc, m)),
        Section(lambda out: "Final time metric (score of the last 10 evaluations by the wall "
                "time of the same block's IMPALA run; IMPALA's own: its final metric; Table A9)"
                if any(s["time_limit_s"] for s in out["summary"].values()) else None,
                lambda sc, m, r, out: partial(out["summary"][sc], m)
                + fmt_ci(r.get("final_time"), "{:.2f}") + _final_time(sc, m),
                row=_final_time_row),
        Section("Final metric (last 10 evaluations x 10 episodes) and SPS (per host kind where a "
                "scenario's runs ran on several)", lambda sc, m, r, out: partial(
                    out["summary"][sc], m) + f"{fmt_ci(r['final'], '{:.2f}')}; "
                + md.per_host(r, "sps", "{:,.0f}", " SPS")),
        Section("Wall time of the whole budget (minutes, per host kind where a scenario's runs "
                "ran on several); share of it each part waited (executors and actors: mean over "
                "them)", lambda sc, m, r, out: partial(out["summary"][sc], m)
                + md.per_host(r, "wall_time_min", "{:.1f}", "") + "; " + ", ".join(
                    f"{IDLE[k]} {v:.0%}" for k, v in r["idle_share"].items())),
        Section(md.UPDATE_TITLE, md.update_cell, data="update_diagnostics", row=md.update_row,
                head="scenario (first env steps, clip)"),
        Section(md.throughput_title, md.throughput_cell, data="run_throughput",
                row=lambda sc, d: short(sc), head="scenario")))
README = Table(
    columns=(), head="scenario (budget, seeds)", aggregates=False, after=md.readme_tail,
    block=publish.Block("gfootball-results", "gfootball"), doc="docs/results.md",
    row=lambda sc, s: f"{short(sc)} ({s['budget']:,}, {md.seeds_of(s)})",
    notes=lambda out: (
        "The summary (the protocol is `results/gfootball/PROTOCOL.md`; every table below). "
        "Cells: env steps to a running-average "
        f"score of {TARGETS[-1]} (mean over seeds; ≥ with k/n where some seeds missed it: a "
        "miss counted at its run's end); time to "
        f"{TARGETS[-1]} relative to HTS-PPO's, paired per block (geometric mean over blocks) / "
        "from env steps over the interleaved benchmark's SPS; final metric (last 10 "
        "evaluations) / final time metric (by the block's IMPALA wall time, Table A9)."),
    sections=(Section("", md.readme_cell),))

GRID = Grid(
    name="gfootball", title="HTS-RL GFootball learning results (Table 2 / A10, Table A9, "
    "Figs. A5/A6)", results="results/gfootball", task_flag="scenarios",
    question="Does HTS-PPO reach GFootball's academy scores in less time than synchronous PPO "
             "and IMPALA (Table 2 / A10), end where they end by IMPALA's wall time (Table A9), "
             "and give the same run whatever its actor count (Tables 4/5)?",
    methods=(
        Method("hts_ppo", {"preset": "gfootball_ppo", "mode": "hts", "correction": "none"},
               "HTS-PPO with the presets' correction (`--correction=none`, the corrections "
               "study's pick)", short=LABELS["hts_ppo"]),
        Method("sync_ppo", {"preset": "gfootball_ppo", "mode": "sync"},
               "synchronous PPO, the same hyperparameters", short=LABELS["sync_ppo"]),
        Method("impala", {"preset": "gfootball_impala"},
               "IMPALA, Table A6's column (`--mode=async`, V-trace)", short=LABELS["impala"]),
        Method("hts_ppo_behaviour", {"preset": "gfootball_ppo", "mode": "hts",
                                     "correction": "behaviour"},
               "HTS-PPO as the released code runs it (`--correction=behaviour`): the first "
               "blocks' runs, before the corrections study (opt-in)", default=False,
               short=LABELS["hts_ppo_behaviour"]),
        Method("sync_ppo_r1", {"preset": "gfootball_ppo", "mode": "sync"},
               "synchronous PPO's runs of those first blocks (kept, not tabulated: "
               "`hts_ppo_behaviour`'s pairs and the corrections study's `sync_ppo`; opt-in)",
               default=False),
        Method("hts_ppo_delayed", {"preset": "gfootball_ppo", "mode": "hts",
                                   "correction": "delayed"},
               "the paper's Eq. 6 delayed gradient: a fourth column, run after a scenario's "
               "three-method blocks where time allows (opt-in)", default=False,
               short=LABELS["hts_ppo_delayed"])),
    tasks=tuple(_task(sc, BUDGETS[sc], SEEDS[sc]) for sc in BUDGETS),
    make_task=_task, reference="hts_ppo", tables=(DOCS, README),
    options=(Option("num_envs", 8, "Envs of every method."),
             Option("num_executors", 4, "Executor processes of every method."),
             Option("ppo_actors", 1, "Actor threads of HTS-PPO and sync PPO."),
             Option("impala_actors", 4, "IMPALA's actors (each owns whole executors)."),
             Option("representation", "simple115v2", "GFootball observations: simple115v2 "
                    "(MLP) or extracted (the paper's CNN)."),
             Option("extra", [], "More launcher flags for every run, e.g. "
                    "learner_devices=0,1.")),
    adjust=adjust,
    identity=Identity("academy_empty_goal_close", "hts_ppo", 0, 100_000,
                      (1, 2, 4)),
    paper=Paper(spec=compare.Spec(
        methods=list(LABELS), reference="hts_ppo", limit_method="impala",
        targets=lambda sc, runs: {t: float(t) for t in TARGETS}, scenarios=tuple(BUDGETS),
        baseline="sync_ppo"), figures=PAPER, benchmark=(3, 30_000), benchmarked=tuple(LABELS),
        curves=("score", "evaluation score (10 episodes)", (-0.05, 1.05)),
        settings={"targets": list(TARGETS)}, extras=extras, panel=short),
    prose=PROSE, fixed="2026-11-26, before any run of this grid (the grid of the earlier "
    "protocol, with budgets chosen after PPO's runs and each method's learning rate decayed over "
    "its own budget, left in git history)",
    changes=(render.STATS_RULES + (
        " The runs whose commit messages disclosed other work on the machine now carry that "
        "mark (`shared_machine.json`, quoting the message): close seeds 0 (hts_ppo, sync_ppo: "
        "a46617a), 1 and 2 (hts_ppo, sync_ppo, impala: 1b05c4f, 5bff3bc), run to score impala "
        "seed 1 (594ddf5)."),
        "2026-11-28: this file is rendered from the grid's record (`GRID`), no value changed; "
        "`--steps` takes N for every scenario or SCENARIO=N; `--identity_scenario` is "
        "`--identity_task`.", render.CENSORED_MEANS,
        "2026-11-28: the corrections study (results/corrections) made `none` the presets' "
        "correction; `hts_ppo` names `--correction=behaviour`, the preset's until then and the "
        "one its runs ran with (the same flags and bits as before).",
        "2026-11-28, the headline re-run (issue 54): `hts_ppo` is HTS-PPO with `none`; the "
        "first blocks' runs moved, unchanged, to `hts_ppo_behaviour` and `sync_ppo_r1` (their "
        "benchmark entry and the Tables 4/5 runs are `hts_ppo_behaviour`'s); `hts_ppo` and "
        "`sync_ppo` run again as new paired blocks on one host kind with nothing else running, "
        "and IMPALA's runs are kept (its code path unchanged since they ran). A paired ratio "
        "now needs its two runs on one host kind, not its whole block (`compare.paired`): a "
        "re-run block's new runs pair with each other while its kept runs ran elsewhere; no "
        "committed ratio of this or the other paper grids moved.",
        "2026-11-29: Tables 4/5 (actor counts) re-run with `hts_ppo` (`none`), the presets' "
        "correction; `hts_ppo_behaviour`'s runs of them are in git history (5539ee9).",
        render.PAIRED_CALIBRATION, "2026-11-29: the throughput benchmark re-run with `hts_ppo` "
        "(`none`) beside `sync_ppo`, `impala` and `hts_ppo_behaviour` in one sitting, nothing else "
        "running; the 2026-11-26 benchmark of the three is in git history (6d87b90).",
        render.STOLEN_CPU,
        "2026-12-05: run to score's `sync_ppo` seed 1 carries the mark its commit message "
        "disclosed (87cfbc3: report tests at nice 19 beside it), as its twin `impala` seed 1 has "
        "since 2026-11-27; the ratios it moved, before and after, are in docs/results.md "
        "(`rules_changes --change=marks`). The pair rule of 2026-11-29 was registered after close "
        "seeds 1 and 2 had been committed (5539ee9), not only before seeds 3 and 4: README's "
        "headline and docs/results.md show each time ratio under the earlier rules where it "
        "reads otherwise (`stats.PAIR_RULES`)."))
