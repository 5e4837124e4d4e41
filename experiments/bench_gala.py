r"""The seeds' answers to stragglers side by side on the variable-step-time env (`vstep`): SPS and
sample efficiency to a target return, with GALA's epsilon-ball. Prints one JSON object (and a
markdown table on stderr) and draws a PNG.

  python -m experiments.bench_gala                      # 3 variance points, about 10 minutes
  python -m experiments.bench_gala --var_ratios=1 --methods=gala,allreduce --repeats=2

Methods (the same env, MLP, A2C losses, 5-step returns, RMSProp lr --lr, seed, evaluation):
  sync        --mode=sync, alpha 5: all envs step in lockstep, one executor per env
  sync_alt    --mode=sync --alternating_groups, alpha 5: 2 envs per executor in two groups that
              alternate (Stooke & Abbeel 2018, §4.1), so num_envs / 2 executors
  allreduce   --mode=allreduce: --agents A2C learners, each in lockstep over its envs, gradients
              all-reduced every 5 steps
  gala        --mode=gala: --agents GALA-A2C agents, the paper's asynchronous ring gossip
  hts         --mode=hts, alpha --hts_alpha: HTS-A2C
Each run takes --budget steps; steps_to_target is the first evaluation (every --eval_every steps,
--eval_episodes greedy episodes) at which the running average of the 10 most recent evaluations
reaches --target (the paper's required-time metric; the default target is 87.5% of the optimal
return: A2C's greedy policy plateaus near 94% on this task, as CartPole's 475 is 95% of its
500). No --stop_at_return: its deterministic stop waits at each boundary for the previous
evaluation, and vstep's evaluation episodes sleep too, which would halve every method's SPS. Row fields per method: sps, steps_to_target / wall_to_target (null when not
reached), final_eval; gala also eps_max, eps_mean, eps_max_relative (the agents' largest distance
to their average, over the norm of the average), staleness_mean, age_ms_mean.
"""

import json
import os
import statistics
import sys

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.analysis import stats
from hts_jax.runs import launch

METHODS = ("sync", "sync_alt", "allreduce", "gala", "hts")
flags.DEFINE_list("methods", list(METHODS), "Which methods to run.")
flags.DEFINE_list("var_ratios", ["0.25", "1", "4"],
                  "Step-time variance / mean^2 (1 = exponential; gamma otherwise).")
flags.DEFINE_float("mean_s", 2e-3, "Mean env step time (s).")
flags.DEFINE_integer("num_envs", 16, "Envs of every method.")
flags.DEFINE_integer("agents", 4, "Learners of allreduce, agents of gala.")
flags.DEFINE_integer("hts_alpha", 40, "HTS synchronization interval (a multiple of 5).")
flags.DEFINE_float("lr", 1e-3, "RMSProp learning rate of every method (GALA's Table 2 uses "
                   "the same hyperparameters for A2C and GALA-A2C).")
flags.DEFINE_float("target", None, "Target running-average return (default 0.875 x "
                   "episode_length: the greedy A2C policy plateaus near 0.94 x).")
flags.DEFINE_integer("episode_length", 32, "vstep episode length (the optimal return).")
flags.DEFINE_integer("budget", 48_000, "Env steps of every run.")
flags.DEFINE_integer("eval_every", 1_000, "Env steps between evaluations.")
flags.DEFINE_integer("eval_episodes", 4, "Episodes per evaluation.")
flags.DEFINE_integer("repeats", 1, "Runs per method and setting (seeds 0..repeats-1); medians.")
flags.DEFINE_string("out", "runs/bench_gala", "Where the PNG and rows.json go.")
FLAGS = flags.FLAGS


def _env_kwargs(var_ratio):
  kw = {"mean_s": FLAGS.mean_s, "episode_length": FLAGS.episode_length}
  if var_ratio == 1.0:
    return dict(kw, dist="exponential")
  return dict(kw, dist="gamma", var_s2=var_ratio * FLAGS.mean_s ** 2)


