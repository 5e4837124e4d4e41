"""GFootball envs alone: observation representations, the paper's scenarios, bad configs in one
line."""

import os
import shutil

import numpy as np
import pytest

from hts_jax import envs
from hts_jax.config import ConfigError
from tests.support.cli import run_python

pytest.importorskip("gfootball", reason="built by .ci/setup.sh")


@pytest.fixture
def display():
  if not shutil.which("Xvfb"):
    pytest.skip("Xvfb is installed by .ci/setup.sh")
  from hts_jax.runtime.outputs import video
  old = os.environ.pop("DISPLAY", None)
  video.ensure_display()  # Xvfb picks a free display and says which once it is up (-displayfd)
  yield
  video.stop_displays()
  if old is None:
    del os.environ["DISPLAY"]
  else:
    os.environ["DISPLAY"] = old


@pytest.mark.slow
def test_raw_pixels_have_the_right_shapes(display):
  env = envs.make_env("gfootball:academy_empty_goal_close", {"representation": "pixels"})
  obs, _ = env.reset(seed=1)
  assert obs.shape == (72, 96, 12) and obs.dtype == np.uint8  # RGB x 4 stacked frames
  obs, *_ = env.step(0)
  assert obs.shape == (72, 96, 12) and obs.max() > 0
  env.close()
  two = envs.env_info("gfootball:academy_3_vs_1_with_keeper",
                      {"representation": "pixels", "num_agents": 2})
  assert two.obs_shape == (72, 96, 12) and two.num_agents == 2
  gray = envs.env_info("gfootball:academy_empty_goal_close", {"representation": "pixels_gray"})
  assert gray.obs_shape == (72, 96, 4)


def test_simple115_is_a_vector():
  info = envs.env_info("gfootball:academy_empty_goal_close",
                       {"representation": "simple115v2", "stacked": False})
  assert info.obs_shape == (115,) and info.obs_dtype == "float32"


@pytest.mark.parametrize("name,kwargs,message", [
    ("gfootball:academy_nonsense", {}, "unknown GFootball scenario"),
    ("gfootball:academy_corner", {"representation": "voxels"}, "representation must be"),
    ("gfootball:academy_corner", {"rewards": "goals"}, "rewards must be"),
    ("gfootball:academy_corner", {"players": 2}, "unknown gfootball env_kwargs"),
])
def test_bad_gfootball_config(name, kwargs, message):
  with pytest.raises(ConfigError, match=message):
    envs.make_env(name, kwargs)


def test_all_paper_scenarios_exist():
  import importlib.util
  from hts_jax.envs.gfootball import SCENARIOS
  assert len(SCENARIOS) == 12
  for s in SCENARIOS:
    assert importlib.util.find_spec(f"gfootball.scenarios.{s}") is not None, s


def test_making_an_env_prints_no_third_party_banner():
  """Every GFootball process printed gym's "unmaintained since 2022"
  banner (3 lines per executor); a warning that matters would still print."""
  proc = run_python(
      "from hts_jax import envs\n"
      "env = envs.make_env('gfootball:academy_empty_goal_close', {})\n"
      "env.reset(seed=0)\nenv.close()\nimport warnings\nwarnings.warn('kept')")
  assert proc.returncode == 0, proc.stderr
  assert "unmaintained" not in proc.stderr and proc.stdout == ""
  assert [l for l in proc.stderr.splitlines() if "Warning" in l] == [
      "<string>:6: UserWarning: kept"]
