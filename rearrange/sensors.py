"""Observation sensors with habitat names, computed from a `RearrangeSim` and the current target.

Each sensor is a function `(sim, target) -> np.ndarray` (float32) plus a gymnasium `Box` space
(`sensor_space(name, sim_cfg)`). `SensorTarget` holds what a task points the sensors at: the target
object, its goal position, the articulated handle and the navigation goal. Relative positions are
expressed with the ee as origin and the robot base frame's axes (x forward, y left, z up).
`HeadCamera` is a sim config's head depth camera; `head_depth_as(sim, camera)` renders or ray-casts
another camera's depth image from a sim (skills trained with other camera sizes in one episode).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from rearrange.raycast import BASE_RANGE_HEIGHTS, BASE_RANGE_MAX, BASE_RANGE_RAYS

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


@dataclass
class SensorTarget:
    """What the target-relative sensors measure against (None: the sensor reads zeros)."""

    object: str | None = None  # sim object name, e.g. "obj_2"
    goal_pos: np.ndarray | None = None  # (3,) world goal of that object
    handle: str | None = None  # handle marker, e.g. "fridge_handle"
    nav_goal: np.ndarray | None = None  # (3,) or (2,) world point the robot should navigate to


def target_from_episode(episode: Any, index: int = 0) -> SensorTarget:
    """The sensor target of an episode: its `index`-th rearrangement target, handle and nav goal."""
    target = SensorTarget()
    if episode.targets:
        t = episode.targets[min(index, len(episode.targets) - 1)]
        target.object = t.object
        target.goal_pos = np.asarray(t.goal_pos, dtype=np.float64)
    target.handle = episode.info.get("handle")
    if "nav_goal" in episode.info:
        target.nav_goal = np.asarray(episode.info["nav_goal"], dtype=np.float64)
    return target


def _rel_ee(sim: RearrangeSim, point_world: np.ndarray | None) -> np.ndarray:
    if point_world is None:
        return np.zeros(3, dtype=np.float32)
    p = np.asarray(point_world, dtype=np.float64)
    return (sim.to_base(p) - sim.ee_pos_base).astype(np.float32)


def head_depth(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """Head camera depth image (H, W, 1), metres, clipped to [0, max_depth]; rendered or ray-cast
    (`camera.head.backend`), both z-depth along the optical axis."""
    return np.asarray(sim.head_depth(), dtype=np.float32)


def base_ranges(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """Clearance (m) between the base's rim and the nearest geometry along 32 horizontal rays at two
    heights (`rearrange.raycast.BaseRangeFinder`), clipped to 2 m (deviation: habitat's Fetch sees only its
    head camera; a mobile base's laser scanner, for a policy that also drives backwards)."""
    return sim.base_ranges()


def joint(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """The 7 arm joint positions (rad)."""
    return np.asarray(sim.arm_qpos, dtype=np.float32)


def ee_pos(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """End-effector position in the base frame."""
    return np.asarray(sim.ee_pos_base, dtype=np.float32)


def is_holding(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """1 if the suction gripper holds anything (an object or a handle marker), else 0.

    As habitat's `IsHoldingSensor` (`grasp_mgr.is_grasped` is true for objects and markers), so the
    open/close skills can see that they hold the handle.
    """
    return np.array([0.0 if sim.grasped is None else 1.0], dtype=np.float32)


def relative_resting_position(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """Resting position minus ee position, base frame."""
    return (np.asarray(sim.resting_pos_base) - np.asarray(sim.ee_pos_base)).astype(np.float32)


def obj_start_sensor(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """Target object's current position relative to the ee (base-frame axes)."""
    return _rel_ee(sim, None if target.object is None else sim.object_pos(target.object))


def obj_goal_sensor(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """Target goal position relative to the ee (base-frame axes)."""
    return _rel_ee(sim, target.goal_pos)


def base_blocked(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """1 if the base's last motion stalled against furniture or a wall (`RearrangeSim.base_collided`), else 0:
    a bumper, as mobile bases carry. Without it a policy acting on its mean action cannot tell a base pressed
    against something from one standing still, and repeats the same blocked command to the timeout."""
    return np.array([1.0 if sim.base_collided else 0.0], dtype=np.float32)


def goal_to_agent_gps_compass(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """(distance, angle) of the navigation goal in the base frame; angle > 0: goal to the left."""
    if target.nav_goal is None:
        return np.zeros(2, dtype=np.float32)
    g = np.asarray(target.nav_goal, dtype=np.float64)
    g3 = np.array([g[0], g[1], g[2] if g.shape[0] > 2 else 0.0])
    rel = sim.to_base(g3)
    return np.array([np.hypot(rel[0], rel[1]), np.arctan2(rel[1], rel[0])], dtype=np.float32)


PATH_LOOKAHEAD = 1.0  # m: goal_path_compass points at the shortest path's point about this far ahead


def goal_path_compass(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """(geodesic distance to the navigation goal, cos, sin of the shortest path's bearing in the base
    frame; bearing > 0: the path leads to the left), on the layout's nav map (`NavMap.path_heading`).
    A map-reading robot's sense of where the way to the goal goes: around furniture and through
    doorways, where the straight-line compass points at a wall. No path: the straight-line distance
    and bearing. cos/sin, so a goal behind the robot does not jump between +pi and -pi."""
    if target.nav_goal is None:
        return np.zeros(3, dtype=np.float32)
    goal = np.asarray(target.nav_goal, dtype=np.float64)[:2]
    base = np.asarray(sim.base_xy, dtype=np.float64)
    return _compass(sim, goal, sim.navmap.path_heading(base, goal, PATH_LOOKAHEAD))


def _compass(sim: RearrangeSim, goal_xy: np.ndarray, found: tuple[float, np.ndarray] | None) -> np.ndarray:
    """(distance, cos, sin of the bearing in the base frame) from a map heading `found` (distance, world
    direction); no path (None): the straight-line distance and bearing to `goal_xy`."""
    base = np.asarray(sim.base_xy, dtype=np.float64)
    distance, direction = (float(np.linalg.norm(goal_xy - base)), goal_xy - base) if found is None else found
    bearing = float(np.arctan2(direction[1], direction[0])) - float(sim.base_yaw)
    return np.array([distance, np.cos(bearing), np.sin(bearing)], dtype=np.float32)


# the path compasses' reach region: the pick and place approach terms' (configs/skill/pick.yaml and place.yaml
# approach_reach, approach_opening_halfwidth), the navigable base points from which the generator guarantees a reach
OBJ_PATH_REACH = 0.8
OBJ_PATH_OPENING_HALFWIDTH = 0.25


def obj_path_compass(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """(geodesic distance from the base to where the target object can be reached, cos, sin of the
    shortest path's bearing there in the base frame), on the nav map with the open doors and drawers
    where they are (`nav_maps.planning_map`). "Where it can be reached": the navigable base points within
    `OBJ_PATH_REACH` of the object, and for an object in a container only those straight out of its
    opening (`NavMap.region_distance_field`, as the pick approach term measures it). Inside that region
    the distance is 0 and the bearing points at the object. goal_path_compass's map reading for pick
    (deviation: habitat's pick sees only the straight ee->object offset, which points through the
    furniture an object must be approached round); (0, 1, 0) while the object is held, zeros without a
    target object."""
    if target.object is None:
        return np.zeros(3, dtype=np.float32)
    if sim.grasped == target.object:
        return np.array([0.0, 1.0, 0.0], dtype=np.float32)
    return _reach_compass(sim, np.asarray(sim.object_pos(target.object), dtype=np.float64))


def obj_goal_path_compass(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """obj_path_compass for place: (geodesic distance from the base to where the target's goal can be
    reached, cos, sin of the path's bearing there in the base frame), the region being the navigable base
    points within `OBJ_PATH_REACH` of the goal (straight out of its container's opening for a goal in a
    fridge or drawer; the place approach term's region). Deviation: habitat's place sees only the straight
    ee->goal offset, which points through the furniture between the robot and a goal on its far side.
    Zeros without a goal."""
    if target.goal_pos is None:
        return np.zeros(3, dtype=np.float32)
    return _reach_compass(sim, np.asarray(target.goal_pos, dtype=np.float64))


def _reach_compass(sim: RearrangeSim, point: np.ndarray) -> np.ndarray:
    """The path compass (distance, cos, sin) to the navigable base points from which `point` (3,) can be
    reached (module constants; a point inside a container is reached through its opening)."""
    from rearrange.nav_maps import planning_map

    navmap = planning_map(sim)
    rec = sim.layout.container_receptacle_at(point)
    opening = None
    if rec is not None:
        opening = (sim.layout.articulated[rec.container].opening_outward(), OBJ_PATH_OPENING_HALFWIDTH)
    field = navmap.cached_region_field(point[:2], OBJ_PATH_REACH, opening)
    return _compass(sim, point[:2], navmap.field_heading(field, sim.base_xy, point[:2], PATH_LOOKAHEAD))


def marker_rel_pos(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """Handle marker position relative to the ee (base-frame axes)."""
    return _rel_ee(sim, None if target.handle is None else sim.handle_pos(target.handle))


def localization_sensor(sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    """Base x, y (world) and yaw."""
    xy = np.asarray(sim.base_xy, dtype=np.float64)
    return np.array([xy[0], xy[1], float(sim.base_yaw)], dtype=np.float32)


SENSORS: dict[str, Callable[[Any, SensorTarget], np.ndarray]] = {
    "head_depth": head_depth,
    "joint": joint,
    "ee_pos": ee_pos,
    "is_holding": is_holding,
    "relative_resting_position": relative_resting_position,
    "obj_start_sensor": obj_start_sensor,
    "obj_goal_sensor": obj_goal_sensor,
    "goal_to_agent_gps_compass": goal_to_agent_gps_compass,
    "goal_path_compass": goal_path_compass,
    "obj_path_compass": obj_path_compass,
    "obj_goal_path_compass": obj_goal_path_compass,
    "marker_rel_pos": marker_rel_pos,
    "localization_sensor": localization_sensor,
    "base_ranges": base_ranges,
    "base_blocked": base_blocked,
}
SENSOR_NAMES = tuple(SENSORS)  # every sensor, in the order errors list them


def check_sensor_names(names: Sequence[str]) -> None:
    for n in names:
        if n not in SENSORS:
            raise ValueError(f"unknown sensor '{n}'; valid choices: {', '.join(SENSOR_NAMES)}")


def sensor_space(name: str, depth_shape: tuple[int, int] = (128, 128), max_depth: float = 10.0) -> spaces.Box:
    """The Box space of sensor `name`; head_depth needs the camera (height, width) and max depth."""
    check_sensor_names([name])
    inf = np.inf
    if name == "head_depth":
        return spaces.Box(0.0, float(max_depth), shape=(depth_shape[0], depth_shape[1], 1), dtype=np.float32)
    if name in ("is_holding", "base_blocked"):
        return spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
    if name == "base_ranges":
        return spaces.Box(0.0, BASE_RANGE_MAX, shape=(BASE_RANGE_RAYS * len(BASE_RANGE_HEIGHTS),), dtype=np.float32)
    if name == "joint":
        return spaces.Box(-inf, inf, shape=(7,), dtype=np.float32)
    if name == "goal_to_agent_gps_compass":
        return spaces.Box(np.array([0.0, -np.pi], dtype=np.float32), np.array([inf, np.pi], dtype=np.float32),
                          dtype=np.float32)
    if name in ("goal_path_compass", "obj_path_compass", "obj_goal_path_compass"):
        return spaces.Box(np.array([0.0, -1.0, -1.0], dtype=np.float32), np.array([inf, 1.0, 1.0], dtype=np.float32),
                          dtype=np.float32)
    if name == "localization_sensor":
        return spaces.Box(np.array([-inf, -inf, -np.pi], dtype=np.float32),
                          np.array([inf, inf, np.pi], dtype=np.float32), dtype=np.float32)
    return spaces.Box(-inf, inf, shape=(3,), dtype=np.float32)


def observation_space(names: Sequence[str], depth_shape: tuple[int, int] = (128, 128),
                      max_depth: float = 10.0) -> spaces.Dict:
    """Dict space of the named sensors."""
    check_sensor_names(names)
    return spaces.Dict({n: sensor_space(n, depth_shape, max_depth) for n in names})


def observe(sim: RearrangeSim, target: SensorTarget, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Observation dict of the named sensors."""
    return {n: SENSORS[n](sim, target) for n in names}


def wrap_angle(a: float) -> float:
    """Angle in [-pi, pi)."""
    return float((a + np.pi) % (2 * np.pi) - np.pi)


def camera_settings(sim_cfg: Mapping[str, Any] | None) -> tuple[tuple[int, int], float]:
    """(depth (height, width), max_depth) of the head camera from a sim config (`configs/sim/`).

    Keys missing from `sim_cfg` (or no `sim_cfg`) come from `configs/sim/default.yaml`. Both depth
    backends (`camera.head.backend`: render, raycast) give this shape; an unknown backend is a ValueError.
    """
    cam = HeadCamera.from_sim_cfg(sim_cfg)
    return (cam.height, cam.width), cam.max_depth


@dataclass(frozen=True)
class HeadCamera:
    """The head depth camera of a sim config (`camera.head`; missing keys from configs/sim/default.yaml).

    A sim builds its head camera's pose and field of view into the model (`fovy_deg`, `tilt_deg`, and
    `near` for rendering); `head_depth_as` gives another camera's image from the same model, so a
    skill trained with another size, max depth or backend can run on a sim built for a different one.
    """

    backend: str  # render | raycast
    width: int
    height: int
    max_depth: float
    fovy_deg: float
    tilt_deg: float
    near: float

    @classmethod
    def from_sim_cfg(cls, sim_cfg: Mapping[str, Any] | None) -> HeadCamera:
        """The head camera of `sim_cfg`; ValueError (one line) for an unknown backend."""
        from rearrange.raycast import check_depth_backend

        cam = dict(_default_head_camera())
        cam.update(((sim_cfg or {}).get("camera", {}) or {}).get("head", {}) or {})
        return cls(backend=check_depth_backend(str(cam["backend"])), width=int(cam["width"]),
                   height=int(cam["height"]), max_depth=float(cam["max_depth"]), fovy_deg=float(cam["fovy_deg"]),
                   tilt_deg=float(cam["tilt_deg"]), near=float(cam["near"]))

    @property
    def shape(self) -> tuple[int, int, int]:
        """Shape of its head_depth observation, (height, width, 1)."""
        return (self.height, self.width, 1)

    def as_cfg(self) -> dict[str, Any]:
        """The `camera.head` node of this camera (for a sim config)."""
        return {"backend": self.backend, "width": self.width, "height": self.height, "max_depth": self.max_depth,
                "fovy_deg": self.fovy_deg, "tilt_deg": self.tilt_deg, "near": self.near}

    def unservable_by(self, sim_camera: HeadCamera) -> str | None:
        """Why a sim built with `sim_camera` cannot give this camera's depth image (None: it can).

        Size, max depth and backend can differ; field of view and tilt are built into the model, and so
        is the near plane of rendered depth, whose far plane is 4 x the sim camera's max_depth.
        """
        for name in ("fovy_deg", "tilt_deg"):
            if getattr(self, name) != getattr(sim_camera, name):
                return (f"camera.head.{name}={getattr(self, name):g} but the env's head camera has "
                        f"{getattr(sim_camera, name):g} (only backend, width, height and max_depth may differ)")
        if self.backend == "render" and self.near != sim_camera.near:
            return (f"rendered depth with camera.head.near={self.near:g} but the env's head camera has "
                    f"{sim_camera.near:g}")
        if self.backend == "render" and self.max_depth > 4.0 * sim_camera.max_depth:
            return (f"rendered depth to camera.head.max_depth={self.max_depth:g}, beyond the env's far plane "
                    f"({4.0 * sim_camera.max_depth:g} m)")
        return None


def head_depth_as(sim: RearrangeSim, camera: HeadCamera) -> np.ndarray:
    """The head_depth observation `camera` would give, from `sim`'s head camera (whose own settings stay
    unchanged); check `camera.unservable_by(...)` against the sim's camera first."""
    if camera.backend == "raycast":
        return sim.raycast_head_depth(camera.width, camera.height, camera.max_depth)
    return sim.render_head_depth(camera.width, camera.height, camera.max_depth)


@functools.lru_cache(maxsize=1)
def _default_head_camera() -> Mapping[str, Any]:
    from configs.compose import load_config_file

    return load_config_file("sim/default.yaml")["camera"]["head"]
