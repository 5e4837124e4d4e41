"""hts_jax: High-Throughput Synchronous Deep RL (Liu, Yeh & Schwing, NeurIPS 2020) in JAX/Flax.

The package root imports nothing heavy so that executor processes (spawned) stay light;
import the submodules you need: `hts_jax.networks`, `hts_jax.losses`, `hts_jax.learner`,
`hts_jax.acting`, `hts_jax.runtime`.
"""

__version__ = "0.1.0"


def __getattr__(name):
  """`hts_jax.load_policy` (`hts_jax.trained.load_policy`), imported when first used (PEP 562):
  the root stays light, and no module that imports the root imports JAX through it."""
  if name == "load_policy":
    import importlib  # pylint: disable=import-outside-toplevel
    return importlib.import_module("hts_jax.trained").load_policy
  raise AttributeError(f"module 'hts_jax' has no attribute {name!r}")
