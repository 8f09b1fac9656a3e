"""Base path following for the oracles: pure pursuit on the navigation map's shortest path.

The follower plans with `sim.navmap.path(start, goal)` and each step returns the 2 base velocity
action entries (forward, turn) in [-1, 1]. It turns in place when the path bends sharply (the map
is inflated by the base radius, so staying on the path keeps the base clear of walls), slows down
before the goal so it stops on it, and replans when the base is blocked or has left the path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rearrange.apartment import Box, boxes_frame
from rearrange.nav_maps import moving_obstacles, planning_map
from rearrange.sensors import wrap_angle


def base_step_sizes(sim) -> tuple[float, float]:
    """(metres, radians) one full base action moves per policy step (the simulator owns them)."""
    base = sim.cfg["base"]
    return float(base["max_lin_per_step"]), float(base["max_ang_per_step"])


DOOR_MIN_HEIGHT = 1.2  # m: an open moving part whose top is higher than this blocks reaching past it


@dataclass(frozen=True)
class FollowGains:
    lookahead: float  # metres ahead on the path the pursuit point lies
    turn_in_place: float  # heading error (rad) above which the base turns without moving forward
    heading_gain: float  # fraction of the heading error corrected per step
    goal_tolerance: float  # metres: arrived
    near_goal: float  # metres from the end within which the base no longer turns on the spot
    yaw_tolerance: float  # radians: facing
    off_path: float  # metres from the path that trigger a replan
    stuck_steps: int  # blocked steps in a row that trigger a back-off and a replan
    backoff_steps: int  # steps the base backs straight up when stuck (the arm, in front, comes free)
    plan_radii: tuple[float, ...]  # planning maps inflated by these radii, widest first (the arm sticks out)

    @staticmethod
    def from_cfg(cfg: Mapping) -> FollowGains:
        return FollowGains(
            lookahead=float(cfg["lookahead"]),
            turn_in_place=float(cfg["turn_in_place"]),
            heading_gain=float(cfg["heading_gain"]),
            goal_tolerance=float(cfg["goal_tolerance"]),
            near_goal=float(cfg["near_goal"]),
            yaw_tolerance=float(cfg["yaw_tolerance"]),
            off_path=float(cfg["off_path"]),
            stuck_steps=int(cfg["stuck_steps"]),
            backoff_steps=int(cfg["backoff_steps"]),
            plan_radii=tuple(float(r) for r in cfg["plan_radii"]),
        )


def turn_action(sim, yaw_error: float, gain: float) -> float:
    """Angular action in [-1, 1] that removes `gain` of a yaw error this step (never overshoots)."""
    _, ang = base_step_sizes(sim)
    return float(np.clip(gain * yaw_error / ang, -1.0, 1.0))


class BaseFollower:
    """Follows the navmap path to a goal point, then (optionally) turns to a final heading."""

    def __init__(self, gains: FollowGains):
        self.gains = gains
        self.goal: np.ndarray | None = None
        self.path = np.zeros((0, 2))
        self._progress = 0
        self._blocked = 0
        self._backoff = 0
        self._turn_the_long_way = False
        self.extra_obstacles: tuple = ()  # boxes the sim's map does not know (e.g. an open door)

    def clear(self) -> None:
        """Forget the goal, path and extra obstacles (the planning maps stay cached)."""
        self.extra_obstacles = ()
        self.goal = None
        self.path = np.zeros((0, 2))
        self._progress = 0
        self._blocked = 0
        self._backoff = 0
        self._turn_the_long_way = False

    def set_goal(self, sim, goal_xy: np.ndarray) -> bool:
        """Plan a path from the current base position to `goal_xy`; False if unreachable."""
        self.goal = np.asarray(goal_xy, dtype=np.float64)[:2].copy()
        return self._replan(sim)

    def _replan(self, sim) -> bool:
        start = np.asarray(sim.base_xy, dtype=np.float64)
        extra = self._obstacles(sim)
        path = None
        for radius in self.gains.plan_radii:
            path = self._wide_path(sim, start, radius, extra)
            if path is not None:
                break
        if path is None:
            path = np.asarray(self._map(sim, sim.navmap.robot_radius, extra).path(start, self.goal),
                              dtype=np.float64).reshape(-1, 2)
        self._progress = 0
        self._blocked = 0
        if len(path) == 0:
            self.path = np.zeros((0, 2))
            return False
        # the last waypoint is the goal when it is navigable, else the nearest navigable cell on its side of any wall
        self.path = path
        return True

    def _obstacles(self, sim) -> tuple:
        """Open doors and drawers where they are now (`moving_obstacles`) plus `extra_obstacles`."""
        return moving_obstacles(sim, self.extra_obstacles)

    def _wide_path(self, sim, start: np.ndarray, radius: float, extra: tuple) -> np.ndarray | None:
        """A path on a map inflated by `radius` (so the arm, which sticks out of the base disc,
        keeps off walls), joined to the true start and goal by straight segments that are free on the
        map at the base radius; None when that is impossible."""
        navmap = self._map(sim, sim.navmap.robot_radius, extra)
        goal = navmap.reach_point(self.goal)
        if goal is None:
            return None
        wide = np.asarray(self._map(sim, radius, extra).path(start, goal), dtype=np.float64).reshape(-1, 2)
        if len(wide) == 0:
            return None
        pts = np.vstack([start[None], wide, goal[None]])
        if not (navmap.segment_clear(pts[0], pts[1]) and navmap.segment_clear(pts[-2], pts[-1])):
            return None
        keep = [0] + [i for i in range(1, len(pts)) if np.linalg.norm(pts[i] - pts[i - 1]) > 1e-6]
        return pts[keep]

    def _map(self, sim, radius: float, extra: tuple):
        return planning_map(sim, radius, extra)

    @property
    def end(self) -> np.ndarray:
        """Where following the path stops: its last waypoint (the goal when it is navigable)."""
        return self.path[-1] if len(self.path) else np.asarray(self.goal)

    def arrived(self, sim) -> bool:
        """At the path end: within `goal_tolerance`, or beside it (within `near_goal`) with nothing left
        to gain by driving forward or backward."""
        if len(self.path) == 0:
            return False
        d = self.end - np.asarray(sim.base_xy, dtype=np.float64)
        remaining = float(np.linalg.norm(d))
        yaw = float(sim.base_yaw)
        along = float(d @ np.array([np.cos(yaw), np.sin(yaw)]))
        g = self.gains
        return remaining < g.goal_tolerance or (remaining < g.near_goal and abs(along) < 0.5 * g.goal_tolerance)

    def _pursuit_point(self, xy: np.ndarray) -> tuple[np.ndarray, float]:
        """The point `lookahead` metres further along the path than the closest one, and the distance
        from `xy` to the path. Progress along the path never goes backwards."""
        best_seg, best_t, off = self._progress, 0.0, np.inf
        for k in range(self._progress, max(len(self.path) - 1, self._progress + 1)):
            a = self.path[k]
            b = self.path[min(k + 1, len(self.path) - 1)]
            ab = b - a
            t = float(np.clip((xy - a) @ ab / max(float(ab @ ab), 1e-12), 0.0, 1.0))
            d = float(np.linalg.norm(a + t * ab - xy))
            if d < off - 1e-9:
                best_seg, best_t, off = k, t, d
        self._progress = best_seg
        remaining = self.gains.lookahead
        k, t = best_seg, best_t
        while k < len(self.path) - 1:
            a, b = self.path[k], self.path[k + 1]
            seg = float(np.linalg.norm(b - a))
            left = (1.0 - t) * seg
            if left >= remaining:
                return a + (t + remaining / max(seg, 1e-12)) * (b - a), off
            remaining -= left
            k, t = k + 1, 0.0
        return self.path[-1], off

    def act(self, sim) -> np.ndarray:
        """(2,) base action (forward, turn) following the path; zeros once arrived."""
        g = self.gains
        if self.goal is None:
            return np.zeros(2)
        # stuck (a stalled base: the arm against a door, a wall corner): back up, then replan
        backing, backed = self._backing(sim)
        if backing:
            return np.array([-1.0, 0.0])
        if backed and not self._replan(sim):
            return np.zeros(2)
        if self._stuck(sim):
            return np.array([-1.0, 0.0])
        xy = np.asarray(sim.base_xy, dtype=np.float64)
        if (len(self.path) == 0 or self._blocked >= g.stuck_steps) and not self._replan(sim):
            return np.zeros(2)
        if self.arrived(sim):
            return np.zeros(2)
        target, off = self._pursuit_point(xy)
        if off > g.off_path and not self._replan(sim):
            return np.zeros(2)
        lin_step, _ = base_step_sizes(sim)
        delta = target - xy
        heading_error = wrap_angle(float(np.arctan2(delta[1], delta[0])) - float(sim.base_yaw))
        turn = turn_action(sim, heading_error, g.heading_gain)
        remaining = float(np.linalg.norm(self.end - xy))
        if remaining < g.near_goal:
            # close to the end: no more turning on the spot, drive forward/backward onto it
            yaw = float(sim.base_yaw)
            along = float((self.end - xy) @ np.array([np.cos(yaw), np.sin(yaw)]))
            turn = turn if along > 0.0 and abs(heading_error) < g.turn_in_place else 0.0
            return np.array([float(np.clip(along / lin_step, -1.0, 1.0)), turn])
        if abs(heading_error) > g.turn_in_place:
            return np.array([0.0, turn])
        forward = float(np.clip(remaining / lin_step, 0.0, 1.0)) * float(np.cos(heading_error))
        return np.array([forward, turn])

    def face(self, sim, yaw: float) -> tuple[np.ndarray, bool]:
        """(2,) base action turning in place toward `yaw`, and whether it is already within tolerance."""
        err = wrap_angle(yaw - float(sim.base_yaw))
        if abs(err) < self.gains.yaw_tolerance:
            return np.zeros(2), True
        # the turn stalled (the arm swept into something): back up, then turn the other way round
        if self._backing(sim)[0]:
            return np.array([-1.0, 0.0]), False
        if self._stuck(sim):
            self._turn_the_long_way = not self._turn_the_long_way
            return np.array([-1.0, 0.0]), False
        if self._turn_the_long_way:
            err -= float(np.sign(err)) * 2.0 * np.pi
        return np.array([0.0, turn_action(sim, err, self.gains.heading_gain)]), False

    def _backing(self, sim) -> tuple[bool, bool]:
        """During a back-off: (back up this step, the back-off just ended). A back-off that stalls
        itself ends at once."""
        if self._backoff <= 0:
            return False, False
        self._backoff = 0 if sim.base_collided else self._backoff - 1
        return self._backoff > 0, self._backoff == 0

    def _stuck(self, sim) -> bool:
        """Counts stalled steps; after `stuck_steps` in a row, starts a back-off of `backoff_steps`
        steps (shared by `act` and `face`). True: back up this step."""
        g = self.gains
        self._blocked = self._blocked + 1 if sim.base_collided else 0
        if self._blocked >= g.stuck_steps and g.backoff_steps > 0:
            self._blocked = 0
            self._backoff = g.backoff_steps
            return True
        return False

    def face_point(self, sim, xy: np.ndarray) -> tuple[np.ndarray, bool]:
        """Turn in place to face the world point `xy`."""
        d = np.asarray(xy, dtype=np.float64)[:2] - np.asarray(sim.base_xy, dtype=np.float64)
        return self.face(sim, float(np.arctan2(d[1], d[0])))


def standing_point(sim, target_xy: np.ndarray, preferred: float, max_dist: float,
                   geodesic_weight: float, valid=None, navmap=None) -> np.ndarray | None:
    """A navigable base position from which to work on a world point (object, goal, handle).

    Candidates are navigable cell centres within `max_dist` of the target; the cost is
    `|distance to target - preferred| + geodesic_weight * geodesic distance from the robot`, so the
    base stands close to the preferred working distance, on the robot's side when there is a choice.
    None if no navigable point is near enough. `navmap` defaults to `planning_map(sim)` (the static
    map plus open doors and drawers).
    """
    navmap = planning_map(sim) if navmap is None else navmap
    target = np.asarray(target_xy, dtype=np.float64)[:2]
    res = navmap.resolution
    lo = navmap.world_to_cell(target - max_dist)
    hi = navmap.world_to_cell(target + max_dist)
    i0, j0 = max(lo[0], 0), max(lo[1], 0)
    i1, j1 = min(hi[0] + 1, navmap.shape[0]), min(hi[1] + 1, navmap.shape[1])
    if i0 >= i1 or j0 >= j1:
        return None
    mask = navmap.largest_component_mask[i0:i1, j0:j1]
    cells = np.argwhere(mask) + np.array([i0, j0])
    if len(cells) == 0:
        return None
    centres = navmap.origin + (cells + 0.5) * res
    d_target = np.linalg.norm(centres - target, axis=1)
    keep = d_target <= max_dist
    if valid is not None:
        keep &= np.asarray(valid(centres), dtype=bool)
    cells, centres, d_target = cells[keep], centres[keep], d_target[keep]
    if len(cells) == 0:
        return None
    field = navmap.distance_field(np.asarray(sim.base_xy, dtype=np.float64))
    geo = field[cells[:, 0], cells[:, 1]] if field is not None else np.zeros(len(cells))
    cost = np.abs(d_target - preferred) + geodesic_weight * np.where(np.isfinite(geo), geo, 1e6)
    return centres[int(np.argmin(cost))]


def boxes_distance(boxes: Sequence[Box], points_xy: np.ndarray) -> np.ndarray:
    """Horizontal distance from each of (N, 2) points to each box's footprint (0 inside), shape (boxes, N)."""
    lx, ly, half = boxes_frame(boxes, points_xy)
    ex = np.maximum(np.abs(lx) - half[:, 0:1], 0.0)
    ey = np.maximum(np.abs(ly) - half[:, 1:2], 0.0)
    return np.hypot(ex, ey)


