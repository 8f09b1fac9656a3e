"""GAE on a variable-experience rollout equals a brute-force per-env python loop."""

import torch

from trainer.gae import compute_gae
from trainer.rollout import Rollout


def make_variable_rollout(steps_per_env, episode_ends, seed=0):
    """Interleaved rows of several envs; `episode_ends[e]` lists the env-local step indices that are done."""
    g = torch.Generator().manual_seed(seed)
    num_envs = len(steps_per_env)
    env_sequence = torch.cat([torch.full((n,), e) for e, n in enumerate(steps_per_env)])
    env_ids = env_sequence[torch.randperm(len(env_sequence), generator=g)]  # random interleaving
    S = len(env_ids)
    dones = torch.zeros(S, dtype=torch.bool)
    local = torch.zeros(S, dtype=torch.long)
    counter = [0] * num_envs
    for i, e in enumerate(env_ids.tolist()):
        local[i] = counter[e]
        dones[i] = counter[e] in episode_ends[e]
        counter[e] += 1
    return Rollout(
        obs={"x": torch.randn(S, 3, generator=g)},
        actions=torch.randn(S, 2, generator=g),
        log_probs=torch.randn(S, generator=g),
        values=torch.randn(S, generator=g),
        rewards=torch.randn(S, generator=g),
        dones=dones,
        episode_start=torch.zeros(S, dtype=torch.bool),
        hidden=torch.zeros(S, 2, 4),
        env_ids=env_ids,
        episode_ids=torch.zeros(S, dtype=torch.long),
        step_ids=local,
        policy_version=torch.zeros(S, dtype=torch.long),
        bootstrap_value=torch.randn(num_envs, generator=g),
        num_envs=num_envs,
        expected_steps_per_env=5.0,
    )


def brute_force_gae(r: Rollout, gamma: float, lam: float) -> torch.Tensor:
    adv = torch.zeros(len(r))
    for e in range(r.num_envs):
        rows = [i for i in range(len(r)) if int(r.env_ids[i]) == e]
        last = 0.0
        for k in reversed(range(len(rows))):
            i = rows[k]
            done = bool(r.dones[i])
            if k == len(rows) - 1:
                next_value = 0.0 if done else float(r.bootstrap_value[e])
                last = 0.0
            else:
                next_value = float(r.values[rows[k + 1]])
            if done:
                next_value, last = 0.0, 0.0
            delta = float(r.rewards[i]) + gamma * next_value - float(r.values[i])
            last = delta + gamma * lam * last
            adv[i] = last
    return adv


def test_gae_matches_per_env_loop_on_variable_rollout():
    # env 0: 9 steps, episode ends at 2 and 6; env 1: 3 steps, its last row is done (no bootstrap);
    # env 2: 14 steps, no episode end (bootstraps); env 3: 1 step.
    r = make_variable_rollout([9, 3, 14, 1], [{2, 6}, {2}, set(), set()], seed=3)
    adv, ret = compute_gae(r, 0.99, 0.95)
    expected = brute_force_gae(r, 0.99, 0.95)
    torch.testing.assert_close(adv, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ret, expected + r.values, rtol=1e-5, atol=1e-5)


def test_gae_bootstraps_only_from_unfinished_last_row():
    r = make_variable_rollout([2, 2], [set(), {1}], seed=1)
    r.rewards.zero_()
    r.values.zero_()
    r.bootstrap_value = torch.tensor([10.0, 10.0])
    adv, _ = compute_gae(r, 0.5, 1.0)
    rows0 = (r.env_ids == 0).nonzero().flatten()
    rows1 = (r.env_ids == 1).nonzero().flatten()
    torch.testing.assert_close(adv[rows0], torch.tensor([2.5, 5.0]))  # bootstrapped, discounted
    torch.testing.assert_close(adv[rows1], torch.tensor([0.0, 0.0]))  # done: no bootstrap
