"""The XLA backend a run gets: GPU determinism (`--xla_deterministic`), set before JAX creates
its backends, and what the run ran on (summary.json's `backend`).

On CPU, XLA's programs are deterministic already: a fixed compiled program gives the same bits
every run. On GPU they are not by default: scatters and some reductions use atomics, and the
autotuner picks GEMM and convolution algorithms by timing them at compile time, so two runs may
compile different kernels. `--xla_gpu_deterministic_ops=true` "guarantees run-to-run determinism on
GPU" (XLA's flag help): deterministic scatters and reductions, and GEMM autotuning off; the HTS-RL
contract (the same `param_sha256` for any number of actors, and run after run) needs it, so
`--xla_deterministic` defaults to on. XLA reads the flag once, when JAX creates its
backends: `configure` sets it in `XLA_FLAGS` before that, and refuses a GPU backend that already
started with the other setting.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import jax

from hts_jax.config import ConfigError

GPU_DETERMINISTIC_OPS = "--xla_gpu_deterministic_ops"


def _xla_flags() -> List[str]:
  return os.environ.get("XLA_FLAGS", "").split()


def gpu_deterministic_ops() -> bool:
  """Whether `XLA_FLAGS` turns XLA's deterministic GPU ops on (the last mention wins)."""
  value: Optional[bool] = None
  for flag in _xla_flags():
    name, _, text = flag.partition("=")
    if name == GPU_DETERMINISTIC_OPS:
      value = text.lower() in ("", "true", "1")
  return bool(value)


def _backends_started() -> bool:
  from jax._src import xla_bridge  # pylint: disable=import-outside-toplevel
  return xla_bridge.backends_are_initialized()


def configure(deterministic: bool) -> None:
  """Sets XLA's deterministic GPU ops to `deterministic` for this process (and the processes it
  starts), before JAX creates its backends. Where they exist already: nothing to do on CPU (the
  flag does nothing there); a GPU backend started with the other setting raises ConfigError."""
  if _backends_started():
    if (gpu_deterministic_ops() != deterministic
        and any(d.platform == "gpu" for d in jax.devices())):
      want = "with" if deterministic else "without"
      raise ConfigError(
          f"--xla_deterministic={deterministic} needs JAX's GPU backend started {want} "
          f"{GPU_DETERMINISTIC_OPS}, but it started already: run in a fresh process (the "
          f"launcher sets XLA_FLAGS before JAX starts) or set XLA_FLAGS before the first JAX "
          f"computation")
    return
  flags = [f for f in _xla_flags() if f.partition("=")[0] != GPU_DETERMINISTIC_OPS]
  if deterministic:
    flags.append(GPU_DETERMINISTIC_OPS + "=true")
  if flags:
    os.environ["XLA_FLAGS"] = " ".join(flags)
  else:
    os.environ.pop("XLA_FLAGS", None)


def describe(learner_devices, actor_devices) -> Dict[str, Any]:
  """summary.json's `backend`: the platform, the devices of the learner and the actors, whether
  XLA's GPU ops were deterministic, and the JAX version."""
  import jaxlib  # pylint: disable=import-outside-toplevel
  platform = jax.default_backend()
  return {"platform": platform,
          "device_kind": sorted({d.device_kind
                                 for d in list(learner_devices) + list(actor_devices)}),
          "learner_devices": [str(d) for d in learner_devices],
          "actor_devices": [str(d) for d in actor_devices],
          # On CPU XLA is deterministic whatever the flag says.
          "deterministic": platform == "cpu" or gpu_deterministic_ops(),
          "xla_gpu_deterministic_ops": gpu_deterministic_ops(),
          "jax": jax.__version__, "jaxlib": jaxlib.__version__}
