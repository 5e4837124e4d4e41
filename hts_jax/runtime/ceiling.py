"""The envs' own rate for a run's layout (its ceiling): the run's executor processes, envs,
blocks and storages, built as a run builds them, each executor stepping its blocks with actions
drawn by it (uniform over the action space, seeded per executor, all drawn before the clock
starts): no actor calls, no learner, no barrier. A run's SPS over this rate is the share of the envs' own speed the rest of the
runtime leaves (`experiments.bench_sampler` reports it for HTS and sync side by side).

What stays the same as in a run: `Executor`'s env construction (seeds, decorrelation), its block
stepping (`Executor.step_block`: the env blocks, the storage writes, the finiteness check) and the
processes (one per executor, `spawn`ed). What goes: the action and state buffers, the policy
calls, the learner, the alpha barrier, evaluations and outputs. The executors' processes import
no JAX (the run's shapes, `assembly.Shape`, are worked out in the parent).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import queue
import time
from typing import Any, Dict, List

import numpy as np

from hts_jax import envs
from hts_jax.config import RunConfig
from hts_jax.runtime import executor as executor_lib
from hts_jax.runtime.parent import die_with_parent
from hts_jax.runtime.storage import Storages


def measure(config: RunConfig, steps: int, timeout_s: float = 600.0) -> Dict[str, Any]:
  """At least `steps` env steps of the run's envs in whole segments of every executor, timed
  from the moment every executor is ready (envs made and reset, actions drawn) to the moment the
  last one is done. Returns the env steps, wall seconds, SPS and each executor's own seconds. An
  executor that fails or dies is named in one line (RuntimeError); none outlives the call."""
  from hts_jax.runtime.assembly import Shape  # pylint: disable=import-outside-toplevel (JAX)
  r = config.rollout
  info = envs.env_info(r.env, r.env_kwargs)
  shape = Shape.of(config, info, core_size=0)
  segments = max(1, math.ceil(steps / (r.alpha * config.local_envs)))
  storages = Storages(shape.storage, create=True)
  procs: List[Any] = []
  try:
    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    specs = executor_lib.executor_specs(config, storages.spec, shape.layout, first_segment=0)
    procs = [ctx.Process(target=_main, args=(s, segments, info, start, results, timeout_s),
                         daemon=True) for s in specs]
    for p in procs:
      p.start()
    for _ in procs:  # every executor ready before the clock starts
      _expect(_next(results, procs, timeout_s), "ready")
    t0 = time.perf_counter()
    start.set()
    done = [_expect(_next(results, procs, timeout_s), "done") for _ in procs]
    wall = time.perf_counter() - t0
  finally:
    for p in (p for p in procs if p.pid is not None):  # started
      p.join(timeout=10)
      if p.is_alive():
        p.terminate()
        p.join(timeout=10)
    storages.close()
  total = sum(d["env_steps"] for d in done)
  return {"env_steps": total, "wall_time_s": wall, "sps": total / wall,
          "executor_s": sorted(d["seconds"] for d in done), "segments": segments}


def _next(results, procs, timeout_s: float) -> Dict[str, Any]:
  """The next executor message; an executor that died without one is named."""
  deadline = time.monotonic() + timeout_s
  while True:
    try:
      return results.get(timeout=0.5)
    except queue.Empty:
      dead = [i for i, p in enumerate(procs) if p.exitcode is not None and p.exitcode != 0]
      if dead:
        raise RuntimeError(f"executor {dead[0]} died (exit code {procs[dead[0]].exitcode}) "
                           "without a word") from None
      if time.monotonic() > deadline:
        raise RuntimeError(f"no word from the executors in {timeout_s:.0f} s") from None


def _expect(message: Dict[str, Any], kind: str) -> Dict[str, Any]:
  if message["kind"] == "failed":
    raise RuntimeError(f"executor {message['index']}: {message['error']}")
  assert message["kind"] == kind, message
  return message


def _main(spec: executor_lib.ExecutorSpec, segments: int, info: envs.EnvInfo, start, results,
          timeout_s: float) -> None:
  """One executor's process: its envs as a run makes them and every segment's actions drawn
  (uniform, seeded) before the clock starts, then `segments` segments of every block."""
  parent = mp.parent_process()
  if parent is not None:  # as `executor_main`: none outlives a killed benchmark
    die_with_parent(parent.pid)
  try:
    ex = executor_lib.Executor(spec, None, None, None, {"env_id": None})
    rng = np.random.default_rng([spec.seed, spec.index, 53])
    draws = {}
    for b in ex.blocks:
      shape = (segments, spec.alpha) + ex.storages.filling(0).actions[0, ex.block_rows[b]].shape
      draws[b] = (rng.uniform(-1.0, 1.0, shape) if info.continuous
                  else rng.integers(0, info.num_actions, shape))
    results.put({"kind": "ready", "index": spec.index})
    if not start.wait(timeout_s):
      return
    t0, n = time.perf_counter(), 0
    for segment in range(segments):
      st = ex.storages.filling(segment)
      for b in ex.blocks:
        ex.env_blocks[b].observations(st.obs[0, ex.block_rows[b]])
      for t in range(spec.alpha):
        for b in ex.blocks:
          st.actions[t, ex.block_rows[b]] = draws[b][segment, t]
          ex.step_block(st, b, t, segment)
          n += len(ex.block_envs[b])
    results.put({"kind": "done", "index": spec.index, "env_steps": n,
                 "seconds": time.perf_counter() - t0})
  except BaseException as e:  # pylint: disable=broad-except
    results.put({"kind": "failed", "index": spec.index, "error": f"{type(e).__name__}: {e}"})
