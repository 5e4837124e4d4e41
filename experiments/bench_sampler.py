r"""The rollout hot path, HTS against its own synchronous baseline, side by side in one run.
Prints one JSON object (and each row to stderr as it finishes).

  python -m experiments.bench_sampler                      # CartPole 16 and 64 envs, Atari 16 envs
  python -m experiments.bench_sampler --cases=cartpole16 --repeats=3
  python -m experiments.bench_sampler --compare=core --cases=atari16   # LSTM's cost, in HTS

Cases (the same flags for both modes; only --mode differs):
  cartpole16  CartPole-v1, MLP, 16 envs, 2 executors, alpha = unroll = 128, A2C
  cartpole64  CartPole-v1, MLP, 64 envs, 2 executors, alpha = unroll = 128, A2C
  atari16     Atari Breakout (ale-py executors), the paper's CNN, 16 envs, 4 executors,
              actor batch 4 envs, alpha = unroll = 5 (Table A3), A2C
  minatar16   MinAtar Breakout, MinAtar's network, 16 envs, 2 executors, alpha = unroll = 5, A2C
  gfootball_close  GFootball academy_empty_goal_close, simple115v2 and the MLP, 8 envs, 4
              executors, 1 actor, alpha 128, PPO with `gfootball_ppo`'s values (the GFootball
              grid's scale)
  gfootball_3v1  the same on academy_3_vs_1_with_keeper (the paper's Tables 4 and 5 scenario)
  walker2d    Walker2d-v5 with `mujoco_hts_ppo` (8 envs x 256 steps, 10 epochs x 32 minibatches)
  memory      CartPoleNoVel-v1 with `memory_lstm_ppo` (LSTM 64, 8 envs x 32 steps, 20 epochs)
  vstep16     bench_speedup's vstep envs (exponential 4 ms steps), 16 executors of one env, alpha
              160, A2C (for --compare=actor_wait: 1-env blocks in 8-row calls)
Each row: SPS of each mode (median over --repeats, runs interleaved: HTS at --policy_lag=1 (`hts`),
HTS at --policy_lag=0 (`hts_lag0`), sync, the ceiling), their ratios, the decomposition of HTS's
gain (`lag0_over_sync`: batch synchronization; `hts_over_lag0`: concurrent learning), and the
hot-path figures from summary.json: policy rows per env step, ready envs per actor call, actor
calls, main-process CPU seconds per 1k env steps, idle seconds of executors/actors/learner, the
learner's busy share and what bounds the run (`bound`: the largest of the executors' shares
stepping envs and waiting for actions, and the learner's busy share). `--plan` also runs
`hts-plan`'s probe on each case first and records its predictions for the case's run length
beside the medians (`plan`: predicted over measured SPS per mode). The ceiling (`--ceiling`, on by default with --compare=mode or blocks)
is the envs' own rate for the case's layout (`hts_jax.runtime.ceiling`: the same executors, envs and
storages, actions drawn inside the executors, no actor calls, no learner), and each mode's SPS
is also given as a fraction of it.
`--compare=core` runs each case in HTS mode with a feed-forward policy (`ff`) and with
`--core=lstm --core_size=<--core_size>` (`lstm`) instead: the recurrent core's cost.
`--compare=blocks` runs each case in HTS mode with `--executor_blocks=<--blocks>` and with one
block per executor: whether an executor that steps one block while the actors compute another's
actions hides their latency (the same param_sha256 either way); the ceiling keeps the case's one
block per executor.
`--compare=actor_wait` runs each case in HTS mode at each lag with `--actor_wait=1` (the default)
and `--actor_wait=0`: what a lone actor's wait for a fuller policy call buys (the same
param_sha256 either way).
"""

import json
import os
import statistics
import sys
import tempfile

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.presets import HTS_PPO_CORRECTION
from hts_jax.results import provenance
from hts_jax.runs import launch

