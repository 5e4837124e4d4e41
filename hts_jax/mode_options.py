"""What `RunConfig` asks of each mode, without JAX (see `config.py`): `MODE_CHECKS[mode]` lists the
checks of the mode's own options, each `check(config, n, where)` with `n` the process's envs and
`where` " per process" in a multi-process run; `UPDATES[mode]` is a mode's update size where it is
not one segment: (env steps per update as a function of the config, optimizer steps per update).
A new mode adds its entries here (CONTRIBUTING.md)."""

from __future__ import annotations

from typing import Callable, Dict, Tuple

from hts_jax.learner_config import check


def _baseline_correction(cfg, n: int, where: str) -> None:
  del n, where
  check(cfg.learner.correction == "delayed",
        f"--correction applies to --mode=hts (the baselines have no policy lag to "
        f"correct, or correct it with V-trace), got {cfg.learner.correction!r}")


def _async(cfg, n: int, where: str) -> None:
  del n, where
  check(not cfg.envpool, "--envpool is for --mode=hts and --mode=sync")
  check(cfg.learner.algo == "a2c", "--mode=async is IMPALA's V-trace actor-critic: use --algo=a2c")
  check(cfg.async_batch_unrolls >= 0,
        f"async_batch_unrolls must be >= 0, got {cfg.async_batch_unrolls}")
  check(cfg.num_executors % cfg.num_actors == 0,
        f"--mode=async: num_executors ({cfg.num_executors}) must be a multiple of "
        f"num_actors ({cfg.num_actors}): each actor owns whole executors")


def _agents(cfg, n: int, where: str) -> None:
  """gala and allreduce: agents that own whole executors, one process, one actor each."""
  del where
  m, k = cfg.mode, cfg.gala_agents
  check(k >= (2 if m == "gala" else 1),
        f"gala_agents must be >= {2 if m == 'gala' else 1} for --mode={m}, got {k}")
  check(cfg.num_processes == 1 and not cfg.envpool,
        f"--mode={m} runs in one process over executor envs (no --envpool)")
  check(n % k == 0 and cfg.num_executors % k == 0,
        f"--mode={m}: num_envs ({n}) and num_executors ({cfg.num_executors}) must be "
        f"divisible by gala_agents ({k}): each agent owns whole executors")
  check(cfg.num_actors == 1,
        f"--mode={m}: each agent acts for its own envs (A2C's lockstep); --num_actors must "
        f"be 1, got {cfg.num_actors}")
  check(cfg.gala_staleness >= 0, f"gala_staleness must be >= 0, got {cfg.gala_staleness}")
  if m == "gala":
    check(len(cfg.learner_devices) == 1, "--mode=gala: every agent learns on the one learner device")


def _alternating_groups(cfg, n: int, where: str) -> None:
  if cfg.alternating_groups:
    check(not cfg.envpool, "--alternating_groups steps executor envs: not with --envpool")
    check((n // cfg.num_executors) % 2 == 0,
          f"--alternating_groups splits each executor's envs in two: num_envs{where} ({n}) / "
          f"num_executors ({cfg.num_executors}) must be even")


# async (IMPALA): one V-trace step per batch of async_unrolls_per_update unrolls.
UPDATES: Dict[str, Tuple[Callable[..., int], int]] = {
    "async": (lambda cfg: cfg.async_steps_per_update, 1),
}

Check = Callable[..., None]
MODE_CHECKS: Dict[str, Tuple[Check, ...]] = {
    "hts": (),
    "sync": (_baseline_correction, _alternating_groups),
    "async": (_baseline_correction, _async),
    "gala": (_baseline_correction, _agents),
    "allreduce": (_baseline_correction, _agents),
}
