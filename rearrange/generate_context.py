"""The episode generator's per-layout context: geometry helpers, reach and spawn checks, settling.

`LayoutContext` holds one layout, its `RearrangeSim` (built once with the layout's object kinds) and
the generator config (`configs/episodes.yaml`); `rearrange.generate` plans episodes with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rearrange.apartment import ApartmentLayout, Articulated, Receptacle
from rearrange.nav_maps import navmap_with_obstacles
from rearrange.navmap import NavMap
from rearrange.objects import OBJECT_KINDS

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

Poses = Mapping[str, tuple[np.ndarray, np.ndarray]]


# ----------------------------------------------------------------------------- geometry helpers


def height_of(kind: str) -> float:
    return 2.0 * OBJECT_KINDS[kind].rest_height


def yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def container_offset(layout: ApartmentLayout, rec: Receptacle, art_states: Mapping[str, float],
                     fully_open: bool = False) -> np.ndarray:
    """Displacement of a receptacle surface by its container's joint (drawers slide; shelves don't)."""
    if rec.container is None or rec.container not in layout.articulated:
        return np.zeros(3)
    art = layout.articulated[rec.container]
    if art.joint_type != "slide":
        return np.zeros(3)
    q = art.joint_range[1] if fully_open else art_states.get(art.name, art.joint_range[0])
    return np.asarray(art.joint_axis, dtype=np.float64) * float(q)


def fits(rec: Receptacle, kind: str, cfg: Mapping[str, Any]) -> bool:
    """An object of `kind` fits on `rec` (footprint inside the surface, not taller than its clearance)."""
    limit = cfg["placement"]["max_object_height"].get(rec.kind)
    radius = OBJECT_KINDS[kind].radius + cfg["placement"]["margin"]
    if min(rec.half_extent) <= radius:
        return False
    return limit is None or height_of(kind) <= float(limit)


def open_state(layout: ApartmentLayout, name: str, cfg: Mapping[str, Any]) -> float:
    """The "open" joint value of an articulated object (a container holding a target, scenarios)."""
    art = layout.articulated[name]
    lo, hi = art.joint_range
    if art.joint_type == "hinge":
        return float(np.clip(cfg["articulated"]["open_fridge_state"], lo, hi))
    return float(lo + cfg["articulated"]["open_drawer_fraction"] * (hi - lo))


def closed_states(layout: ApartmentLayout) -> dict[str, float]:
    return {name: float(a.joint_range[0]) for name, a in sorted(layout.articulated.items())}


def door_frame(art: Articulated, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(2,) unit vectors of a hinged door at joint value q: along the door from the hinge, and out of its
    outer (handle) face."""
    hinge = np.asarray(art.joint_pos[:2], dtype=np.float64)
    door = max(art.parts, key=lambda b: b.half_size[0] * b.half_size[1])
    centre = np.asarray(door.center[:2], dtype=np.float64) - hinge
    handle = np.asarray(art.handle_box.center[:2], dtype=np.float64) - hinge
    along0 = centre / np.linalg.norm(centre)
    out0 = handle - (handle @ along0) * along0
    out0 /= np.linalg.norm(out0)
    a = float(np.sign(art.joint_axis[2])) * q  # rotation about +z
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    return rot @ along0, rot @ out0


# ----------------------------------------------------------------------------- per-layout context


