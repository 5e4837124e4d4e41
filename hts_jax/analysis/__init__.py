"""Analysis for the paper's claims and metrics: Claim 1 (runtime model), Claim 2 (lag model),
the final / final-time / required-time metrics with bootstrap CIs, and plots. JAX-free."""