def box_distance(box, points_xy: np.ndarray) -> np.ndarray:
    """Horizontal distance from each of (N, 2) points to a box's footprint (0 inside)."""
    return boxes_distance([box], points_xy)[0]


def furniture_clearance(sim, points_xy: np.ndarray, above_z: float) -> np.ndarray:
    """Horizontal distance from each of (N, 2) points to the nearest wall or furniture footprint whose
    top is higher than `above_z` (what an arm held at that height would hit)."""
    pts = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    boxes = [b for b in (*sim.layout.obstacles_2d(), *sim.moving_part_boxes())
             if float(b.center[2]) + float(b.half_size[2]) > above_z]
    if not boxes:
        return np.full(len(pts), np.inf)
    return boxes_distance(boxes, pts).min(axis=0)  # every box at once


def container_outward(sim, point: np.ndarray) -> np.ndarray | None:
    """(2,) unit direction out of the opening of the container whose inside holds the 3-D `point` (a
    fridge shelf, a closed drawer's box), or None when the point is in no container. The robot faces a
    container along `Articulated.facing_yaw`, so its opening points the other way."""
    rec = sim.layout.container_receptacle_at(point)
    if rec is None:
        return None
    yaw = float(sim.layout.articulated[rec.container].facing_yaw)
    return -np.array([np.cos(yaw), np.sin(yaw)])


