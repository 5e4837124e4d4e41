"""The modes and the entry points: `make_runner(config)` builds (and compiles) a run, `run(config)`
runs it. `--mode`: hts (HTS-RL), sync (synchronous A2C/PPO), async (IMPALA with V-trace), gala (GALA-A2C)
and allreduce (its all-reduce A2C baseline)."""

from __future__ import annotations

from typing import Any, Dict

from hts_jax.config import ConfigError, RunConfig
from hts_jax.choices import RULES
from hts_jax.runtime import backend, distributed, logdir
from hts_jax.runtime.outputs import tracking
from hts_jax.runtime.loops import asynchronous, gala, hts, sync
from hts_jax.runtime.assembly import Mode
from hts_jax.runtime.runner import Runner
from hts_jax.runtime.errors import Interrupted, RunError  # pylint: disable=unused-import
from hts_jax.runtime.supervisor import defer_signals  # pylint: disable=unused-import


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
