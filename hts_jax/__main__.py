"""`python -m hts_jax <flags>` is `hts-train <flags>`, with a signal during start-up handled: the
command `hts_jax.runs.launch` starts every experiment's run with (it needs no installed
console script, and no `experiments/` folder)."""

if __name__ == "__main__":
  from hts_jax.cli import startup
  startup.handle_signals()
  from hts_jax.cli import train
  train.run()
