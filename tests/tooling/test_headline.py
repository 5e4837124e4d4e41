"""The headline: its paired ratios by golden values, its bottom line's limits, README's
sentences, and the committed README and docs/results.md blocks and
results/headline.json as the committed grids' JSON rendered."""

import json
import os

import pytest

from hts_jax.analysis import stats
from hts_jax.results import compare, headline
from tests.support import ROOT


def _run(method, seed, minutes, steps, sps, host="A x2", marked=None, end_steps=400_000):
  return {"task": "academy_empty_goal_close", "method": method, "seed": seed, "host": host,
          "marked": marked, "shared": marked, "calibration_ms": 60.0, "sps": sps,
          "env_steps": end_steps,
          "wall_time_s": end_steps / sps,
          "required": {t: {"minutes": minutes, "env_steps": steps} for t in ("0.4", "0.8")},
          "idle_share": {"executors_waiting_for_actions": 0.1 * (seed + 1)}}


def _report(runs):
  spec = compare.Spec(methods=["hts_ppo", "sync_ppo", "impala"], reference="hts_ppo",
                      limit_method="impala", targets=lambda sc, runs: {"0.8": 0.8})
  for r in runs:
    r["targets"] = {"0.8": 0.8}
  return {"tasks": {"academy_empty_goal_close": {"targets": {"0.4": 0.4, "0.8": 0.8},
                                                   "budget": 400_000}},
          "protocol": {"settings": {"tasks": {"academy_empty_goal_close": {"seeds": [0, 1, 2]}}}},
          "runs": runs, "paired": compare.paired_ratios(runs, spec)}


