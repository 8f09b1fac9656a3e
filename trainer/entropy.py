"""The entropy coefficient: fixed, or learned by a SAC-style Lagrangian on a target entropy.

Learned mode keeps one parameter `log_alpha` (bounded to [log min_coef, log max_coef]) and adds
`log_alpha * (H.detach() - target)` to the loss. Minimising it moves alpha UP when the entropy H is
below the target (more exploration pressure) and DOWN when it is above. habitat-lab's
LagrangeInequalityCoefficient has this sign inverted (reference notes section 2); we do not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import gymnasium as gym
import torch
from torch import nn


class EntropyCoefficient(nn.Module):
    """alpha, fixed or learned; `value()` is the coefficient to multiply the entropy bonus by."""

    def __init__(self, init: float, learned: bool, target: float, min_coef: float, max_coef: float):
        super().__init__()
        if not 0 < min_coef <= max_coef:
            raise ValueError(
                f"entropy coefficient bounds must satisfy 0 < min <= max, got [{min_coef}, {max_coef}]"
            )
        if init < 0 or (learned and init == 0):
            raise ValueError(f"entropy coefficient must be > 0 when learned and >= 0 when fixed, got {init}")
        self.learned = bool(learned)
        self.target = float(target)
        self.log_min = math.log(min_coef)
        self.log_max = math.log(max_coef)
        if self.learned:
            log_init = min(max(math.log(init), self.log_min), self.log_max)
            self.log_alpha = nn.Parameter(torch.tensor(log_init))
        else:
            self.register_buffer("fixed_coef", torch.tensor(float(init)))

    def value(self) -> torch.Tensor:
        """Current coefficient as a detached scalar tensor."""
        return self.log_alpha.detach().exp() if self.learned else self.fixed_coef

    def loss(self, entropy: torch.Tensor) -> torch.Tensor:
        """Lagrangian term for the (importance-weighted mean) entropy of a mini-batch; 0 when fixed."""
        if not self.learned:
            return torch.zeros((), device=entropy.device)
        return self.log_alpha * (entropy.detach() - self.target)

    @torch.no_grad()
    def project_into_bounds(self) -> None:
        """Clamp log_alpha into [log min_coef, log max_coef] (call after every optimizer step)."""
        if self.learned:
            self.log_alpha.clamp_(self.log_min, self.log_max)


def entropy_coefficient_from_config(entropy_cfg: Mapping, action_space: gym.Space) -> EntropyCoefficient:
    """Build from the `ppo.entropy` config block; a per-dimension target is scaled by the Box's dims."""
    target = float(entropy_cfg["target"])
    if bool(entropy_cfg["target_per_action_dim"]) and isinstance(action_space, gym.spaces.Box):
        target *= int(action_space.shape[0])
    return EntropyCoefficient(
        init=float(entropy_cfg["coef"]),
        learned=bool(entropy_cfg["learned"]),
        target=target,
        min_coef=float(entropy_cfg["min_coef"]),
        max_coef=float(entropy_cfg["max_coef"]),
    )
