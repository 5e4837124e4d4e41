"""What every mode shares, built once: the network, the TrainState (fresh or restored), the
layout, the compiled learner and policy steps (`ActingParts`) and the learner worker. A mode
(`mode.Mode`) runs its loop on them inside a `Controller` (`Mode.run`), which composes the other
parts (`barrier`, `supervisor`, `executor`, `actor`, `storage`, `buffers`, `bookkeeping`, the
output `observers`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Dict

import jax
import jax.numpy as jnp
import numpy as np

from hts_jax import envs, heads, learner, networks, seeding
from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime import distributed, host
from hts_jax.runtime.outputs import checkpoint, video
from hts_jax.runtime.actor import ActingParts
from hts_jax.runtime import storage as storage_lib
from hts_jax.runtime.buffers import BlockLayout
from hts_jax.runtime.learner_worker import LearnerWorker, segment_of
from hts_jax.runtime.placement import Placement
from hts_jax.runtime.policy import make_policy_step
from hts_jax.types import Segment

if TYPE_CHECKING:
  from hts_jax.runtime.loops.mode import Mode

# On CPU, XLA runs each call on the calling thread instead of handing it to a dispatch thread and
# spinning until it is done: an actor's small policy call then costs ~65 us of CPU instead of
# ~160 us (two threads busy per call), CPU that the executors need on a small machine
# (`experiments/bench_sampler.py`). It takes full effect only before the CPU client exists, hence
# at import. No result changes; the learner thread still computes while the actors act (XLA
# releases the GIL). Accelerator backends are not affected.
jax.config.update("jax_cpu_enable_async_dispatch", False)


def place_replicated(tree, sharding):
  """`tree` (the same value in every process) replicated with `sharding`, which may span the
  devices of several processes."""
  if sharding.is_fully_addressable:
    return jax.device_put(tree, sharding)
  return jax.tree.map(lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)),
                      distributed.local_copy(tree))


class Runner:
  """Builds the parts for `config`, compiles the hot steps, then `run()` runs the mode's loop and
  writes `<logdir>/{metrics.csv,summary.json}`. With `resume=True` it continues from the newest
  checkpoint in `<logdir>/checkpoints`; without, it refuses a logdir that holds one."""

  def __init__(self, config: RunConfig, mode: "Mode", resume: bool = False):
    self.config, self.mode = config, mode
    self.lock = None  # the logdir's (`logdir.prepare`), released when the run ends
    # Before anything of the run exists: the calibration has the machine to itself.
    self.host = host.start_record(calibration=config.outputs.host_calibration)
    r = config.rollout
    self.info = envs.env_info(r.env, r.env_kwargs)
    videos = config.evaluation.video_every or config.evaluation.video_final
    if videos and config.distributed.process_id == 0:
      video.check_recordable(r.env, r.env_kwargs)  # process 0 records
    kind = r.network
    if kind == "auto":
      kind = networks.default_network_for(self.info.obs_shape, r.env)
    self.network_kind = kind
    self.head = heads.for_env(self.info)
    self.network = networks.make_network(kind, self.head, config.learner.normalize_obs,
                                         r.core, r.core_size)
    self.core_size = networks.state_size(self.network)  # floats of recurrent state per row
    lcfg = config.learner
    if mode.rules.forces_correction is not None:
      lcfg = dataclasses.replace(lcfg, correction=mode.rules.forces_correction)
    self.optimizer = learner.make_optimizer(lcfg)
    key = jax.random.PRNGKey(seeding.learner_seed(r.seed))
    init_key, state_key = jax.random.split(key)
    params = networks.init_params(self.network, init_key, self.info.obs_shape,
                                  self.info.obs_dtype)
    state = learner.init_train_state(
        params, self.optimizer, state_key,
        reward_envs=r.num_envs * self.info.num_agents if lcfg.normalize_rewards else 0)
    self.placement = Placement(config.devices.learner_devices, config.devices.actor_devices)
    self.restored = self._restore(state) if resume else None
    if self.restored is not None:
      state = self.restored["state"]
      if self.restored["envs"] is None and state.reward_norm is not None:
        # Envs restart from a reset (envpool, unpicklable envs): so do their discounted returns.
        state = state.replace(reward_norm=dict(
            state.reward_norm, acc=jnp.zeros_like(state.reward_norm["acc"])))
    elif checkpoint.latest_step(config.outputs.logdir) is not None:
      raise ConfigError(f"{checkpoint.directory(config.outputs.logdir)} holds a checkpoint: pass "
                        "--resume to continue that run, --overwrite to replace it, or choose "
                        "another --logdir")
    self.num_agents = self.info.num_agents
    # Storage rows of this process: (env_id - env_offset) * agents + agent.
    self.num_rows = config.local_envs * self.num_agents
    # envpool: one group of envs per actor thread plays the executor (envpool_group.py).
    # --alternating_groups: each executor's envs in two blocks, one per group (sync.py).
    block_envs = (config.local_envs // r.num_executors // 2 if config.sync.alternating_groups
                  else r.actor_batch_envs)
    self.layout = BlockLayout(config.local_envs, r.num_actors if r.envpool else r.num_executors,
                              block_envs, self.num_agents)
    first_row = config.env_offset * self.num_agents  # action streams keyed by global rows
    self.streams = seeding.action_streams(r.seed, r.num_envs * self.num_agents)[
        first_row:first_row + self.num_rows]
    step = (mode.learner_step(self, lcfg) if mode.learner_step else learner.make_learner_step(
        lcfg, self.network.apply, self.optimizer, unroll=learner.unroll_for(kind),
        devices=self.placement.learner_parallel, head=self.head))
    state = place_replicated(state, self.placement.learner_state)
    self.learner = LearnerWorker(step, state, sharding=self.placement.learner_data,
                                 delay_s=config.testing.learner_delay_s)
    self.policy_rows = mode.policy_rows(self)
    self.policy = make_policy_step(self.network.apply, self.policy_rows,
                                   devices=self.placement.actor_parallel, head=self.head,
                                   recurrent=self.core_size > 0)
    self.acting = ActingParts(self.layout, self.policy, self.streams, r.alpha,
                              tuple(self.info.obs_shape), self.info.obs_dtype, self.policy_rows,
                              with_extras=mode.acts_with_extras)
    self.compile_s = self._compile()

  def _restore(self, abstract_state) -> Dict[str, Any]:
    """The newest checkpoint that verifies. A corrupt one (unreadable, or not matching its
    digest) is set aside with one line, and the next older one is tried; none left: ConfigError."""
    cfg = self.config
    root = checkpoint.directory(cfg.outputs.logdir)
    if not checkpoint.steps(cfg.outputs.logdir):
      raise ConfigError(f"--resume: no checkpoint in {root}")
    process = None
    # The state is restored straight onto every process's devices.
    if cfg.distributed.num_processes > 1:
      process = cfg.distributed.process_id
      abstract_state = jax.tree.map(lambda x: jax.ShapeDtypeStruct(
          x.shape, x.dtype, sharding=self.placement.learner_state), abstract_state)
    problems = []
    for step in checkpoint.steps(cfg.outputs.logdir):
      try:
        self._check_resumable(checkpoint.saved_host(cfg.outputs.logdir, step))
        ckpt = checkpoint.restore(cfg.outputs.logdir, abstract_state, step, process=process)
      except checkpoint.CorruptCheckpoint as e:
        if process is not None:  # the processes would have to agree on another: refuse
          raise ConfigError(f"--resume: {e}") from None
        problems.append(f"{e}; set aside in {checkpoint.set_aside(cfg.outputs.logdir, step)}")
        continue
      if problems:
        print(f"warning: {problems[-1]}; resuming from the older checkpoint "
              f"{os.path.join(root, str(step))}", file=sys.stderr, flush=True)
      return ckpt
    raise ConfigError(f"--resume: no checkpoint in {root} can be restored: {problems[0]}")

  def _check_resumable(self, host: Dict[str, Any]) -> None:
    """Refuses a config that changes what the run computes, or a run already past its end."""
    cfg = self.config
    changed = checkpoint.incompatible_changes(host["config"], json.loads(json.dumps(cfg.to_dict())))
    if changed:
      k = sorted(changed)[0]
      raise ConfigError(f"--resume: {k} differs from the checkpoint ({changed[k][0]!r} there, "
                        f"{changed[k][1]!r} now)")
    if host["segment"] + 1 > cfg.rollout.num_segments:
      raise ConfigError(f"--resume: the checkpoint is at segment {host['segment']}, "
                        f"beyond --total_steps={cfg.rollout.total_steps}")

  @property
  def storage_spec(self) -> storage_lib.StorageSpec:
    """The shape of this process's storages (alpha steps of its env rows)."""
    cfg = self.config
    return storage_lib.StorageSpec(cfg.rollout.alpha, cfg.local_envs, self.info.obs_shape,
                                   self.info.obs_dtype, self.num_agents,
                                   final_obs=cfg.learner.bootstrap_truncation,
                                   action_shape=self.info.action_shape,
                                   action_dtype=self.info.action_dtype,
                                   core_size=self.core_size)

  def zeros_segment(self) -> Segment:
    """A segment of zeros shaped like the storages' (what the learner is compiled for)."""
    return segment_of(storage_lib.zeros(self.storage_spec))

  def _compile(self) -> float:
    """Compiles the learner and policy steps with their real input shardings before the clock
    starts (results discarded)."""
    t0 = time.perf_counter()
    zeros = self.zeros_segment()
    if self.mode.learner_input is not None:
      example = self.mode.learner_input(self, zeros)
    else:
      example = self.learner.prepare(zeros)
    jax.block_until_ready(self.learner.step_fn(self.learner.state, example))
    self.acting.act(self.actor_params(self.learner.state.params),
                    zeros.obs[0, :self.policy_rows], np.zeros((self.policy_rows, 2), np.uint32),
                    np.zeros((self.policy_rows, self.core_size), np.float32)
                    if self.core_size else None)
    distributed.allgather_ints([0])  # the boundary's agreement (a collective: compiled too)
    return time.perf_counter() - t0

  def actor_params(self, params):
    """A copy of `params` on the actors' devices (replicated over them; no copy where they are
    the learner's)."""
    return jax.device_put(distributed.local_copy(params), self.placement.actor_params)

  def run(self) -> Dict[str, Any]:
    """Runs the mode's loop; returns the summary (also in `<logdir>/summary.json`)."""
    try:
      return self.mode.run(self)
    finally:
      if self.lock is not None:
        self.lock.release()


