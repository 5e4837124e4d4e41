r"""The restructure check: the `param_sha256` of a fixed set of small runs (every deterministic
mode, both env backends, MuJoCo, an LSTM core, MinAtar, each HTS correction), printed as one JSON
object, so that two commits can be compared run for run. A restructure that changes a hash must
say why in its commit.

  python -m experiments.check_hashes --save=/tmp/before.json            # at the old commit
  python -m experiments.check_hashes --compare=/tmp/before.json         # at the new one: exit 1
                                                                        # when a hash differs
  python -m experiments.check_hashes --cases=hts_a2c,sync_a2c

The asynchronous modes (IMPALA, asynchronous GALA) are not bitwise reproducible by design and are
not in the set; GALA runs with its deterministic (fixed) gossip.
"""

import json
import sys

from absl import app
from absl import flags

from hts_jax.cli import common as cli
from hts_jax.results import provenance
from hts_jax.runs import launch

flags.DEFINE_list("cases", [], "Which cases to run (default: all).")
flags.DEFINE_string("save", None, "Also write the JSON (with its provenance) here.")
flags.DEFINE_string("compare", None, "A JSON this script saved before: every case run here must "
                    "give the hash it recorded (exit 1 and the differing cases otherwise).")
FLAGS = flags.FLAGS

_CARTPOLE = dict(env="CartPole-v1", num_envs=8, num_executors=2, alpha=16, seed=3,
                 total_steps=8 * 16 * 4)
_BREAKOUT = dict(env="atari:Breakout", num_envs=4, num_executors=2, alpha=5, seed=3,
                 total_steps=4 * 5 * 3)
_A2C = dict(algo="a2c", unroll_length=16)
_PPO = dict(algo="ppo", unroll_length=16, num_minibatches=2, ppo_epochs=2, minibatch="envs")

CASES = {
    "hts_a2c": dict(_CARTPOLE, learner=_A2C),
    "hts_a2c_3_actors": dict(_CARTPOLE, num_actors=3, actor_batch=2, learner=_A2C),
    "hts_a2c_tis": dict(_CARTPOLE, learner=dict(_A2C, correction="truncated_is")),
    "hts_a2c_none": dict(_CARTPOLE, learner=dict(_A2C, correction="none")),
    "hts_ppo_behaviour": dict(_CARTPOLE, learner=dict(_PPO, correction="behaviour")),
    "hts_ppo_delayed": dict(_CARTPOLE, learner=_PPO),
    "hts_ppo_decoupled": dict(_CARTPOLE, learner=dict(_PPO, correction="decoupled")),
    "hts_ppo_tis": dict(_CARTPOLE, learner=dict(_PPO, correction="truncated_is")),
    "hts_ppo_lstm": dict(_CARTPOLE, env="hts_jax/CartPoleNoVel-v1", core="lstm", core_size=16,
                         learner=dict(_PPO, correction="behaviour")),
    "sync_a2c": dict(_CARTPOLE, mode="sync", learner=_A2C),
    "sync_ppo": dict(_CARTPOLE, mode="sync", learner=_PPO),
    "sync_groups": dict(_CARTPOLE, mode="sync", alternating_groups=True, learner=_A2C),
    "gala_fixed": dict(_CARTPOLE, mode="gala", gala_agents=2, gala_gossip="fixed", learner=_A2C),
    "allreduce": dict(_CARTPOLE, mode="allreduce", gala_agents=2, learner=_A2C),
    "hts_lstm": dict(_CARTPOLE, env="hts_jax/CartPoleNoVel-v1", core="lstm", core_size=16,
                     learner=dict(_A2C, unroll_length=8)),
    "hts_envpool": dict(_BREAKOUT, envpool=True, learner=dict(_A2C, unroll_length=5)),
    "sync_envpool": dict(_BREAKOUT, envpool=True, mode="sync", learner=dict(_A2C, unroll_length=5)),
    "hts_atari": dict(_BREAKOUT, learner=dict(_A2C, unroll_length=5)),
    "hts_mujoco_ppo": dict(_CARTPOLE, env="InvertedPendulum-v5", num_actors=1,
                           learner=dict(_PPO, correction="behaviour")),
    "hts_minatar": dict(env="minatar:Breakout", num_envs=4, num_executors=2, alpha=8, seed=3,
                        total_steps=4 * 8 * 3, learner=dict(_A2C, unroll_length=8)),
}


def main(argv):
  del argv
  names = FLAGS.cases or list(CASES)
  unknown = [n for n in names if n not in CASES]
  if unknown:
    cli.fail(f"unknown --cases {unknown}: choose from {list(CASES)}", 2)
  before = None
  if FLAGS.compare:
    try:
      with open(FLAGS.compare) as f:
        before = json.load(f)["param_sha256"]
    except (OSError, ValueError, KeyError) as e:
      cli.fail(f"--compare={FLAGS.compare}: not a JSON this script saved ({e})", 2)
  hashes = {}
  for name in names:
    hashes[name] = launch.in_process(**CASES[name])["param_sha256"]
    print(f"{name}: {hashes[name]}", file=sys.stderr, flush=True)
  out = {"param_sha256": hashes}
  if before is not None:
    out["differ"] = [n for n in names if n in before and before[n] != hashes[n]]
    out["not_in_compare"] = [n for n in names if n not in before]
  print(json.dumps(out, indent=1))
  if FLAGS.save:
    provenance.save(FLAGS.save, out)
  if before is not None and (out["differ"] or out["not_in_compare"]):
    sys.exit(1)


if __name__ == "__main__":
  app.run(main)
