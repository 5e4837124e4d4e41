"""Named flag presets. A preset sets defaults; flags given on the command line win.

Every value of the published setups cites its source: the HTS-RL paper (Liu, Yeh & Schwing 2020:
§5 and the appendix's Tables A3 and A6, `../shared/papers/`), or, where the paper is ambiguous,
the released `IouJenLiu/HTS-RL` scripts, Kostrikov's pytorch-a2c-ppo-acktr defaults (which the
paper says its A2C/PPO use) and TorchBeast's (Küttler et al. 2019, the paper's IMPALA).

- `cartpole_ppo` / `cartpole_a2c`: quick CartPole-v1 runs that finish in minutes on a 2-core CPU
  (not a published setup).

- `atari_a2c`: the paper's Atari A2C / HTS-A2C (Table A3, "A2C/Ours"; §5 "the same
  hyper-parameters as Kostrikov"): 16 envs, each in its own process (§5: "16 parallel
  environments"; Table A2's setting); 4 actors (Table A3); 5-step returns (unroll length 5);
  RMSProp lr 7e-4, eps 1e-5, momentum 0 (Table A3), smoothing 0.99 (Kostrikov's `alpha`);
  entropy 0.01, value coef 0.5, gamma 0.99 (Table A3); grad norm 0.5 (Kostrikov); no LR decay
  (Kostrikov's A2C default: `--use-linear-lr-decay` is off, and his README's A2C command does not
  set it); 20M env steps (§5: "Following Kostrikov, all methods are trained for 20M environment
  steps"). alpha = unroll_length = 5 makes each segment one A2C step: exactly Eq. 6. Evaluation
  samples from the policy (a greedy untrained policy may never press FIRE after a lost life and
  run to the 27k-step cap).

- `atari_impala`: the paper's IMPALA baseline on Atari (Table A3, "IMPALA"), run by
  `--mode=async` (V-trace): 16 actors each with one env (Table A3: 16 actors; §5: 16 envs);
  unroll length 20 and batch size 32 unrolls (Table A3); gamma 0.99, value coef 0.5, entropy
  0.01 (Table A3); RMSProp eps 0.01, momentum 0 (Table A3), smoothing 0.99 (TorchBeast's
  `--alpha`); the loss summed over time and batch as in IMPALA and TorchBeast
  (`--loss_reduction=sum`: with a mean the published learning rate and clipping would act on a
  gradient 640x smaller); global gradient-norm clip 40 and linear LR decay to 0 (TorchBeast's
  `--grad_norm_clipping` default and its LambdaLR schedule; Table A3 lists no clip). Learning
  rate 6e-4: Table A3 prints 0.006, but §F.1 says IMPALA uses "the same hyper-parameters as
  Espeholt et al., Küttler et al.", whose rates are 6e-4 (IMPALA, Atari) and 4.8e-4
  (TorchBeast's default): we read Table A3's 0.006 as a dropped zero and take IMPALA's. 20M steps.

- `gfootball_ppo`: the paper's HTS-PPO on GFootball academy scenarios, as the released
  `scripts/run_ours_3vs1.sh` of `IouJenLiu/HTS-RL` runs it (the paper's Table A6 and §F.2 where
  they agree): 16 envs in 16 processes, 4 actors (Table A6; script `--num-processes 16
  --num-actors 4`); 128-step segments (Table A6 unroll 128, §F.2 "instead of 512 steps, we
  unroll for 128", script `--sync-every 128`); 2 epochs x 8 minibatches (script `--ppo-epoch 2
  --num-mini-batch 8`; Table A6 does not list them); clip 0.08, gamma 0.993, entropy 0.003, grad
  norm 0.64, lr 3.43e-4 (script; Table A6 for gamma, entropy and lr); value coef 0.5 (Table A6);
  GAE lambda 0.95 (script `--use-gae`, Kostrikov's default lambda); linear LR decay (script
  `--use-linear-lr-decay`); Adam with eps 1e-5: §F.2 says "RMSProp for all methods" and Table A6
  lists RMSProp's eps, but the released PPO (`a2c_ppo_acktr/algo/ppo_aug.py`) builds
  `optim.Adam(lr, eps)`, as Kurach et al.'s PPO does, so we follow the code that produced the
  results; 5M env steps (§5); evaluation every 100k steps with sampled actions (script
  `--eval-every-step 100000`; `evaluation_aug.py` samples `Categorical(logits).sample()`).
  The policy-lag correction is `HTS_PPO_CORRECTION` (`none`, the corrections study's pick, below).
  The released PPO's own update under HTS is `--correction=behaviour` (its epochs start at the
  newest params θ_j, the ratio's denominator and the old values are the behaviour policy
  θ_{j-1}'s, `ppo_aug.py` with the rollouts' `old_action_log_probs`); the paper's Eq. 6 delayed
  gradient is `--correction=delayed`.

- `gfootball_impala`: the paper's IMPALA baseline on GFootball (Table A6, "IMPALA"; §F.2: Kurach
  et al.'s settings with 16 actors and a smaller batch), run by `--mode=async` (V-trace): 16
  actors each with one env in its own process (Table A6: 16 actors; §5: 16 envs); unroll length
  32 (Table A6); batch size 8 unrolls of one env (Table A6 batch 8: `async_batch_unrolls=8`);
  gamma 0.993, value coef 0.5, entropy 0.00087453, RMSProp eps 0.01, momentum 0, lr 0.00019896
  (Table A6); where Table A6 is silent, TorchBeast's (`monobeast.py`, the paper's IMPALA):
  RMSProp smoothing 0.99 (`--alpha`), the loss summed over time and batch, global gradient-norm
  clip 40 (`--grad_norm_clipping`), linear LR decay to 0 over the run (its LambdaLR); 5M env
  steps and evaluation as `gfootball_ppo` (§5, so the methods are compared on one schedule).

- `cartpole_gala`: `cartpole_a2c` as GALA-A2C, 2 agents x 8 envs with the deterministic gossip
  (not a published setup; the same hyperparameters, as GALA's §5 does with A2C's).

- `atari_gala` / `atari_allreduce`: GALA-A2C and the all-reduce A2C it is compared with, as in
  Assran et al. 2019 (appendix C.2 and its Table 2, the same for both): 4 learners (agents) x 16
  envs ("16 environments per learner", the 64-simulator experiments of §5), a 1-peer ring with
  weights 1/2 (C.2); RMSProp eps 0.01, momentum 0, grad norm 0.5, value coef 0.5, horizon 5,
  entropy 0.01, gamma 0.99 (Table 2); base learning rate 7e-4 scaled by sqrt(learners): 1.4e-3
  (Table 2); 30 no-ops at the start (Table 2, our Atari default); 40M steps (Table 1's longest
  budget); evaluation as `atari_a2c`. Gossip as the paper's (async).

- `mujoco_ppo`: PPO's MuJoCo setup (Schulman et al. 2017, Table 3, as CleanRL's
  `ppo_continuous_action.py` defaults carry it): 2048 env steps per update from one env
  (horizon 2048, CleanRL `--num-envs 1 --num-steps 2048`), 10 epochs (Table 3; `--update-epochs
  10`), 32 minibatches of 64 (Table 3 minibatch 64; `--num-minibatches 32`), Adam lr 3e-4 (Table
  3; `--learning-rate 3e-4`) with eps 1e-5 and linear decay to 0 (CleanRL `--anneal-lr`),
  gamma 0.99 and GAE lambda 0.95 (Table 3), clip 0.2 (Table 3 "clipping parameter"; CleanRL
  `--clip-coef 0.2`, clipped value loss `--clip-vloss`), value coef 0.5, entropy 0 (CleanRL
  `--vf-coef 0.5 --ent-coef 0.0`), grad norm 0.5 (`--max-grad-norm 0.5`), normalised advantages
  (`--norm-adv`), observations normalised and clipped to ±10 (CleanRL's `NormalizeObservation`
  and `TransformObservation`), rewards scaled by the running spread of the discounted return and
  clipped to ±10 (`NormalizeReward(gamma)`, `TransformReward`; both kept in the learner's state
  here, not in per-env wrappers), 64-64 tanh towers with a
  state-independent log-std (Table 3's policy; CleanRL's `Agent`), 1M env steps (Table 3 / §6.1
  "one million timesteps"). Time-limit truncations bootstrap from the cut observation. Evaluation
  samples from the policy (CleanRL reports the returns of training episodes). HalfCheetah-v5 by
  default; `--env=Hopper-v5` etc.

- `mujoco_hts_ppo`: `mujoco_ppo` as HTS-PPO: the same 2048 steps and 32 minibatches per update,
  from 8 envs x 256-step segments (2 executors, 1 actor on the 2-core machine), so that executors
  and the learner overlap; `--mode=sync` gives the synchronous PPO it is compared with. The actor
  calls the policy on all 8 envs at once (`actor_batch=8`): on 2 cores the policy call, not the
  physics, bounds the rollout, and one 8-env call per step costs less than two 4-env calls (the
  measurement is in commit caeeb11's message). The actor waits up to one mean policy call for
  the other executor's block when one is ready (`actor_wait=1`): one 8-row call per step as in
  sync, 1.18x lag 1's SPS and 1.13x lag 0's on 2 cores (results/benchmarks/actor_wait.json).
  Results depend on neither (rows are batch-invariant).
  The correction is HTS-PPO's default (`HTS_PPO_CORRECTION`, below); the lag stays exactly one
  and the run deterministic; `--correction=delayed` is the paper's Eq. 6.

- `atari_ppo`: HTS-PPO on envpool's Atari with CleanRL's Atari PPO values
  (the defaults of `cleanrl/ppo_atari_envpool_xla_jax.py`, vwxyzjn/cleanrl at fe8d8a0, the script
  `experiments/bench_cleanrl.py` runs, its sha256 in results/benchmarks/cleanrl.json): Pong
  (envpool's `Pong-v5`, one of the 57 games of CleanRL's `benchmark/ppo.sh` for it; the script's
  own default is `Breakout-v5`), 8 envs x 128 steps per update (`--num-envs 8 --num-steps 128`), 4 epochs x 4
  minibatches (`--update-epochs 4 --num-minibatches 4`), Adam lr 2.5e-4 with eps 1e-5 and linear
  decay to 0 (`--learning-rate`, `--anneal-lr`), clip 0.1 (`--clip-coef`), no value clipping (its
  plain 1/2 (V - R)^2), entropy 0.01, value coef 0.5, grad norm 0.5, gamma 0.99, GAE lambda 0.95,
  normalised advantages (`--norm-adv`), 10M env steps (`--total-timesteps`); envpool with episodic
  life and reward clipping for training (its `envpool.make(..., episodic_life=True,
  reward_clip=True)`), the Nature CNN. Minibatches hold every env's shuffled steps
  (`minibatch="transitions"`) where CleanRL permutes the flattened batch. 2 envpool groups (actors)
  of 4 envs with 2 envpool threads for a 2-core machine; the correction is HTS-PPO's default
  (`HTS_PPO_CORRECTION`).

- `minatar_a2c`: HTS-A2C (and with `--mode=sync` A2C) on MinAtar (`minatar:Breakout` by default;
  Young & Tian 2019), the CPU-scale stand-in for the paper's Atari A2C: `atari_a2c`'s values where
  they carry over, i.e. Table A3's "A2C/Ours" column: 16 envs (§5), 5-step returns (alpha =
  unroll_length = 5: Eq. 6 exactly), RMSProp lr 7e-4, eps 1e-5, momentum 0, entropy 0.01, value
  coef 0.5, gamma 0.99 (Table A3), smoothing 0.99 and grad norm 0.5 (Kostrikov), no LR decay
  (Kostrikov's A2C default); evaluation samples from the policy (as `atari_a2c`), 10 episodes
  every 100k steps. Changed, with the reason: MinAtar's network (`--network=minatar`: conv 16
  3x3/1, dense 128; MinAtar's examples) instead of the Nature CNN, whose 8x8/4 first layer does
  not fit a 10x10 grid; 5M env steps (MinAtar's examples' `NUM_FRAMES`; the paper's 20M are for
  Atari's harder pixels); 2 executors and 1 actor instead of 16 processes and 4 actors, for 2
  cores: a run's results are the same bits for any executor and actor count, and 200k steps ran
  at 10.7k and 11.2k SPS against 5.2k and 5.4k with the paper's 4 actors and 16 processes (the
  same param_sha256; 2-core AMD EPYC shared with another run); no reward clipping and no
  episodic life (MinAtar's rewards are +1 per event and a game has one life).

- `minatar_impala`: the paper's IMPALA baseline (`atari_impala`: Table A3's "IMPALA" column and
  TorchBeast where it is silent, run by `--mode=async`) on MinAtar, with `minatar_a2c`'s changes:
  MinAtar's network and 5M env steps. 16 actors each with one env in its own process stay (Table
  A3: the actor count sets IMPALA's policy lag, Claim 2), as do unroll 20, batch 32 unrolls,
  RMSProp lr 6e-4 / eps 0.01, entropy 0.01, value coef 0.5, gamma 0.99, the summed loss, clip 40
  and linear LR decay to 0.

- `memory_lstm_ppo`: recurrent HTS-PPO on CartPole without velocities
  (`hts_jax/CartPoleNoVel-v1`), with rl-baselines3-zoo's RecurrentPPO hyperparameters for the
  same task (`hyperparams/ppo_lstm.yml`, `CartPoleNoVel-v1`, the published sb3 model card): 8
  envs x 32 steps per update (`n_envs: 8`, `n_steps: 32`), one minibatch of the 256 (`batch_size:
  256`) of whole sequences, 20 epochs (`n_epochs: 20`), gamma 0.98 and GAE lambda 0.8, Adam lr
  1e-3 decayed linearly to 0 (`lin_0.001`; eps 1e-5, SB3's), clip 0.2 (zoo: `lin_0.2`, decayed;
  here constant), entropy 0, observations and rewards normalised (`normalize: true`, VecNormalize),
  an LSTM of 64 units (`lstm_hidden_size: 64`; one LSTM shared by the policy and value towers
  here), 100k env steps (`n_timesteps: 1e5`). Time-limit cuts bootstrap. `--core=none` gives the
  feed-forward policy it is compared with (`hts-reproduce memory`, `results/memory/grid.toml`).
  The correction is HTS-PPO's default (`HTS_PPO_CORRECTION`, below).
"""

