"""RearrangeSim's suction gripper: what the cup touches, and switching a grasp on and off.

A grasp is a weld (objects) or a ball connection (handles) between the gripper body and what it holds,
declared inactive in the scene model and switched on at grasp time with the current relative pose; a
held object's geoms move to the held-object collision class meanwhile, a held handle stops colliding.
`Suction` owns that switching and which target is held; where objects are written is the sim's job, so
the poses it wants an object at (`snap_pose`, `held_pose`) are returned, not written.
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from rearrange import robot as robot_mjcf
from rearrange.scene import HELD_OBJECT_COL, OBJECT_COL, SceneNames

_CANDIDATE_DIST = 0.4  # m: objects and handles farther than this from the end effector are not checked


class Suction:
    """The suction cup of the robot in `model`: grasp state and the grasp constraints of `names`' targets.

    `obj_geoms`: the geoms of each object; `max_dist`: a cup surface within this distance grasps.
    """

    def __init__(
        self, model: mujoco.MjModel, data: mujoco.MjData, names: SceneNames,
        obj_geoms: Mapping[str, np.ndarray], max_dist: float,
    ) -> None:
        m = self.model = model
        self.data = data

        def oid(kind: mujoco.mjtObj, name: str) -> int:
            return mujoco.mj_name2id(m, kind, name)

        self._ee_site = oid(mujoco.mjtObj.mjOBJ_SITE, robot_mjcf.EE_SITE)
        self._gripper = oid(mujoco.mjtObj.mjOBJ_BODY, robot_mjcf.GRIPPER_BODY)
        self._cup = oid(mujoco.mjtObj.mjOBJ_GEOM, robot_mjcf.SUCTION_GEOM)
        self._obj_kind = dict(zip(names.objects, names.kinds, strict=True))
        self._obj_body = {n: oid(mujoco.mjtObj.mjOBJ_BODY, n) for n in names.objects}
        self._obj_geoms = obj_geoms
        self.handle_body = {h: oid(mujoco.mjtObj.mjOBJ_BODY, h) for h in names.handles}
        self._handle_geom = {h: oid(mujoco.mjtObj.mjOBJ_GEOM, f"{h}_geom") for h in names.handles}
        self._handle_contype = {h: int(m.geom_contype[g]) for h, g in self._handle_geom.items()}
        self._eq = {n: oid(mujoco.mjtObj.mjOBJ_EQUALITY, f"grasp_{n}") for n in names.objects + names.handles}
        self._max_dist = float(max_dist)
        self.grasped: str | None = None

    def _ee_pos(self) -> np.ndarray:
        return self.data.site_xpos[self._ee_site].copy()

    def _body_pose(self, body: int) -> tuple[np.ndarray, np.ndarray]:
        return self.data.xpos[body].copy(), self.data.xquat[body].copy()

    def _candidates(self, only: str | None = None) -> list[tuple[str, int]]:
        ee = self._ee_pos()
        out = []
        for name, geoms in self._obj_geoms.items():
            if (only is None or only == name) and np.linalg.norm(
                self.data.xpos[self._obj_body[name]] - ee
            ) < _CANDIDATE_DIST:
                out += [(name, int(g)) for g in geoms]
        for h, g in self._handle_geom.items():
            if (only is None or only == h) and np.linalg.norm(self.data.geom_xpos[g] - ee) < _CANDIDATE_DIST:
                out.append((h, g))
        return out

    def touching(self, only: str | None = None) -> str | None:
        """The object or handle the suction cup touches (within `max_dist`), nearest first."""
        best, best_d = None, self._max_dist
        fromto = np.zeros(6)
        for name, g in self._candidates(only):
            dist = mujoco.mj_geomDistance(self.model, self.data, self._cup, g, self._max_dist + 0.01, fromto)
            if dist <= best_d:
                best, best_d = name, dist
        return best

    def attach_if_touching(self, only: str | None = None) -> bool:
        """Grasp what the cup touches (only `only`, if given); False if it touches nothing."""
        target = self.touching(only)
        if target is None:
            return False
        self.attach(target)
        return True

    def attach(self, target: str) -> None:
        """Switch on the grasp constraint of `target` with the current relative pose."""
        m, d = self.model, self.data
        eq = self._eq[target]
        gp, gq = self._body_pose(self._gripper)
        if target in self._obj_body:
            op, oq = self._body_pose(self._obj_body[target])
            # relative pose of the object (body2) in the gripper frame (body1)
            rel_p = np.zeros(3)
            gq_inv = np.zeros(4)
            mujoco.mju_negQuat(gq_inv, gq)
            mujoco.mju_rotVecQuat(rel_p, op - gp, gq_inv)
            rel_q = np.zeros(4)
            mujoco.mju_mulQuat(rel_q, gq_inv, oq)
            m.eq_data[eq, 0:3] = 0.0
            m.eq_data[eq, 3:6] = rel_p
            m.eq_data[eq, 6:10] = rel_q
            m.eq_data[eq, 10] = 1.0
            for g in self._obj_geoms[target]:
                m.geom_contype[g], m.geom_conaffinity[g] = HELD_OBJECT_COL
        else:
            # ball connection at the end-effector point: anchor in gripper and in handle frames
            ee = self._ee_pos()
            hb = self.handle_body[target]
            hp, hq = self._body_pose(hb)
            a1, a2, inv = np.zeros(3), np.zeros(3), np.zeros(4)
            mujoco.mju_negQuat(inv, gq)
            mujoco.mju_rotVecQuat(a1, ee - gp, inv)
            mujoco.mju_negQuat(inv, hq)
            mujoco.mju_rotVecQuat(a2, ee - hp, inv)
            m.eq_data[eq, 0:3] = a1
            m.eq_data[eq, 3:6] = a2
            m.geom_contype[self._handle_geom[target]] = 0
        d.eq_active[eq] = 1
        self.grasped = target

    def release(self) -> None:
        """Switch off the current grasp (if any) and restore its target's collisions."""
        if self.grasped is None:
            return
        m = self.model
        self.data.eq_active[self._eq[self.grasped]] = 0
        if self.grasped in self._obj_geoms:
            for g in self._obj_geoms[self.grasped]:
                m.geom_contype[g], m.geom_conaffinity[g] = OBJECT_COL
        else:
            m.geom_contype[self._handle_geom[self.grasped]] = self._handle_contype[self.grasped]
        self.grasped = None

    def snap_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A pose of object `name` touching the cup, along the gripper's pointing direction (its
        orientation kept)."""
        from rearrange.objects import object_kind

        k = object_kind(self._obj_kind[name])
        xaxis = self.data.site_xmat[self._ee_site].reshape(3, 3)[:, 0]
        offset = k.rest_height if abs(xaxis[2]) > 0.7 else k.radius
        return self._ee_pos() + xaxis * (offset + 0.002), self.data.xquat[self._obj_body[name]]

    def held_pose(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Where the held object belongs relative to the gripper now (None when no object is held)."""
        if self.grasped is None or self.grasped not in self._obj_body:
            return None
        eq = self._eq[self.grasped]
        gp, gq = self._body_pose(self._gripper)
        p, q = np.zeros(3), np.zeros(4)
        mujoco.mju_rotVecQuat(p, self.model.eq_data[eq, 3:6], gq)
        mujoco.mju_mulQuat(q, gq, self.model.eq_data[eq, 6:10])
        return gp + p, q

