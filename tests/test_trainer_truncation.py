"""Time-limit truncation: the truncated step's reward gets gamma * V(final observation) (computed with
the env's recurrent state after that step and the collecting policy), the row stays done, and a
terminated step is left alone. The env pays 1 per step and has known observations, so the expected
value can be recomputed from the rollout alone."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from configs.compose import compose
from trainer.collector import Collector
from trainer.diagnostic_envs import CountingEnv
from trainer.gae import compute_gae
from trainer.networks import ActorCritic

TERMINATE_AT, TRUNCATE_AT = 4, 3  # even episodes terminate after 4 steps, odd ones are cut after 3


class AlternatingLimitEnv(CountingEnv):
    """CountingEnv paying 1 per step whose even episodes terminate after `TERMINATE_AT` steps and odd
    ones are truncated by a time limit after `TRUNCATE_AT` steps (final observation [env, episode, 3, 4])."""

    def __init__(self, env_idx: int) -> None:
        super().__init__(env_idx, episode_length=TERMINATE_AT)

    def step(self, action):
        obs, _, terminated, _, info = super().step(action)
        truncated = self.episode % 2 == 1 and self.t >= TRUNCATE_AT
        return obs, 1.0, terminated and not truncated, truncated, info


def make_alternating_env(env_idx: int) -> AlternatingLimitEnv:
    return AlternatingLimitEnv(env_idx)


def make_collector(mode: str, envs_per_worker: int, num_envs: int = 4, num_steps: int = 5) -> Collector:
    cfg = compose("train_rl", [f"trainer.mode={mode}", f"trainer.num_envs={num_envs}",
                               f"trainer.num_steps={num_steps}", f"trainer.envs_per_worker={envs_per_worker}",
                               "trainer.ppo.gamma=0.9"])
    probe = AlternatingLimitEnv(0)
    torch.manual_seed(0)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    with torch.no_grad():  # value outputs of order 1, so that a missing or wrong augmentation shows
        ac.value_head.bias.fill_(1.5)
        ac.value_head.weight.mul_(10.0)
    return Collector(functools.partial(make_alternating_env), probe.observation_space, probe.action_space, ac,
                     cfg.trainer, seed=0)


@pytest.mark.parametrize(("mode", "envs_per_worker"), [("sync", 1), ("ver", 2)])
def test_truncated_rows_get_gamma_times_final_value_and_terminated_rows_do_not(mode, envs_per_worker):
    collector = make_collector(mode, envs_per_worker)
    ac, gamma = collector.actor_critic, collector.gamma
    try:
        rollouts = [collector.collect(k) for k in range(4)]
    finally:
        collector.close()
    checked = {"truncated": 0, "terminated": 0, "distinct": 0}
    for r in rollouts:
        episode, step = r.obs["obs"][:, 1].long(), r.obs["obs"][:, 2].long()
        odd = episode % 2 == 1
        expect_trunc = odd & (step == TRUNCATE_AT - 1)
        expect_term = ~odd & (step == TERMINATE_AT - 1)
        assert torch.equal(r.truncated, expect_trunc)
        assert torch.equal(r.dones, expect_trunc | expect_term)  # truncated rows stay done
        assert torch.all(r.rewards[~r.truncated] == 1.0)  # terminated and ordinary rows untouched
        rows = torch.nonzero(r.truncated).flatten()
        checked["terminated"] += int(expect_term.sum())
        if len(rows) == 0:
            continue
        # recompute V(final obs): run the row's step to get the state after it, then the value of
        # the observation the episode ended in ([env, episode, step + 1, TERMINATE_AT])
        with torch.no_grad():
            after = ac.act({"obs": r.obs["obs"][rows]}, r.hidden[rows], r.episode_start[rows]).hidden
            final_obs = r.obs["obs"][rows].clone()
            final_obs[:, 2] += 1
            final_value = ac.get_value({"obs": final_obs}, after, torch.zeros(len(rows), dtype=torch.bool))
            reset_obs = final_obs.clone()
            reset_obs[:, 1] += 1
            reset_obs[:, 2] = 0
            reset_value = ac.get_value({"obs": reset_obs}, after, torch.zeros(len(rows), dtype=torch.bool))
        augmentation = r.rewards[rows] - 1.0
        assert torch.allclose(augmentation, gamma * final_value, rtol=0.0, atol=1e-5)
        # not the value of the next episode's first observation (which the auto-reset put in `obs`)
        distinct = (final_value - reset_value).abs() > 1e-3
        assert not torch.any(torch.isclose(augmentation, gamma * reset_value, rtol=0.0, atol=1e-5) & distinct)
        checked["truncated"] += len(rows)
        checked["distinct"] += int(distinct.sum())
    assert checked["truncated"] > 0 and checked["terminated"] > 0 and checked["distinct"] > 0


def test_gae_does_not_bootstrap_across_a_truncated_row():
    collector = make_collector("sync", 1, num_envs=2, num_steps=8)
    try:
        r = collector.collect(0)
    finally:
        collector.close()
    adv, _ = compute_gae(r, gamma=0.9, gae_lambda=1.0)
    row = int(torch.nonzero(r.truncated).flatten()[0])
    # a done row's advantage is its (augmented) reward minus its value: nothing from the next episode
    assert adv[row].item() == pytest.approx((r.rewards[row] - r.values[row]).item(), abs=1e-5)
    assert np.isfinite(adv.numpy()).all()