# HTS-PPO's policy-lag correction in every HTS-PPO preset (gfootball_ppo, mujoco_hts_ppo,
# memory_lstm_ppo, atari_ppo): the one the corrections study picked by its pre-registered rule
# (results/corrections/PROTOCOL.md; results.json's `decision`, rendered in docs/results.md).
# Before it: `behaviour`, the reference HTS-RL code's (the steps start at θ_j; PPO's ratio, old
# values and GAE are θ_{j-1}'s), which the earlier MuJoCo and memory grids had favoured over the
# delayed gradient (results/mujoco, results/memory); `--correction=behaviour` runs it.
HTS_PPO_CORRECTION = "none"

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
        env="atari:Breakout", algo="a2c", num_envs=16, num_executors=16, num_actors=4, alpha=5,
        unroll_length=5, total_steps=20_000_000, optimizer="rmsprop", lr=7e-4, rmsprop_eps=1e-5,
        rmsprop_decay=0.99, entropy_coef=0.01, value_coef=0.5, gamma=0.99, max_grad_norm=0.5,
        lr_decay=False, eval_every=250_000, eval_episodes=10, eval_greedy=False),
    "cartpole_gala": dict(
        env="CartPole-v1", mode="gala", gala_agents=2, gala_gossip="fixed", algo="a2c",
        num_envs=16, num_executors=2, num_actors=1, alpha=5, unroll_length=5,
        total_steps=500_000, optimizer="rmsprop", lr=7e-4, entropy_coef=0.01, gamma=0.99,
        max_grad_norm=0.5, eval_every=50_000, eval_episodes=10),
    "atari_gala": dict(
        env="atari:Breakout", mode="gala", gala_agents=4, algo="a2c", num_envs=64,
        num_executors=16, num_actors=1, alpha=5, unroll_length=5, total_steps=40_000_000,
        optimizer="rmsprop", lr=1.4e-3, rmsprop_eps=0.01, rmsprop_decay=0.99,
        entropy_coef=0.01, value_coef=0.5, gamma=0.99, max_grad_norm=0.5, lr_decay=False,
        eval_every=250_000, eval_episodes=10, eval_greedy=False),
    "atari_impala": dict(
        env="atari:Breakout", mode="async", algo="a2c", num_envs=16, num_executors=16,
        num_actors=16, alpha=20, unroll_length=20, async_batch_unrolls=32,
        total_steps=20_000_000, optimizer="rmsprop", lr=6e-4, rmsprop_eps=0.01,
        rmsprop_decay=0.99, entropy_coef=0.01, value_coef=0.5, gamma=0.99, max_grad_norm=40.0,
        loss_reduction="sum", lr_decay=True, eval_every=250_000, eval_episodes=10,
        eval_greedy=False),
    "gfootball_ppo": dict(
        env="gfootball:academy_3_vs_1_with_keeper", algo="ppo", num_envs=16, num_executors=16,
        num_actors=4, alpha=128, total_steps=5_000_000, optimizer="adam", lr=3.43e-4,
        adam_eps=1e-5, lr_decay=True, ppo_epochs=2, num_minibatches=8, clip_eps=0.08,
        entropy_coef=0.003, value_coef=0.5, gamma=0.993, gae_lambda=0.95, max_grad_norm=0.64,
        eval_every=100_000, eval_episodes=10, eval_greedy=False, correction=HTS_PPO_CORRECTION),
    "gfootball_impala": dict(
        env="gfootball:academy_3_vs_1_with_keeper", mode="async", algo="a2c", num_envs=16,
        num_executors=16, num_actors=16, alpha=32, unroll_length=32, async_batch_unrolls=8,
        total_steps=5_000_000, optimizer="rmsprop", lr=0.00019896, rmsprop_eps=0.01,
        rmsprop_decay=0.99, entropy_coef=0.00087453, value_coef=0.5, gamma=0.993,
        max_grad_norm=40.0, loss_reduction="sum", lr_decay=True, eval_every=100_000,
        eval_episodes=10, eval_greedy=False),
}
PRESETS["atari_allreduce"] = dict(PRESETS["atari_gala"], mode="allreduce")
PRESETS["mujoco_ppo"] = dict(
    env="HalfCheetah-v5", algo="ppo", num_envs=1, num_executors=1, num_actors=1, alpha=2048,
    total_steps=1_000_000, optimizer="adam", lr=3e-4, adam_eps=1e-5, lr_decay=True, ppo_epochs=10,
    num_minibatches=32, minibatch="transitions", clip_eps=0.2, clip_value_loss=True,
    entropy_coef=0.0, value_coef=0.5, gamma=0.99, gae_lambda=0.95, max_grad_norm=0.5,
    normalize_advantages=True, normalize_obs=True, normalize_rewards=True,
    bootstrap_truncation=True,
    eval_every=100_000, eval_episodes=10, eval_greedy=False)
