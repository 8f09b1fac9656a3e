"""Running statistics for normalisation: of vector observations, and of the discounted return for rewards.

`RunningMeanStd.update(x)` merges a batch's moments into the running ones with the parallel
algorithm of Chan et al. (1979), as in OpenAI baselines' RunningMeanStd; `normalize(x)` returns
`clip((x - mean) / sqrt(var + eps), -clip, +clip)`. Across ranks, `update` takes a `stats_sync`
hook that averages a float64 CPU tensor in place (an all-reduce mean): the batch's count, sum and
sum of squares are averaged, so every rank merges the same global batch moments and keeps identical
statistics. The observation statistics are module buffers of the model (saved with the weights).

`RewardScaler` is reward normalisation as Stable-Baselines3's VecNormalize and CleanRL's
ppo_continuous_action (gym's NormalizeReward) do it: every env keeps its discounted return
`R <- gamma R + r` (zeroed after the episode's last step), and rewards are divided by the running
standard deviation of those returns (the mean is not subtracted), then clipped to +-clip. The
collector calls `scale` on every batch of step results; the learner calls `sync` once per update.
See the class docstring for how the statistics stay identical across ranks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

StatsSync = Callable[[torch.Tensor], None]
Moment = Any  # a float, a numpy array or a float64 tensor (merge_moments works on all three)


def merge_moments(count: float, mean: Moment, var: Moment, batch_count: float, batch_sum: Moment,
                  batch_sumsq: Moment) -> tuple[float, Moment, Moment]:
    """(count, mean, population variance) of the running moments merged with a batch's count and sums
    (Chan et al.'s parallel algorithm); works on floats, numpy arrays and float64 tensors alike."""
    if batch_count <= 0:
        return count, mean, var
    batch_mean = batch_sum / batch_count
    batch_var = batch_sumsq / batch_count - batch_mean**2
    batch_var = batch_var.clamp(min=0.0) if isinstance(batch_var, torch.Tensor) else np.maximum(batch_var, 0.0)
    total = count + batch_count
    delta = batch_mean - mean
    new_mean = mean + delta * (batch_count / total)
    m2 = var * count + batch_var * batch_count + delta**2 * (count * batch_count / total)
    return total, new_mean, m2 / total


class RunningMeanStd(nn.Module):
    """Per-feature running mean and (population) variance of `[N, dim]` batches; identity until updated."""

    def __init__(self, dim: int, clip: float = 5.0, eps: float = 1e-8):
        super().__init__()
        if clip <= 0:
            raise ValueError(f"policy.obs_norm_clip must be > 0, got {clip}")
        self.clip = float(clip)
        self.eps = float(eps)
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.zeros(()))
        # columns whose statistics start over at the next update (not saved: set when a run begins)
        self.register_buffer("restart", torch.zeros(dim, dtype=torch.bool), persistent=False)

    def restart_columns(self, columns: torch.Tensor) -> None:
        """The next `update` sets these columns' mean and variance to its batch's moments alone. For inputs
        added to a trained network (`trainer.widen`): merged under the count of the millions of rows seen
        before, their statistics would stay at the identity for the rest of the run, and the raw inputs
        (base_ranges: 64 values near 2 m) move the first layer like a bias with a 100-fold step size."""
        self.restart[columns] = True

    @torch.no_grad()
    def update(self, x: torch.Tensor, stats_sync: StatsSync | None = None) -> None:
        """Merge the moments of the rows of `x` ([N, dim]), averaged across ranks by `stats_sync`."""
        x = x.detach().reshape(x.shape[0], -1).double()
        batch = torch.cat([torch.tensor([float(x.shape[0])], dtype=torch.float64, device=x.device),
                           x.sum(0), x.pow(2).sum(0)]).cpu()
        if stats_sync is not None:
            stats_sync(batch)  # averaging count and sums keeps their ratios: the global batch moments
        if float(batch[0]) <= 0:
            return
        dim = self.mean.shape[0]
        count, mean, var = merge_moments(float(self.count), self.mean.double().cpu(), self.var.double().cpu(),
                                         float(batch[0]), batch[1 : 1 + dim], batch[1 + dim :])
        if bool(self.restart.any()):
            cols = self.restart.cpu()
            _, mean[cols], var[cols] = merge_moments(0.0, 0.0, 0.0, float(batch[0]), batch[1 : 1 + dim][cols],
                                                     batch[1 + dim :][cols])
            self.restart.zero_()
        self.mean.copy_(mean.to(self.mean))
        self.var.copy_(var.to(self.var))
        self.count.fill_(count)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """`clip((x - mean) / sqrt(var + eps), -clip, clip)`, for `[N, dim]` float rows."""
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)


class RewardScaler:
    """Divides rewards by the running std of the discounted return (SB3 VecNormalize, CleanRL).

    Statistics: the *global* moments (count, mean, var of the discounted returns), identical on every
    rank, plus this rank's *pending* batch (count, sum, sum of squares of the returns seen since the
    last `sync`). `scale` merges each new batch into the pending one and divides by the std of global
    and pending together, so the scale adapts from the first steps on, as gym's wrapper does. `sync`
    (PPO.update, once per update on every rank) averages the pending batches across ranks with
    `stats_sync` and merges them into the global moments; then every rank again holds the same
    statistics. Only the global moments are saved (`state_dict`): checkpoints are written after an
    update, when nothing is pending.

    The per-env discounted returns belong to the collector (one entry per env, saved with its state):
    `scale(returns, rewards)` takes the envs' returns already updated with this step's rewards.
    """

    def __init__(self, gamma: float, clip: float = 10.0, eps: float = 1e-8) -> None:
        if clip <= 0:
            raise ValueError(f"trainer.ppo.reward_norm_clip must be > 0, got {clip}")
        self.gamma = float(gamma)
        self.clip = float(clip)
        self.eps = float(eps)
        self.count, self.mean, self.var = 0.0, 0.0, 1.0  # global moments (var 1: identity until updated)
        self.pending = np.zeros(3)  # this rank's count, sum, sum of squares since the last sync

    def std(self) -> float:
        """sqrt(var + eps) of the global and pending returns together."""
        _, _, var = merge_moments(self.count, self.mean, self.var, *self.pending)
        return float(np.sqrt(var + self.eps))

    def scale(self, returns: np.ndarray, rewards: np.ndarray) -> np.ndarray:
        """Merge the envs' discounted `returns` into the statistics, then `clip(rewards / std)` (float32)."""
        returns = np.asarray(returns, dtype=np.float64)
        self.pending += (len(returns), returns.sum(), np.square(returns).sum())
        scaled = np.asarray(rewards, dtype=np.float64) / self.std()
        return np.clip(scaled, -self.clip, self.clip).astype(np.float32)

    def sync(self, stats_sync: StatsSync | None = None) -> None:
        """Merge every rank's pending batch (averaged by `stats_sync`) into the global moments."""
        batch = torch.as_tensor(self.pending, dtype=torch.float64).clone()
        if stats_sync is not None:
            stats_sync(batch)
        count, mean, var = merge_moments(self.count, self.mean, self.var, *batch.tolist())
        self.count, self.mean, self.var = float(count), float(mean), float(var)
        self.pending[:] = 0.0

    def state_dict(self) -> dict[str, float]:
        return {"count": self.count, "mean": self.mean, "var": self.var}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.count, self.mean, self.var = float(state["count"]), float(state["mean"]), float(state["var"])
        self.pending[:] = 0.0

