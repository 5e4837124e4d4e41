r"""Claim 1 (paper Eq. 7): expected time to collect K states with n envs syncing every alpha steps,
step times exponential with rate beta (alpha-step sums Gamma(alpha, beta)), actor time c per step;
printed next to a Monte Carlo simulation of the same process.

  python -m experiments.runtime_model --n 16 --alpha 4 --beta 2 --K 100000 --c 0 --json
  python -m experiments.runtime_model --figures=runs/analysis     # also draws Fig. 3(a), (b), (c)

Fig. 3(c) here is Claim 2 at the paper's lambda0 = 100, mu = 4000; the version with measured
async lag overlaid comes from `python -m experiments.validate_claims`.
"""

import json
import os

from absl import app
from absl import flags

from hts_jax.cli import common as cli

flags.DEFINE_integer("n", 16, "Number of envs.")
flags.DEFINE_integer("alpha", 4, "Synchronization interval (steps per env between barriers).")
flags.DEFINE_float("beta", 2.0, "Rate of the exponential step time (mean 1/beta seconds).")
flags.DEFINE_integer("K", 100_000, "States to collect.")
flags.DEFINE_float("c", 0.0, "Actor time per step (seconds).")
flags.DEFINE_integer("repeats", 8, "Monte Carlo repetitions.")
flags.DEFINE_integer("seed", 0, "Simulator seed.")
flags.DEFINE_bool("json", False, "Print one JSON object instead of a sentence.")
flags.DEFINE_string("figures", None, "If set, also draw fig3a/fig3b/fig3c PNGs into this dir.")
FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  from hts_jax.analysis import runtime_model  # pylint: disable=import-outside-toplevel
  n, alpha, beta, K, c = FLAGS.n, FLAGS.alpha, FLAGS.beta, FLAGS.K, FLAGS.c
  try:
    formula = runtime_model.expected_runtime(K, n, alpha, beta, c)
    sim = runtime_model.simulate_runtime(K, n, alpha, beta, c, repeats=FLAGS.repeats,
                                         seed=FLAGS.seed)
  except ValueError as e:
    cli.fail(str(e))
  sync = runtime_model.expected_runtime(K, n, 1, beta, c)
  out = {"n": n, "alpha": alpha, "beta": beta, "K": K, "c": c,
         "step_time_mean_s": 1 / beta, "step_time_var": 1 / beta ** 2,
         "formula_s": formula, "simulation_s": sim["mean_s"],
         "simulation_stderr_s": sim["stderr_s"], "repeats": sim["repeats"],
         "simulation_over_formula": sim["mean_s"] / formula,
         "sync_formula_s": sync, "predicted_speedup_over_sync": sync / formula}
  if FLAGS.figures:
    from hts_jax.analysis import plots  # pylint: disable=import-outside-toplevel
    out["figures"] = [plots.fig3a(os.path.join(FLAGS.figures, "fig3a_runtime_vs_variance.png"),
                                  K=K, alpha=alpha, c=c),
                      plots.fig3b(os.path.join(FLAGS.figures, "fig3b_runtime_vs_alpha.png"),
                                  K=K, beta=beta, c=c),
                      plots.fig3c(os.path.join(FLAGS.figures, "fig3c_lag_vs_actors.png"))]
  if FLAGS.json:
    print(json.dumps(out))
  else:
    print(f"E[T] for K={K:,} states, n={n} envs, alpha={alpha}, beta={beta:g}, c={c:g}: "
          f"Eq. 7 {formula:.4g} s, simulation {sim['mean_s']:.4g} +- {sim['stderr_s']:.2g} s "
          f"({sim['repeats']} runs); lockstep (alpha=1) {sync:.4g} s, predicted speedup "
          f"{sync / formula:.2f}x")
    for p in out.get("figures", []):
      print(f"wrote {p}")


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
