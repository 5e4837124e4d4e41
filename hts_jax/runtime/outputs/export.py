"""The trained policy, kept: every run that ends writes `<logdir>/policy/` (process 0), whatever
`--checkpoint_every` says: a finished run its final params, a run stopped by a signal or a failing
part those of the last segment boundary it passed (`Controller`).

  params.msgpack  the params (Flax's msgpack serialization: `flax.serialization`), the
                  observation normaliser's statistics included (they are params' collections)
  policy.json     what rebuilds the network and its env without the run's code path: the env id
                  and kwargs, the network, the policy head's kind, the recurrent core, the
                  observation's shape and dtype, how evaluations act (greedy or sampled), the
                  params' param_sha256, env steps and updates, the run's evaluations so far, how
                  it ended (`ended`: finished, interrupted, error) and its whole config

Both are written to a temporary file and renamed, so a reader sees a whole export or the previous
one. `hts_jax.load_policy` reads it (`hts_jax/trained.py`), `hts-eval` evaluates it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict

from hts_jax.runtime.outputs import files

FORMAT = 1
PARAMS, SPEC = "params.msgpack", "policy.json"


def directory(logdir: str) -> str:
  return os.path.join(logdir, "policy")


def spec_of(cfg, kind: str, param_sha256: str, env_steps: int, updates: int, evaluations: int,
            ended: str = "finished") -> Dict[str, Any]:
  """policy.json's content for params after `updates` updates (`env_steps`) of a run of `cfg`
  (`RunConfig`) with the resolved network `kind`, `evaluations` evaluated; `ended`: how the run
  ended (finished, interrupted, error)."""
  r = cfg.rollout
  return {"format": FORMAT, "env": r.env, "env_kwargs": dict(r.env_kwargs), "network": kind,
          "core": r.core, "core_size": r.core_size,
          "normalize_obs": cfg.learner.normalize_obs, "greedy": cfg.evaluates_greedy,
          "eval_max_steps": cfg.evaluation.eval_max_steps, "seed": r.seed,
          "algo": cfg.learner.algo, "mode": cfg.mode, "param_sha256": param_sha256,
          "env_steps": env_steps, "updates": updates, "evaluations": evaluations, "ended": ended,
          "config": json.loads(json.dumps(cfg.to_dict()))}


def write(logdir: str, params, spec: Dict[str, Any]) -> str:
  """Writes the export of `params` (host or device arrays) with `spec` (`spec_of`); returns its
  directory."""
  import jax  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel
  from flax import serialization  # pylint: disable=import-outside-toplevel
  out = directory(logdir)
  if os.path.islink(out):
    raise OSError(f"{out} is a symbolic link: the export is not written through it")
  os.makedirs(out, exist_ok=True)
  data = serialization.msgpack_serialize(jax.tree.map(np.asarray, params))
  files.write_atomic(os.path.join(out, PARAMS), lambda f: f.write(data), mode="wb")
  files.write_atomic(os.path.join(out, SPEC), lambda f: f.write(json.dumps(spec, indent=1) + "\n"))
  return out
