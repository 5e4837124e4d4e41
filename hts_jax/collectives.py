"""Reductions over the data-parallel learner's device axis (`jax.lax.psum` / `pmean` under
`axis_name`) that are the identity on one device (`axis_name` None): the one place the losses,
the corrections' diagnostics and the observation statistics take them from."""

import jax


def psum(x, axis_name):
  return x if axis_name is None else jax.lax.psum(x, axis_name)


def pmean(x, axis_name):
  return x if axis_name is None else jax.lax.pmean(x, axis_name)
