"""--acting_extrapolation (HTS with --correction=none): the prediction θ_j + β(θ_j − θ_{j-1}) by
golden values (observation statistics left at θ_j's), its diagnostics against numpy, the learner
step it leaves unchanged, and where it is allowed. Its runs (the same bits for any actor and
executor count, on resume) are in tests/contracts/test_continuous.py."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from hts_jax import learner
from hts_jax.config import ConfigError, RunConfig
from hts_jax.corrections import extrapolate
from hts_jax.normalization import COLLECTION
from tests.support.learner_cases import (LR, THETA, THETA_PREV, bias_model, one_step_segment,
                                         ppo_config, state_at)
from tests.support import ROOT


def test_extrapolate_moves_the_weights_and_keeps_the_observation_statistics():
  stats = lambda m: {"norm": {"mean": jnp.array([m]), "m2": jnp.array([2.0 * m]),
                              "count": jnp.array(3.0 * m)}}
  current = {"params": {"w": jnp.array([1.0, 2.0])}, COLLECTION: stats(4.0)}
  previous = {"params": {"w": jnp.array([0.0, 4.0])}, COLLECTION: stats(1.0)}
  got = extrapolate(current, previous, 0.5)
  np.testing.assert_array_equal(got["params"]["w"], [1.5, 1.0])
  assert jax.tree.map(np.asarray, got[COLLECTION]) == jax.tree.map(np.asarray, current[COLLECTION])
  np.testing.assert_array_equal(extrapolate(THETA, THETA_PREV, 1.0)["l"], [2.0, -2.0])
  np.testing.assert_array_equal(extrapolate(THETA, THETA_PREV, 0.0)["b"], THETA["b"])


def test_prediction_diagnostics_against_numpy_and_the_update_unchanged():
  """kl_next = KL(π_{θ_j} || π_{θ_{j+1}}), kl_pred = KL(π_{θ_j + β(θ_j − θ_{j-1})} ||
  π_{θ_{j+1}}); the step itself (θ_{j+1}, the other metrics) is `none`'s without the flag."""
  opt = optax.sgd(LR)
  plain_cfg, cfg = ppo_config(correction="none"), ppo_config(correction="none",
                                                             acting_extrapolation=0.5)
  plain, m0 = learner.make_learner_step(plain_cfg, bias_model, opt)(
      state_at(opt), one_step_segment(action=1))
  state, m = learner.make_learner_step(cfg, bias_model, opt)(state_at(opt),
                                                             one_step_segment(action=1))
  np.testing.assert_array_equal(state.params["l"], plain.params["l"])
  assert "kl_pred" not in m0 and {k: float(v) for k, v in m0.items()} == {
      k: float(v) for k, v in m.items() if k not in ("kl_pred", "kl_next")}
  softmax = lambda l: np.exp(l) / np.exp(l).sum()
  kl = lambda p, q: float(np.sum(p * np.log(p / q)))
  nxt = softmax(np.asarray(state.params["l"], np.float64))
  pred = np.asarray(THETA["l"]) + 0.5 * (np.asarray(THETA["l"]) - np.asarray(THETA_PREV["l"]))
  np.testing.assert_allclose(m["kl_next"], kl(softmax(np.asarray(THETA["l"])), nxt), rtol=1e-3)
  np.testing.assert_allclose(m["kl_pred"], kl(softmax(pred), nxt), rtol=1e-3)


def test_where_acting_extrapolation_is_allowed():
  RunConfig.make(mode="hts", alpha=16, learner=dict(algo="ppo", correction="none",
                                                    acting_extrapolation=1.0))
  with pytest.raises(ConfigError, match="^--acting_extrapolation predicts .* got "
                                        "--correction=decoupled$"):
    RunConfig.make(mode="hts", alpha=16, learner=dict(algo="ppo", correction="decoupled",
                                                      acting_extrapolation=1.0))
  with pytest.raises(ConfigError, match="^--acting_extrapolation is an option of --mode=hts"):
    RunConfig.make(mode="sync", alpha=16, learner=dict(algo="ppo", correction="none",
                                                       acting_extrapolation=1.0))
  with pytest.raises(ConfigError, match=r"acting_extrapolation must be in \[0, 1\]"):
    ppo_config(correction="none", acting_extrapolation=-1.0)


def test_the_prescreen_picks_the_best_beta_below_one_and_its_block_is_its_json():
  from results.corrections.round2 import prescreen as ct  # pylint: disable=import-outside-toplevel
  rows = lambda nxt, pred: [{"kl_next": nxt, "kl_pred": pred}, {"env_steps": 1.0}] * 3
  got = ct.prescreen_summary({"1.0": rows(0.01, 0.02), "0.5": rows(0.01, 0.008),
                              "0.2": rows(0.01, 0.009)})
  assert got["pick"] == "0.5" and got["betas"]["0.5"]["updates"] == 3
  assert got["betas"]["1.0"]["ratio"] == pytest.approx(2.0)
  assert ct.prescreen_summary({"1.0": rows(0.01, 0.01)})["pick"] is None  # equal is no gain
  with open(os.path.join(ROOT, "results", "corrections", "round2", "prescreen.json")) as f:
    saved = json.load(f)
  with open(os.path.join(ROOT, "docs", "modes.md")) as f:
    assert ct.PRESCREEN.wrap(ct.prescreen_markdown(saved)) in f.read()
