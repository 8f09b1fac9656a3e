"""Generalised advantage estimation (Schulman et al., 2016) on a variable-experience `Rollout`.

Each environment's rows are taken in that environment's own order (rows of different envs
interleave in the rollout). An episode ends after a row with `dones` true: nothing is bootstrapped
across it. After an env's last row the value `bootstrap_value[env]` is used unless that row is done.

Vectorisation: rows are grouped per env with a stable argsort and laid out in a padded
[num_envs, max_rows_per_env] table, then the usual backward recursion runs over the columns.
"""

from __future__ import annotations

import torch

from trainer.rollout import Rollout


def compute_gae(rollout: Rollout, gamma: float, gae_lambda: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns (advantage + value), both `[S]` in the rollout's row order."""
    num_rows = len(rollout)
    device = rollout.rewards.device
    env_ids = rollout.env_ids.long()
    counts = torch.bincount(env_ids, minlength=rollout.num_envs)
    order = torch.argsort(env_ids, stable=True)  # rows grouped by env, each env in its own order
    offsets = torch.cumsum(counts, 0) - counts
    sorted_envs = env_ids[order]
    column = torch.arange(num_rows, device=device) - offsets[sorted_envs]

    width = int(counts.max().item()) if num_rows else 0
    shape = (rollout.num_envs, width)
    rewards = torch.zeros(shape, device=device)
    values = torch.zeros(shape, device=device)
    not_done = torch.zeros(shape, device=device)
    rewards[sorted_envs, column] = rollout.rewards[order].float()
    values[sorted_envs, column] = rollout.values[order].float()
    not_done[sorted_envs, column] = (~rollout.dones[order].bool()).float()
    bootstrap = rollout.bootstrap_value.float().to(device)

    advantages = torch.zeros(shape, device=device)
    next_advantage = torch.zeros(rollout.num_envs, device=device)
    for t in range(width - 1, -1, -1):
        has_next_row = (t + 1) < counts
        next_value = values[:, t + 1] if t + 1 < width else torch.zeros_like(bootstrap)
        next_value = torch.where(has_next_row, next_value, bootstrap)
        next_adv = torch.where(has_next_row, next_advantage, torch.zeros_like(next_advantage))
        delta = rewards[:, t] + gamma * next_value * not_done[:, t] - values[:, t]
        adv_t = delta + gamma * gae_lambda * not_done[:, t] * next_adv
        valid = t < counts
        advantages[:, t] = torch.where(valid, adv_t, torch.zeros_like(adv_t))
        next_advantage = advantages[:, t]

    out = torch.empty(num_rows, device=device)
    out[order] = advantages[sorted_envs, column]
    return out, out + rollout.values.float()