flags.DEFINE_list("cases", ["cartpole16", "cartpole64", "atari16"], "Which cases to run.")
flags.DEFINE_integer("repeats", 2, "Runs per mode and case (interleaved); SPS is their median.")
flags.DEFINE_float("steps_scale", 1.0, "Scales every run's env steps.")
flags.DEFINE_enum("compare", "mode", ["mode", "core", "blocks", "actor_wait"],
                  "mode: HTS against sync; core: "
                  "HTS with a feed-forward policy against HTS with an LSTM core; blocks: HTS with "
                  "--executor_blocks=<--blocks> against HTS with one block per executor (the same "
                  "bits: only the executors' stepping order differs); actor_wait: HTS at each lag "
                  "with --actor_wait=1 (the default) and 0 (the same bits: only which blocks "
                  "share a call differs).")
flags.DEFINE_integer("core_size", 256, "LSTM units with --compare=core.")
flags.DEFINE_integer("blocks", 2, "Blocks per executor of --compare=blocks' first variant.")
flags.DEFINE_bool("ceiling", True, "With --compare=mode or blocks, also measure the envs' own "
                  "rate for each case's layout (interleaved with the modes' runs) and the modes' "
                  "fractions of it.")
flags.DEFINE_bool("plan", False, "With --compare=mode, run hts-plan's probe on each case and "
                  "record its predicted SPS for sync, lag 0 and lag 1 beside the measured medians.")
flags.DEFINE_float("probe_s", 60.0, "--plan's probe budget (seconds of timed running per case).")
flags.DEFINE_string("save", None, "Also write the JSON with its provenance (date, machine, commit, "
                    "command) here: results/benchmarks/sampler.json is what README shows.")
FLAGS = flags.FLAGS

CASES = {
    "cartpole16": dict(env="CartPole-v1", network="mlp", num_envs=16, num_executors=2,
                       alpha=128, total_steps=200_000, learner=dict(algo="a2c", unroll_length=128)),
    "cartpole64": dict(env="CartPole-v1", network="mlp", num_envs=64, num_executors=2,
                       alpha=128, total_steps=400_000, learner=dict(algo="a2c", unroll_length=128)),
    "atari16": dict(env="atari:Breakout", network="cnn", num_envs=16, num_executors=4,
                    actor_batch=4, alpha=5, total_steps=8_000,
                    learner=dict(algo="a2c", unroll_length=5)),
    "minatar16": dict(env="minatar:Breakout", network="minatar", num_envs=16, num_executors=2,
                      alpha=5, total_steps=100_000, learner=dict(algo="a2c", unroll_length=5)),
    # gfootball_ppo's learner (hts_jax/presets.py cites each value) at the GFootball grid's scale.
    "gfootball_close": dict(
        env="gfootball:academy_empty_goal_close", network="mlp",
        env_kwargs={"representation": "simple115v2", "stacked": False}, num_envs=8,
        num_executors=4, num_actors=1, alpha=128, total_steps=30_720,
        learner=dict(algo="ppo", optimizer="adam", learning_rate=3.43e-4, adam_eps=1e-5,
                     ppo_epochs=2, num_minibatches=8, clip_eps=0.08, entropy_coef=0.003,
                     value_coef=0.5, gamma=0.993, gae_lambda=0.95, max_grad_norm=0.64,
                     correction=HTS_PPO_CORRECTION)),
    # mujoco_hts_ppo (hts_jax/presets.py) on Walker2d, ten segments.
    "walker2d": dict(
        env="Walker2d-v5", num_envs=8, num_executors=2, num_actors=1, actor_batch=8, alpha=256,
        actor_wait=1.0,
        total_steps=20_480,
        learner=dict(algo="ppo", optimizer="adam", learning_rate=3e-4, adam_eps=1e-5,
                     ppo_epochs=10, num_minibatches=32, minibatch="transitions", clip_eps=0.2,
                     clip_value_loss=True, entropy_coef=0.0, value_coef=0.5, gamma=0.99,
                     gae_lambda=0.95, max_grad_norm=0.5, normalize_advantages=True,
                     normalize_obs=True, normalize_rewards=True, bootstrap_truncation=True,
                     correction=HTS_PPO_CORRECTION)),
    # memory_lstm_ppo (hts_jax/presets.py), a hundred segments.
    "memory": dict(
        env="hts_jax/CartPoleNoVel-v1", core="lstm", core_size=64, num_envs=8, num_executors=2,
        num_actors=1, alpha=32, total_steps=25_600,
        learner=dict(algo="ppo", minibatch="envs", num_minibatches=1, ppo_epochs=20, gamma=0.98,
                     gae_lambda=0.8, optimizer="adam", learning_rate=1e-3, adam_eps=1e-5,
                     clip_eps=0.2, entropy_coef=0.0, normalize_obs=True, normalize_rewards=True,
                     bootstrap_truncation=True, correction=HTS_PPO_CORRECTION)),
}
CASES["gfootball_3v1"] = dict(CASES["gfootball_close"], env="gfootball:academy_3_vs_1_with_keeper")
# bench_speedup's variance grid at var/mean^2 = 1 (exponential 4 ms steps): one env per executor,
# blocks of one env in 8-row actor calls (not a default case: its sync runs bench_speedup's way).
CASES["vstep16"] = dict(env="vstep", env_kwargs={"dist": "exponential", "mean_s": 4e-3},
                        num_envs=16, num_executors=16, num_actors=1, alpha=160, total_steps=25_600,
                        learner=dict(algo="a2c", unroll_length=5))


