"""The data contract between experience collection and learning.

A `Rollout` is what the collector (any of the `ver`, `nover` and `sync` modes) hands to PPO: a flat
table with one row per environment step, in collection order. Rows of one environment appear in
the order that environment took them, but rows of different environments interleave freely, and
environments may contribute different numbers of rows (variable experience).

Row `i` means: the policy saw `obs[i]` with recurrent state `hidden[i]` (the state *before* this
step; zeroed by the collector where `episode_start[i]` is true), chose `actions[i]` with
`log_probs[i]` and `values[i]`, and the environment answered with `rewards[i]` and `dones[i]`.

`bootstrap_value[e]` is the value of environment `e`'s observation after its last row in this
rollout (0 if that row ended an episode), with the policy that was current when it was computed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch


@dataclass
class Rollout:
    obs: dict[str, torch.Tensor]  # each [S, ...]
    actions: torch.Tensor  # [S, A] float (Box) or [S] long (Discrete)
    log_probs: torch.Tensor  # [S] float
    values: torch.Tensor  # [S] float
    rewards: torch.Tensor  # [S] float, reward received for this row's action
    dones: torch.Tensor  # [S] bool, the episode ended after this row (terminated or truncated)
    episode_start: torch.Tensor  # [S] bool, this row is the first step of an episode
    hidden: torch.Tensor  # [S, 2 * num_layers, hidden] recurrent state fed to this row
    env_ids: torch.Tensor  # [S] long
    episode_ids: torch.Tensor  # [S] long, unique per (env, episode)
    step_ids: torch.Tensor  # [S] long, step index within the episode
    policy_version: torch.Tensor  # [S] long, learner update count of the policy that acted
    bootstrap_value: torch.Tensor  # [num_envs] float
    num_envs: int
    expected_steps_per_env: float  # T: steps each env would contribute in a lock-step rollout

    def __len__(self) -> int:
        return int(self.rewards.shape[0])

    def steps_per_env(self) -> torch.Tensor:
        """Number of rows each environment contributed, shape [num_envs]."""
        return torch.bincount(self.env_ids, minlength=self.num_envs)

    def importance_weights(self) -> torch.Tensor:
        """Truncated VER importance weight of every row: min(1, T / steps of its env)."""
        per_env = self.steps_per_env().clamp(min=1).to(torch.float32)
        weights = (self.expected_steps_per_env / per_env).clamp(max=1.0)
        return weights[self.env_ids]

    def to(self, device: torch.device | str) -> Rollout:
        moved = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, torch.Tensor):
                value = value.to(device)
            elif isinstance(value, dict):
                value = {k: v.to(device) for k, v in value.items()}
            moved[f.name] = value
        return Rollout(**moved)
