"""Named flag presets. A preset sets defaults; flags given on the command line win.

- `cartpole_ppo` / `cartpole_a2c`: quick CartPole-v1 runs that finish in minutes on a 2-core CPU.
- `atari_a2c`: the paper's Atari A2C hyperparameters (Table A3; Kostrikov's defaults): 16 envs,
  5-step returns, RMSProp lr 7e-4 (eps 1e-5, decay 0.99), entropy 0.01, value coef 0.5, grad norm
  0.5, gamma 0.99, linear LR decay. alpha = unroll_length = 5 makes each segment one A2C step: Eq. 6.
  Evaluation samples from the policy (a greedy untrained policy may never press FIRE after a lost
  life and run to the 27k-step cap).
- `gfootball_ppo`: PPO for GFootball as in the paper's Table A6 (the GFootball paper's PPO
  settings): 16 envs, 512-step segments, 2 epochs x 4 minibatches, lr 3.43e-4 Adam, clip 0.08,
  entropy 0.003, gamma 0.993, grad norm 0.64.
"""

PRESETS = {
    "cartpole_ppo": dict(
        env="CartPole-v1", algo="ppo", num_envs=8, num_executors=2, num_actors=1, alpha=64,
        total_steps=150_000, optimizer="adam", lr=1e-3, ppo_epochs=4, num_minibatches=4,
        entropy_coef=0.0, gae_lambda=0.95, gamma=0.99, clip_eps=0.2, max_grad_norm=0.5,
        eval_every=25_000, eval_episodes=10),
    "cartpole_a2c": dict(
        env="CartPole-v1", algo="a2c", num_envs=16, num_executors=2, num_actors=1, alpha=5,
        unroll_length=5, total_steps=500_000, optimizer="rmsprop", lr=7e-4, entropy_coef=0.01,
        gamma=0.99, max_grad_norm=0.5, eval_every=50_000, eval_episodes=10),
    "atari_a2c": dict(
        env="atari:Breakout", algo="a2c", num_envs=16, num_executors=4, num_actors=2, alpha=5,
        unroll_length=5, total_steps=10_000_000, optimizer="rmsprop", lr=7e-4, entropy_coef=0.01,
        value_coef=0.5, gamma=0.99, max_grad_norm=0.5, lr_decay=True, eval_every=250_000,
        eval_episodes=10, eval_greedy=False),
    "gfootball_ppo": dict(
        env="gfootball:academy_3_vs_1_with_keeper", algo="ppo", num_envs=16, num_executors=16,
        num_actors=4, alpha=512, total_steps=5_000_000, optimizer="adam", lr=3.43e-4,
        ppo_epochs=2, num_minibatches=4, clip_eps=0.08, entropy_coef=0.003, gamma=0.993,
        gae_lambda=0.95, max_grad_norm=0.64, eval_every=100_000, eval_episodes=10),
}