def rest_arm_clear(sim, target: np.ndarray, arm_points: np.ndarray, height: float, margin: float,
                   max_front_angle: float = np.pi / 4):
    """Standing-point filter: no wall (or open door) between the base and the target, and with the base
    facing it the arm at rest (base-frame xy points `arm_points`, e.g. ee and elbow) stays `margin` clear
    of walls and furniture taller than `height`. A 3-D target inside a container (a fridge shelf) is
    only reached through the opening: within `max_front_angle` of its outward direction."""
    outward = container_outward(sim, target)
    target = np.asarray(target, dtype=np.float64)[:2]
    arm = np.asarray(arm_points, dtype=np.float64).reshape(-1, 2)

    def valid(cands: np.ndarray) -> np.ndarray:
        d = target - cands
        fwd = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-9)
        left = np.stack([-fwd[:, 1], fwd[:, 0]], axis=1)
        ok = ~wall_between(sim, cands, target)
        if outward is not None:
            ok &= (-fwd @ outward) >= np.cos(max_front_angle)
        for px, py in arm:
            ok &= furniture_clearance(sim, cands + px * fwd + py * left, height) > margin
        return ok

    return valid


def reach_clear(sim, target: np.ndarray, max_front_angle: float = np.pi / 4):
    """The part of `rest_arm_clear` that does not depend on the arm: no wall or open door in the way, and
    a target inside a container is approached through its opening (the fallback when no standing point
    keeps the resting arm clear, e.g. in front of a fridge whose footprint includes its inside)."""
    return rest_arm_clear(sim, target, np.zeros((0, 2)), 0.0, 0.0, max_front_angle)


