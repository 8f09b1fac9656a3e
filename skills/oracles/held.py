"""Keeping objects clear of the scene while the arm is at (or returns to) its rest pose.

The rest pose (ee 1.0 m up, 0.5 m ahead of the base centre) is fixed by the tasks. An object held
there hangs under the suction cup, its bottom lower than tall furniture (counters, shelves), and an
object standing high on a receptacle reaches up to the resting gripper. These helpers say where the
base may stand (standing-point filters for `Oracle.approach`) and when the base must back off before
the arm comes back to rest.
"""

from __future__ import annotations

import numpy as np

from rearrange.objects import OBJECT_KINDS
from skills.oracles.base_follow import furniture_clearance
from skills.oracles.container import rest_world


def _kind(sim, name: str):
    return OBJECT_KINDS[sim.object_kind(name)]


def held_extent(sim, name: str, lift: float = 0.0) -> tuple[float, float]:
    """(height of the held object's bottom with the arm at rest, or `lift` above it, and the horizontal
    radius around the ee xy that it occupies). The object need not hang straight under the cup: its
    offset counts."""
    kind = _kind(sim, name)
    obj = np.asarray(sim.object_pos(name), dtype=np.float64)
    ee = np.asarray(sim.ee_pos, dtype=np.float64)
    bottom = float(sim.resting_pos_base[2]) + lift - (ee[2] - obj[2]) - max(kind.rest_height, kind.radius)
    return bottom, kind.radius + float(np.linalg.norm(obj[:2] - ee[:2]))


def held_bottom(sim, name: str) -> float:
    """Height (m) of the held object's bottom where it is now (its radius if it lies on its side)."""
    kind = _kind(sim, name)
    return float(sim.object_pos(name)[2]) - max(kind.rest_height, kind.radius)


def hang_depth(sim, name: str) -> float:
    """How far (m) the held object's bottom hangs below the ee (its offset from the cup counts)."""
    return float(sim.ee_pos[2]) - held_bottom(sim, name)


def carry_point(sim, lift: float) -> np.ndarray:
    """World position `lift` straight above the resting ee (where an object is carried while driving)."""
    return rest_world(sim) + np.array([0.0, 0.0, lift])


def held_object_blocked(sim, name: str, margin: float) -> bool:
    """Would the held object hit furniture on its way to the arm's rest pose? True when its current xy,
    or its xy with the arm at rest, lies within `margin` (plus its radius) of a wall or of furniture
    whose top is above the object's bottom at rest."""
    bottom, radius = held_extent(sim, name)
    obj = np.asarray(sim.object_pos(name), dtype=np.float64)[:2]
    pts = np.stack([obj, rest_world(sim)[:2]])
    return bool(np.any(furniture_clearance(sim, pts, bottom) < margin + radius))


def held_rest_clear(sim, name: str, target: np.ndarray, margin: float, valid, lift: float = 0.0):
    """Standing-point filter: `valid`, and with the base facing `target` the held object, the arm at
    rest or `lift` above it, stays `margin` clear of furniture taller than its bottom (else driving in
    rams it into the furniture)."""
    bottom, radius = held_extent(sim, name, lift)
    reach = float(np.asarray(sim.resting_pos_base)[0])
    tgt = np.asarray(target, dtype=np.float64)[:2]

    def ok(cands: np.ndarray) -> np.ndarray:
        keep = np.asarray(valid(cands), dtype=bool)
        d = tgt - cands
        fwd = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-9)
        return keep & (furniture_clearance(sim, cands + reach * fwd, bottom) > radius + margin)

    return ok


def clear_of_tall_object(sim, name: str, arm_points: np.ndarray, margin: float, valid):
    """Standing-point filter: `valid`, and if the object reaches up to the resting suction cup, the arm
    at rest (base-frame xy `arm_points`, facing the object) stays `margin` plus the object's radius away
    from it (driving in, the resting gripper would otherwise knock it over)."""
    kind = _kind(sim, name)
    obj = np.asarray(sim.object_pos(name), dtype=np.float64)
    if obj[2] + max(kind.rest_height, kind.radius) < float(sim.resting_pos_base[2]) - margin:
        return valid
    arm = np.asarray(arm_points, dtype=np.float64).reshape(-1, 2)

    def ok(cands: np.ndarray) -> np.ndarray:
        keep = np.asarray(valid(cands), dtype=bool)
        d = obj[:2] - cands
        fwd = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-9)
        left = np.stack([-fwd[:, 1], fwd[:, 0]], axis=1)
        for px, py in arm:
            keep &= np.linalg.norm(cands + px * fwd + py * left - obj[:2], axis=1) > kind.radius + margin
        return keep

    return ok