PRESETS["mujoco_hts_ppo"] = dict(PRESETS["mujoco_ppo"], num_envs=8, num_executors=2, alpha=256,
                                 actor_batch=8, actor_wait=1.0, correction=HTS_PPO_CORRECTION)
PRESETS["minatar_a2c"] = dict(
    PRESETS["atari_a2c"], env="minatar:Breakout", network="minatar", num_executors=2,
    num_actors=1, total_steps=5_000_000, eval_every=100_000)
PRESETS["minatar_impala"] = dict(
    PRESETS["atari_impala"], env="minatar:Breakout", network="minatar", total_steps=5_000_000,
    eval_every=100_000)
PRESETS["memory_lstm_ppo"] = dict(
    env="hts_jax/CartPoleNoVel-v1", core="lstm", core_size=64, algo="ppo", num_envs=8,
    num_executors=2, num_actors=1, alpha=32, minibatch="envs", num_minibatches=1, ppo_epochs=20,
    gamma=0.98, gae_lambda=0.8, optimizer="adam", lr=1e-3, adam_eps=1e-5, lr_decay=True,
    clip_eps=0.2, entropy_coef=0.0, normalize_obs=True, normalize_rewards=True,
    bootstrap_truncation=True, total_steps=100_000, eval_every=10_000, eval_episodes=10,
    correction=HTS_PPO_CORRECTION)
PRESETS["atari_ppo"] = dict(
    env="atari:Pong", envpool=True, network="cnn", algo="ppo", num_envs=8, num_executors=2,
    num_actors=2, alpha=128, total_steps=10_000_000, optimizer="adam", lr=2.5e-4, adam_eps=1e-5,
    lr_decay=True, ppo_epochs=4, num_minibatches=4, clip_eps=0.1, clip_value_loss=False,
    entropy_coef=0.01, value_coef=0.5, gamma=0.99, gae_lambda=0.95, max_grad_norm=0.5,
    normalize_advantages=True, eval_every=250_000, eval_episodes=10, eval_greedy=False,
    correction=HTS_PPO_CORRECTION)