def wall_between(sim, cands: np.ndarray, target_xy: np.ndarray, step: float = 0.02) -> np.ndarray:
    """For each of (N, 2) candidate base positions: does the straight line to `target_xy` cross a wall
    or an open door (a moving part taller than `DOOR_MIN_HEIGHT`, unless the target is on it)?"""
    target = np.asarray(target_xy, dtype=np.float64)[:2]
    cands = np.asarray(cands, dtype=np.float64).reshape(-1, 2)
    doors = [b for b in sim.moving_part_boxes() if float(b.center[2]) + float(b.half_size[2]) > DOOR_MIN_HEIGHT]
    blockers = list(sim.layout.walls) + [b for b in doors if box_distance(b, target)[0] > 0.1]
    n = max(int(np.ceil(float(np.max(np.linalg.norm(cands - target, axis=1), initial=0.0)) / step)), 1)
    # every sample of every line at once, (n + 1, N, 2): one footprint test per blocker, not per sample
    pts = cands[None] + np.linspace(0.0, 1.0, n + 1)[:, None, None] * (target - cands)[None]
    flat = pts.reshape(-1, 2)
    lx, ly, half = boxes_frame(blockers, flat)  # every blocker at once, as in_footprint tests one
    crossed = ((np.abs(lx) <= half[:, 0:1]) & (np.abs(ly) <= half[:, 1:2])).any(axis=0)
    return crossed.reshape(len(pts), len(cands)).any(axis=0)


