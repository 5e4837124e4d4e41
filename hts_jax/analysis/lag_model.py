r"""Claim 2 of the paper: the expected policy lag of an asynchronous (IMPALA/GA3C-style) learner,
and a queue simulator of the same process.

The model (paper Sec. 4, Claim 2). n actors each send unrolls (parameter requests) as Poisson
processes with rate lambda0; one learner serves them first-come first-served with exponential
service times of rate mu (one update per unroll). This is an M/M/1 queue with load
rho = n * rho0, rho0 = lambda0 / mu. An unroll's lag is the number of updates that happen between
the parameters it was produced with and its own update: the number of unrolls already in the
system when it arrives. By PASTA that is the time-average number in system:

    E[L] = n rho0 / (1 - n rho0),      n rho0 < 1.

It grows without bound as n rho0 -> 1: more actors, staler policies. HTS-RL's lag is exactly 1.
The simulator draws the arrivals and services and counts the lag of every unroll.

Pure NumPy; no JAX, no clocks.
"""

from __future__ import annotations

import math
from typing import Dict

import numpy as np


def _check(n: int, lambda0: float, mu: float) -> None:
  if n < 1 or not lambda0 > 0 or not mu > 0:
    raise ValueError(f"need n >= 1, lambda0 > 0, mu > 0; got n={n}, lambda0={lambda0}, mu={mu}")


def expected_lag(n: int, lambda0: float, mu: float) -> float:
  """E[L] = n rho0 / (1 - n rho0); inf when the learner is overloaded (n rho0 >= 1)."""
  _check(n, lambda0, mu)
  rho = n * lambda0 / mu
  return math.inf if rho >= 1 else rho / (1 - rho)


def lag_from_utilization(rho: float) -> float:
  """The same formula in terms of the learner's load rho = n rho0 (its busy fraction)."""
  if rho < 0:
    raise ValueError(f"need rho >= 0, got {rho}")
  return math.inf if rho >= 1 else rho / (1 - rho)


def simulate_lag(n: int, lambda0: float, mu: float, *, num_unrolls: int = 1_000_000,
                 warmup: float = 0.1, seed: int = 0) -> Dict[str, float]:
  """Simulates `num_unrolls` unrolls; returns the mean lag (after dropping the first `warmup`
  fraction, the empty-queue transient) and its batch-means standard error."""
  _check(n, lambda0, mu)
  rng = np.random.default_rng(seed)
  # The superposition of n Poisson(lambda0) streams is Poisson(n lambda0).
  arrivals = np.cumsum(rng.exponential(1.0 / (n * lambda0), size=num_unrolls))
  service = rng.exponential(1.0 / mu, size=num_unrolls)
  # FIFO single server: D_k = max(A_k, D_{k-1}) + S_k, vectorized as
  # D_k = C_k + max_{j<=k}(A_j - C_{j-1}) with C the cumulative service.
  csum = np.cumsum(service)
  departures = csum + np.maximum.accumulate(arrivals - (csum - service))
  # Lag of unroll k: updates finishing after it arrived and before its own = the unrolls ahead of
  # it still in the system = k - #{j : D_j <= A_k} (departures are increasing).
  lag = np.arange(num_unrolls) - np.searchsorted(departures, arrivals, side="right")
  lag = lag[int(warmup * num_unrolls):].astype(np.float64)
  batches = np.array_split(lag, 50)
  means = np.array([b.mean() for b in batches])
  return {"mean": float(lag.mean()), "stderr": float(means.std(ddof=1) / math.sqrt(len(means))),
          "unrolls": int(lag.size)}
