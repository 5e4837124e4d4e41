r"""Claim 1 of the paper: the expected time to collect K states with n envs that synchronize every
alpha steps, and a Monte Carlo simulator of the same process.

The model (paper Sec. 4, Claim 1 / Eq. 7). Every env step takes an exponential time with rate
beta (mean 1/beta, variance 1/beta^2), independently across envs and steps, plus a constant actor
time c per step. The n envs run in parallel but meet at a barrier every alpha steps, so one round
of alpha steps per env (n * alpha states) lasts as long as the slowest env:

    round time  = max_i (S_i + alpha * c),      S_i = sum of alpha step times ~ Gamma(alpha, beta)
    E[T_K]      = K / (n * alpha) * (E[max_{i<=n} S_i] + alpha * c)                      (Eq. 7)
    E[max S_i]  = int_0^inf 1 - P(alpha, beta * x)^n dx

with P the regularized lower incomplete gamma function (the Gamma CDF). alpha = 1 is the lockstep
synchronous baseline (A2C/PPO): E[max] = H_n / beta; as alpha grows, E[max] / alpha -> 1 / beta,
the time of an env that never waits. The simulator draws every step time and counts states until
the K-th arrives (the last round may be partial), so it checks the formula's algebra and its
treatment of K / (n * alpha) as a number of rounds.

Pure NumPy/SciPy; no JAX, no clocks.
"""

from __future__ import annotations

import math
from typing import Dict

import numpy as np
from scipy import integrate
from scipy import special

# Tail mass below which the integrand is treated as exactly 0 or 1.
_TAIL = 1e-15


def _check(n: int, alpha: int, beta: float, c: float = 0.0, step_shape: float = 1.0) -> None:
  if n < 1 or alpha < 1:
    raise ValueError(f"need n >= 1 and alpha >= 1, got n={n}, alpha={alpha}")
  if not beta > 0:
    raise ValueError(f"need beta > 0 (the step-time rate), got {beta}")
  if c < 0:
    raise ValueError(f"need c >= 0 (actor time per step), got {c}")
  if not step_shape > 0:
    raise ValueError(f"need step_shape > 0, got {step_shape}")


def expected_max_gamma(n: int, alpha: float, beta: float) -> float:
  """E[max of n i.i.d. Gamma(shape=alpha, rate=beta)] = int_0^inf 1 - P(alpha, beta x)^n dx.

  The integrand is 1 below the point where P^n < 1e-15 and 0 above the point where n (1 - P) <
  1e-15, so the integral is that lower point plus a finite integral between the two. Any shape
  alpha > 0 (sums of alpha exponential steps are the integer case; alpha steps of Gamma(k)
  time sum to Gamma(alpha k)).
  """
  if n < 1 or not alpha > 0 or not beta > 0:
    raise ValueError(f"need n >= 1, alpha > 0, beta > 0; got n={n}, alpha={alpha}, beta={beta}")
  lo = special.gammaincinv(alpha, _TAIL ** (1.0 / n)) / beta
  hi = special.gammainccinv(alpha, _TAIL / n) / beta
  mode = max(alpha - 1.0, 0.0) / beta
  f = lambda x: -math.expm1(n * math.log(max(special.gammainc(alpha, beta * x), 1e-300)))
  pts = [p for p in (mode, alpha / beta) if lo < p < hi]
  value, _ = integrate.quad(f, lo, hi, points=pts or None, limit=200, epsabs=0.0,
                            epsrel=1e-10)
  return lo + value


def expected_runtime(K: int, n: int, alpha: int, beta: float, c: float = 0.0, *,
                     step_shape: float = 1.0) -> float:
  """Eq. 7: expected seconds to collect K states (n envs, sync every alpha steps, actor time c).

  `step_shape` k generalizes the exponential step (k = 1) to Gamma(k, beta) steps (mean k/beta,
  variance k/beta^2): alpha steps then sum to Gamma(alpha k, beta) and Eq. 7 holds unchanged with
  that shape. This is how a variance grid at a fixed mean is modelled (k = mean^2 / variance).
  """
  _check(n, alpha, beta, c, step_shape)
  return K / (n * alpha) * (expected_max_gamma(n, alpha * step_shape, beta) + alpha * c)


def simulate_runtime(K: int, n: int, alpha: int, beta: float, c: float = 0.0, *,
                     repeats: int = 8, seed: int = 0,
                     step_shape: float = 1.0) -> Dict[str, float]:
  """Monte Carlo of the same process: per-step exponential (Gamma(step_shape)) times (+ c), a
  barrier every alpha steps, stop at the K-th state. Returns {"mean_s", "stderr_s", "repeats"}."""
  _check(n, alpha, beta, c, step_shape)
  if K < 1 or repeats < 1:
    raise ValueError(f"need K >= 1 and repeats >= 1, got K={K}, repeats={repeats}")
  rng = np.random.default_rng(seed)
  draw = lambda size: rng.gamma(step_shape, 1.0 / beta, size=size)
  full_rounds, rest = divmod(K, n * alpha)
  totals = np.zeros(repeats)
  for r in range(repeats):
    t = 0.0
    # Full rounds in chunks (bounded memory): round time = max over envs of the alpha-step sum.
    chunk = max(1, 2_000_000 // (n * alpha))
    done = 0
    while done < full_rounds:
      m = min(chunk, full_rounds - done)
      steps = draw((m, n, alpha)) + c
      t += float(steps.sum(axis=2).max(axis=1).sum())
      done += m
    if rest:
      # Partial round: the time at which the rest-th state of the round arrives.
      finish = np.cumsum(draw((n, alpha)) + c, axis=1)
      t += float(np.partition(finish.ravel(), rest - 1)[rest - 1])
    totals[r] = t
  return {"mean_s": float(totals.mean()),
          "stderr_s": float(totals.std(ddof=1) / math.sqrt(repeats)) if repeats > 1 else 0.0,
          "repeats": repeats}


def predicted_speedup(n: int, alpha: int, beta: float, c: float = 0.0, *,
                      step_shape: float = 1.0) -> float:
  """Eq. 7 at alpha = 1 (lockstep) over Eq. 7 at alpha: the rollout-time gain of syncing every
  alpha steps (K cancels). Learning/rollout overlap is not part of Claim 1."""
  return (expected_runtime(1, n, 1, beta, c, step_shape=step_shape) /
          expected_runtime(1, n, alpha, beta, c, step_shape=step_shape))
