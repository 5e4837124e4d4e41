"""Multi-process runs on `jax.distributed` (no home-made RPC).

Each process runs the executors and actors of its slice of the global env ids
(`RunConfig.env_offset`, `local_envs`): env seeds, action streams and episode books stay keyed by
global env id, so a trajectory depends only on (seed, env id), whatever the topology. The learner
is one SPMD program over every process's learner devices: each process's storage is its shard of
the global `[T, num_envs]` batch (`jax.make_array_from_process_local_data`), gradients are
all-reduced by the data-parallel step, and the state is replicated everywhere. Decisions that
change the segment loop are agreed at the segment boundary with `process_allgather` (the
collectives run over gloo on CPU).
"""

from __future__ import annotations

import json
import math
from typing import Any, List

import jax
import numpy as np

from hts_jax.choices import ConfigError
from hts_jax.config import resumable_fields
from hts_jax.runtime import job_check

# Seconds without a heartbeat after which the coordination service declares a process dead and
# stops the others (a killed process must not leave its peers waiting in a collective).
HEARTBEAT_TIMEOUT_S = 10
_joined = False
_checks: List[Any] = []  # process 0's job check, open for the process's life


def initialize(config) -> None:
  """Joins the multi-process run `config` describes (nothing for one process). Must run before
  JAX creates its backends."""
  global _joined
  if config.distributed.num_processes == 1 or _joined:  # joined once per process
    return
  _joined = True
  _check_job(config)
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  jax.distributed.initialize(
      coordinator_address=config.distributed.coordinator_address or None,
      num_processes=config.distributed.num_processes, process_id=config.distributed.process_id,
      initialization_timeout=math.ceil(config.distributed.join_timeout_s),
      heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT_S)


def _check_job(config) -> None:
  """Before anything connects to the coordinator: process 0 opens its job check, the others ask
  it (`job_check`). Without an address (JAX finds a cluster's itself) there is nothing to ask."""
  d = config.distributed
  if not d.coordinator_address:
    return
  token = d.job_token or job_check.default_token(config.to_dict(), resumable_fields())
  if d.process_id == 0:
    _checks.append(job_check.Check(d.coordinator_address, token, d.num_processes))
    _checks[-1].start()
    # Every peer asks the check before it connects: one that has not asked by now is not coming,
    # and is named here rather than left to the coordinator's native abort.
    missing = _checks[-1].missing(d.join_timeout_s)
    if missing:
      raise ConfigError(
          f"--num_processes={d.num_processes}: process_id {', '.join(map(str, missing))} never "
          f"joined within {d.join_timeout_s:g} s (--join_timeout_s): start "
          f"{'it' if len(missing) == 1 else 'each'} with --coordinator_address="
          f"{d.coordinator_address}, the same flags and its --process_id; nothing was trained")
  else:
    job_check.ask(d.coordinator_address, token, d.process_id, d.num_processes,
                  d.join_timeout_s)


def is_multiprocess() -> bool:
  return jax.process_count() > 1


def local_copy(tree):
  """Arrays replicated over devices of several processes as this process's copy (a plain
  single-device array the host can read); other leaves unchanged."""
  def one(x):
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
      return x.addressable_data(0)
    return x
  return jax.tree.map(one, tree)


def allgather_ints(values: List[int]) -> np.ndarray:
  """`[num_processes, len(values)]`: every process's `values` (a collective: all processes
  call it at the same point)."""
  from jax.experimental import multihost_utils  # pylint: disable=import-outside-toplevel
  arr = np.asarray(values, np.int64)
  if not is_multiprocess():
    return arr[None]
  return np.asarray(multihost_utils.process_allgather(arr)).reshape(jax.process_count(), -1)


def allgather_json(obj: Any) -> List[Any]:
  """Every process's JSON-serialisable `obj`, in process order (a collective)."""
  if not is_multiprocess():
    return [obj]
  data = np.frombuffer(json.dumps(obj).encode(), np.uint8)
  sizes = allgather_ints([len(data)])[:, 0]
  buf = np.zeros(int(sizes.max()), np.uint8)
  buf[:len(data)] = data
  from jax.experimental import multihost_utils  # pylint: disable=import-outside-toplevel
  rows = np.asarray(multihost_utils.process_allgather(buf)).reshape(len(sizes), -1)
  return [json.loads(bytes(rows[i, :sizes[i]]).decode()) for i in range(len(sizes))]
