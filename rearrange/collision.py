"""How RearrangeSim's robot meets the scene: the kinematic base against obstacle boxes, and contact forces.

`BaseMotion` owns the base's planar motion for one policy step: the commanded (lin, ang) scaled to a
displacement, checked against the floor plan's 2-D obstacle boxes (walls, furniture footprints, and the
open doors and drawers where they are now), sliding along one axis when the full move is blocked.
`ContactForces` sums the normal contact forces the robot and its held object exert on the scene in the
current physics step (what tasks penalise and what the base's stall check uses).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mujoco
import numpy as np

from rearrange.apartment import Box

# centres (N, 2), half sizes (N, 2), cos and sin of yaw (N,) of obstacle boxes in the floor plan
ObstacleArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class BaseMotion:
    """The base disc (`radius`) moving among static obstacle boxes plus the box geoms of open parts."""

    def __init__(
        self, model: mujoco.MjModel, data: mujoco.MjData, static: Sequence[Box], radius: float,
        max_lin: float, max_ang: float,
    ) -> None:
        self.model, self.data = model, data
        self._c = np.array([b.center[:2] for b in static], dtype=np.float64).reshape(-1, 2)
        self._h = np.array([b.half_size[:2] for b in static], dtype=np.float64).reshape(-1, 2)
        yaw = np.array([b.yaw for b in static], dtype=np.float64)
        self._cos, self._sin = np.cos(yaw), np.sin(yaw)
        self.radius = float(radius)
        self._max_lin = float(max_lin)
        self._max_ang = float(max_ang)

    def obstacles(self, part_geoms: Sequence[np.ndarray]) -> ObstacleArrays:
        """The static boxes plus the box geoms `part_geoms` (of the open parts) where they are now."""
        if not part_geoms:
            return self._c, self._h, self._cos, self._sin
        g = np.concatenate(part_geoms)
        x = self.data.geom_xmat[g]
        yaw = np.arctan2(x[:, 3], x[:, 0])
        return (np.vstack([self._c, self.data.geom_xpos[g, :2]]),
                np.vstack([self._h, self.model.geom_size[g, :2]]),
                np.concatenate([self._cos, np.cos(yaw)]), np.concatenate([self._sin, np.sin(yaw)]))

    def penetration(self, xy: np.ndarray, obstacles: ObstacleArrays) -> float:
        """How deep the base disc at `xy` reaches into the nearest of `obstacles` (0 = free)."""
        centers, halves, cos, sin = obstacles
        dx, dy = xy[0] - centers[:, 0], xy[1] - centers[:, 1]
        lx = cos * dx + sin * dy
        ly = -sin * dx + cos * dy
        ex = lx - np.clip(lx, -halves[:, 0], halves[:, 0])
        ey = ly - np.clip(ly, -halves[:, 1], halves[:, 1])
        dist = np.sqrt(ex * ex + ey * ey)
        return float(max(0.0, np.max(self.radius - dist))) if len(dist) else 0.0

    def move(
        self, xy: np.ndarray, yaw: float, command: np.ndarray, obstacles: Callable[[], ObstacleArrays]
    ) -> tuple[np.ndarray, float, bool]:
        """The base pose after one policy step of `command` (lin, ang in [-1, 1]) from (`xy`, `yaw`), and
        whether an obstacle blocked it. A move may not reach deeper into an obstacle than the base already
        is; a blocked move slides along its larger axis, then the other. `obstacles` is called only when
        the base translates."""
        lin = min(max(float(command[0]), -1.0), 1.0) * self._max_lin
        ang = min(max(float(command[1]), -1.0), 1.0) * self._max_ang
        new_yaw = yaw + ang
        mid = yaw + ang / 2
        delta = lin * np.array([np.cos(mid), np.sin(mid)])
        if lin == 0.0:
            return xy.copy(), new_yaw, False
        boxes = obstacles()
        allowed = self.penetration(xy, boxes) + 1e-9
        cand = xy + delta
        if self.penetration(cand, boxes) <= allowed:
            return cand, new_yaw, False
        order = (0, 1) if abs(delta[0]) >= abs(delta[1]) else (1, 0)
        for axis in order:
            slide = xy.copy()
            slide[axis] += delta[axis]
            if abs(delta[axis]) > 1e-9 and self.penetration(slide, boxes) <= allowed:
                return slide, new_yaw, True
        return xy.copy(), new_yaw, True


class ContactForces:
    """Summed normal contact force of the robot's geoms and of a held object's geoms against the scene.

    `is_robot_geom`: (ngeom,) bool; `object_geoms[k]`: the geoms of object k (the held object is named
    by that index).
    """

    def __init__(
        self, model: mujoco.MjModel, data: mujoco.MjData, is_robot_geom: np.ndarray,
        object_geoms: Sequence[np.ndarray],
    ) -> None:
        self.model, self.data = model, data
        self._is_robot_geom = is_robot_geom
        self._geom_obj = np.full(model.ngeom, -1, dtype=np.int64)  # geom -> index of its object, -1 none
        for k, geoms in enumerate(object_geoms):
            self._geom_obj[geoms] = k
        self._pyramidal = int(model.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
        self._f6 = np.zeros(6)

    def __call__(self, held: int | None) -> tuple[float, float]:
        """(robot vs scene, held object vs scene) at the current step; `held`: the held object's index.

        The first is the measure tasks penalise (habitat excludes the held object); the base stall
        check uses both. Vectorised: this runs every physics substep, and most substeps have no
        robot contact at all (early exit).
        """
        d = self.data
        n = d.ncon
        if n == 0:
            return 0.0, 0.0
        geoms = d.contact.geom[:n]
        is_r = self._is_robot_geom[geoms]
        robot = is_r[:, 0] ^ is_r[:, 1]
        on_held = None
        if held is not None:
            is_h = self._geom_obj[geoms] == held
            on_held = (is_h[:, 0] ^ is_h[:, 1]) & ~(is_r[:, 0] | is_r[:, 1])
            robot &= ~is_h.any(axis=1)
        wanted = robot if on_held is None else robot | on_held
        if not wanted.any():
            return 0.0, 0.0
        normal = np.zeros(n)
        for i in np.flatnonzero(wanted):
            normal[i] = self._normal_force(int(i))
        return float(normal[robot].sum()), (float(normal[on_held].sum()) if on_held is not None else 0.0)

    def robot_penetration(self) -> float:
        """The deepest overlap (m, >= 0) of a robot geom with the scene in the current state (after
        mj_forward); 0 when the robot touches nothing."""
        d = self.data
        n = d.ncon
        if n == 0:
            return 0.0
        is_r = self._is_robot_geom[d.contact.geom[:n]]
        robot = is_r[:, 0] ^ is_r[:, 1]
        return float(max(0.0, -float(d.contact.dist[:n][robot].min()))) if robot.any() else 0.0

    def _normal_force(self, i: int) -> float:
        """Normal force of contact `i` (N), as `mj_contactForce` reports it. Only the contacts a caller
        needs are computed: a HAB scene holds dozens of resting contacts the robot never touches."""
        d = self.data
        if self._pyramidal:
            # a pyramidal contact's normal force is the sum of its pyramid edge forces (its efc rows)
            adr, dim = int(d.contact.efc_address[i]), int(d.contact.dim[i])
            if adr < 0:
                return 0.0
            total = 0.0
            for r in range(adr, adr + (1 if dim == 1 else 2 * (dim - 1))):
                total += float(d.efc_force[r])
            return abs(total)
        mujoco.mj_contactForce(self.model, d, i, self._f6)
        return abs(float(self._f6[0]))
