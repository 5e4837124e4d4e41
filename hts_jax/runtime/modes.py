"""A run, from its config to its summary: the modes (`--mode`: hts (HTS-RL), sync (synchronous
A2C/PPO), async (IMPALA with V-trace), gala (GALA-A2C) and allreduce (its all-reduce A2C baseline)),
each registered by importing its loop's module; `make_runner(config)` builds (and compiles) a run,
`run(config)` runs it.

The `Runner` builds what every mode shares once (`assembly.Parts`): the shapes, the network, the
TrainState (fresh or restored), the compiled learner and policy steps (`ActingParts`) and the
learner worker. `Runner.run` runs the mode's loop (`assembly.Mode`) on them inside a `Controller`,
which composes the other parts (`barrier`, `supervisor`, `executor`, `sampler`, `storage`,
`buffers`, and the outputs: `bookkeeping`, the `observers`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import Any, Dict

import jax
import jax.numpy as jnp
import numpy as np

from hts_jax import envs, heads, learner, networks, seeding
from hts_jax.choices import RULES
from hts_jax.config import ConfigError, RunConfig, incompatible_changes
from hts_jax.runtime import backend, distributed, host, logdir
from hts_jax.runtime.outputs import checkpoint, signing, tracking, video
from hts_jax.runtime.sampler import ActingParts
from hts_jax.runtime.assembly import Mode, Model, Parts, Shape
from hts_jax.runtime.controller import Controller
from hts_jax.runtime.errors import Interrupted, RunError  # pylint: disable=unused-import
from hts_jax.runtime.learner_worker import LearnerWorker
from hts_jax.runtime.loops import asynchronous, gala, hts, sync
from hts_jax.runtime.placement import Placement
from hts_jax.runtime.policy import make_policy_step
from hts_jax.runtime.supervisor import defer_signals  # pylint: disable=unused-import
from hts_jax.runtime.watchdog import within

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
  """Builds the parts for `config` (`self.parts`), compiles the hot steps, then `run()` runs the
  mode's loop inside a `Controller` and writes `<logdir>/{metrics.csv,summary.json}`; `lock`,
  the logdir's lock taken before the runner is built, is released when the run ends. With
  `resume=True` it continues from the newest checkpoint in `<logdir>/checkpoints`; without, it
  refuses a logdir that holds one."""

  def __init__(self, config: RunConfig, mode: Mode, lock=None, resume: bool = False):
    self.config, self.mode = config, mode
    self.lock = lock  # the logdir's (`logdir.prepare`), released when the run ends
    r = config.rollout
    # The start-up says what it does (compiling a CNN takes a minute on 2 cores, in silence).
    self._say(f"starting: {r.env}, {r.num_envs} envs, {r.num_executors} executors, "
              f"{config.learner.algo.upper()}")
    # Before anything of the run exists: the calibration has the machine to itself.
    run_host = host.start_record(calibration=config.outputs.host_calibration)
    info = envs.env_info(r.env, r.env_kwargs)
    videos = config.evaluation.video_every or config.evaluation.video_final
    if videos and config.distributed.process_id == 0:
      video.check_recordable(r.env, r.env_kwargs)  # process 0 records
    kind = networks.resolve_kind(r.network, r.env, info.obs_shape)
    head = heads.for_env(info)
    network = networks.make_network(kind, head, config.learner.normalize_obs, r.core, r.core_size)
    shape = Shape.of(config, info, networks.state_size(network))
    lcfg = config.learner
    forced = mode.rules.forced_correction(config)
    if forced is not None:
      lcfg = dataclasses.replace(lcfg, correction=forced)
    model = Model(network, kind, head, learner.make_optimizer(lcfg))
    key = jax.random.PRNGKey(seeding.learner_seed(r.seed))
    init_key, state_key = jax.random.split(key)
    params = networks.init_params(network, init_key, info.obs_shape, info.obs_dtype)
    state = learner.init_train_state(
        params, model.optimizer, state_key,
        reward_envs=r.num_envs * info.num_agents if lcfg.normalize_rewards else 0)
    placement = Placement(config.devices.learner_devices, config.devices.actor_devices)
    restored = self._restore(state, placement) if resume else None
    if restored is not None:
      _check_trusted(restored, config)
      state = restored["state"]
      if restored["envs"] is None and state.reward_norm is not None:
        # Envs restart from a reset (envpool, unpicklable envs): so do their discounted returns.
        state = state.replace(reward_norm=dict(
            state.reward_norm, acc=jnp.zeros_like(state.reward_norm["acc"])))
    elif checkpoint.latest_step(config.outputs.logdir) is not None:
      raise ConfigError(f"{checkpoint.directory(config.outputs.logdir)} holds a checkpoint: pass "
                        "--resume to continue that run, --overwrite to replace it, or choose "
                        "another --logdir")
    first_row = config.env_offset * shape.num_agents  # action streams keyed by global rows
    streams = seeding.action_streams(r.seed, r.num_envs * shape.num_agents)[
        first_row:first_row + shape.num_rows]
    step = (mode.learner_step(shape, model, lcfg) if mode.learner_step else
            learner.make_learner_step(lcfg, network.apply, model.optimizer,
                                      unroll=learner.unroll_for(kind),
                                      devices=placement.learner_parallel, head=head))
    state = place_replicated(state, placement.learner_state)
    worker = LearnerWorker(step, state, sharding=placement.learner_data,
                           delay_s=config.testing.learner_delay_s)
    policy_rows = mode.policy_rows(shape)
    policy = make_policy_step(network.apply, policy_rows, devices=placement.actor_parallel,
                              head=head, recurrent=shape.core_size > 0)
    acting = ActingParts(shape.layout, policy, streams, shape.storage, policy_rows,
                         with_extras=mode.acts_with_extras)
    parts = Parts(config=config, shape=shape, model=model, placement=placement, learner=worker,
                  acting=acting, host=run_host, restored=restored, compile_s=0.0)
    self._say(f"compiling the learner and policy steps ({kind} network, XLA)")
    self.parts = dataclasses.replace(parts, compile_s=self._compile(parts))
    self._say(f"compiled in {self.parts.compile_s:.1f} s; starting the executors' envs")

  def _say(self, text: str) -> None:
    """A start-up line on stdout, where the progress lines go (process 0's; stderr keeps to
    errors and warnings)."""
    if self.config.distributed.process_id == 0:
      print(f"[{self.config.mode}] {text}", flush=True)

  def _restore(self, abstract_state, placement: Placement) -> Dict[str, Any]:
    """The newest checkpoint that verifies. A corrupt one (unreadable, or not matching its
    digest) is set aside with one line, and the next older one is tried; none left: ConfigError."""
    cfg = self.config
    root = checkpoint.directory(cfg.outputs.logdir)
    if not checkpoint.steps(cfg.outputs.logdir):
      raise ConfigError(f"--resume: no checkpoint in {root}")
    if cfg.distributed.num_processes > 1:
      # The state is restored straight onto every process's devices.
      return self._restore_agreed(jax.tree.map(lambda x: jax.ShapeDtypeStruct(
          x.shape, x.dtype, sharding=placement.learner_state), abstract_state))
    problems = []
    for step in checkpoint.steps(cfg.outputs.logdir):
      def read(step=step):
        self._check_resumable(checkpoint.saved_host(cfg.outputs.logdir, step))
        return checkpoint.restore(cfg.outputs.logdir, abstract_state, step,
                                  accept_unverified=cfg.outputs.resume_unverified)
      try:
        ckpt = within(cfg.rollout.startup_s, read, lambda s: ConfigError(
            f"--resume: reading checkpoint {os.path.join(root, str(step))} took more than "
            f"{s:.0f} s (--startup_s); nothing was trained"))
      except checkpoint.CorruptCheckpoint as e:
        try:
          problems.append(f"{e}; set aside in {checkpoint.set_aside(cfg.outputs.logdir, step)}")
        except (ConfigError, OSError) as moved:
          raise ConfigError(f"--resume: {e}; it cannot be set aside: {moved}") from None
        continue
      for problem in problems:  # each corrupt checkpoint named, where it went
        print(f"warning: {problem}; resuming from the older checkpoint "
              f"{os.path.join(root, str(step))}", file=sys.stderr, flush=True)
      return ckpt
    raise ConfigError(f"--resume: no checkpoint in {root} can be restored: {'; '.join(problems)}")

  def _restore_agreed(self, abstract_state) -> Dict[str, Any]:
    """A multi-process resume. The restore is collective, and so is every orbax manager's
    construction, so the processes agree at each stage: on the steps they all list; on the
    config, checked against the newest readable shared host record; on the steps that none of
    them found a problem in (`checkpoint.precheck`: the shared files and each process's own
    part). They restore the newest of those, and fall back to the next if the shared state itself
    does not verify (the same answer everywhere). Newer steps are set aside (process 0 the shared
    folder, each process its own part) and process 0 names each in one line."""
    logdir, process = self.config.outputs.logdir, self.config.distributed.process_id
    listed = distributed.allgather_json(checkpoint.steps(logdir))
    candidates = [s for s in listed[0] if all(s in theirs for theirs in listed)]
    problems: Dict[int, str] = {}
    for step in candidates:  # shared data: every process reads the same
      try:
        self._check_resumable(checkpoint.saved_host(logdir, step))
        break
      except checkpoint.CorruptCheckpoint as e:
        problems[step] = str(e)
    found = distributed.allgather_json({str(s): checkpoint.precheck(logdir, s, process)
                                        for s in candidates if s not in problems})
    for theirs in found:
      for step, why in theirs.items():
        if why:
          problems.setdefault(int(step), why)
    for step in candidates:
      if step not in problems:
        try:
          ckpt = checkpoint.restore(logdir, abstract_state, step, process=process,
                                    accept_unverified=self.config.outputs.resume_unverified)
        except checkpoint.CorruptCheckpoint as e:  # the shared state: the same everywhere
          problems[step] = str(e)
          continue
        self._set_aside_agreed([s for s in candidates if s > step], problems, step)
        # Every process's env states signed, or all refuse alike (`_check_trusted`).
        return dict(ckpt, signed=all(distributed.allgather_json(ckpt["signed"])))
    why = ("; ".join(problems[s] for s in candidates) if candidates else
           "the processes list different checkpoints")
    raise ConfigError(f"--resume: no checkpoint in {checkpoint.directory(logdir)} can be "
                      f"restored by every process: {why}")

  def _set_aside_agreed(self, steps, problems: Dict[int, str], resumed: int) -> None:
    """Moves the newer `steps` out of the way on every process and names them (process 0); a
    move that fails on any process stops every process with one line."""
    logdir, process = self.config.outputs.logdir, self.config.distributed.process_id
    root, error = checkpoint.directory(logdir), None
    for step in steps:
      try:
        checkpoint.set_aside_own(logdir, process, step)
        if process == 0:
          where = checkpoint.set_aside(logdir, step)
          print(f"warning: {problems[step]}; set aside in {where}; resuming from the older "
                f"checkpoint {os.path.join(root, str(resumed))}", file=sys.stderr, flush=True)
      except (ConfigError, OSError) as e:
        error = error or f"--resume: checkpoint {step} cannot be set aside: {e}"
    # A collective: every move is done before any process goes on.
    error = next((e for e in distributed.allgather_json(error) if e), None)
    if error:
      raise ConfigError(error)

  def _check_resumable(self, host: Dict[str, Any]) -> None:
    """Refuses a config that changes what the run computes, or a run already past its end."""
    cfg = self.config
    changed = incompatible_changes(host["config"], json.loads(json.dumps(cfg.to_dict())))
    if changed:
      k = sorted(changed)[0]
      raise ConfigError(f"--resume: {k} differs from the checkpoint ({changed[k][0]!r} there, "
                        f"{changed[k][1]!r} now)")
    if host["segment"] + 1 > cfg.rollout.num_segments:
      raise ConfigError(f"--resume: the checkpoint is at segment {host['segment']}, "
                        f"beyond --total_steps={cfg.rollout.total_steps}")
    if host.get("learned") and host["segment"] + 1 == cfg.rollout.num_segments:
      # A finished run's last checkpoint: nothing is left to train at this budget.
      raise ConfigError(f"--resume: the checkpoint is the run's end ({host['segment'] + 1} "
                        f"segments, --total_steps={cfg.rollout.total_steps}): pass a larger "
                        "--total_steps to train on from it")

  def _compile(self, parts: Parts) -> float:
    """Compiles the learner and policy steps with their real input shardings before the clock
    starts (results discarded)."""
    t0 = time.perf_counter()
    zeros = parts.shape.zeros_segment()
    if self.mode.learner_input is not None:
      example = self.mode.learner_input(parts.shape, zeros)
    else:
      example = parts.learner.prepare(zeros)
    jax.block_until_ready(parts.learner.step_fn(parts.learner.state, example))
    rows, core = parts.policy_rows, parts.shape.core_size
    parts.acting.act(parts.actor_params(parts.learner.state.params), zeros.obs[0, :rows],
                     np.zeros((rows, 2), np.uint32),
                     np.zeros((rows, core), np.float32) if core else None)
    distributed.allgather_ints([0])  # the boundary's agreement (a collective: compiled too)
    return time.perf_counter() - t0

  def run(self) -> Dict[str, Any]:
    """Runs the mode's loop inside the run's controller; returns the summary (also in
    `<logdir>/summary.json`)."""
    try:
      os.makedirs(self.config.outputs.logdir, exist_ok=True)
      mode = self.mode
      with Controller(self.parts, mode.total_steps(self.config), mode.checkpoints) as ctl:
        return mode.loop(self.parts, ctl)
    finally:
      if self.lock is not None:
        self.lock.release()


def _check_trusted(restored: Dict[str, Any], config) -> None:
  """Refuses a checkpoint whose env states (pickles) this machine's key did not sign, unless
  --resume_unsigned (`signing`); warns for what the flags let through (process 0)."""
  path = f"{checkpoint.directory(config.outputs.logdir)}/{restored['step']}"
  out = config.outputs
  if not restored["signed"] and not out.resume_unsigned:
    raise ConfigError(
        f"--resume: checkpoint {path}'s env states are not signed by this machine's key "
        f"({signing.key_path()}): written elsewhere, before signatures, or altered, and unpickling "
        "them runs any code they name; pass --resume_unsigned only if you trust the checkpoint")
  if config.distributed.process_id != 0:
    return
  if not restored["verified"]:
    print(f"warning: checkpoint {path} has no digest: restored unchecked (--resume_unverified)",
          file=sys.stderr, flush=True)
  if not restored["signed"]:
    print(f"warning: checkpoint {path}'s env states are not signed by this machine's key: "
          "unpickled because --resume_unsigned trusts them", file=sys.stderr, flush=True)


# Every mode, registered by importing its loop's module; each holds its `choices.RULES` entry.
MODES: Dict[str, Mode] = {m.name: m for m in (hts.MODE, sync.MODE, asynchronous.MODE, gala.GALA,
                                              gala.ALLREDUCE)}
assert list(MODES) == list(RULES) and all(m.rules is RULES[m.name] for m in MODES.values())


def make_runner(config: RunConfig, resume: bool = False) -> Runner:
  """The runner for `config.mode`; bad configurations raise ConfigError before anything spawns."""
  backend.configure(config.devices.xla_deterministic)  # before JAX creates its backends
  tracking.check_packages(config)
  mode = MODES[config.mode]
  mode.check(config, resume)
  if config.distributed.num_processes > 1 and config.rollout.envpool:
    raise ConfigError("--envpool runs in one process")
  # The logdir is made, locked and checked before anything is spawned, compiled or written.
  lock = logdir.prepare(config.outputs.logdir, resume, config.outputs.overwrite,
                        config.distributed.process_id)
  try:
    if config.distributed.num_processes > 1:
      distributed.initialize(config)
    return Runner(config, mode, lock, resume=resume)
  except BaseException:
    lock.release()
    raise


def run(config: RunConfig, resume: bool = False) -> Dict[str, Any]:
  """Runs the configured mode; returns the summary (also written to `<logdir>/summary.json`)."""
  return make_runner(config, resume=resume).run()
