"""Behaviour cloning of a feed-forward actor on (observation, expert action) rows: DAgger's learner step.

The trainer knows nothing about where the rows come from (`skills/imitate.py` labels a skill's states
with its scripted oracle). `DemoRows` aggregates rows over rounds (DAgger keeps every round's data);
`clone_behaviour` fits the policy to all of them:

- the observation normalisation statistics (`policy.obs_norm`) are recomputed from the rows, so a
  PPO fine-tune (`trainer.init_from`) starts with statistics of the states the policy visits;
- the action mean is fitted by mean squared error to the expert action, clipped to the Box (a tanh
  mean cannot reach +-1 exactly, so targets are clipped to +-`target_clip`);
- the state-independent log-std is set by maximum likelihood of the expert actions around the
  (detached) mean: the exploration noise a PPO fine-tune starts from is the imitation error.

Only the actor's path gets gradients (the shared visual encoder included); the critic is untouched.
Rows are sampled in a seeded order, so the same rows, weights and seed give the same policy.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from trainer.networks import ActorCritic


class DemoRows:
    """Observation dicts and expert actions, appended in chunks, concatenated on demand."""

    def __init__(self) -> None:
        self._obs: dict[str, list[np.ndarray]] = {}
        self._actions: list[np.ndarray] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, obs: Mapping[str, np.ndarray], actions: np.ndarray) -> None:
        """Append N rows: `obs[k]` is `[N, ...]` for every key, `actions` `[N, A]`."""
        n = int(np.shape(actions)[0])
        if self._obs and set(obs) != set(self._obs):
            raise ValueError(f"rows have keys {sorted(obs)}, earlier rows {sorted(self._obs)}")
        for key, value in obs.items():
            if np.shape(value)[0] != n:
                raise ValueError(f"observation '{key}' has {np.shape(value)[0]} rows, actions {n}")
            self._obs.setdefault(key, []).append(np.asarray(value, dtype=np.float32))
        self._actions.append(np.asarray(actions, dtype=np.float32))
        self._size += n

    def tensors(self) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Every row so far as `({key: [M, ...]}, [M, A])` float32 tensors."""
        if not self._size:
            raise ValueError("no demonstration rows")
        obs = {k: torch.from_numpy(np.concatenate(v)) for k, v in self._obs.items()}
        return obs, torch.from_numpy(np.concatenate(self._actions))


def reset_obs_normalization(actor_critic: ActorCritic, obs: Mapping[str, torch.Tensor]) -> None:
    """Replace the running observation statistics by those of `obs` (no-op without obs_norm)."""
    norm = actor_critic.obs_norm
    if norm is None:
        return
    norm.mean.zero_()
    norm.var.fill_(1.0)
    norm.count.zero_()
    actor_critic.update_obs_normalization(obs)


def clone_behaviour(actor_critic: ActorCritic, obs: Mapping[str, torch.Tensor], actions: torch.Tensor, *,
                    epochs: int, batch_size: int, lr: float, seed: int,
                    target_clip: float = 0.97) -> dict[str, float]:
    """Fit the actor of `actor_critic` (feed-forward, Box actions) to `actions` on `obs`, in place.

    Returns the last epoch's mean squared error of the mean and the fitted log-std (mean over dims).
    """
    if actor_critic.is_recurrent or actor_critic.is_discrete:
        raise ValueError("behaviour cloning needs a feed-forward policy with Box actions "
                         "(policy.architecture=feedforward)")
    if epochs <= 0 or batch_size <= 0 or lr <= 0:
        raise ValueError(f"epochs, batch_size and lr must be > 0 (got {epochs}, {batch_size}, {lr})")
    rows = int(actions.shape[0])
    low = torch.as_tensor(actor_critic.action_space.low, dtype=torch.float32)
    high = torch.as_tensor(actor_critic.action_space.high, dtype=torch.float32)
    targets = torch.clamp(actions, low, high).clamp(-target_clip, target_clip)
    reset_obs_normalization(actor_critic, obs)
    head = actor_critic.action_head
    mean_params = [p for name, p in actor_critic.named_parameters()
                   if not name.startswith(("critic.", "value_head.")) and name != "action_head.log_std"]
    optimizer = torch.optim.Adam([{"params": mean_params}, {"params": [head.log_std]}], lr=lr)
    generator = torch.Generator().manual_seed(int(seed))
    actor_critic.train()
    mse = 0.0
    for _ in range(int(epochs)):
        order = torch.randperm(rows, generator=generator)
        total, count = 0.0, 0
        for start in range(0, rows, int(batch_size)):
            idx = order[start : start + int(batch_size)]
            batch = {k: v[idx] for k, v in obs.items()}
            dist = head(actor_critic.actor(actor_critic.encode(batch)))
            err = (dist.mean - targets[idx]).pow(2)
            mean_loss = err.mean()
            log_std = head.log_std.clamp(head.min_log_std, head.max_log_std)
            # Gaussian NLL of the targets around the detached mean: log-std -> log of the residual's RMS
            std_loss = (err.detach().mean(0) / (2 * torch.exp(2 * log_std)) + log_std).mean()
            optimizer.zero_grad()
            (mean_loss + std_loss).backward()
            optimizer.step()
            total += float(err.detach().sum())
            count += int(err.numel())
        mse = total / max(count, 1)
    actor_critic.eval()
    return {"mse": mse, "log_std": float(head.log_std.detach().mean())}
