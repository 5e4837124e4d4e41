"""The modes' wing of the runtime: each mode's `Mode` and loop (hts, sync, asynchronous, gala), the
contract they share (`mode.Mode`), GALA's gossip and the envpool group that plays the executors
under --envpool. `hts_jax.runtime.modes` registers them (from `mode_options.RULES`) and is the
entry point (`make_runner`, `run`)."""
