"""Running mean/variance of vector observations, kept as module buffers (saved with the weights).

`RunningMeanStd.update(x)` merges a batch's moments into the running ones with the parallel
algorithm of Chan et al. (1979), as in OpenAI baselines' RunningMeanStd; `normalize(x)` returns
`clip((x - mean) / sqrt(var + eps), -clip, +clip)`. Across ranks, `update` takes a `stats_sync`
hook that averages a float64 CPU tensor in place (an all-reduce mean): the batch's count, sum and
sum of squares are averaged, so every rank merges the same global batch moments and keeps identical
statistics.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

StatsSync = Callable[[torch.Tensor], None]


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

    @torch.no_grad()
    def update(self, x: torch.Tensor, stats_sync: StatsSync | None = None) -> None:
        """Merge the moments of the rows of `x` ([N, dim]), averaged across ranks by `stats_sync`."""
        x = x.detach().reshape(x.shape[0], -1).double()
        dim = self.mean.shape[0]
        batch = torch.cat([torch.tensor([float(x.shape[0])], dtype=torch.float64, device=x.device),
                           x.sum(0), x.pow(2).sum(0)]).cpu()
        if stats_sync is not None:
            stats_sync(batch)  # averaging count and sums keeps their ratios: the global batch moments
        n = float(batch[0])
        if n <= 0:
            return
        batch_mean = batch[1 : 1 + dim] / n
        batch_var = (batch[1 + dim :] / n - batch_mean.pow(2)).clamp(min=0.0)
        old_n = float(self.count)
        old_mean, old_var = self.mean.double().cpu(), self.var.double().cpu()
        total = old_n + n
        delta = batch_mean - old_mean
        mean = old_mean + delta * (n / total)
        m2 = old_var * old_n + batch_var * n + delta.pow(2) * (old_n * n / total)
        self.mean.copy_(mean.to(self.mean))
        self.var.copy_((m2 / total).to(self.var))
        self.count.fill_(total)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """`clip((x - mean) / sqrt(var + eps), -clip, clip)`, for `[N, dim]` float rows."""
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)
