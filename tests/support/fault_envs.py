"""Envs that fail on purpose, for the reliability tests (imported by spawned executors through
gymnasium's `module:EnvId` form, e.g. `--env=tests.support.fault_envs:CrashingCartPole-v0`)."""

import gymnasium as gym
from gymnasium.envs.classic_control.cartpole import CartPoleEnv


class CrashingCartPole(CartPoleEnv):
  """Raises a RuntimeError on its `crash_at`-th step."""

  def __init__(self, crash_at: int = 50, **kwargs):
    super().__init__(**kwargs)
    self.crash_at = crash_at
    self.steps = 0

  def step(self, action):
    self.steps += 1
    if self.steps == self.crash_at:
      raise RuntimeError(f"simulator exploded at step {self.steps}")
    return super().step(action)


class NaNRewardCartPole(CartPoleEnv):
  """Returns a NaN reward from its `nan_at`-th step on."""

  def __init__(self, nan_at: int = 50, **kwargs):
    super().__init__(**kwargs)
    self.nan_at = nan_at
    self.steps = 0

  def step(self, action):
    self.steps += 1
    obs, r, terminated, truncated, info = super().step(action)
    return obs, float("nan") if self.steps >= self.nan_at else r, terminated, truncated, info


class InfObsCartPole(NaNRewardCartPole):
  """Returns an observation holding +inf from its `nan_at`-th step on."""

  def step(self, action):
    obs, r, terminated, truncated, info = super(NaNRewardCartPole, self).step(action)
    self.steps += 1
    if self.steps >= self.nan_at:
      obs = obs.copy()
      obs[1] = float("inf")
    return obs, r, terminated, truncated, info


gym.register("CrashingCartPole-v0", entry_point=CrashingCartPole, max_episode_steps=500)
gym.register("NaNRewardCartPole-v0", entry_point=NaNRewardCartPole, max_episode_steps=500)
gym.register("InfObsCartPole-v0", entry_point=InfObsCartPole, max_episode_steps=500)


class SlowStartCartPole(CartPoleEnv):
  """Takes `start_s` seconds to construct (signals during executor start-up)."""

  def __init__(self, start_s: float = 3.0, **kwargs):
    import time  # pylint: disable=import-outside-toplevel
    super().__init__(**kwargs)
    time.sleep(start_s)


class SlowCartPole(CartPoleEnv):
  """Sleeps `step_s` seconds in every step (signals during the final evaluation)."""

  def __init__(self, step_s: float = 0.05, **kwargs):
    super().__init__(**kwargs)
    self.step_s = step_s

  def step(self, action):
    import time  # pylint: disable=import-outside-toplevel
    time.sleep(self.step_s)
    return super().step(action)


gym.register("SlowStartCartPole-v0", entry_point=SlowStartCartPole, max_episode_steps=500)
gym.register("SlowCartPole-v0", entry_point=SlowCartPole, max_episode_steps=500)


class MatrixActionCartPole(CartPoleEnv):
  """A 2-D Box action space, which hts_jax refuses (only Discrete and 1-D Box are supported)."""

  def __init__(self, **kwargs):
    super().__init__(**kwargs)
    self.action_space = gym.spaces.Box(-1.0, 1.0, (2, 2))


gym.register("MatrixActionCartPole-v0", entry_point=MatrixActionCartPole, max_episode_steps=500)


class HangingCartPole(CartPoleEnv):
  """Blocks forever in its `hang_at`-th step (a stalled simulator)."""

  def __init__(self, hang_at: int = 50, **kwargs):
    super().__init__(**kwargs)
    self.hang_at = hang_at
    self.steps = 0

  def step(self, action):
    import time  # pylint: disable=import-outside-toplevel
    self.steps += 1
    while self.steps >= self.hang_at:
      time.sleep(3600)
    return super().step(action)


gym.register("HangingCartPole-v0", entry_point=HangingCartPole, max_episode_steps=500)


class EvalCrashingCartPole(CartPoleEnv):
  """Raises a RuntimeError in `reset` in the evaluator's thread only (training's executors run it
  fine), unless HTS_FAULT_EVAL_OK=1 is set (a resumed run that evaluates)."""

  def reset(self, **kwargs):
    import os, threading  # pylint: disable=import-outside-toplevel,multiple-imports
    evaluating = threading.current_thread().name == "evaluator"
    if evaluating and os.environ.get("HTS_FAULT_EVAL_OK") != "1":
      raise RuntimeError("no evaluation display")
    return super().reset(**kwargs)


gym.register("EvalCrashingCartPole-v0", entry_point=EvalCrashingCartPole, max_episode_steps=500)


def _hang_in_an_executor() -> None:
  import multiprocessing, time  # pylint: disable=import-outside-toplevel,multiple-imports
  while multiprocessing.parent_process() is not None:
    time.sleep(3600)


class HangingStartCartPole(CartPoleEnv):
  """Blocks forever in its constructor (`hang_in="make"`) or first reset ("reset") in an executor
  process (a simulator that never comes up); the launcher's env check in the main process, which
  makes an env without resetting it, passes."""

  def __init__(self, hang_in: str = "reset", **kwargs):
    super().__init__(**kwargs)
    self.hang_in = hang_in
    if hang_in == "make":
      _hang_in_an_executor()

  def reset(self, **kwargs):
    if self.hang_in == "reset":
      _hang_in_an_executor()
    return super().reset(**kwargs)


gym.register("HangingStartCartPole-v0", entry_point=HangingStartCartPole, max_episode_steps=500)
