"""The 11-dim action vector (arm 7, grip 1, base 2, stop 1) and the subsets skills expose.

A skill env exposes a Box over the concatenation of its subsets, in the fixed order of
`SUBSET_ORDER`, and `expand_action` writes it into the full vector; unused entries are 0. A skill may
drive its base backwards slower than forwards (`reverse_speed`, the skill config's `base_reverse_speed`):
the skill env and the HAB agent both expand its actions here, so the two always agree.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from gymnasium import spaces

ACTION_DIM = 11
ACTION_SLICES: dict[str, slice] = {
    "arm": slice(0, 7),
    "grip": slice(7, 8),
    "base": slice(8, 10),
    "stop": slice(10, 11),
}
SUBSET_ORDER = ("arm", "grip", "base", "stop")
BASE_LINEAR = ACTION_SLICES["base"].start  # the base's forward (+) / reverse (-) speed command
FULL_SUBSETS = SUBSET_ORDER


def check_subsets(subset_names: Sequence[str]) -> tuple[str, ...]:
    """Validate subset names; returns them in canonical order. ValueError names the valid choices."""
    for name in subset_names:
        if name not in ACTION_SLICES:
            raise ValueError(f"unknown action subset '{name}'; valid choices: {', '.join(SUBSET_ORDER)}")
    if len(set(subset_names)) != len(subset_names):
        raise ValueError(f"duplicate action subsets in {list(subset_names)}")
    return tuple(n for n in SUBSET_ORDER if n in subset_names)


def subset_dim(subset_names: Sequence[str]) -> int:
    """Number of action dims the subsets cover."""
    names = check_subsets(subset_names)
    return sum(ACTION_SLICES[n].stop - ACTION_SLICES[n].start for n in names)


def action_space(subset_names: Sequence[str]) -> spaces.Box:
    """Box([-1, 1]^d) for the subsets."""
    d = subset_dim(subset_names)
    return spaces.Box(-1.0, 1.0, shape=(d,), dtype=np.float32)


@functools.lru_cache(maxsize=64)
def _subset_indices(subset_names: tuple[str, ...]) -> np.ndarray:
    """Positions in the full vector of a subset action's entries (cached: every env step asks)."""
    names = check_subsets(subset_names)
    return np.concatenate([np.arange(ACTION_SLICES[n].start, ACTION_SLICES[n].stop) for n in names])


def expand_action(subset_names: Sequence[str], a: np.ndarray, reverse_speed: float = 1.0) -> np.ndarray:
    """Map a subset action (concatenated in `SUBSET_ORDER`) into the full 11-vector, clipped to [-1, 1];
    a reverse base speed command is then scaled by `reverse_speed` (1: as forwards)."""
    index = _subset_indices(tuple(subset_names))
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    if a.shape[0] != index.shape[0]:
        raise ValueError(f"action has {a.shape[0]} dims, subsets {list(subset_names)} need {index.shape[0]}")
    full = np.zeros(ACTION_DIM, dtype=np.float64)
    full[index] = a
    full = np.clip(np.nan_to_num(full, nan=0.0), -1.0, 1.0)
    if full[BASE_LINEAR] < 0.0:
        full[BASE_LINEAR] *= reverse_speed
    return full


def split_action(full: np.ndarray) -> dict[str, np.ndarray]:
    """The full 11-vector as a dict of its parts."""
    full = np.asarray(full, dtype=np.float64).reshape(ACTION_DIM)
    return {name: full[sl] for name, sl in ACTION_SLICES.items()}
