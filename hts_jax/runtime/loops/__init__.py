"""The modes' wing of the runtime: each mode's `Mode` and loop (hts, sync, asynchronous, gala), the
contract they share (`assembly.Mode`), GALA's gossip and the envpool group that plays the executors
under --envpool. A loop receives the built parts and the controller, whose verbs it calls.
`hts_jax.runtime.modes` registers the modes (by importing these modules) and is the entry point
(`make_runner`, `run`)."""