def _config(method, var_ratio, seed):
  n = FLAGS.num_envs
  cfg = dict(env="vstep", env_kwargs=_env_kwargs(var_ratio), alpha=5, num_envs=n,
             num_executors=n, num_actors=1, total_steps=FLAGS.budget, seed=seed,
             eval_every=FLAGS.eval_every, eval_episodes=FLAGS.eval_episodes,
             learner={"algo": "a2c", "unroll_length": 5, "learning_rate": FLAGS.lr})
  if method == "sync_alt":
    cfg.update(mode="sync", alternating_groups=True, num_executors=n // 2)
  elif method in ("allreduce", "gala"):
    cfg.update(mode=method, gala_agents=FLAGS.agents)
  elif method == "hts":
    cfg.update(mode="hts", alpha=FLAGS.hts_alpha)
  else:
    cfg.update(mode=method)
  return cfg


def _measure(method, var_ratio, seed):
  from hts_jax.analysis import metrics  # pylint: disable=import-outside-toplevel
  s = launch.in_process(**_config(method, var_ratio, seed))
  target = FLAGS.target or 0.875 * FLAGS.episode_length
  evals = s["eval"]
  hit = metrics.first_reached([e["mean_return"] for e in evals], target)
  out = {"sps": s["sps"], "steps_to_target": None if hit is None else evals[hit]["env_steps"],
         "wall_to_target": None if hit is None else evals[hit]["wall_time_s"],
         "final_eval": evals[-1]["mean_return"]}
  if method == "gala":
    g = s["gala"]
    out.update(eps_max=g["epsilon_ball"]["max"], eps_mean=g["epsilon_ball"]["mean"],
               eps_max_relative=g["epsilon_ball"]["max_relative"],
               staleness_mean=g["gossip_staleness"]["mean"],
               age_ms_mean=None if g["gossip_age_s"]["mean"] is None else
               1e3 * g["gossip_age_s"]["mean"])
  return out


def _median(values):
  values = [v for v in values if v is not None]
  return statistics.median(values) if values else None


def _row(var_ratio):
  runs = {m: [] for m in FLAGS.methods}
  for seed in range(FLAGS.repeats):  # interleaved: a noisy stretch hits every method
    for m in runs:
      runs[m].append(_measure(m, var_ratio, seed))
  row = {"var_over_mean2": var_ratio, "step_time_mean_s": FLAGS.mean_s,
         "num_envs": FLAGS.num_envs, "agents": FLAGS.agents}
  for m, rs in runs.items():
    row[m] = {k: _median([r[k] for r in rs]) for k in rs[0]}
    row[m]["reached"] = sum(r["steps_to_target"] is not None for r in rs)
    if FLAGS.repeats > 1:
      row[m]["runs"] = rs
  print(json.dumps(row), file=sys.stderr, flush=True)
  return row


def _fmt(x, spec):
  return "-" if x is None else format(x, spec)


def table(rows) -> str:
  """Markdown: one line per (setting, method)."""
  cells = []
  for r in rows:
    for m in FLAGS.methods:
      x = r[m]
      eps = (f"{x['eps_max']:.3f} ({x['eps_max_relative']:.4f})" if "eps_max" in x else "")
      stale = (f"{_fmt(x['staleness_mean'], '.2f')} / {_fmt(x['age_ms_mean'], '.1f')}"
               if "eps_max" in x else "")
      cells.append([f"{r['var_over_mean2']:g}", m, f"{x['sps']:,.0f}",
                    _fmt(x["steps_to_target"], ",.0f"), _fmt(x["wall_to_target"], ".1f"),
                    f"{x['final_eval']:.1f}", eps, stale])
  return stats.markdown(["var/mean^2", "method", "SPS", "steps to target", "s to target",
                         "final eval", "eps max (rel.)", "staleness / age ms"], cells).rstrip()


def _plot(rows, out):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(13, 3.6))
  xs = [r["var_over_mean2"] for r in rows]
  for m in FLAGS.methods:
    ax1.plot(xs, [r[m]["sps"] for r in rows], "o-", label=m)
    ax2.plot(xs, [r[m]["steps_to_target"] or float("nan") for r in rows], "o-", label=m)
  if "gala" in FLAGS.methods:
    ax3.plot(xs, [r["gala"]["eps_max"] for r in rows], "o-", label="max")
    ax3.plot(xs, [r["gala"]["eps_mean"] for r in rows], "s--", label="mean")
    ax3.set_ylabel("GALA: distance to the agents' average")
    ax3.legend()
  for ax in (ax1, ax2, ax3):
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.set_xlabel(f"step-time variance / mean$^2$ (mean {FLAGS.mean_s * 1e3:g} ms)")
  ax1.set_ylabel("env steps / s")
  ax2.set_ylabel("env steps to target")
  ax1.legend(fontsize=7)
  fig.tight_layout()
  path = os.path.join(out, "gala_variance.png")
  fig.savefig(path, dpi=100)
  plt.close(fig)
  return path


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  unknown = set(FLAGS.methods) - set(METHODS)
  if unknown:
    cli.fail(f"--methods: unknown {sorted(unknown)}; choose from {', '.join(METHODS)}")
  if FLAGS.hts_alpha % 5:
    cli.fail(f"--hts_alpha must be a multiple of 5, got {FLAGS.hts_alpha}")
  try:
    ratios = sorted(float(x) for x in FLAGS.var_ratios)
  except ValueError as e:
    cli.fail(f"bad --var_ratios: {e}")
  rows = [_row(v) for v in ratios]
  os.makedirs(FLAGS.out, exist_ok=True)
  with open(os.path.join(FLAGS.out, "rows.json"), "w") as f:
    json.dump(rows, f, indent=1)
  print(table(rows), file=sys.stderr)
  print(json.dumps({"rows": rows, "plot": _plot(rows, FLAGS.out)}, indent=1))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