def predict_base_pose(sim, action: np.ndarray) -> tuple[np.ndarray, float]:
    """Where a base action would put the base after one step (ignoring collisions)."""
    lin_step, ang_step = base_step_sizes(sim)
    lin = float(np.clip(action[0], -1.0, 1.0)) * lin_step
    ang = float(np.clip(action[1], -1.0, 1.0)) * ang_step
    yaw = float(sim.base_yaw)
    mid = yaw + ang / 2.0
    return np.asarray(sim.base_xy, dtype=np.float64) + lin * np.array([np.cos(mid), np.sin(mid)]), yaw + ang


def arm_clearance_at(sim, xy: np.ndarray, yaw: float, arm_points: np.ndarray, height: float) -> float:
    """Smallest distance from the arm's base-frame xy points, with the base at (xy, yaw), to walls and
    furniture taller than `height`."""
    c, s = np.cos(yaw), np.sin(yaw)
    pts = np.asarray(arm_points, dtype=np.float64).reshape(-1, 2)
    world = np.asarray(xy, dtype=np.float64) + np.stack([c * pts[:, 0] - s * pts[:, 1], s * pts[:, 0] + c * pts[:, 1]], 1)
    return float(np.min(furniture_clearance(sim, world, height)))


def arm_safe_base_action(sim, action: np.ndarray, arm_points: np.ndarray, height: float,
                         margin: float) -> np.ndarray:
    """The base action, or the first of a few alternatives (slower turn, backing up, turning the
    other way), that does not swing the arm into walls or tall furniture: after the step the arm's
    clearance must be at least `margin`, or at least not smaller than now. Motions that would leave
    the navigable area are not alternatives (the base could not make them). None if nothing is safe.
    """
    now = arm_clearance_at(sim, sim.base_xy, sim.base_yaw, arm_points, height)
    a = np.asarray(action, dtype=np.float64)
    candidates = [a, np.array([a[0], 0.5 * a[1]]), np.array([-1.0, a[1]]), np.array([-1.0, 0.0]),
                  np.array([0.0, -a[1]])]
    for k, cand in enumerate(candidates):
        xy, yaw = predict_base_pose(sim, cand)
        if k > 0 and cand[0] != 0.0 and not sim.navmap.is_navigable(xy):
            continue
        after = arm_clearance_at(sim, xy, yaw, arm_points, height)
        if after >= margin or after >= now - 1e-6:
            return cand
    return None
