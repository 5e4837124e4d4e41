"""hts_jax: High-Throughput Synchronous Deep RL (Liu, Yeh & Schwing, NeurIPS 2020) in JAX/Flax.

The package root imports nothing heavy so that executor processes (spawned) stay light;
import the submodules you need: `hts_jax.networks`, `hts_jax.losses`, `hts_jax.learner`,
`hts_jax.acting`, `hts_jax.runtime`.
"""

__version__ = "0.1.0"
