"""Arm inverse kinematics for the oracles: damped least squares on the ee position Jacobian.

The oracles move the arm only through joint-delta actions (`[-1, 1]` times the simulator's
`delta_per_step` per step), so IK here is a closed-loop velocity controller: every policy step it
reads the current ee position and the MuJoCo position Jacobian (`sim.ee_jacobian()`) and returns the
7 arm action entries that move the ee toward a world-frame target, with a null-space pull toward the
rest pose and the joint limits respected. The damped-least-squares pieces live in `rearrange.arm_ik`,
shared with the `arm_ee` action subset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from rearrange.arm_ik import dls_solve, joint_delta_to_action, nullspace_projector


def ee_pointing(sim) -> tuple[np.ndarray, np.ndarray]:
    """The direction the suction cup points (world unit vector, the gripper's x axis) and the (3, 7)
    rotational Jacobian of the end effector w.r.t. the arm joints.

    Workaround: `RearrangeSim` exposes only the position Jacobian (docs/CONTRACTS.md), so this reads
    the ee site frame from the sim's MuJoCo model and data (names from `rearrange.robot`).
    """
    import mujoco

    from rearrange import robot

    model, data = sim.model, sim.data
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, robot.EE_SITE)
    dofs = [model.jnt_dofadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)] for j in robot.ARM_JOINTS]
    jacr = np.zeros((3, model.nv))
    mujoco.mj_jacSite(model, data, None, jacr, site)
    pointing = data.site_xmat[site].reshape(3, 3)[:, 0].copy()
    return pointing, jacr[:, dofs]


@dataclass(frozen=True)
class IKGains:
    damping: float  # DLS damping lambda (metres)
    axis_weight: float  # weight of the cup-pointing task against the position task (m per rad)
    axis_gain: float  # fraction of the pointing error corrected per step
    gain: float  # fraction of the ee position error corrected per step
    nullspace_gain: float  # fraction of the joint error to the rest pose corrected in the null space
    limit_margin: float  # radians kept away from the joint limits
    max_step: float  # largest ee displacement asked for in one step (metres)
    rest_gain: float  # fraction of the joint error corrected per step when returning to rest

    @staticmethod
    def from_cfg(cfg: Mapping) -> IKGains:
        return IKGains(
            damping=float(cfg["damping"]),
            axis_weight=float(cfg["axis_weight"]),
            axis_gain=float(cfg["axis_gain"]),
            gain=float(cfg["gain"]),
            nullspace_gain=float(cfg["nullspace_gain"]),
            limit_margin=float(cfg["limit_margin"]),
            max_step=float(cfg["max_step"]),
            rest_gain=float(cfg["rest_gain"]),
        )


class ArmIK:
    """Closed-loop ee position controller producing arm joint-delta actions."""

    def __init__(self, gains: IKGains):
        self.gains = gains

    def action_towards(self, sim, target_world: np.ndarray, max_step: float | None = None,
                       axis: np.ndarray | None = None) -> np.ndarray:
        """(7,) arm action in [-1, 1] that moves the ee toward `target_world` this step.

        `max_step` (metres) caps the ee displacement asked for (default: the configured one). `axis`
        (world unit vector), if given, also turns the suction cup to point along it (down for picking,
        toward a handle for pulling), so the wrist stays out of the way.
        """
        g = self.gains
        cap = g.max_step if max_step is None else float(max_step)
        q = np.asarray(sim.arm_qpos, dtype=np.float64)
        error = np.asarray(target_world, dtype=np.float64) - np.asarray(sim.ee_pos, dtype=np.float64)
        norm = float(np.linalg.norm(error))
        step = g.gain * error
        if norm * g.gain > cap:
            step = error * (cap / norm)
        jac = np.asarray(sim.ee_jacobian(), dtype=np.float64)
        if axis is not None:
            pointing, jac_rot = ee_pointing(sim)
            want = np.asarray(axis, dtype=np.float64) / max(float(np.linalg.norm(axis)), 1e-9)
            turn = np.cross(pointing, want)  # rotation (axis * angle, small) that aligns the cup
            jac = np.vstack([jac, g.axis_weight * jac_rot])
            step = np.concatenate([step, g.axis_weight * g.axis_gain * turn])
        dq = dls_solve(jac, step, g.damping)
        rest = np.asarray(sim.REST_ARM_QPOS, dtype=np.float64)
        dq = dq + nullspace_projector(jac, g.damping) @ (g.nullspace_gain * (rest - q))
        return joint_delta_to_action(sim, q, dq, g.limit_margin)

    def action_to_joints(self, sim, q_target: np.ndarray) -> np.ndarray:
        """(7,) arm action in [-1, 1] moving the joints toward `q_target` (joint-space P control)."""
        q = np.asarray(sim.arm_qpos, dtype=np.float64)
        dq = self.gains.rest_gain * (np.asarray(q_target, dtype=np.float64) - q)
        return joint_delta_to_action(sim, q, dq, 0.0)

    def action_to_rest(self, sim) -> np.ndarray:
        """(7,) arm action returning the arm to `sim.REST_ARM_QPOS`."""
        return self.action_to_joints(sim, sim.REST_ARM_QPOS)

    @staticmethod
    def ee_error(sim, target_world: np.ndarray) -> float:
        """Distance (m) from the ee to a world-frame target."""
        return float(np.linalg.norm(np.asarray(target_world) - np.asarray(sim.ee_pos)))

    @staticmethod
    def rest_error(sim) -> float:
        """Distance (m) from the ee to the resting position, in the base frame."""
        return float(np.linalg.norm(np.asarray(sim.ee_pos_base) - np.asarray(sim.resting_pos_base)))
