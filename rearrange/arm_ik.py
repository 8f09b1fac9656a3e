"""Arm inverse kinematics on the simulator: damped least squares on the ee position Jacobian.

Two users: the oracles' closed-loop ee controller (`skills/oracles/ik.py`) and the `arm_ee` action
subset (`rearrange/actions.py`), habitat-lab's ArmEEAction: a policy commands an end-effector
displacement in the robot's base frame and `ee_delta_to_arm_action` turns it, at the current arm
state, into the 7 joint-delta entries the simulator's arm takes. Both go through the same joint-delta
actions (`[-1, 1]` times `arm.delta_per_step` per step), so the arm's speed limit holds either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


def delta_per_step(sim: RearrangeSim) -> float:
    """Radians one full arm action entry adds to a joint target (the simulator owns the number)."""
    return float(sim.cfg["arm"]["delta_per_step"])


def dls_solve(jacobian: np.ndarray, error: np.ndarray, damping: float) -> np.ndarray:
    """Damped least squares joint step `J^T (J J^T + lambda^2 I)^-1 e` for a (k, n) Jacobian."""
    jj = jacobian @ jacobian.T + (damping**2) * np.eye(jacobian.shape[0])
    return jacobian.T @ np.linalg.solve(jj, error)


def nullspace_projector(jacobian: np.ndarray, damping: float) -> np.ndarray:
    """(n, n) projector onto (approximately) the null space of the damped Jacobian."""
    n = jacobian.shape[1]
    jj = jacobian @ jacobian.T + (damping**2) * np.eye(jacobian.shape[0])
    j_pinv = jacobian.T @ np.linalg.inv(jj)
    return np.eye(n) - j_pinv @ jacobian


def joint_delta_to_action(sim: RearrangeSim, q: np.ndarray, dq: np.ndarray, margin: float) -> np.ndarray:
    """Clip `q + dq` into the joint limits (less `margin`) and scale the step into the [-1, 1] action box.

    The whole vector is scaled uniformly (not clipped per joint) so the ee keeps its direction.
    """
    limits = np.asarray(sim.arm_limits, dtype=np.float64)
    lo, hi = limits[:, 0] + margin, limits[:, 1] - margin
    dq = np.clip(q + dq, np.minimum(lo, q), np.maximum(hi, q)) - q
    action = dq / delta_per_step(sim)
    peak = float(np.max(np.abs(action))) if action.size else 0.0
    if peak > 1.0:
        action = action / peak
    return action


@dataclass(frozen=True)
class EEControl:
    """The `arm_ee` action's settings (`arm.ee_control` in the sim config)."""

    ctrl_lim: float  # metres of ee displacement per step at action 1 (habitat ArmEEAction ee_ctrl_lim)
    damping: float  # DLS damping lambda (metres)
    nullspace_gain: float  # fraction of the joint error to the rest pose removed in the null space per step
    limit_margin: float  # radians kept away from the joint limits

    @staticmethod
    def from_sim_cfg(cfg: Mapping[str, Any]) -> EEControl:
        node = cfg["arm"].get("ee_control")
        if node is None:
            raise ValueError("the arm_ee action needs arm.ee_control in the sim config (configs/sim/default.yaml)")
        out = EEControl(ctrl_lim=float(node["ctrl_lim"]), damping=float(node["damping"]),
                        nullspace_gain=float(node["nullspace_gain"]), limit_margin=float(node["limit_margin"]))
        if out.ctrl_lim <= 0 or out.damping <= 0 or not 0 <= out.nullspace_gain <= 1 or out.limit_margin < 0:
            raise ValueError(f"arm.ee_control: need ctrl_lim > 0, damping > 0, nullspace_gain in [0, 1], "
                             f"limit_margin >= 0; got {node}")
        return out


def ee_delta_to_arm_action(sim: RearrangeSim, command: np.ndarray) -> np.ndarray:
    """(7,) arm joint-delta action that moves the ee by `command` (3,) in [-1, 1] times `ctrl_lim`
    metres along the base frame's axes (x forward, y left, z up) this step.

    Position-only damped least squares at the current joints, as habitat's ArmEEAction solves position
    only; the cup's orientation follows from a null-space pull toward the rest pose. A displacement the
    joints cannot make within `delta_per_step` is shortened along its direction, not bent.
    """
    ctrl = EEControl.from_sim_cfg(sim.cfg)
    command = np.clip(np.asarray(command, dtype=np.float64).reshape(3), -1.0, 1.0) * ctrl.ctrl_lim
    c, s = np.cos(sim.base_yaw), np.sin(sim.base_yaw)
    step_world = np.array([c * command[0] - s * command[1], s * command[0] + c * command[1], command[2]])
    q = np.asarray(sim.arm_qpos, dtype=np.float64)
    jac = np.asarray(sim.ee_jacobian(), dtype=np.float64)
    pull = ctrl.nullspace_gain * (np.asarray(sim.REST_ARM_QPOS, dtype=np.float64) - q)
    # dls_solve(jac, step) + nullspace_projector(jac) @ pull, with one 3x3 solve (this runs every env step)
    j_pinv_t = np.linalg.solve(jac @ jac.T + (ctrl.damping**2) * np.eye(3), jac)
    dq = j_pinv_t.T @ (step_world - jac @ pull) + pull
    return joint_delta_to_action(sim, q, dq, ctrl.limit_margin)