def shares(s):
  """Where a run's time went: the executors' shares of their time stepping envs and waiting for
  actions and at the barrier, and the learner's busy share of the wall time; `bound` the largest
  of envs, actor calls and learner (the barrier is a wait for one of them)."""
  executors = max(s["num_executors"] * s["wall_time_s"], 1e-9)
  out = {"envs": s["timing"]["env_busy_s"] / executors,
         "actor_calls": s["idle"]["executors_waiting_for_actions"] / executors,
         "barrier": s["idle"]["executors_at_barrier"] / executors,
         "learner": s["learner_busy_share"]}
  out = {k: round(v, 3) for k, v in out.items()}
  out["bound"] = max(("envs", "actor_calls", "learner"), key=out.get)
  return out


def _row(s):
  return {"sps": round(s["sps"], 1), "env_steps": s["env_steps"],
          "wall_time_s": round(s["wall_time_s"], 2),
          "efficiency": {k: round(v, 4) if isinstance(v, float) else v
                         for k, v in s["efficiency"].items()},
          "idle_s": {k: round(v, 2) for k, v in s["idle"].items()},
          "learn_s": round(s["timing"]["learn_s"], 2), "shares": shares(s)}


def _plan(case):
  """hts-plan's probe on the case, and its predictions for the case's run length."""
  from hts_jax import config as hts_config  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime import probe  # pylint: disable=import-outside-toplevel
  with tempfile.TemporaryDirectory() as logdir:
    cfg = hts_config.RunConfig.make(logdir=logdir, **dict(case, learner=dict(case["learner"])))
    found = probe.probe(cfg, budget_s=FLAGS.probe_s)
  stages = found.pop("stages")
  out = {"predicted_sps": {m: round(v, 1) for m, v in stages.sps(cfg.rollout.num_segments).items()},
         "bound": {m: stages.bound(m) for m in ("sync", "lag_0", "lag_1")},
         "stages": stages.to_json(), "probe": found}
  print(json.dumps({"plan": out["predicted_sps"]}), file=sys.stderr, flush=True)
  return out