def test_the_three_paired_ratios_by_golden_values():
  runs = [_run("hts_ppo", 0, 10.0, 100_000, 400.0), _run("sync_ppo", 0, 20.0, 80_000, 200.0),
          _run("hts_ppo", 1, 10.0, 200_000, 400.0), _run("sync_ppo", 1, 5.0, 50_000, 400.0),
          # Seed 2: sync missed (censored at its run's end); IMPALA's pair ran on another host.
          _run("hts_ppo", 2, 10.0, 100_000, 400.0), _run("sync_ppo", 2, None, None, 100.0),
          _run("impala", 2, 1.0, 10_000, 1000.0, host="B x2"),
          # A shared machine leaves its block out of every ratio.
          _run("hts_ppo", 3, 1.0, 1_000, 400.0, marked="marked"),
          _run("sync_ppo", 3, 1.0, 1_000, 400.0)]
  row, = headline.task_rows(_report(runs), "hts_ppo", ("sync_ppo", "impala"),
                            {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO", "impala": "IMPALA"})
  assert (row["target"], row["hts_seeds"], row["planned_seeds"]) == ("0.8", [0, 1, 2, 3], 3)
  sync = row["methods"]["sync_ppo"]
  # Each method's seeds are its own: IMPALA ran one.
  assert (sync["seeds"], row["methods"]["impala"]["seeds"]) == ([0, 1, 2, 3], [2])
  first, second = headline.render("table", {"tasks": [row]}).splitlines()[2:4]
  assert "| Empty goal close (0.8; 3) " in first and "| sync PPO (4) / HTS-PPO (4) " in first
  assert "| IMPALA (1) / HTS-PPO (4) " in second
  assert sync["time"]["blocks"] == [0, 1, 2] and sync["censored"] == [2]
  no_block = {"time": stats.ratio([]) | {"shared": [3]}, "neither": []}
  assert headline.render("spread", no_block) == "no block counts yet (1 left out by the pair rule)"
  # Of the 4 blocks with both runs, 3 count (block 3 shared the machine); IMPALA's one block ran
  # on two host kinds.
  assert headline.render("spread", sync) == "≥1.88x [0.50, 6.67] (n=3 of 4)"
  assert headline.render("spread", row["methods"]["impala"]) == (
      "no paired block yet (1 on two host kinds)")
  # Time: 2, 0.5 and sync's whole run (400k steps at 100 SPS = 66.7 min) over 10: a lower bound.
  assert sync["time"]["ratios"] == pytest.approx([2.0, 0.5, 400_000 / 100 / 60 / 10])
  assert sync["time"]["bound"] == "lower"
  # Throughput: HTS's SPS over sync's, per block.
  assert sync["throughput"]["ratios"] == pytest.approx([2.0, 1.0, 4.0])
  assert sync["throughput"]["mean"] == pytest.approx(2.0)
  # Sample efficiency: sync's env steps over HTS's, the miss at its run's end; env steps do not
  # depend on the host or a shared machine, so the shared block 3 counts here.
  assert sync["steps"]["ratios"] == pytest.approx([0.8, 0.25, 4.0, 1.0])
  assert sync["steps"]["mean"] == pytest.approx((0.8 * 0.25 * 4.0 * 1.0) ** (1 / 4))
  assert sync["time"]["shared"] == [3]
  # IMPALA's pair ran on two host kinds: no time or SPS ratio, but its env steps count.
  impala = row["methods"]["impala"]
  assert impala["time"]["n"] == 0 and impala["throughput"]["n"] == 0
  assert impala["steps"]["ratios"] == pytest.approx([0.1]) and impala["censored"] == []
  # The executors' shares over HTS's runs that shared no machine (seeds 0-2).
  shares = headline.executor_shares(_report(runs), "hts_ppo")
  assert shares == pytest.approx({"stepping envs": 0.8, "waiting for actions": 0.2,
                                  "at the barrier": 0.0, "runs": 3})


def test_the_bottom_line_says_where_hts_is_not_sooner_and_why():
  # HTS missed where sync reached it: sync's time over HTS's is an upper bound below 1.
  runs = [_run("hts_ppo", 0, None, None, 500.0), _run("sync_ppo", 0, 10.0, 100_000, 400.0),
          _run("hts_ppo", 1, 20.0, 300_000, 500.0), _run("sync_ppo", 1, 10.0, 100_000, 400.0)]
  row, = headline.task_rows(_report(runs), "hts_ppo", ("sync_ppo",),
                            {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO"})
  sync = row["methods"]["sync_ppo"]
  assert sync["time"]["bound"] == "upper" and sync["time"]["mean"] < 1
  assert sync["throughput"]["mean"] == pytest.approx(1.25)
  out = {"tasks": [row], "sampler": {"ratios": {"a": 1.1, "b": 1.3}, "machine": {"cores": 2}},
         "variance": {"rows": [{"var_over_mean2": 1.0, "speedup": 2.99}]},
         "executors": {"gfootball": headline.executor_shares(_report(runs), "hts_ppo")}}
  lines = headline.bottom_line(out)
  assert len(lines) == 5
  assert "HTS/sync 1.10-1.30x" in lines[2] and "gfootball stepping envs" in lines[2]
  assert "at var/mean² 1 HTS is 2.99x sync" in lines[3]
  assert lines[4] == ("**Not sooner** on Empty goal close (its 1.25x throughput does not make up "
                      f"for needing ≥{1 / sync['steps']['mean']:.2f}x the env steps).")
  assert "≤" in headline.render("table", out)


def test_readmes_three_sentences_say_where_hts_is_sooner_by_how_much_and_where_not():
  """README's first screen says in plain words what is faster, by how much, on which
  task, and where it is not (no statistics' marks: those are docs/results.md's)."""
  labels = {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO"}
  fast = [_run("hts_ppo", s, 10.0, 100_000, 400.0) for s in (0, 1)] + [
      _run("sync_ppo", s, 15.0, 100_000, 200.0) for s in (0, 1)]
  # HTS missed in block 0 and needed 3x sync's env steps in block 1: not sooner.
  slow = [_run("hts_ppo", 0, None, None, 500.0), _run("sync_ppo", 0, 10.0, 100_000, 400.0),
          _run("hts_ppo", 1, 20.0, 300_000, 500.0), _run("sync_ppo", 1, 10.0, 100_000, 400.0)]
  ahead, = headline.task_rows(_report(fast), "hts_ppo", ("sync_ppo",), labels)
  behind, = headline.task_rows(_report(slow), "hts_ppo", ("sync_ppo",), labels)
  out = {"tasks": [dict(ahead, grid="gfootball"),
                   dict(behind, grid="gfootball", task="academy_run_to_score")],
         "sampler": {"ratios": {"a": 1.1, "b": 1.3}, "machine": {"cores": 2}},
         "variance": {"rows": [{"var_over_mean2": 1.0, "speedup": 2.99}]}}
  more = 1 / behind["methods"]["sync_ppo"]["steps"]["mean"]
  assert headline.plain_sentences(out) == [
      "HTS reached the target score sooner than synchronous training on 1 of the 2 tasks timed "
      "here, most of all on GFootball's Empty goal close, where synchronous PPO took 1.50 times as "
      "long as HTS-PPO to reach a score of 0.8.",
      "Per second, HTS collects 1.10 to 1.30 times as many environment steps as synchronous "
      "training in 2 benchmark cases on 2 cores, and up to 2.99 times as many where environment "
      "step times vary widely, as in the paper.",
      "It was not faster on GFootball's Run to score: HTS-PPO ran 1.25 times as fast as "
      f"synchronous PPO but needed at least {more:.2f} times as many environment steps to reach a "
      "score of 0.8, the cost of learning from experience one update old."]
  block = headline.render("plain", out)
  assert f"]({headline.FIGURE})" in block and "](docs/results.md#the-headline)" in block
  assert not [w for w in ("n=", "≤", "≥", "paired", "geometric", "calibrated", "sync_ppo")
              if w in block]


def test_each_reason_hts_was_not_sooner_reads_in_readme_and_in_docs():
  """`headline.reason`: no throughput lead, more env steps than the lead makes up for, or
  neither (the blocks differ); README says it in words, docs/results.md in figures."""
  def cells(throughput, steps, bound=None):
    cell = lambda mean, bound=None: {"mean": mean, "n": 2, "bound": bound, "lo": mean,
                                     "hi": mean}
    return {"label": "sync PPO", "neither": [], "time": cell(0.9), "steps": cell(steps, bound),
            "throughput": cell(throughput)}
  tasks = [{"grid": "gfootball", "task": task, "target": "0.8", "label": "HTS-PPO",
            "methods": {"sync_ppo": m}}
           for task, m in (("academy_empty_goal", cells(0.95, 1.1)),
                           ("academy_run_to_score", cells(1.2, 0.5, "upper")),
                           ("academy_corner", cells(1.2, 1.1)))]
  out = {"tasks": tasks, "sampler": {"ratios": {}, "machine": None}, "variance": {"rows": []},
         "executors": {}}
  assert [headline.reason(m) for t in tasks for m in t["methods"].values()] == [
      "speed", "steps", "blocks"]
  assert headline.plain_sentences(out) == [
      "It was not faster on GFootball's Empty goal: HTS-PPO ran no faster than synchronous PPO; "
      "on GFootball's Run to score: HTS-PPO ran 1.20 times as fast as synchronous PPO but needed "
      "at least 2.00 times as many environment steps to reach a score of 0.8, the cost of "
      "learning from experience one update old; on GFootball's Corner: the runs differ more "
      "than HTS's speed and its environment steps explain."]
  assert headline.bottom_line(out)[-1] == (
      "**Not sooner** on Empty goal (no throughput lead, 0.95x); Run to score (its 1.20x "
      "throughput does not make up for needing ≥2.00x the env steps); Corner (its throughput and "
      "sample efficiency are not behind: the blocks differ).")


def test_a_block_where_neither_reached_the_target_says_so():
  runs = [_run("hts_ppo", 0, None, None, 400.0), _run("sync_ppo", 0, None, None, 200.0)]
  row, = headline.task_rows(_report(runs), "hts_ppo", ("sync_ppo",),
                            {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO"})
  out = {"tasks": [row], "sampler": {"ratios": {}, "machine": None}, "variance": {"rows": []},
         "executors": {}}
  lines = headline.bottom_line(out)
  assert "Empty goal close (0.8) neither reached it (n=1)" in lines[0]
  assert "Empty goal close 2.00x / neither reached it" in lines[1]
  assert not any(line.startswith("**Not sooner**") for line in lines)
  # The highest target some compared run reached is the one reported (else the top one).
  assert row["target"] == "0.8"
  runs[1]["required"]["0.4"] = {"minutes": 5.0, "env_steps": 50_000}
  row, = headline.task_rows(_report(runs), "hts_ppo", ("sync_ppo",),
                            {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO"})
  assert row["target"] == "0.4"


def test_the_committed_headline_is_the_committed_grids_rendered():
  with open(os.path.join(ROOT, headline.JSON)) as f:
    saved = json.load(f)
  now = json.loads(json.dumps(headline.build(ROOT)))  # as a reader of the file gets it
  assert {k: saved[k] for k in now} == now, "python -m experiments.headline"
  for doc, block, macro in headline.TARGETS:  # README's plain block, docs/results.md's details
    with open(os.path.join(ROOT, doc)) as f:
      assert block.wrap(headline.render(macro, saved)) in f.read(), (
          doc, "python -m experiments.headline")
  lines = headline.bottom_line(saved)
  assert len(lines) <= 6 and all(len(line) <= 300 for line in lines)
  sentences = headline.plain_sentences(saved)
  assert len(sentences) <= 4 and all(len(s) <= 300 for s in sentences), sentences
  assert os.path.exists(os.path.join(ROOT, headline.FIGURE))


def test_a_paired_ratio_counts_a_slow_hosts_quiet_pair_and_not_a_pair_calibrated_apart():
  # Block 0 ran on a host that calibrates at twice its kind's median when quiet: both runs are
  # flagged by the kind's median (`shared`), yet their calibrations agree, so the pair counts.
  # Block 1's runs calibrated more than 1.5x apart: left out of time and SPS, kept for steps.
  runs = [dict(_run("hts_ppo", 0, 10.0, 100_000, 400.0), calibration_ms=126.0, shared="cal"),
          dict(_run("sync_ppo", 0, 12.0, 100_000, 300.0), calibration_ms=130.0, shared="cal"),
          dict(_run("hts_ppo", 1, 10.0, 100_000, 400.0), calibration_ms=60.0),
          dict(_run("sync_ppo", 1, 30.0, 200_000, 300.0), calibration_ms=130.0, shared="cal")]
  time = lambda r: stats.Censored(r["required"]["0.8"]["minutes"])  # noqa: E731
  got = compare.paired(runs, "sync_ppo", "hts_ppo", time)
  assert (got["blocks"], got["shared"], got["ratios"]) == ([0], [1], pytest.approx([1.2]))
  steps = compare.paired(runs, "sync_ppo", "hts_ppo", lambda r: stats.Censored(
      r["required"]["0.8"]["env_steps"]), every_block=True)
  assert steps["blocks"] == [0, 1] and steps["ratios"] == pytest.approx([1.0, 2.0])


def test_a_time_ratio_that_a_later_pair_rule_moved_shows_the_earlier_reading():
  """`stats.PAIR_RULES`: under the rule of 2026-11-27 a run calibrated above 1.5x its host
  kind's median is left out (block 0, on a host twice as slow when quiet); the pair rule of
  2026-11-29 keeps the pair; the CPU-steal rule of 2026-12-02 leaves out block 1, whose HTS run
  lost 10% of its CPU time. The headline keeps the reading before the last change that moved it,
  and README's fourth sentence says it."""
  runs = [dict(_run("hts_ppo", 0, 10.0, 100_000, 400.0), calibration_ms=126.0),
          dict(_run("sync_ppo", 0, 15.0, 100_000, 300.0), calibration_ms=130.0),
          dict(_run("hts_ppo", 1, 10.0, 100_000, 400.0), steal_share=0.1),
          _run("sync_ppo", 1, 20.0, 100_000, 300.0),
          _run("hts_ppo", 2, 10.0, 100_000, 400.0), _run("sync_ppo", 2, 30.0, 100_000, 300.0)]
  time = lambda r: stats.Censored(r["required"]["0.8"]["minutes"])  # noqa: E731
  blocks = [compare.paired(runs, "sync_ppo", "hts_ppo", time, rule=rule)["blocks"]
            for rule in stats.PAIR_RULES]
  assert blocks == [[1, 2], [0, 1, 2], [0, 2]]
  row, = headline.task_rows(_report(runs), "hts_ppo", ("sync_ppo",),
                            {"hts_ppo": "HTS-PPO", "sync_ppo": "sync PPO"})
  sync = row["methods"]["sync_ppo"]
  assert (sync["time"]["blocks"], sync["time"]["mean"]) == ([0, 2], pytest.approx(4.5 ** 0.5))
  earlier = [(e["since"], e["blocks"], e["mean"]) for e in sync["earlier_rules"]]
  assert earlier == [("2026-11-27", [1, 2], pytest.approx(6.0 ** 0.5)),
                     ("2026-11-29", [0, 1, 2], pytest.approx(9.0 ** (1 / 3)))]
  out = {"tasks": [dict(row, grid="gfootball")], "sampler": {"ratios": {}, "machine": None},
         "variance": {"rows": []}, "executors": {}}
  assert headline.plain_sentences(out)[-1] == (
      "The rule for which runs pair changed after some of these runs were made; under the rules "
      "before, Empty goal close read 2.08 times from three blocks (before 2026-12-02).")
  assert "Empty goal close sync PPO 2.08x (n=3) (before 2026-12-02)" in \
      headline.bottom_line(out)[-1]
