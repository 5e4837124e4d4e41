"""A trained policy, loaded from a run's export (`<logdir>/policy/`, which every run writes at its
end: `hts_jax.runtime.outputs.export`).

  import hts_jax, jax
  policy = hts_jax.load_policy("runs/quickstart")        # the logdir, or its policy/ folder
  env = policy.make_env()
  obs, _ = env.reset(seed=0)
  actions = policy.act(obs[None], jax.random.PRNGKey(0))  # [1] sampled; policy.act(obs[None]): greedy

`act` takes a batch of observations `[N, *obs_shape]` and returns `[N, *action_shape]`; with a key
it samples from the policy (one key per row, split from it), without one it takes the head's mode
(argmax, the Gaussian's mean). A recurrent policy (`--core=lstm`) also takes and returns the rows'
core states: `actions, state = policy.act(obs, key, state)`, from `policy.initial_state(N)` (zero it
for a row whose episode begins). `load_checkpoint(logdir, N)` gives the policy of a checkpoint the
run kept (`<logdir>/checkpoints/N/`), the same way.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from hts_jax import envs, heads, networks
from hts_jax.runtime.outputs import export


class PolicyError(ValueError):
  """The path holds no loadable export (one line)."""


def _folder(path: str) -> str:
  """`path` as an export folder: the folder itself, or a logdir's `policy/`."""
  for folder in (path, export.directory(path)):
    if os.path.isfile(os.path.join(folder, export.SPEC)):
      return folder
  raise PolicyError(f"{path}: no exported policy (a run writes <logdir>/policy/ when it ends; "
                    "a run that ended before this version wrote none)")


def read_spec(path: str) -> Dict[str, Any]:
  """policy.json of the export at `path` (a logdir or its policy/ folder)."""
  folder = _folder(path)
  try:
    with open(os.path.join(folder, export.SPEC)) as f:
      spec = json.load(f)
  except (OSError, ValueError) as e:
    raise PolicyError(f"{folder}/{export.SPEC}: unreadable: {e}") from None
  if not isinstance(spec, dict) or spec.get("format") != export.FORMAT:
    raise PolicyError(f"{folder}/{export.SPEC}: not an export of format {export.FORMAT}")
  return dict(spec, folder=folder)


def _actions(head, out, key):
  if key is None:
    return head.mode(out)
  return jax.vmap(head.sample)(jax.random.split(key, out.shape[0]), out)


def _act_fn(network, head, recurrent: bool):
  """The jitted `act(params, obs, key[, state])` of `network` with `head`."""
  if recurrent:
    def act(params, obs, key, state):
      out, _, states = network.apply(params, obs[None], state, jnp.zeros((1, obs.shape[0])))
      return _actions(head, out[0], key), states[0]
  else:
    def act(params, obs, key):
      out, _ = network.apply(params, obs)
      return _actions(head, out, key)
  return jax.jit(act)


@dataclasses.dataclass(frozen=True)
class Policy:
  """A loaded policy: its `params`, the Flax `network`, the policy `head`, and the env it acts
  in (`env`, `env_kwargs`, `obs_shape`, `obs_dtype`); `spec` is the export's policy.json."""
  params: Any
  network: Any
  head: Any
  env: str
  env_kwargs: Dict[str, Any]
  obs_shape: tuple
  obs_dtype: str
  num_agents: int
  spec: Dict[str, Any]
  _act: Any = dataclasses.field(repr=False, default=None)

  @property
  def recurrent(self) -> bool:
    return networks.state_size(self.network) > 0

  def initial_state(self, rows: int) -> np.ndarray:
    """Zero core states for `rows` rows (a recurrent policy)."""
    return np.zeros((rows, networks.state_size(self.network)), np.float32)

  def make_env(self):
    """A new replica of the env the policy was trained on (its kwargs and wrappers)."""
    return envs.make_env(self.env, self.env_kwargs)

  def act(self, obs, key: Optional[jax.Array] = None, state=None):
    """Actions for a batch of observations `[N, *obs_shape]`; sampled with `key`, the head's
    mode without; a recurrent policy: (actions, the rows' next core states)."""
    obs = jnp.asarray(obs, self.obs_dtype)
    if self.recurrent != (state is not None):
      raise ValueError("a recurrent policy acts with its rows' core states (policy.act(obs, "
                       "key, state), from policy.initial_state(N)); a feed-forward one without")
    args = (self.params, obs, key) + (() if state is None else (jnp.asarray(state),))
    return self._act(*args)