class LayoutContext:
    """One layout, its sim (built once, with the layout's object kinds) and the generator config."""

    def __init__(self, layout: ApartmentLayout, kinds: Sequence[str], cfg: Mapping[str, Any],
                 sim_cfg: Mapping[str, Any] | None) -> None:
        from rearrange.sim import RearrangeSim, load_sim_config

        self.layout = layout
        self.kinds = list(kinds)
        self.cfg = cfg
        # Starts are checked with the robot touching the walls as well, whatever the sim acting on them is set
        # to (configs/sim/default.yaml physics.robot_wall_contacts): an arm reaching into a wall is no start.
        checked = load_sim_config(sim_cfg)
        checked["physics"]["robot_wall_contacts"] = True
        self.sim: RearrangeSim = RearrangeSim(layout, self.kinds, checked)
        self.navmap = self.sim.navmap
        self._maps: dict[tuple, NavMap] = {}
        self.names = [f"obj_{i}" for i in range(len(self.kinds))]

    def close(self) -> None:
        if hasattr(self.sim, "close"):
            self.sim.close()

    # --------------------------------------------------------------- checks

    def reachable(self, pos: np.ndarray, art_states: Mapping[str, float], rec: Receptacle | None = None) -> bool:
        """A base point within reach of `pos`, with the open doors and drawers of `art_states` in the way
        (a counter top above an open drawer is out of reach). Inside a container (`rec` a fridge shelf
        or a drawer) the point is reached through the opening: the base point must lie straight out of
        it (a fridge's side walls, or its open door, between base and object do not count as reach)."""
        r = self.cfg["reach"]
        if not (r["min_height"] <= pos[2] <= r["max_height"]):
            return False
        if rec is None or rec.container is None:
            return self.navmap_with(art_states).nearest_navigable(pos[:2], r["max_horizontal"]) is not None
        return self.opening_stand(pos, art_states, rec) is not None

    def opening_stand(self, pos: np.ndarray, art_states: Mapping[str, float], rec: Receptacle) -> np.ndarray | None:
        """The navigable base point nearest to `pos` (inside container `rec`) straight out of the
        container's opening, within `reach.max_horizontal`; None if there is none."""
        navmap = self.navmap_with(art_states)
        out = self.layout.articulated[rec.container].opening_outward()
        for d in np.arange(0.0, float(self.cfg["reach"]["max_horizontal"]) + 1e-9, 0.5 * navmap.resolution):
            if navmap.is_navigable(pos[:2] + d * out):
                return pos[:2] + d * out
        return None

    def navmap_with(self, art_states: Mapping[str, float]) -> NavMap:
        """The navigation map with the articulated parts at `art_states` as obstacles (cached)."""
        key = tuple(sorted((k, round(float(v), 3)) for k, v in art_states.items()))
        if key not in self._maps:
            self.sim.reset_state({}, dict(art_states), self.sim.base_xy, 0.0)
            extra = self.sim.moving_part_boxes()
            self._maps[key] = self.navmap if not extra else navmap_with_obstacles(
                self.layout, extra, self.navmap.resolution, self.navmap.robot_radius)
        return self._maps[key]

    def surface_pose(self, rec: Receptacle, kind: str, art_states: Mapping[str, float],
                     rng: np.random.Generator, occupied: list[tuple[np.ndarray, float]]) -> np.ndarray | None:
        """A free position (3,) for `kind` resting on `rec`, None after a few tries."""
        margin = self.cfg["placement"]["margin"]
        radius = OBJECT_KINDS[kind].radius
        ux, uy = rec.half_extent[0] - radius - margin, rec.half_extent[1] - radius - margin
        if ux <= 0 or uy <= 0:
            return None
        offset = container_offset(self.layout, rec, art_states)
        for _ in range(20):
            u, v = rng.uniform(-ux, ux), rng.uniform(-uy, uy)
            pos = np.array([*rec.surface_xy(u, v), rec.center[2] + OBJECT_KINDS[kind].rest_height]) + offset
            if all(np.linalg.norm(pos[:2] - p[:2]) >= radius + r + margin for p, r in occupied):
                return pos
        return None

    def reach_pos(self, rec: Receptacle, pos: np.ndarray, art_states: Mapping[str, float]) -> np.ndarray:
        """Where `pos` (on `rec`) is once its container is fully open (drawers slide out)."""
        return pos - container_offset(self.layout, rec, art_states) + container_offset(
            self.layout, rec, art_states, fully_open=True)

    # --------------------------------------------------------------- physics

    def park_point(self, rng: np.random.Generator, points: Sequence[np.ndarray]) -> np.ndarray:
        """A navigable point far from all `points` (where the robot waits while objects settle)."""
        best, best_d = None, -1.0
        for _ in range(30):
            p = self.navmap.sample_navigable(rng)
            d = min((np.linalg.norm(p - q[:2]) for q in points), default=np.inf)
            if d > best_d:
                best, best_d = p, d
        assert best is not None
        return best

    def settle(self, poses: Poses, art_states: Mapping[str, float],
               park_xy: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
        """Simulate `settle.steps`; the settled poses, or None if an object moved too far."""
        s = self.cfg["settle"]
        self.sim.reset_state(dict(poses), dict(art_states), park_xy, 0.0)
        zero7, zero2 = np.zeros(7), np.zeros(2)
        for _ in range(int(s["steps"])):
            self.sim.step(zero7, None, zero2)
        out = {}
        for name, (pos, _quat) in poses.items():
            now = np.asarray(self.sim.object_pos(name), dtype=np.float64)
            if not np.all(np.isfinite(now)) or np.linalg.norm(now - pos) > s["max_displacement"]:
                return None
            out[name] = (now.copy(), np.asarray(self.sim.object_quat(name), dtype=np.float64).copy())
        return out

    def robot_free(self, poses: Poses, art_states: Mapping[str, float], xy: np.ndarray, yaw: float,
                   grasped: str | None = None) -> bool:
        """The robot at (xy, yaw) touches nothing for `spawn.check_steps` and disturbs no object."""
        sp = self.cfg["spawn"]
        if not self.navmap.is_navigable(xy):
            return False
        self.sim.reset_state(dict(poses), dict(art_states), np.asarray(xy, dtype=np.float64), float(yaw),
                             grasped=grasped)
        zero7, zero2 = np.zeros(7), np.zeros(2)
        for _ in range(int(sp["check_steps"])):
            self.sim.step(zero7, None, zero2)
            if self.sim.robot_contact_force > sp["max_contact_force"] or self.sim.base_collided:
                return False
        if grasped is not None and self.sim.grasped != grasped:
            return False
        tol = self.cfg["settle"]["max_displacement"]
        for name, (pos, _q) in poses.items():
            if name != grasped and np.linalg.norm(np.asarray(self.sim.object_pos(name)) - pos) > tol:
                return False
        return True

    # --------------------------------------------------------------- spawns

    def _far_enough(self, xy: np.ndarray, far_from: np.ndarray | None, min_geodesic: float) -> bool:
        """True without `far_from`, else whether `xy` is at least `min_geodesic` (nav map) from it."""
        return far_from is None or self.navmap.geodesic_distance(xy, far_from[:2]) >= min_geodesic

    def spawn_near(self, rng: np.random.Generator, target_xy: np.ndarray, poses: Poses,
                   art_states: Mapping[str, float], grasped: str | None = None,
                   sees: np.ndarray | None = None, radius: float | None = None,
                   far_from: np.ndarray | None = None, min_geodesic: float = 0.0) -> dict[str, Any] | None:
        """habitat _get_robot_spawns: navigable point within max_dist of the target, facing it + noise.

        habitat grows its search radius on retries but still rejects points farther than max_dist,
        so we sample within max_dist only. With `sees` (for a target inside a container: the base point
        straight out of its opening) the straight line from the start to that point must be free, open
        doors and drawers included: the robot starts in front of the opening, not behind the open
        fridge door or beside the fridge (see `spawn.see_opening`). `radius` replaces `spawn.max_dist`;
        with `far_from` the start must be at least `min_geodesic` (nav map) from that point.
        """
        sp = self.cfg["spawn"]
        navmap = self.navmap_with(art_states) if sees is not None else None
        for _ in range(int(sp["attempts"])):
            xy = self.navmap.sample_navigable(rng, near=target_xy, radius=sp["max_dist"] if radius is None else radius)
            if xy is None:
                continue
            if not self._far_enough(xy, far_from, min_geodesic):
                continue
            if navmap is not None and not navmap.segment_clear(xy, sees):
                continue
            d = target_xy - xy
            yaw = float(np.arctan2(d[1], d[0]) + rng.normal(0.0, sp["yaw_noise_std"]))
            yaw = float((yaw + np.pi) % (2 * np.pi) - np.pi)
            if self.robot_free(poses, art_states, xy, yaw, grasped):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return None

    def spawn_in_front(self, rng: np.random.Generator, art_name: str, poses: Poses,
                       art_states: Mapping[str, float], skill: str | None = None) -> dict[str, Any] | None:
        """In front of an articulated object (front_center +- noise), facing it + noise; the noise of
        `spawn.art_start_noise.<skill>` where the config gives one, else `art_pos_noise` / `art_yaw_noise_std`."""
        sp = self.cfg["spawn"]
        wider = (sp.get("art_start_noise") or {}).get(skill) or {}
        pos_noise = float(wider.get("pos", sp["art_pos_noise"]))
        yaw_noise_std = float(wider.get("yaw_std", sp["art_yaw_noise_std"]))
        art = self.layout.articulated[art_name]
        for _ in range(int(sp["attempts"])):
            xy = np.asarray(art.front_center, dtype=np.float64) + rng.uniform(-1, 1, 2) * pos_noise
            yaw = float(art.facing_yaw + rng.normal(0.0, yaw_noise_std))
            if self.robot_free(poses, art_states, xy, yaw):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return None

    def spawn_outside_door(self, rng: np.random.Generator, art_name: str, poses: Poses,
                           art_states: Mapping[str, float]) -> dict[str, Any] | None:
        """close_fridge: on the open door's outer (handle) side, facing it, so the robot starts outside
        the area the door sweeps while it closes; falls back to `spawn_in_front` for a nearly closed door.
        """
        sp = self.cfg["spawn"]
        art = self.layout.articulated[art_name]
        q = float(art_states.get(art_name, art.joint_range[0]))
        along_dir, outward = door_frame(art, q)
        hinge = np.asarray(art.joint_pos[:2], dtype=np.float64)
        width = max(float(np.linalg.norm(c - hinge)) for p in art.parts for c in p.corners_2d())
        for _ in range(int(sp["attempts"])):
            along = rng.uniform(*sp["door_along"]) * width
            dist = rng.uniform(*sp["door_dist"])
            xy = hinge + along * along_dir + dist * outward
            yaw = float(np.arctan2(-outward[1], -outward[0]) + rng.normal(0.0, sp["art_yaw_noise_std"]))
            if self.robot_free(poses, art_states, xy, yaw):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return self.spawn_in_front(rng, art_name, poses, art_states)

    def spawn_anywhere(self, rng: np.random.Generator, poses: Poses, art_states: Mapping[str, float],
                       grasped: str | None = None, far_from: np.ndarray | None = None,
                       min_geodesic: float = 0.0) -> dict[str, Any] | None:
        """A random navigable, collision-free start (optionally >= min_geodesic from `far_from`)."""
        attempts = int(self.cfg["nav"]["attempts"])
        for _ in range(attempts):
            xy = self.navmap.sample_navigable(rng)
            if xy is None:
                return None
            if not self._far_enough(xy, far_from, min_geodesic):
                continue
            yaw = float(rng.uniform(-np.pi, np.pi))
            if self.robot_free(poses, art_states, xy, yaw, grasped):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return None
