"""Starting training runs and running grids of them; `hts_jax.results` reads and reports them.

- `launch`: the one way a training run is started, in a process of its own (`python -m hts_jax`,
  what `hts-train` runs) or in this process (the benchmarks), and the resumable launch of a grid's
  run: a finished run is never run again, an interrupted one starts over.
- `blocks`: a grid's runs as paired blocks (one seed's runs of every method, back to back on one
  host, in an order seeded by the block), run one at a time, with the checks of this host before
  them and the hours they would take; a protocol's throughput benchmark.
- `driver`: `hts-reproduce <grid>`'s flags from its grid.toml and its run, then the report
  (`hts_jax.results.driver.report`).
- `sweeps`: the notebooks' ablation sweeps, one run per setting of a few flags and per seed.

This package imports `hts_jax.results` (where runs live, how they read, the report) and never the
other way round; nothing here is imported by the runtime.
"""
