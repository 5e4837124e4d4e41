"""Where the learner and the actors run (`--learner_devices`, `--actor_devices`), and a record of
XLA compilations (the runtime compiles everything before its clock starts).

The learner's state is replicated over the learner devices and its input storage split along the
env axis (`DATA_AXIS`); the actors' params are a copy replicated over the actor devices, made
once per segment when the controller publishes them (versioned), so a policy call never touches
a learner device; the evaluator runs on the first actor device. The two sets may be the same
devices (the default: device 0 for both), overlap, or be disjoint (Sebulba's split: actors on
GPU 0, the learner on GPUs 1-7). In a multi-process run (`distributed.py`) the learner's mesh
holds the learner devices of every process, in process order.
"""

from __future__ import annotations

import threading
from typing import List, Optional, Sequence

import jax
from jax.sharding import NamedSharding, PartitionSpec as P

from hts_jax.config import ConfigError
from hts_jax.learner import data_mesh
from hts_jax.types import DATA_AXIS


def _pick(indices: Sequence[int], name: str) -> List[jax.Device]:
  devices = jax.local_devices()
  bad = [i for i in indices if i >= len(devices)]
  if bad:
    raise ConfigError(f"{name}={','.join(map(str, indices))}: this process has "
                      f"{len(devices)} local {devices[0].platform} device(s), no index {bad[0]}")
  return [devices[i] for i in indices]


class Placement:
  """The learner's and the actors' devices, meshes and shardings."""

  def __init__(self, learner_devices: Sequence[int], actor_devices: Sequence[int]):
    _pick(learner_devices, "learner_devices")  # checks the indices
    # The learner spans the learner devices of every process (process-major: process p's
    # storage columns are the p-th block of the global batch); actors stay local.
    self.learner = [jax.local_devices(process_index=p)[i]
                    for p in range(jax.process_count()) for i in learner_devices]
    self.actor = _pick(actor_devices, "actor_devices")
    learner_mesh, actor_mesh = data_mesh(self.learner), data_mesh(self.actor)
    self.learner_state = NamedSharding(learner_mesh, P())          # replicated
    self.learner_data = NamedSharding(learner_mesh, P(None, DATA_AXIS))  # [T, B]: B split
    self.actor_params = NamedSharding(actor_mesh, P())              # replicated
    self.eval_params = NamedSharding(data_mesh(self.actor[:1]), P())

  @property
  def learner_parallel(self) -> Optional[List[jax.Device]]:
    """The learner devices when the step is data-parallel over several, else None (plain jit,
    placed by its inputs)."""
    return self.learner if len(self.learner) > 1 else None

  @property
  def actor_parallel(self) -> Optional[List[jax.Device]]:
    return self.actor if len(self.actor) > 1 else None


class CompileLog:
  """Counts XLA backend compilations (by function name) from `start()` on, in this process."""

  _EVENT = "/jax/core/compile/backend_compile_duration"

  def __init__(self):
    self._lock = threading.Lock()
    self._names: Optional[List[str]] = None
    jax.monitoring.register_event_duration_secs_listener(self._on_event)

  def _on_event(self, event: str, duration: float, **kwargs) -> None:
    del duration
    if event == self._EVENT and self._names is not None:
      with self._lock:
        self._names.append(str(kwargs.get("fun_name", "?")))

  def start(self) -> None:
    with self._lock:
      self._names = []

  def since_start(self) -> List[str]:
    with self._lock:
      return list(self._names or [])


COMPILES = CompileLog()
