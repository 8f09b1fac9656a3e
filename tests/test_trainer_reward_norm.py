"""Reward normalisation (`trainer.ppo.normalize_reward`): the collector divides every reward by the std of
all discounted returns seen so far (SB3 VecNormalize / CleanRL), returns restart after episode ends, the
statistics carry across PPO updates, stay identical across ranks and survive a checkpoint; off by default."""

from __future__ import annotations

import functools

import numpy as np
import torch

from configs.compose import compose
from trainer.checkpoint import (
    build_checkpoint_state,
    load_checkpoint,
    restore_training_state,
    save_checkpoint,
)
from trainer.collector import Collector
from trainer.diagnostic_envs import CountingEnv, make_counting_env
from trainer.networks import ActorCritic
from trainer.normalization import RewardScaler
from trainer.ppo import PPO
from trainer.rollout import Rollout

EPISODE_LENGTH = 5
GAMMA = 0.99


def reference_scaled_rewards(rewards: np.ndarray, dones: np.ndarray, gamma: float, clip: float) -> np.ndarray:
    """SB3 VecNormalize's reward scaling written out plainly: rewards [steps, envs], all envs step together."""
    returns = np.zeros(rewards.shape[1])
    seen: list[float] = []
    out = np.zeros_like(rewards)
    for t in range(rewards.shape[0]):
        returns = gamma * returns + rewards[t]
        seen.extend(returns.tolist())
        out[t] = np.clip(rewards[t] / np.sqrt(np.var(seen) + 1e-8), -clip, clip)
        returns[dones[t]] = 0.0
    return out


def by_env(rollout: Rollout, field: torch.Tensor, num_envs: int) -> np.ndarray:
    """[steps, envs] table of a per-row field (every env has the same number of rows, in its order)."""
    return np.stack([field[rollout.env_ids == e].numpy() for e in range(num_envs)], axis=1)


def test_off_by_default():
    cfg = compose("train_rl", [])
    assert cfg.trainer.ppo.normalize_reward is False
    probe = CountingEnv(0, EPISODE_LENGTH)
    ppo = PPO(ActorCritic(probe.observation_space, probe.action_space, cfg.policy), cfg.trainer.ppo)
    assert ppo.reward_scaler is None and "reward_scaler" not in ppo.state_dict()


def test_collector_scales_rewards_by_the_running_std_of_discounted_returns_across_updates():
    # sync mode, one worker holding both envs: every answer carries all envs' step, as in the reference
    num_envs, num_steps = 2, 6
    cfg = compose("train_rl", ["trainer.mode=sync", f"trainer.num_envs={num_envs}", f"trainer.num_steps={num_steps}",
                               f"trainer.envs_per_worker={num_envs}", "trainer.ppo.normalize_reward=true",
                               f"trainer.ppo.gamma={GAMMA}", "trainer.ppo.reward_norm_clip=3.0"])
    probe = CountingEnv(0, EPISODE_LENGTH)
    torch.manual_seed(0)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    ppo = PPO(ac, cfg.trainer.ppo, total_updates=3, seed=0)
    collector = Collector(functools.partial(make_counting_env, episode_length=EPISODE_LENGTH), probe.observation_space,
                          probe.action_space, ac, cfg.trainer, seed=0, reward_scaler=ppo.reward_scaler)
    rollouts = []
    try:
        for k in range(3):
            rollouts.append(collector.collect(k))
            ppo.reward_scaler.sync()  # what PPO.update does first
    finally:
        collector.close()
    # the env's own rewards and episode ends, recovered from the observations (episode, step)
    obs = np.concatenate([by_env(r, r.obs["obs"][:, 1:3], num_envs) for r in rollouts])  # [T, N, 2]
    raw = obs[..., 0] * 1000 + obs[..., 1] + 1  # trainer.diagnostic_envs.reward_code
    dones = obs[..., 1] == EPISODE_LENGTH - 1
    got = np.concatenate([by_env(r, r.rewards, num_envs) for r in rollouts])
    expected = reference_scaled_rewards(raw, dones, GAMMA, clip=3.0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.any(got == 3.0) and np.any(got < 1.0)  # both the clip and the scaling were exercised
    assert ppo.reward_scaler.count == 3 * num_steps * num_envs


def test_sync_gives_every_rank_the_moments_of_all_ranks_returns():
    g = np.random.default_rng(0)
    data = [g.normal(5.0, 3.0, size=7), g.normal(-2.0, 10.0, size=20)]  # unequal batches per rank
    ranks = [RewardScaler(GAMMA), RewardScaler(GAMMA)]
    for scaler, returns in zip(ranks, data, strict=True):
        scaler.scale(returns[:3], np.ones(3))
        scaler.scale(returns[3:], np.ones(len(returns) - 3))
    mean_pending = torch.as_tensor(np.mean([s.pending for s in ranks], axis=0))
    for scaler in ranks:
        scaler.sync(lambda t: t.copy_(mean_pending))  # an all-reduce mean, as make_stats_sync does
    everything = np.concatenate(data)
    for scaler in ranks:
        assert scaler.count == len(everything) / 2  # averaged counts; only the ratios matter
        np.testing.assert_allclose([scaler.mean, scaler.var], [everything.mean(), everything.var()], rtol=1e-9)
        assert not scaler.pending.any()
        np.testing.assert_allclose(scaler.std(), np.sqrt(everything.var() + 1e-8))


def test_ppo_update_syncs_the_statistics_once_and_the_checkpoint_keeps_them(tmp_path):
    cfg = compose("train_rl", ["policy=mlp_ff", "trainer.ppo.normalize_reward=true"])
    probe = CountingEnv(0, EPISODE_LENGTH)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    sizes: list[int] = []
    ppo = PPO(ac, cfg.trainer.ppo, total_updates=2, seed=0, stats_sync=lambda t: sizes.append(t.numel()))
    returns = np.array([1.0, 2.0, 4.0, 8.0])
    ppo.reward_scaler.scale(returns, returns)
    rows = 8
    ppo.update(Rollout(
        obs={"obs": torch.randn(rows, 4)}, actions=torch.randint(0, 2, (rows,)), log_probs=torch.full((rows,), -0.7),
        values=torch.zeros(rows), rewards=torch.randn(rows), dones=torch.zeros(rows, dtype=torch.bool),
        episode_start=torch.zeros(rows, dtype=torch.bool), hidden=torch.zeros(rows, *ac.initial_hidden(1).shape[1:]),
        env_ids=torch.zeros(rows, dtype=torch.long), episode_ids=torch.zeros(rows, dtype=torch.long),
        step_ids=torch.arange(rows), policy_version=torch.zeros(rows, dtype=torch.long),
        bootstrap_value=torch.zeros(1), num_envs=1, expected_steps_per_env=float(rows)))
    assert sizes.count(3) == 1  # count, sum, sum of squares of the returns: one sync per update
    assert ppo.reward_scaler.count == 4 and not ppo.reward_scaler.pending.any()
    np.testing.assert_allclose(ppo.reward_scaler.var, returns.var())

    path = tmp_path / "ckpt.pt"
    save_checkpoint(path, build_checkpoint_state(ac, ppo, cfg, probe.observation_space, probe.action_space, {}))
    fresh = PPO(ActorCritic(probe.observation_space, probe.action_space, cfg.policy), cfg.trainer.ppo, seed=0)
    restore_training_state(load_checkpoint(path), fresh.actor_critic, fresh)
    assert fresh.reward_scaler.state_dict() == ppo.reward_scaler.state_dict()
    np.testing.assert_allclose(fresh.reward_scaler.std(), np.sqrt(returns.var() + 1e-8))
