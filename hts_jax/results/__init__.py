"""Experiments as a library: the grids behind README's tables, run and reported by one command,
`hts-reproduce <grid>` (from a clone: `python -m experiments.reproduce <grid>`).

- `launch`: the one way a training run is started, in a process of its own (`python -m hts_jax`,
  what `hts-train` runs) or in this process (the benchmarks), and the resumable launch of a grid's
  run: a finished run is never run again, an interrupted one starts over.
- `grid`: a grid's runs as paired blocks (one seed's runs of every method, back to back on one
  host, in an order seeded by the block), run one at a time; the finished runs found again.
- `provenance`: where a committed result came from (date, commit, machine, command) and each
  run's host record; `publish`: results.json, the rendered markdown, README's and docs' blocks
  between their markers, and the staleness check the tests make.
- `spec`: a grid as data, results/<grid>/grid.toml (methods, tasks, seeds, budgets, targets,
  tables) and PROTOCOL.md.in (the protocol's prose) read into a `Grid`; `named`: the cells,
  lines and metrics a grid.toml names by name (`paper_parts`: what the GFootball report adds);
  `driver`: the one program that runs and reports every grid; `render`: the one renderer of its
  tables and PROTOCOL.md.
- the grids, each a folder of results/: `gfootball` (the paper's Table 2 / A9 / A10, Tables 4/5),
  `minatar` (its Atari Tables 1/A7, A8 and A1 at CPU scale), `atari` (full Atari Pong),
  `mujoco`, `memory`; `paper_report` computes the paper's metrics for the first three, `compare`
  every grid's paired time ratios and aggregates across tasks; `corrections` (the policy-lag
  corrections study, with its decision rule). `benchmarks` renders docs/benchmarks.md's
  throughput blocks from the benchmark scripts' JSON, as results/benchmarks/render.toml says.

Nothing here is imported by the runtime; the benchmark scripts in `experiments/` use `launch` and
`provenance` and import no other script.
"""
