"""Putting the simulator into a state for a reward test, shared by the skill reward tests."""

from __future__ import annotations

from typing import Any


def put_at_suction_cup(sim: Any, name: str) -> None:
    """Teleport object `name` so that it touches the suction cup (not grasped yet)."""
    art = {n: sim.art_q(n) for n in sim.art_names}
    poses = {n: (sim.object_pos(n), sim.object_quat(n)) for n in sim.object_names}
    sim.reset_state(poses, art, sim.base_xy, sim.base_yaw, arm_qpos=sim.arm_qpos, grasped=name)
    poses = {n: (sim.object_pos(n), sim.object_quat(n)) for n in sim.object_names}
    sim.reset_state(poses, art, sim.base_xy, sim.base_yaw, arm_qpos=sim.arm_qpos, grasped=None)
