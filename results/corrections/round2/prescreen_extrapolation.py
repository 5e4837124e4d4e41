r"""The pre-screen that fixes β for the corrections study's second round (results/corrections/
PROTOCOL.md, "Changes", 2026-11-28): HTS-PPO `none` with `--acting_extrapolation=β` on one task
and seed, and per β the mean over its updates of `kl_next` (KL(π_{θ_j} || π_{θ_{j+1}}): acting
with θ_j) and `kl_pred` (the same with the prediction θ_j + β(θ_j − θ_{j-1})). It reads no return.

  python -m results.corrections.round2.prescreen_extrapolation \
      --save=results/corrections/round2/prescreen.json
  python -m results.corrections.round2.prescreen_extrapolation --report_only
      # docs/modes.md's block again

Prints one JSON object: per β the two means and their ratio, and `pick`, the β with the smallest
ratio (None where no β brings the acting policy closer than θ_j does, a ratio ≥ 1); with `--save`
also writes it and docs/modes.md's block (`prescreen.py` beside it: `prescreen_markdown`).
"""

import json
import os

from absl import app
from absl import flags

from hts_jax.analysis import metrics
from hts_jax.results import provenance
from hts_jax.runs import sweeps
from results.corrections.round2.prescreen import PRESCREEN, prescreen_markdown, prescreen_summary

flags.DEFINE_list("betas", ["1.0", "0.5"], "The --acting_extrapolation values to screen.")
flags.DEFINE_string("env", "Walker2d-v5", "The task (mujoco_hts_ppo's flags).")
flags.DEFINE_integer("seed", 0, "The seed.")
flags.DEFINE_integer("total_steps", 163_840, "Env steps per run (80 updates of 2,048).")
flags.DEFINE_string("logroot", "runs/prescreen_extrapolation", "Where the runs go.")
flags.DEFINE_string("save", "results/corrections/round2/prescreen.json",
                    "Also write the JSON with its provenance here (and docs/modes.md's block).")
flags.DEFINE_bool("report_only", False, "Only docs/modes.md's block, from --save's JSON.")
FLAGS = flags.FLAGS


def main(_):
  if not FLAGS.report_only:
    base = {"preset": "mujoco_hts_ppo", "env": FLAGS.env, "correction": "none",
            "seed": FLAGS.seed, "total_steps": FLAGS.total_steps, "eval_every": 0,
            "tensorboard": False, "log_every_s": 60}
    runs = sweeps.run_sweep("acting_extrapolation", [float(b) for b in FLAGS.betas], base,
                            FLAGS.logroot)
    loaded = {str(r["acting_extrapolation"]): metrics.load_run(r["logdir"]) for r in runs}
    out = {"flags": base, **prescreen_summary({b: run.train_curve() for b, run in loaded.items()}),
           "hosts": {b: run.summary.get("host") for b, run in loaded.items()}}
    print(json.dumps(out, indent=1))
    provenance.save(FLAGS.save, out)
  with open(FLAGS.save) as f:
    saved = json.load(f)
  PRESCREEN.write(os.path.join(provenance.ROOT, "docs", "modes.md"), prescreen_markdown(saved))


if __name__ == "__main__":
  app.run(main)
