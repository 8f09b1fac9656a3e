"""Varied in-hand poses for skill episodes that start with the object already grasped (place).

A place episode puts its object in the gripper in one pose: upright under the cup, its top centre on
the cup's axis. A real pick leaves it otherwise: the suction cup meets the object at an angle and off
centre (measured 2026-11-24, oracle picks on 9 val episodes: the object's axis 3-35 degrees off the
cup's, median 18; fridge-shelf picks with the cup tilted for the shelf among them). `perturb_grasp`
re-poses the held object at the start of an episode: tilted about the cup's contact point by up to
`max_tilt` (uniform angle, uniform direction) and slid across the cup by up to `max_lateral`
(uniform over the disc), then grasped there.

The arm is not where a pick leaves it either: place starts with every joint at its resting angle, while
the shipped learned pick ends its successes (ee within 0.15 m of rest) 0.18-1.0 rad off rest in its
largest joint (median 0.36; 18 val successes, 2026-11-24), and place reads `joint`. `perturb_arm` turns
each joint by U(-max_arm_offset, max_arm_offset), scaled down (x0.7 at a time) until the ee is within
`max_ee_shift` of where it was (and, if asked, the arm overlaps nothing). Both are drawn from the env's RNG,
so seeded episodes repeat.

Pick meets an arm off rest as well (`start_arm`, training only, `ArmStartNoise`): inside the HAB tasks its
first call on the second object starts where a place left the arm (0.3-1.0 rad off rest, Prepare Groceries,
2026-11-27), and a retry where an arm reset the furniture blocked left it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

MAX_TILT = 1.0  # rad: beyond this the object would hang beside the cup rather than under it
MAX_LATERAL = 0.05  # m: the cup's radius is about 0.03
MAX_ARM_OFFSET = 1.0  # rad per joint
MAX_EE_SHIFT = 1.0  # m: the Fetch arm's reach
ARM_START_MAX_PENETRATION = 0.002  # m: a varied start arm (`start_arm`) may touch the scene, not sink into it


def _bounded(node: Mapping[str, Any], name: str, key: str, default: float, hi: float, unit: str,
             open_low: bool = False) -> float:
    """`node[key]` (default `default`) as a float in [0, hi] ((0, hi] with `open_low`); ValueError naming
    `skill.<name>.<key>` and the range otherwise."""
    value = float(node.get(key, default))
    if not (math.isfinite(value) and (value > 0.0 if open_low else value >= 0.0) and value <= hi):
        bounds = f"(0, {hi}]" if open_low else f"[0, {hi}]"
        raise ValueError(f"skill.{name}.{key} must be in {bounds}{unit} (got {value})")
    return value


@dataclass(frozen=True)
class GraspNoise:
    """The `start_grasp` node of a skill config (absent or zeros: the canonical grasp, as habitat)."""

    max_tilt: float = 0.0
    max_lateral: float = 0.0
    max_arm_offset: float = 0.0

    @property
    def active(self) -> bool:
        return self.max_tilt > 0.0 or self.max_lateral > 0.0 or self.max_arm_offset > 0.0

    @classmethod
    def from_node(cls, node: Mapping[str, Any] | None) -> GraspNoise:
        """Validated; ValueError naming the key and its valid range."""
        node = dict(node or {})
        tilt = _bounded(node, "start_grasp", "max_tilt", cls.max_tilt, MAX_TILT, " rad")
        lateral = _bounded(node, "start_grasp", "max_lateral", cls.max_lateral, MAX_LATERAL, " m")
        arm = _bounded(node, "start_grasp", "max_arm_offset", cls.max_arm_offset, MAX_ARM_OFFSET, " rad")
        return cls(max_tilt=tilt, max_lateral=lateral, max_arm_offset=arm)


def _perpendicular_basis(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors that make an orthonormal frame with the unit vector `axis`."""
    helper = np.array([0.0, 0.0, 1.0]) if abs(axis[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(axis, e1)


def _turned(turn_axis: np.ndarray, angle: float, quat: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the quaternion `quat` and the vector `v`, both turned by `angle` about the unit `turn_axis`)."""
    turn, q, out = np.zeros(4), np.zeros(4), np.zeros(3)
    mujoco.mju_axisAngle2Quat(turn, turn_axis, angle)
    mujoco.mju_mulQuat(q, turn, quat)
    mujoco.mju_rotVecQuat(out, v, turn)
    return q, out


@dataclass(frozen=True)
class ArmStartNoise:
    """The `start_arm` node of a skill config (pick, nav; absent or prob 0: the arm starts at rest, as habitat)."""

    prob: float = 0.0
    max_offset: float = 0.0
    max_ee_shift: float = 0.3

    @classmethod
    def from_node(cls, node: Mapping[str, Any] | None) -> ArmStartNoise:
        """Validated; ValueError naming the key and its valid range."""
        node = dict(node or {})
        prob = _bounded(node, "start_arm", "prob", cls.prob, 1.0, "")
        offset = _bounded(node, "start_arm", "max_offset", cls.max_offset, MAX_ARM_OFFSET, " rad")
        shift = _bounded(node, "start_arm", "max_ee_shift", cls.max_ee_shift, MAX_EE_SHIFT, " m", open_low=True)
        return cls(prob=prob, max_offset=offset, max_ee_shift=shift)

    def apply(self, sim: RearrangeSim, rng: np.random.Generator) -> None:
        """With probability `prob`, turn the arm off rest (`perturb_arm`, clear of the scene); with prob 0 nothing
        is drawn from `rng`, so episodes repeat as without the node."""
        if self.prob > 0.0 and rng.random() < self.prob:
            perturb_arm(sim, rng, self.max_offset, self.max_ee_shift, max_penetration=ARM_START_MAX_PENETRATION)


def perturb_arm(sim: RearrangeSim, rng: np.random.Generator, max_offset: float, max_ee_shift: float,
                max_penetration: float | None = None) -> np.ndarray:
    """Turn the arm's joints as described above (a held object moves with the gripper); the offsets applied.
    With `max_penetration` (m) a pose whose robot overlaps the scene deeper than that is scaled down too."""
    rest, ee = sim.arm_qpos, sim.ee_pos
    offset = rng.uniform(-max_offset, max_offset, size=rest.shape)
    for _ in range(12):
        sim.set_arm_qpos(rest + offset)
        clear = max_penetration is None or sim.robot_penetration() <= max_penetration
        if clear and np.linalg.norm(sim.ee_pos - ee) <= max_ee_shift:
            return sim.arm_qpos - rest
        offset = 0.7 * offset
    sim.set_arm_qpos(rest)
    return np.zeros_like(rest)


def perturb_grasp(sim: RearrangeSim, rng: np.random.Generator, noise: GraspNoise) -> tuple[float, float]:
    """Re-pose the held object as described above; (tilt in rad, lateral shift in m) applied."""
    name = sim.grasped
    if name is None or name not in sim.object_names:
        raise ValueError("perturb_grasp needs a held object")
    ee, pos, quat = sim.ee_pos, sim.object_pos(name), sim.object_quat(name)
    cup_axis = (pos - ee) / np.linalg.norm(pos - ee)  # the canonical grasp hangs the object along it
    e1, e2 = _perpendicular_basis(cup_axis)
    tilt = float(rng.uniform(0.0, noise.max_tilt))
    phi = float(rng.uniform(-math.pi, math.pi))
    lateral = noise.max_lateral * math.sqrt(float(rng.uniform()))
    psi = float(rng.uniform(-math.pi, math.pi))
    new_quat, hang = _turned(math.cos(phi) * e1 + math.sin(phi) * e2, tilt, quat, pos - ee)
    shift = lateral * (math.cos(psi) * e1 + math.sin(psi) * e2)
    sim.regrasp_held(ee + hang + shift, new_quat)
    return tilt, lateral