def _ceiling(case):
  """The envs' own rate for the case's layout, over its env steps (`hts_jax.runtime.ceiling`)."""
  from hts_jax import config as hts_config  # pylint: disable=import-outside-toplevel
  from hts_jax.runtime import ceiling  # pylint: disable=import-outside-toplevel
  with tempfile.TemporaryDirectory() as logdir:
    cfg = hts_config.RunConfig.make(logdir=logdir, **dict(case, learner=dict(case["learner"])))
    out = ceiling.measure(cfg, case["total_steps"])
  print(json.dumps({"ceiling": round(out["sps"], 1)}), file=sys.stderr, flush=True)
  return out


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  if FLAGS.compare == "blocks" and FLAGS.blocks < 2:
    cli.fail(f"--blocks: expected 2 or more blocks per executor to compare with one, got "
             f"{FLAGS.blocks}")
  unknown = sorted(set(FLAGS.cases) - set(CASES))
  if unknown:
    cli.fail(f"--cases: unknown case(s) {unknown}; choose from {sorted(CASES)}")
  variants = {"mode": {"hts": dict(mode="hts"), "hts_lag0": dict(mode="hts", policy_lag=0),
                       "sync": dict(mode="sync")},
              "core": {"lstm": dict(mode="hts", core="lstm", core_size=FLAGS.core_size),
                       "ff": dict(mode="hts", core="none")},
              "blocks": {f"blocks{FLAGS.blocks}": dict(mode="hts", executor_blocks=FLAGS.blocks),
                         "blocks1": dict(mode="hts", executor_blocks=1)},
              "actor_wait": {f"{name}{suffix}": dict(mode="hts", policy_lag=lag, actor_wait=wait)
                             for suffix, wait in (("", 1.0), ("_at_once", 0.0))
                             for name, lag in (("hts", 1), ("hts_lag0", 0))}}[FLAGS.compare]
  first, second = list(variants)[0], list(variants)[-1]
  rows = []
  for name in FLAGS.cases:
    case = dict(CASES[name])
    case["total_steps"] = int(case["total_steps"] * FLAGS.steps_scale)
    runs = {v: [] for v in variants}
    ceilings = []
    plan = _plan(case) if FLAGS.plan and FLAGS.compare == "mode" else None
    for _ in range(FLAGS.repeats):
      for v, overrides in variants.items():
        runs[v].append(launch.in_process(**dict(case, **overrides, learner=dict(case["learner"]))))
      if FLAGS.ceiling and FLAGS.compare in ("mode", "blocks"):
        ceilings.append(_ceiling(case))
    row = {"case": name, "num_envs": case["num_envs"], "num_executors": case["num_executors"],
           "alpha": case["alpha"]}
    for v in variants:
      row[f"sps_{v}"] = round(statistics.median(s["sps"] for s in runs[v]), 1)
      row[f"sps_{v}_runs"] = [round(s["sps"], 1) for s in runs[v]]
      row[v] = _row(runs[v][-1])
    row[f"{first}_over_{second}"] = round(row[f"sps_{first}"] / row[f"sps_{second}"], 3)
    if FLAGS.compare == "actor_wait":  # what the wait buys at each lag
      for name in ("hts", "hts_lag0"):
        row[f"{name}_wait_over_at_once"] = round(
            row[f"sps_{name}"] / row[f"sps_{name}_at_once"], 3)
    if FLAGS.compare == "mode":  # HTS's gain, decomposed
      row["lag0_over_sync"] = round(row["sps_hts_lag0"] / row["sps_sync"], 3)
      row["hts_over_lag0"] = round(row["sps_hts"] / row["sps_hts_lag0"], 3)
    if plan is not None:
      measured = {"sync": row["sps_sync"], "lag_0": row["sps_hts_lag0"], "lag_1": row["sps_hts"]}
      plan["predicted_over_measured"] = {m: round(plan["predicted_sps"][m] / measured[m], 3)
                                         for m in measured}
      row["plan"] = plan
    if ceilings:
      row["sps_ceiling"] = round(statistics.median(c["sps"] for c in ceilings), 1)
      row["sps_ceiling_runs"] = [round(c["sps"], 1) for c in ceilings]
      for v in variants:
        row[f"{v}_of_ceiling"] = round(row[f"sps_{v}"] / row["sps_ceiling"], 3)
    rows.append(row)
    print(json.dumps(row), file=sys.stderr, flush=True)
  out = {"cpu_count": os.cpu_count(), "repeats": FLAGS.repeats, "compare": FLAGS.compare,
         "variants": variants, "rows": rows}
  if FLAGS.save:
    provenance.save(FLAGS.save, dict(out, benchmark={"mode": "sampler", "core": "recurrent"}.get(
                                         FLAGS.compare, FLAGS.compare),
                                     cases={name: CASES[name] for name in FLAGS.cases}))
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
