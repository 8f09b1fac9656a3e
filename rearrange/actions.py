"""The 11-dim action vector (arm 7, grip 1, base 2, stop 1) and the subsets skills expose.

A skill env exposes a Box over the concatenation of its subsets, in the fixed order of
`SUBSET_ORDER`, and `expand_action` writes it into the full vector; unused entries are 0. A skill may
drive its base backwards slower than forwards (`reverse_speed`, the skill config's `base_reverse_speed`):
the skill env and the HAB agent both expand its actions here, so the two always agree.

`arm_ee` (3 entries, habitat-lab's ArmEEAction) replaces `arm` for a skill that commands the end
effector's displacement in the base frame instead of the 7 joint deltas: expanding it needs the
simulator, whose current arm state `rearrange.arm_ik.ee_delta_to_arm_action` turns it into the full
vector's arm entries. The full vector itself is always in joint space.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

ACTION_DIM = 11
ACTION_SLICES: dict[str, slice] = {
    "arm": slice(0, 7),
    "grip": slice(7, 8),
    "base": slice(8, 10),
    "stop": slice(10, 11),
}
FULL_SUBSETS = ("arm", "grip", "base", "stop")
SUBSET_SIZES: dict[str, int] = {"arm": 7, "arm_ee": 3, "grip": 1, "base": 2, "stop": 1}
SUBSET_ORDER = ("arm", "arm_ee", "grip", "base", "stop")
BASE_LINEAR = ACTION_SLICES["base"].start  # the base's forward (+) / reverse (-) speed command


def check_subsets(subset_names: Sequence[str]) -> tuple[str, ...]:
    """Validate subset names; returns them in canonical order. ValueError names the valid choices."""
    for name in subset_names:
        if name not in SUBSET_SIZES:
            raise ValueError(f"unknown action subset '{name}'; valid choices: {', '.join(SUBSET_ORDER)}")
    if len(set(subset_names)) != len(subset_names):
        raise ValueError(f"duplicate action subsets in {list(subset_names)}")
    if "arm" in subset_names and "arm_ee" in subset_names:
        raise ValueError("action subsets 'arm' and 'arm_ee' both drive the arm; choose one")
    return tuple(n for n in SUBSET_ORDER if n in subset_names)


def subset_dim(subset_names: Sequence[str]) -> int:
    """Number of action dims the subsets cover."""
    return sum(SUBSET_SIZES[n] for n in check_subsets(subset_names))


def action_space(subset_names: Sequence[str]) -> spaces.Box:
    """Box([-1, 1]^d) for the subsets."""
    d = subset_dim(subset_names)
    return spaces.Box(-1.0, 1.0, shape=(d,), dtype=np.float32)


@functools.lru_cache(maxsize=64)
def _subset_indices(subset_names: tuple[str, ...]) -> tuple[np.ndarray, slice | None, int]:
    """Positions in the full vector of a subset action's joint-space entries, where an `arm_ee`
    command sits in the subset action (None: no arm_ee), and the subset action's size. Cached: every
    env step asks."""
    names = check_subsets(subset_names)
    index, ee, k = [], None, 0
    for n in names:
        if n == "arm_ee":
            ee = slice(k, k + SUBSET_SIZES[n])
        else:
            index.append(np.arange(ACTION_SLICES[n].start, ACTION_SLICES[n].stop))
        k += SUBSET_SIZES[n]
    return (np.concatenate(index) if index else np.zeros(0, dtype=np.int64)), ee, k


def expand_action(subset_names: Sequence[str], a: np.ndarray, reverse_speed: float = 1.0,
                  sim: RearrangeSim | None = None) -> np.ndarray:
    """Map a subset action (concatenated in `SUBSET_ORDER`) into the full 11-vector, clipped to [-1, 1];
    a reverse base speed command is then scaled by `reverse_speed` (1: as forwards). An `arm_ee`
    command becomes the arm entries at `sim`'s current arm state (required then)."""
    names = tuple(subset_names)
    index, ee, dim = _subset_indices(names)
    a = np.nan_to_num(np.asarray(a, dtype=np.float64).reshape(-1), nan=0.0)
    if a.shape[0] != dim:
        raise ValueError(f"action has {a.shape[0]} dims, subsets {list(names)} need {dim}")
    full = np.zeros(ACTION_DIM, dtype=np.float64)
    if ee is None:
        full[index] = a
    else:
        if sim is None:
            raise ValueError("expanding an arm_ee action needs the simulator (expand_action(..., sim=sim))")
        from rearrange.arm_ik import ee_delta_to_arm_action

        full[index] = np.delete(a, np.arange(ee.start, ee.stop))
        full[ACTION_SLICES["arm"]] = ee_delta_to_arm_action(sim, a[ee])
    return _clip_and_slow_reverse(full, reverse_speed)


def _clip_and_slow_reverse(full: np.ndarray, reverse_speed: float) -> np.ndarray:
    """`full` clipped to [-1, 1] in place, a reverse base command then scaled by `reverse_speed`."""
    np.clip(full, -1.0, 1.0, out=full)
    if full[BASE_LINEAR] < 0.0:
        full[BASE_LINEAR] *= reverse_speed
    return full


def restrict_full(subset_names: Sequence[str], full: np.ndarray, reverse_speed: float = 1.0) -> np.ndarray:
    """A full joint-space action (an oracle's) as a skill with these subsets could send it: entries
    outside the subsets zeroed (`arm_ee` counts as covering the arm), clipped to [-1, 1], a reverse base
    command scaled by `reverse_speed`. For subsets without arm_ee this equals
    `expand_action(subsets, <the subsets' entries of full>, reverse_speed)`."""
    names = check_subsets(subset_names)
    src = np.nan_to_num(np.asarray(full, dtype=np.float64).reshape(ACTION_DIM), nan=0.0)
    out = np.zeros(ACTION_DIM, dtype=np.float64)
    for n in names:
        sl = ACTION_SLICES["arm" if n == "arm_ee" else n]
        out[sl] = src[sl]
    return _clip_and_slow_reverse(out, reverse_speed)


def check_subset_settings(subset_names: Sequence[str], sim_cfg: Any = None) -> None:
    """ValueError (one line) if the sim settings a subset reads are unusable (arm_ee: `arm.ee_control` of
    `sim_cfg` merged over the defaults), so that a bad value fails where an env is built or a run is
    configured, not at the first step inside a worker."""
    if "arm_ee" in subset_names:
        from rearrange.arm_ik import EEControl
        from rearrange.sim import load_sim_config

        EEControl.from_sim_cfg(load_sim_config(sim_cfg))


def subset_entries(subset_names: Sequence[str], full: np.ndarray) -> np.ndarray:
    """The subsets' entries of a full action, concatenated in `SUBSET_ORDER`; an `arm_ee` command cannot
    be read back from joint space, so its entries are 0 (callers read the stop or grip from this)."""
    full = np.asarray(full, dtype=np.float64).reshape(ACTION_DIM)
    return np.concatenate([np.zeros(SUBSET_SIZES[n]) if n == "arm_ee" else full[ACTION_SLICES[n]]
                           for n in check_subsets(subset_names)])


def split_action(full: np.ndarray) -> dict[str, np.ndarray]:
    """The full 11-vector as a dict of its parts."""
    full = np.asarray(full, dtype=np.float64).reshape(ACTION_DIM)
    return {name: full[sl] for name, sl in ACTION_SLICES.items()}
