"""Putting the simulator into a state for a test: an object at the suction cup, the robot facing a wall."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

REST_OUT_OF_VIEW = [1.5, 1.4, 0.0, 1.6, 0.0, 1.5, 0.0]  # arm folded away from the head camera's view


def put_at_suction_cup(sim: RearrangeSim, name: str) -> None:
    """Teleport object `name` so that it touches the suction cup (not grasped yet)."""
    art = {n: sim.art_q(n) for n in sim.art_names}
    poses = {n: (sim.object_pos(n), sim.object_quat(n)) for n in sim.object_names}
    sim.reset_state(poses, art, sim.base_xy, sim.base_yaw, arm_qpos=sim.arm_qpos, grasped=name)
    poses = {n: (sim.object_pos(n), sim.object_quat(n)) for n in sim.object_names}
    sim.reset_state(poses, art, sim.base_xy, sim.base_yaw, arm_qpos=sim.arm_qpos, grasped=None)


def face_south_wall(sim: RearrangeSim, dist: float, yaw_offset: float = 0.0) -> float:
    """Put the base centre `dist` metres from the inner face of the dining room's south wall, facing it
    (turned by `yaw_offset`), with free floor for 1 m behind it and the arm folded out of view; returns the
    wall face's y."""
    (x0, y0), (x1, _) = sim.layout.rooms[1].bounds
    xs = [
        x
        for x in np.arange(x0 + 0.5, x1 - 0.5, 0.05)
        if all(sim.base_is_free((x, y)) for y in np.arange(y0 + dist, y0 + dist + 1.0, 0.1))
    ]
    sim.reset_state({}, {}, (xs[len(xs) // 2], y0 + dist), -np.pi / 2 + yaw_offset, arm_qpos=REST_OUT_OF_VIEW)
    return y0