def _policy(spec: Dict[str, Any], load) -> Policy:
  """The Policy of `spec` (policy.json's fields) with the params `load(template)` returns."""
  info = envs.env_info(spec["env"], spec["env_kwargs"])
  head = heads.for_env(info)
  network = networks.make_network(spec["network"], head, spec["normalize_obs"], spec["core"],
                                  spec["core_size"])
  template = networks.init_params(network, jax.random.PRNGKey(0), info.obs_shape, info.obs_dtype)
  return Policy(params=load(template, network, info), network=network, head=head,
                env=spec["env"], env_kwargs=spec["env_kwargs"], obs_shape=tuple(info.obs_shape),
                obs_dtype=info.obs_dtype, num_agents=info.num_agents, spec=spec,
                _act=_act_fn(network, head, networks.state_size(network) > 0))


def load_policy(path: str) -> Policy:
  """The policy exported at `path` (a run's logdir or its policy/ folder); see the module doc."""
  spec = read_spec(path)

  def load(template, *_):
    try:
      with open(os.path.join(spec["folder"], export.PARAMS), "rb") as f:
        return serialization.from_bytes(template, f.read())
    except (OSError, ValueError, KeyError) as e:
      raise PolicyError(f"{spec['folder']}/{export.PARAMS}: does not load into "
                        f"{spec['network']!r}'s params: {str(e).splitlines()[0]}") from None
  return _policy(spec, load)


def load_checkpoint(logdir: str, step: int) -> Policy:
  """The policy of checkpoint `step` (its update number) kept in `<logdir>/checkpoints/`: its
  params alone, restored into the TrainState the run's saved config builds, as `--resume` does
  (no storage is read, no env state unpickled)."""
  # pylint: disable=import-outside-toplevel
  from hts_jax import config, learner
  from hts_jax.config import ConfigError
  from hts_jax.runtime.outputs import checkpoint, reporting
  kept = checkpoint.steps(logdir)
  if step not in kept:
    raise PolicyError(f"{logdir}: no checkpoint {step} in {checkpoint.directory(logdir)} "
                      f"(kept: {', '.join(map(str, kept)) or 'none'})")
  try:
    host = checkpoint.saved_host(logdir, step)
    cfg = config.from_json(host["config"])
  except (checkpoint.CorruptCheckpoint, ConfigError, TypeError) as e:
    raise PolicyError(f"checkpoint {step} of {logdir}: {e}") from None
  r = cfg.rollout
  kind = networks.resolve_kind(r.network, r.env, envs.env_info(r.env, r.env_kwargs).obs_shape)

  def load(template, _, info):
    state = learner.init_train_state(
        template, learner.make_optimizer(cfg.learner), jax.random.PRNGKey(0),
        reward_envs=r.num_envs * info.num_agents if cfg.learner.normalize_rewards else 0)
    try:
      return checkpoint.restore_state(logdir, state, step).params
    except checkpoint.CorruptCheckpoint as e:
      raise PolicyError(str(e)) from None
  spec = export.spec_of(cfg, kind, "", (host["segment"] + 1) * r.steps_per_segment, step,
                        len(host.get("book", {}).get("eval", [])), "checkpoint")
  policy = _policy(dict(spec, folder=os.path.join(checkpoint.directory(logdir), str(step))),
                   load)
  policy.spec["param_sha256"] = reporting.param_sha256(policy.params)
  return policy
