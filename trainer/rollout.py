"""The data contract between experience collection and learning.

A `Rollout` is what the collector (any of the `ver`, `nover` and `sync` modes) hands to PPO: a flat
table with one row per environment step, in collection order. Rows of one environment appear in
the order that environment took them, but rows of different environments interleave freely, and
environments may contribute different numbers of rows (variable experience).

Row `i` means: the policy saw `obs[i]` with recurrent state `hidden[i]` (the state *before* this
step; zeroed by the collector where `episode_start[i]` is true), chose `actions[i]` with
`log_probs[i]` and `values[i]`, and the environment answered with `rewards[i]` and `dones[i]`.

Time limits: where the episode was cut by a time limit (`truncated[i]`, not a real termination)
the collector has already added `gamma * V(final observation)` to `rewards[i]` (reward augmentation,
as Stable-Baselines3 does), so the row stays `done` and GAE never bootstraps across an episode end.

`bootstrap_value[e]` is the value of environment `e`'s observation after its last row in this
rollout (0 if that row ended an episode), with the policy that was current when it was computed.

Every tensor field except `bootstrap_value` (per env) has one entry per row; `select` and `cat`
work on all of them at once, so no code lists the fields by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import torch

_PER_ENV_FIELDS = ("bootstrap_value",)


@dataclass
class Rollout:
    obs: dict[str, torch.Tensor]  # each [S, ...]
    actions: torch.Tensor  # [S, A] float (Box) or [S] long (Discrete)
    log_probs: torch.Tensor  # [S] float
    values: torch.Tensor  # [S] float
    rewards: torch.Tensor  # [S] float, reward received for this row's action (+ gamma V(final obs) if truncated)
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
    truncated: torch.Tensor | None = None  # [S] bool, the episode ended by a time limit (None: all False)

    def __post_init__(self) -> None:
        if self.truncated is None:
            self.truncated = torch.zeros(self.dones.shape, dtype=torch.bool, device=self.dones.device)

    def __len__(self) -> int:
        return int(self.rewards.shape[0])

    @classmethod
    def row_fields(cls) -> tuple[str, ...]:
        """Names of the fields with one entry per row (tensors, and the `obs` dict of tensors)."""
        return tuple(f.name for f in fields(cls) if f.name not in _PER_ENV_FIELDS
                     and f.name not in ("num_envs", "expected_steps_per_env"))

    def map_rows(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, object]:
        """`fn` applied to every per-row tensor: {field: tensor, "obs": {key: tensor}}."""
        out: dict[str, object] = {}
        for name in self.row_fields():
            value = getattr(self, name)
            out[name] = {k: fn(v) for k, v in value.items()} if isinstance(value, dict) else fn(value)
        return out

    def select(self, idx: torch.Tensor | slice) -> Rollout:
        """The rows `idx` (indices, mask or slice), same envs and bootstrap values."""
        return replace(self, **self.map_rows(lambda t: t[idx]))

    @staticmethod
    def cat(a: Rollout, b: Rollout) -> Rollout:
        """Rows of `a` then rows of `b`; `b`'s envs become separate envs `a.num_envs + e`.

        Each env keeps its own rows and bootstrap value, so GAE, sequences and importance weights
        treat `b`'s rows on their own. `expected_steps_per_env` is `a`'s.
        """
        joined = {}
        for name in Rollout.row_fields():
            va, vb = getattr(a, name), getattr(b, name)
            if name == "env_ids":
                vb = vb + a.num_envs
            joined[name] = ({k: torch.cat([v, vb[k]]) for k, v in va.items()} if isinstance(va, dict)
                            else torch.cat([va, vb.to(va.dtype)]))
        return replace(a, **joined, bootstrap_value=torch.cat([a.bootstrap_value.float(), b.bootstrap_value.float()]),
                       num_envs=a.num_envs + b.num_envs)

    def steps_per_env(self) -> torch.Tensor:
        """Number of rows each environment contributed, shape [num_envs]."""
        return torch.bincount(self.env_ids, minlength=self.num_envs)

    def importance_weights(self) -> torch.Tensor:
        """Truncated VER importance weight of every row: min(1, T / steps of its env)."""
        per_env = self.steps_per_env().clamp(min=1).to(torch.float32)
        weights = (self.expected_steps_per_env / per_env).clamp(max=1.0)
        return weights[self.env_ids]

    def to(self, device: torch.device | str) -> Rollout:
        return replace(self, **self.map_rows(lambda t: t.to(device)), bootstrap_value=self.bootstrap_value.to(device))
