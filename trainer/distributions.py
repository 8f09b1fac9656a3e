"""Action distributions and the heads that produce them: diagonal Gaussian (Box) and Categorical (Discrete).

The Gaussian has a state-independent learned log-std (clamped to a configured range) and a mean
that is either plain or tanh-squashed. Only the *mean* is squashed: samples are not, so the log-prob
stays the exact Gaussian one; the collector clips actions to the Box bounds before stepping the env
(`clip_to_space`).

Binary entries of a Box action (`policy.action.binary_dims`, e.g. a skill's stop, which the env
reads as "> 0"): the head's output there is a logit and the entry is drawn from a Bernoulli as -1 or
+1 (`GaussianBinary`), so how often it fires is learned per state instead of following from one
state-independent std shared with a Gaussian mean near its threshold.

Inference cost: `DiagGaussian` computes the formulas of `torch.distributions.Normal` itself
(same operations, bit-identical results) and the Categorical is built with `validate_args=False`:
argument validation cost about 100 us per batch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import gymnasium as gym
import numpy as np
import torch
from torch import nn

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))  # the constants torch.distributions.Normal uses
_ENTROPY_CONST = 0.5 + 0.5 * math.log(2 * math.pi)


class DiagGaussian:
    """Independent Gaussians over the last dimension; log-prob and entropy are summed over it.

    The arithmetic is `torch.distributions.Normal`'s, without its argument validation.
    """

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor):
        self.mean = mean
        self.log_std = log_std.expand_as(mean)
        self.std = self.log_std.exp()

    def sample(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.normal(self.mean, self.std)

    def mode(self) -> torch.Tensor:
        return self.mean

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        var = self.std**2
        return (-((actions - self.mean) ** 2) / (2 * var) - self.std.log() - _LOG_SQRT_2PI).sum(-1)

    def entropy(self) -> torch.Tensor:
        return (_ENTROPY_CONST + torch.log(self.std)).sum(-1)


class GaussianBinary:
    """A Box action with Gaussian entries and Bernoulli entries valued -1 / +1, independent of each other.

    `mean` holds the expected action of every entry (tanh(logit / 2) for a binary one), so behaviour
    cloning can regress it like a Gaussian mean; log-prob and entropy sum both parts.
    """

    def __init__(self, head_out: torch.Tensor, log_std: torch.Tensor, continuous: torch.Tensor,
                 binary: torch.Tensor, squash_mean: bool):
        self.continuous, self.binary = continuous, binary
        cont_mean = head_out.index_select(-1, continuous)
        self.gaussian = DiagGaussian(torch.tanh(cont_mean) if squash_mean else cont_mean,
                                     log_std.index_select(-1, continuous))
        self.logits = head_out.index_select(-1, binary)

    @property
    def mean(self) -> torch.Tensor:
        """Built on demand (behaviour cloning reads it; acting and PPO's evaluation do not)."""
        return self._combine(self.gaussian.mean, torch.tanh(self.logits / 2))

    def _combine(self, cont: torch.Tensor, binary: torch.Tensor) -> torch.Tensor:
        out = cont.new_empty(cont.shape[:-1] + (cont.shape[-1] + binary.shape[-1],))
        out[..., self.continuous] = cont
        out[..., self.binary] = binary
        return out

    def sample(self) -> torch.Tensor:
        with torch.no_grad():
            fire = torch.bernoulli(torch.sigmoid(self.logits))
            return self._combine(self.gaussian.sample(), fire * 2 - 1)

    def mode(self) -> torch.Tensor:
        return self._combine(self.gaussian.mean, torch.where(self.logits > 0, 1.0, -1.0))

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        fired = actions.index_select(-1, self.binary) > 0
        # log sigmoid(l) if fired else log sigmoid(-l)
        binary = -nn.functional.softplus(torch.where(fired, -self.logits, self.logits))
        return self.gaussian.log_prob(actions.index_select(-1, self.continuous)) + binary.sum(-1)

    def entropy(self) -> torch.Tensor:
        p = torch.sigmoid(self.logits)
        binary = p * nn.functional.softplus(-self.logits) + (1 - p) * nn.functional.softplus(self.logits)
        return self.gaussian.entropy() + binary.sum(-1)


class CategoricalDist:
    """A Categorical over integer actions of shape [B]."""

    def __init__(self, logits: torch.Tensor):
        self._cat = torch.distributions.Categorical(logits=logits, validate_args=False)

    def sample(self) -> torch.Tensor:
        return self._cat.sample()

    def mode(self) -> torch.Tensor:
        return self._cat.probs.argmax(-1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self._cat.log_prob(actions.long())

    def entropy(self) -> torch.Tensor:
        return self._cat.entropy()


class GaussianHead(nn.Module):
    """Linear mean (optionally tanh-squashed) plus a learned, clamped, state-independent log-std.

    `cfg["initial_mean"]` (optional, one value per action dimension or null) sets the mean of the
    untrained policy through the head's bias: with a tanh mean the bias is atanh of the value, so the
    value itself is the first action mean (e.g. a stop action that starts far below its 0 threshold).
    `cfg["binary_dims"]` (optional): entries drawn as -1 / +1 from a Bernoulli (`GaussianBinary`); their
    initial mean v is the expected action, 2 p - 1, so the bias is the logit 2 atanh(v).
    """

    def __init__(self, in_dim: int, action_dim: int, cfg: Mapping):
        super().__init__()
        activation = str(cfg["mean_activation"])
        if activation not in ("tanh", "none"):
            raise ValueError(
                f"unknown policy.action.mean_activation '{activation}'; valid choices: tanh, none"
            )
        self.squash_mean = activation == "tanh"
        self.min_log_std = float(cfg["min_log_std"])
        self.max_log_std = float(cfg["max_log_std"])
        binary = sorted({int(k) for k in (cfg.get("binary_dims") or [])})
        if any(k < 0 or k >= action_dim for k in binary):
            raise ValueError(f"policy.action.binary_dims must lie in [0, {action_dim - 1}]; got {binary}")
        self.binary_dims = binary
        self.register_buffer("_binary", torch.tensor(binary, dtype=torch.long), persistent=False)
        self.register_buffer("_continuous", torch.tensor([k for k in range(action_dim) if k not in binary],
                                                         dtype=torch.long), persistent=False)
        self.mean = nn.Linear(in_dim, action_dim)
        nn.init.orthogonal_(self.mean.weight, gain=0.01)
        nn.init.zeros_(self.mean.bias)
        initial_mean = cfg.get("initial_mean")
        if initial_mean is not None:
            with torch.no_grad():
                self.mean.bias.copy_(self._bias_for(initial_mean, action_dim))
        self.log_std = nn.Parameter(torch.full((action_dim,), float(cfg["log_std_init"])))

    def _bias_for(self, initial_mean: object, action_dim: int) -> torch.Tensor:
        values = [float(v) for v in initial_mean]  # type: ignore[union-attr]
        if len(values) != action_dim:
            raise ValueError(f"policy.action.initial_mean has {len(values)} values; the action space has "
                             f"{action_dim} dimensions")
        binary = set(self.binary_dims)
        if any(abs(v) >= 1.0 for k, v in enumerate(values) if self.squash_mean or k in binary):
            raise ValueError(f"policy.action.initial_mean values must lie in (-1, 1) with a tanh mean or "
                             f"a binary entry; got {values}")
        bias = torch.tensor(values, dtype=torch.float32)
        squashed = torch.atanh(bias) if self.squash_mean else bias
        return torch.where(torch.isin(torch.arange(action_dim), self._binary), 2 * torch.atanh(bias), squashed)

    def forward(self, features: torch.Tensor) -> DiagGaussian | GaussianBinary:
        mean = self.mean(features)
        log_std = self.log_std.clamp(self.min_log_std, self.max_log_std)
        if self.binary_dims:
            return GaussianBinary(mean, log_std, self._continuous, self._binary, self.squash_mean)
        if self.squash_mean:
            mean = torch.tanh(mean)
        return DiagGaussian(mean, log_std)


class CategoricalHead(nn.Module):
    """Linear logits over `num_actions` choices."""

    def __init__(self, in_dim: int, num_actions: int):
        super().__init__()
        self.logits = nn.Linear(in_dim, num_actions)
        nn.init.orthogonal_(self.logits.weight, gain=0.01)
        nn.init.zeros_(self.logits.bias)

    def forward(self, features: torch.Tensor) -> CategoricalDist:
        return CategoricalDist(self.logits(features))


def make_action_head(in_dim: int, action_space: gym.Space, action_cfg: Mapping) -> nn.Module:
    """The head for a Box (Gaussian) or Discrete (Categorical) action space."""
    if isinstance(action_space, gym.spaces.Box):
        if len(action_space.shape) != 1:
            raise ValueError(f"Box action spaces must be 1-D, got shape {action_space.shape}")
        return GaussianHead(in_dim, int(action_space.shape[0]), action_cfg)
    if isinstance(action_space, gym.spaces.Discrete):
        return CategoricalHead(in_dim, int(action_space.n))
    raise ValueError(f"unsupported action space {type(action_space).__name__}; valid choices: Box, Discrete")


def clip_to_space(actions: np.ndarray, action_space: gym.Space) -> np.ndarray:
    """Clip sampled Box actions into the space's bounds (Discrete actions pass through)."""
    if isinstance(action_space, gym.spaces.Box):
        return np.clip(actions, action_space.low, action_space.high)
    return actions
