"""The arm's resting joints as a target: how far the arm is from them, and the joint command that drives
it there in a straight line at the arm's full speed (habitat-lab's reset_arm P control).

The HAB agent's reset_arm (eval/agent_motions.py) and its `agent.rest_arm_during_nav` use the command, and
so does the nav skill task when it trains for the latter (`arm_to_rest` in configs/skill/nav.yaml): a nav
that drives while the arm swings back to rest across its camera's view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

RESET_ARM_TOLERANCE = 0.05  # rad: habitat's ResetArmSkill ends when every joint is this close to rest


def arm_rest_error(sim: RearrangeSim) -> float:
    """The largest joint distance (rad) of the arm from its resting joints."""
    return float(np.max(np.abs(np.asarray(sim.REST_ARM_QPOS, dtype=np.float64) - sim.arm_qpos)))


def arm_rest_command(sim: RearrangeSim, joints: np.ndarray | None = None) -> np.ndarray:
    """The arm action (7 joint commands in [-1, 1]) that moves the `joints` (mask; all by default) straight
    toward rest in joint space at the arm's full speed, the others still; zeros once within RESET_ARM_TOLERANCE."""
    rest = np.asarray(sim.REST_ARM_QPOS, dtype=np.float64)
    offset = rest - sim.arm_qpos if joints is None else np.where(joints, rest - sim.arm_qpos, 0.0)
    if float(np.max(np.abs(offset))) < RESET_ARM_TOLERANCE:
        return np.zeros_like(offset)
    arm = offset / float(sim.cfg["arm"]["delta_per_step"])
    return arm / max(1.0, float(np.max(np.abs(arm))))
