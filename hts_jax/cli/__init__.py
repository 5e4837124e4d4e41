"""The command-line programs, installed as console commands by `pip install` (pyproject.toml's
`[project.scripts]`) and runnable from a clone as `python -m experiments.<name>`:

- `hts-train` (`hts_jax.cli.train`): one training run from flags or a preset;
- `hts-launch` (`hts_jax.cli.launch`): a multi-process run on this machine (`jax.distributed`);
- `hts-report` (`hts_jax.cli.report`): the paper's tables and curves from finished runs.

`hts_jax.cli.common` is what they share (config flags from the dataclasses, one-line errors).
"""
