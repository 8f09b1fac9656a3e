"""RearrangeSim: the one object that touches MuJoCo (apartment + Fetch-like robot + objects).

One `step` is one policy step (30 Hz): arm joint-delta targets for position servos, suction grasp or
release, and a kinematic base motion checked against the layout's 2-D obstacles, followed by
`physics.substeps` physics steps. Suction is a weld (objects) or a ball connection (handles) between the
gripper and what it touches, declared inactive in the model and switched on at grasp time with the
current relative pose (`rearrange.suction`). The base's motion against obstacles and the contact-force
measures live in `rearrange.collision`, the cameras and range finder in `rearrange.sim_views`. Interfaces
are fixed in docs/CONTRACTS.md (section rearrange.sim).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np
from omegaconf import DictConfig, OmegaConf

from configs.compose import load_config_file
from rearrange import robot as robot_mjcf
from rearrange.apartment import ApartmentLayout, Box
from rearrange.collision import BaseMotion, ContactForces, ObstacleArrays
from rearrange.scene import build_scene_xml, park_position
from rearrange.sim_views import SimViews
from rearrange.suction import Suction

if TYPE_CHECKING:
    from rearrange.navmap import NavMap

# what a base stall rewinds: the full integration state (bit-exact determinism)
_STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


def _in_subtree(m: mujoco.MjModel, body: int, root: int) -> bool:
    while body != 0 and body != root:
        body = int(m.body_parentid[body])
    return body == root


# merged configs by their overrides' JSON: an env builds a sim at every reset into another layout, and
# parsing and merging the yaml took 40-120 ms of a 45-150 ms reset (cProfile of 20 pick resets); at most
# _MERGED_CONFIGS_MAX entries, the oldest dropped first (a process uses a handful: eval-hab's mixed cameras)
_merged_configs: dict[str, dict[str, Any]] = {}
_MERGED_CONFIGS_MAX = 32


def _json_default(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)


def load_sim_config(cfg: Mapping | DictConfig | None = None) -> dict[str, Any]:
    """configs/sim/default.yaml with `cfg` merged over it, as a plain dict (a fresh copy each call)."""
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    key = json.dumps(cfg, sort_keys=True, default=_json_default)
    if key not in _merged_configs:
        if len(_merged_configs) >= _MERGED_CONFIGS_MAX:
            del _merged_configs[next(iter(_merged_configs))]
        base = OmegaConf.create(load_config_file("sim/default.yaml"))
        if cfg is not None:
            base = OmegaConf.merge(base, OmegaConf.create(dict(cfg)))
        merged: dict[str, Any] = OmegaConf.to_container(base, resolve=True)  # type: ignore[assignment]
        contacts = merged["physics"]["robot_wall_contacts"]
        if not isinstance(contacts, bool):
            raise ValueError(f"sim.physics.robot_wall_contacts must be true or false, got {contacts!r}")
        _merged_configs[key] = merged
    return copy.deepcopy(_merged_configs[key])


class RearrangeSim:
    """Apartment simulation with a kinematic-base mobile manipulator and suction grasping."""

    REST_ARM_QPOS: np.ndarray = robot_mjcf.REST_ARM_QPOS

    def __init__(
        self, layout: ApartmentLayout, object_kinds: Sequence[str], cfg: Mapping | None = None
    ) -> None:
        self.cfg = load_sim_config(cfg)
        self.layout = layout
        xml, names = build_scene_xml(layout, object_kinds, self.cfg)
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._names = names
        self._n_sub = int(self.cfg["physics"]["substeps"])
        self.views = SimViews(m, self.data, self.cfg, layout.bounds, {w.name for w in layout.walls})

        def jid(name: str) -> int:
            return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)

        def bid(name: str) -> int:
            return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)

        arm_j = [jid(n) for n in robot_mjcf.ARM_JOINTS]
        self._arm_qadr = np.array([m.jnt_qposadr[j] for j in arm_j])
        self._arm_dadr = np.array([m.jnt_dofadr[j] for j in arm_j])
        self._arm_act = np.array(
            [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, f"{n}_servo") for n in robot_mjcf.ARM_JOINTS]
        )
        self.arm_limits = np.array([m.jnt_range[j] for j in arm_j], dtype=np.float64)
        self._base_qadr = np.array([m.jnt_qposadr[jid(n)] for n in ("base_x", "base_y", "base_yaw")])
        self._base_dadr = np.array([m.jnt_dofadr[jid(n)] for n in ("base_x", "base_y", "base_yaw")])
        self._ee_site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, robot_mjcf.EE_SITE)

        self.object_names: tuple[str, ...] = names.objects
        self._obj_kind = dict(zip(names.objects, names.kinds, strict=True))
        self._obj_body = {n: bid(n) for n in names.objects}
        self._obj_qadr = {n: m.jnt_qposadr[jid(f"{n}_joint")] for n in names.objects}
        self._obj_dadr = {n: m.jnt_dofadr[jid(f"{n}_joint")] for n in names.objects}
        self._obj_geoms = {n: np.flatnonzero(m.geom_bodyid == self._obj_body[n]) for n in names.objects}
        self._obj_index = {n: k for k, n in enumerate(names.objects)}
        # robot geoms: every geom in the subtree of the base
        root = bid("robot_base")
        in_robot = np.array([_in_subtree(m, b, root) for b in range(m.nbody)], dtype=bool)
        self._contact_forces = ContactForces(m, self.data, in_robot[m.geom_bodyid],
                                             [self._obj_geoms[n] for n in names.objects])
        self.art_names: tuple[str, ...] = names.articulated
        self._art_qadr = {n: m.jnt_qposadr[jid(f"{n}_joint")] for n in names.articulated}
        self._art_dadr = {n: m.jnt_dofadr[jid(f"{n}_joint")] for n in names.articulated}
        self._art_range = {
            n: tuple(float(v) for v in m.jnt_range[jid(f"{n}_joint")]) for n in names.articulated
        }
        art_bodies = {n: int(m.jnt_bodyid[jid(f"{n}_joint")]) for n in names.articulated}
        self._art_geoms = {
            n: [g for g in range(m.ngeom) if _in_subtree(m, int(m.geom_bodyid[g]), b)
                and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX]
            for n, b in art_bodies.items()
        }
        self._art_geom_index = {n: np.array(g, dtype=np.int64) for n, g in self._art_geoms.items()}
        self._suction = Suction(m, self.data, names, self._obj_geoms, float(self.cfg["suction"]["max_dist"]))
        base = self.cfg["base"]
        self._base_motion = BaseMotion(m, self.data, layout.obstacles_2d(), float(base["radius"]),
                                       float(base["max_lin_per_step"]), float(base["max_ang_per_step"]))
        # per-step settings, read once (step() runs ~1,000 times a second)
        self._delta_per_step = float(self.cfg["arm"]["delta_per_step"])
        self._max_target_lead = float(self.cfg["arm"]["max_target_lead"])
        self._stall_force = float(base["stall_force"])
        self._resting_pos_base = np.asarray(self.cfg["arm"]["resting_pos_base"], dtype=np.float64)

        self._state_buf = np.zeros(mujoco.mj_stateSize(m, _STATE_SPEC))
        self._navmap: NavMap | None = None
        self._arm_target = self.REST_ARM_QPOS.copy()
        self._base_xy = np.zeros(2)
        self._base_yaw = 0.0
        self.base_collided = False
        self.robot_contact_force = 0.0
        kitchen = layout.rooms[0].bounds
        start = np.array([(kitchen[0][0] + kitchen[1][0]) / 2, (kitchen[0][1] + kitchen[1][1]) / 2])
        self.reset_state({}, {}, start, 0.0)

    # ------------------------------------------------------------------ reset / step
    def reset_state(
        self,
        objects: Mapping[str, tuple[Sequence[float], Sequence[float]]],
        art_states: Mapping[str, float],
        base_xy: Sequence[float],
        base_yaw: float,
        arm_qpos: Sequence[float] | None = None,
        grasped: str | None = None,
    ) -> None:
        """Put the whole scene in a given state; objects not listed wait outside the apartment."""
        m, d = self.model, self.data
        unknown = [n for n in objects if n not in self._obj_body]
        if unknown:
            raise ValueError(f"unknown objects {unknown}; valid: {', '.join(self.object_names)}")
        unknown = [n for n in art_states if n not in self._art_qadr]
        if unknown:
            raise ValueError(f"unknown articulated objects {unknown}; valid: {', '.join(self.art_names)}")
        mujoco.mj_resetData(m, d)
        self._suction.release()
        d.eq_active[:] = 0
        for i, name in enumerate(self.object_names):
            pos, quat = objects.get(name, (park_position(i), (1.0, 0.0, 0.0, 0.0)))
            a = self._obj_qadr[name]
            d.qpos[a : a + 3] = pos
            d.qpos[a + 3 : a + 7] = np.asarray(quat, dtype=np.float64) / np.linalg.norm(quat)
        for name in self.art_names:
            lo, hi = self._art_range[name]
            d.qpos[self._art_qadr[name]] = np.clip(float(art_states.get(name, 0.0)), lo, hi)
        q = self.REST_ARM_QPOS if arm_qpos is None else np.asarray(arm_qpos, dtype=np.float64)
        q = np.clip(q, self.arm_limits[:, 0], self.arm_limits[:, 1])
        d.qpos[self._arm_qadr] = q
        self._arm_target = q.copy()
        d.ctrl[self._arm_act] = q
        self._set_base_state(np.asarray(base_xy, dtype=np.float64), float(base_yaw))
        self._base_xy = np.array(base_xy, dtype=np.float64)
        self._base_yaw = float(base_yaw)
        self.base_collided = False
        self.robot_contact_force = 0.0
        mujoco.mj_forward(m, d)
        if grasped is not None:
            if grasped in self._obj_body:
                self._write_object_pose(grasped, *self._suction.snap_pose(grasped))
                mujoco.mj_forward(m, d)
                self._suction.attach(grasped)
            elif grasped in self._suction.handle_body:
                if not self._suction.attach_if_touching(only=grasped):
                    raise ValueError(f"cannot start grasping {grasped!r}: the suction cup does not touch it")
            else:
                raise ValueError(
                    f"unknown grasp target {grasped!r}; valid: {', '.join(self.object_names + tuple(self._suction.handle_body))}"
                )
            mujoco.mj_forward(m, d)

    def step(self, arm: Sequence[float], grip: float | None, base: Sequence[float]) -> None:
        """One policy step: arm joint deltas in [-1, 1], grip (>= 0 grasp, < 0 release, None keep), base (lin, ang)."""
        m, d = self.model, self.data
        delta = np.clip(np.asarray(arm, dtype=np.float64), -1.0, 1.0) * self._delta_per_step
        # The target may lead the joint by at most max_target_lead: a blocked arm does not wind up its servo.
        q = d.qpos[self._arm_qadr]
        lead = self._max_target_lead
        target = np.clip(self._arm_target + delta, q - lead, q + lead)
        self._arm_target = np.clip(target, self.arm_limits[:, 0], self.arm_limits[:, 1])
        d.ctrl[self._arm_act] = self._arm_target
        if grip is not None:
            if grip >= 0.0:
                if self._suction.grasped is None:
                    self._suction.attach_if_touching()
            else:
                self._suction.release()

        start_xy, start_yaw = self._base_xy.copy(), self._base_yaw
        new_xy, new_yaw, blocked = self._base_motion.move(
            self._base_xy, self._base_yaw, np.asarray(base, dtype=np.float64), self._obstacle_arrays)
        moving = bool(np.any(new_xy != start_xy) or new_yaw != start_yaw)
        vel = np.array([*(new_xy - start_xy), new_yaw - start_yaw]) / self.step_seconds
        stall, contact_forces = self._stall_force, self._contact_forces
        held = self._obj_index.get(self._suction.grasped)  # index of the held object; None: none or a handle
        xy, yaw = start_xy, start_yaw
        force = 0.0
        for k in range(1, self._n_sub + 1):
            if not moving:
                self._set_base_state(xy, yaw, None)
                mujoco.mj_step(m, d)
                force += contact_forces(held)[0]
                continue
            mujoco.mj_getState(m, d, self._state_buf, _STATE_SPEC)
            f = k / self._n_sub
            nxt_xy, nxt_yaw = start_xy + f * (new_xy - start_xy), start_yaw + f * (new_yaw - start_yaw)
            self._set_base_state(nxt_xy, nxt_yaw, vel)
            mujoco.mj_step(m, d)
            robot_f, held_f = contact_forces(held)
            if robot_f + held_f > stall:
                # The base's motion would press the robot (or what it holds) into something harder than
                # its drive can push: it stalls where it was for the rest of this step.
                mujoco.mj_setState(m, d, self._state_buf, _STATE_SPEC)
                self._set_base_state(xy, yaw, None)
                mujoco.mj_step(m, d)
                robot_f = contact_forces(held)[0]
                moving, blocked = False, True
            else:
                xy, yaw = nxt_xy, nxt_yaw
            force += robot_f
        self.base_collided = blocked
        self.robot_contact_force = force / self._n_sub
        self._base_xy, self._base_yaw = xy, float(np.arctan2(np.sin(yaw), np.cos(yaw)))
        self._set_base_state(self._base_xy, self._base_yaw, vel if moving else None)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)

    # ------------------------------------------------------------------ base
    def _obstacle_arrays(self) -> ObstacleArrays:
        """Every base obstacle box: walls, furniture footprints and the open doors and drawers where
        they are now (as `moving_part_boxes`; the base does not shove a drawer shut or a door aside)."""
        return self._base_motion.obstacles([self._art_geom_index[n] for n in self.open_art_names()])

    def base_is_free(self, xy: Sequence[float]) -> bool:
        """The base disc at `xy` does not touch walls, furniture footprints or open doors and drawers."""
        return self._base_motion.penetration(np.asarray(xy, dtype=np.float64), self._obstacle_arrays()) == 0.0

    def _set_base_state(self, xy: np.ndarray, yaw: float, vel: np.ndarray | None = None) -> None:
        """Write the base joints (kinematic): position and the velocity of the current motion."""
        self.data.qpos[self._base_qadr] = (xy[0], xy[1], yaw)
        self.data.qvel[self._base_dadr] = 0.0 if vel is None else vel

    @property
    def step_seconds(self) -> float:
        """Simulated seconds per `step` (the physics timestep times the substeps)."""
        return self._n_sub * float(self.model.opt.timestep)

    @property
    def base_xy(self) -> np.ndarray:
        return self._base_xy.copy()

    @property
    def base_yaw(self) -> float:
        return float(self._base_yaw)

    def set_base_pose(self, xy: Sequence[float], yaw: float) -> None:
        """Teleport the base (no collision check); a held object moves with the gripper."""
        self._base_xy = np.array(xy, dtype=np.float64)
        self._base_yaw = float(yaw)
        self._set_base_state(self._base_xy, self._base_yaw)
        mujoco.mj_forward(self.model, self.data)
        self._snap_held()

    # ------------------------------------------------------------------ arm
    @property
    def arm_qpos(self) -> np.ndarray:
        return self.data.qpos[self._arm_qadr].copy()

    @property
    def arm_target(self) -> np.ndarray:
        """Current servo targets of the arm joints."""
        return self._arm_target.copy()

    def set_arm_qpos(self, q: Sequence[float]) -> None:
        """Set arm joints and their servo targets (clipped to limits); a held object moves with the gripper."""
        q = np.clip(np.asarray(q, dtype=np.float64), self.arm_limits[:, 0], self.arm_limits[:, 1])
        self.data.qpos[self._arm_qadr] = q
        self.data.qvel[self._arm_dadr] = 0.0
        self._arm_target = q.copy()
        self.data.ctrl[self._arm_act] = q
        mujoco.mj_forward(self.model, self.data)
        self._snap_held()

    def robot_penetration(self) -> float:
        """The deepest overlap (m) of the robot with the scene in the current state (0: none)."""
        return self._contact_forces.robot_penetration()

    @property
    def ee_pos(self) -> np.ndarray:
        return self.data.site_xpos[self._ee_site].copy()

    @property
    def ee_pos_base(self) -> np.ndarray:
        return self.to_base(self.ee_pos)

    @property
    def resting_pos_base(self) -> np.ndarray:
        return self._resting_pos_base.copy()

    def to_base(self, p_world: Sequence[float]) -> np.ndarray:
        """A world point in the base frame (x forward, y left, origin on the floor under the base)."""
        p = np.asarray(p_world, dtype=np.float64)
        c, s = np.cos(self._base_yaw), np.sin(self._base_yaw)
        dx, dy = p[0] - self._base_xy[0], p[1] - self._base_xy[1]
        return np.array([c * dx + s * dy, -s * dx + c * dy, p[2]])

    def ee_jacobian(self) -> np.ndarray:
        """(3, 7) world-frame position Jacobian of the end effector w.r.t. the arm joints."""
        jacp = np.zeros((3, self.model.nv))
        mujoco.mj_jacSite(self.model, self.data, jacp, None, self._ee_site)
        return jacp[:, self._arm_dadr]

    # ------------------------------------------------------------------ grasp
    @property
    def grasped(self) -> str | None:
        return self._suction.grasped

    def touching(self, only: str | None = None) -> str | None:
        """The object or handle the suction cup touches (within suction.max_dist), nearest first."""
        return self._suction.touching(only)

    def _snap_held(self) -> None:
        """After a teleport, put a held object back at its grasp pose relative to the gripper."""
        pose = self._suction.held_pose()
        if pose is not None:
            self._write_object_pose(self._suction.grasped, *pose)
            mujoco.mj_forward(self.model, self.data)

    def regrasp_held(self, pos: Sequence[float], quat: Sequence[float]) -> None:
        """Move the held object to a world pose and hold it there (the grasp's relative pose changes)."""
        name = self._suction.grasped
        if name is None or name not in self._obj_body:
            raise ValueError("regrasp_held needs a held object")
        self._suction.release()
        self.set_object_pose(name, pos, quat)
        self._suction.attach(name)

    # ------------------------------------------------------------------ objects and containers
    def object_kind(self, name: str) -> str:
        return self._obj_kind[name]

    def object_pos(self, name: str) -> np.ndarray:
        a = self._obj_qadr[name]
        return self.data.qpos[a : a + 3].copy()

    def object_quat(self, name: str) -> np.ndarray:
        a = self._obj_qadr[name]
        return self.data.qpos[a + 3 : a + 7].copy()

    def _write_object_pose(self, name: str, pos: Sequence[float], quat: Sequence[float]) -> None:
        a, v = self._obj_qadr[name], self._obj_dadr[name]
        q = np.asarray(quat, dtype=np.float64)
        self.data.qpos[a : a + 3] = pos
        self.data.qpos[a + 3 : a + 7] = q / np.linalg.norm(q)
        self.data.qvel[v : v + 6] = 0.0

    def set_object_pose(self, name: str, pos: Sequence[float], quat: Sequence[float]) -> None:
        """Teleport an object (velocity zeroed)."""
        self._write_object_pose(name, pos, quat)
        mujoco.mj_forward(self.model, self.data)

    def art_q(self, name: str) -> float:
        return float(self.data.qpos[self._art_qadr[name]])

    def set_art_q(self, name: str, q: float) -> None:
        lo, hi = self._art_range[name]
        self.data.qpos[self._art_qadr[name]] = float(np.clip(q, lo, hi))
        self.data.qvel[self._art_dadr[name]] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def art_range(self, name: str) -> tuple[float, float]:
        return self._art_range[name]

    def art_opening(self, name: str) -> float:
        """How far an articulated container stands open from its closed end (rad or m)."""
        return abs(self.art_q(name) - self._art_range[name][0])

    def open_art_names(self, min_open: float = 0.02) -> list[str]:
        """Articulated containers opened by more than `min_open` (rad or m) from their closed end."""
        return [n for n in self.art_names if self.art_opening(n) > min_open]

    def moving_part_boxes(self, min_open: float = 0.02) -> list[Box]:
        """Floor-plan boxes of the articulated parts (door, drawer boxes, handles) where they are now.

        Only containers opened by more than `min_open` (rad or m) are listed: closed parts lie inside
        the static furniture footprints of `layout.obstacles_2d()`, which the nav map already has.
        Box geoms only; their height is kept, so callers can tell a drawer from a door.
        """
        m, d = self.model, self.data
        boxes: list[Box] = []
        for name in self.open_art_names(min_open):
            for g in self._art_geoms[name]:
                x = d.geom_xmat[g]
                boxes.append(Box(f"{name}_{g}", tuple(float(v) for v in d.geom_xpos[g]),
                                 tuple(float(v) for v in m.geom_size[g]), float(np.arctan2(x[3], x[0]))))
        return boxes

    def handle_pos(self, handle_name: str) -> np.ndarray:
        return self.data.xpos[self._suction.handle_body[handle_name]].copy()

    # ------------------------------------------------------------------ navigation map
    @property
    def navmap(self) -> NavMap:
        if self._navmap is None:
            from rearrange.nav_maps import layout_navmap

            self._navmap = layout_navmap(self.layout, self._base_motion.radius)
        return self._navmap

    # ------------------------------------------------------------------ sensing and rendering (rearrange.sim_views)
    def head_depth(self) -> np.ndarray:
        """The head_depth observation from `camera.head.backend`: rendered (GL) or ray-cast, same semantics."""
        return self.views.head_depth()

    def raycast_head_depth(
        self, width: int | None = None, height: int | None = None, max_depth: float | None = None
    ) -> np.ndarray:
        """Head camera depth by ray casting, as `render_head_depth` without GL. Size and max depth default to
        `camera.head`'s; others (another skill's camera) leave it as is."""
        return self.views.raycast_head_depth(width, height, max_depth)

    def base_ranges(self) -> np.ndarray:
        """Clearances round the base's rim along a ring of horizontal rays (`rearrange.raycast.BaseRangeFinder`)."""
        return self.views.base_ranges(self._base_xy, self._base_yaw)

    def render_head_depth(
        self, width: int | None = None, height: int | None = None, max_depth: float | None = None
    ) -> np.ndarray:
        """Head camera depth, (H, W, 1) float32 metres clipped to [0, max_depth]; size and max depth
        default to `camera.head`'s (the far plane stays 4 x camera.head.max_depth)."""
        return self.views.render_head_depth(width, height, max_depth)

    def render_third_rgb(
        self, width: int, height: int, marks: Sequence[tuple[Sequence[float], Sequence[float]]] = ()
    ) -> np.ndarray:
        """Third-person RGB view from behind and above the robot, with `marks` (pos, rgba) as spheres."""
        return self.views.render_third_rgb(self._base_xy, self._base_yaw, width, height, marks)

    def render_overview_rgb(
        self, width: int, height: int, marks: Sequence[tuple[Sequence[float], Sequence[float]]] = ()
    ) -> np.ndarray:
        """A high view of the whole apartment (for documentation and debugging)."""
        return self.views.render_overview_rgb(width, height, marks)

    def close(self) -> None:
        """Free rendering resources."""
        self.views.close()
