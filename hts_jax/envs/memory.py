"""A task where memory matters: CartPole with its velocities masked (`hts_jax/CartPoleNoVel-v1`).

The agent sees the cart's position and the pole's angle only (gymnasium's CartPole-v1 state
without the two velocities), so one observation does not tell which way the pole is falling: a
feed-forward policy has to guess, a recurrent one can infer the velocities from the sequence.
The same task as rl-baselines3-zoo's `CartPoleNoVel-v1` (sb3-contrib's RecurrentPPO benchmark)
and the "CartPole-P" POMDP of Ni et al. 2022 ("Recurrent Model-Free RL Can Be a Strong Baseline
for Many POMDPs"). Dynamics, rewards, termination and the 500-step limit are CartPole-v1's.
"""

from __future__ import annotations

from typing import Optional

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

ENV_ID = "hts_jax/CartPoleNoVel-v1"
VISIBLE = (0, 2)  # x, theta (CartPole's state is x, x_dot, theta, theta_dot)


class CartPoleNoVel(gym.ObservationWrapper):
  """CartPole-v1 observing `[x, theta]` only."""

  def __init__(self, render_mode: Optional[str] = None):
    super().__init__(CartPoleEnv(render_mode=render_mode))
    space = self.env.observation_space
    self.observation_space = gym.spaces.Box(space.low[list(VISIBLE)], space.high[list(VISIBLE)],
                                            dtype=np.float32)

  def observation(self, observation):
    return np.asarray(observation, np.float32)[list(VISIBLE)]


gym.register(ENV_ID, entry_point=CartPoleNoVel, max_episode_steps=500,
             reward_threshold=475.0)
