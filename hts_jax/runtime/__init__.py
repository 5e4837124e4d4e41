"""Host side of HTS-RL: executors (processes), storages (shared memory), actors, learner, loop.

Import submodules explicitly; this package root imports nothing so that spawned executor
processes do not import JAX.
"""
