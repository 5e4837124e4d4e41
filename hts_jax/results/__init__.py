"""Experiments as a library: the grids behind README's tables, read and reported from their
finished runs by `hts-reproduce <grid>` (from a clone: `python -m experiments.reproduce <grid>`),
which runs them first (`hts_jax.runs`).

- `grid`: where a grid's runs live, their summary.json read safely, the finished ones found
  again; `guard`: what a report trusts of a results directory (regular files, summary.json's
  types) and the hold on it for the whole call.
- `provenance`: where a committed result came from (date, commit, machine, command) and each
  run's host record; `publish`: results.json, the rendered markdown, README's and docs' blocks
  between their markers, and the staleness check the tests make.
- `spec`: a grid as data, results/<grid>/grid.toml (methods, tasks, seeds, budgets, targets,
  tables) and PROTOCOL.md.in (the protocol's prose) read into a `Grid`; `named`: the cells,
  lines and metrics a grid.toml names by name (`paper_parts`: what the GFootball report adds);
  `driver`: the one report of every grid; `render`: the one renderer of its tables and
  PROTOCOL.md.
- the grids, each a folder of results/: `gfootball` (the paper's Table 2 / A9 / A10, Tables 4/5),
  `minatar` (its Atari Tables 1/A7, A8 and A1 at CPU scale), `atari` (full Atari Pong),
  `mujoco`, `memory`; `paper_report` computes the paper's metrics for the first three, `compare`
  every grid's paired time ratios and aggregates across tasks; `corrections` (the policy-lag
  corrections study, with its decision rule). `benchmarks` renders docs/benchmarks.md's
  throughput blocks from the benchmark scripts' JSON, as results/benchmarks/render.toml says.

Nothing here is imported by the runtime, nor imports `hts_jax.runs`; the benchmark scripts in
`experiments/` use `hts_jax.runs.launch` and `provenance` and import no other script.
"""
