"""Reaching into a container through its front opening (the fridge's shelves).

An object on a fridge shelf has a board or the fridge top above it, so the arm cannot come down onto
it from high up: the oracles bring the suction cup, pointing down, to an entry point in front of the
opening at a height where the wrist stays under that ceiling, move the base straight in, reach in
horizontally, and come out the same way. Drawers are open from above once pulled out and need none
of this, but the arm must cross a drawer's front and sides above them (`rim_top`): a cup or a held
object moving low toward a goal inside pushes the drawer shut, and one moving low out of it drags the
drawer against its stop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rearrange.apartment import in_footprint

DOWN = np.array([0.0, 0.0, -1.0])


@dataclass(frozen=True)
class Opening:
    """Where a point inside a front-opening container is reached from."""

    outward: np.ndarray  # (2,) unit vector out of the opening
    front: float  # m from the point to the container's front face, along `outward`
    ceiling: float  # height (m) of the underside of the lowest solid above the point


def opening_of(sim, point: np.ndarray, front_gap: float) -> Opening | None:
    """The opening through which the 3-D `point` (an object or a goal on a shelf) is reached, or None
    when it lies in no hinged-door container. `front_gap` (m) is how far the container's front face lies
    beyond the receptacle's front edge."""
    p = np.asarray(point, dtype=np.float64)
    layout = sim.layout
    rec = layout.container_receptacle_at(p)
    if rec is None or layout.articulated[rec.container].joint_type != "hinge":
        return None
    yaw = float(layout.articulated[rec.container].facing_yaw)
    outward = -np.array([np.cos(yaw), np.sin(yaw)])
    c, s = np.cos(rec.yaw), np.sin(rec.yaw)
    local = np.array([c * outward[0] + s * outward[1], -s * outward[0] + c * outward[1]])
    half = abs(local[0]) * rec.half_extent[0] + abs(local[1]) * rec.half_extent[1]
    front = float(np.dot(np.asarray(rec.center[:2]) - p[:2], outward)) + half + front_gap
    ceiling = np.inf
    for box in layout.furniture:
        bottom = float(box.center[2]) - float(box.half_size[2])
        if bottom > p[2] + 0.02 and in_footprint(box.center, box.half_size, box.yaw, p[:2])[0]:
            ceiling = min(ceiling, bottom)
    return Opening(outward, front, float(ceiling))


def rim_top(sim, start_xy: np.ndarray, end_xy: np.ndarray, pad: float, max_top: float) -> float:
    """Height of the top of the highest open-container part (a drawer's front, sides, back) whose floor
    plan comes within `pad` of the straight horizontal line from `start_xy` to `end_xy`; -inf if none.
    Parts taller than `max_top` (an open fridge door) are gone around, never over, and do not count."""
    a = np.asarray(start_xy, dtype=np.float64)[:2]
    b = np.asarray(end_xy, dtype=np.float64)[:2]
    n = max(2, int(np.ceil(float(np.linalg.norm(b - a)) / 0.02)) + 1)
    line = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
    top = -np.inf
    for box in sim.moving_part_boxes():
        box_top = float(box.center[2]) + float(box.half_size[2])
        if top < box_top <= max_top and np.any(in_footprint(box.center, box.half_size, box.yaw, line, pad)):
            top = box_top
    return top


def over_rims(sim, ee_goal: np.ndarray, hang: float, pad: float, cfg, near: float) -> np.ndarray:
    """`ee_goal`, raised while the ee is more than `near` from it horizontally so that the cup and what
    hangs `hang` below it (within `pad` of the cup's axis) pass `cfg["margin"]` over the rims of the
    open drawers in between; once over it, the arm goes straight down (`cfg`: the oracle's `rim`)."""
    goal = np.array(ee_goal, dtype=np.float64)
    ee = np.asarray(sim.ee_pos, dtype=np.float64)
    if float(np.linalg.norm(goal[:2] - ee[:2])) > near:
        goal[2] = max(goal[2], rim_top(sim, ee[:2], goal[:2], pad, cfg["max_top"]) + hang + cfg["margin"])
    return goal


def rim_exit_height(sim, hang: float, pad: float, cfg) -> float:
    """ee height at which the cup and what hangs `hang` below it clear the open drawers' rims between
    the ee and its rest position (-inf if there are none): the arm rises to it before heading home."""
    ee = np.asarray(sim.ee_pos, dtype=np.float64)
    return rim_top(sim, ee[:2], rest_world(sim)[:2], pad, cfg["max_top"]) + hang + cfg["margin"]


def reach_axis(opening: Opening, tilt_deg: float) -> np.ndarray:
    """The direction the suction cup points while working inside: down, tilted `tilt_deg` into the
    container (away from the robot), which brings the wrist lower and nearer the robot."""
    t = np.deg2rad(float(tilt_deg))
    inward = -np.asarray(opening.outward, dtype=np.float64)
    return np.array([np.sin(t) * inward[0], np.sin(t) * inward[1], -np.cos(t)])


def tilt_for(opening: Opening, cfg) -> float:
    """The cup's tilt into the container (degrees, `cfg`: the oracle's `shelf`): `cfg["tilt_deg"]` under
    a low ceiling (the lower shelf: the forearm must pass under the board, and less tilt put the elbow
    against the side wall), `cfg["high_tilt_deg"]` under a ceiling at least `cfg["high_ceiling"]` high
    (the upper shelf: turning the wrist less saves steps)."""
    return float(cfg["high_tilt_deg"] if opening.ceiling >= cfg["high_ceiling"] else cfg["tilt_deg"])


def inside_height(opening: Opening, wanted: float, arm_above_cup: float, margin: float,
                  tilt_deg: float = 0.0) -> float:
    """The ee height to work at inside: `wanted`, but low enough that the wrist above the cup (pointing
    down, tilted `tilt_deg` into the container) stays `margin` under the ceiling."""
    return float(min(wanted, opening.ceiling - arm_above_cup * np.cos(np.deg2rad(float(tilt_deg))) - margin))


def entry_point(opening: Opening, point: np.ndarray, z: float, clearance: float) -> np.ndarray:
    """World point `clearance` in front of the opening, on the line out from `point`, at height `z`."""
    xy = np.asarray(point, dtype=np.float64)[:2] + (opening.front + clearance) * opening.outward
    return np.array([xy[0], xy[1], z])


def stand_in_front(opening: Opening, point: np.ndarray, distance: float) -> np.ndarray:
    """Base position straight in front of the opening, `distance` from the container's front face."""
    return np.asarray(point, dtype=np.float64)[:2] + (opening.front + distance) * opening.outward


def front_distance(opening: Opening, point: np.ndarray, xy: np.ndarray) -> float:
    """How far (m) the world point `xy` (the base centre, the suction cup) is in front of the
    container's front face (< 0: inside); `point` is the one the opening was found for."""
    d = np.asarray(xy, dtype=np.float64)[:2] - np.asarray(point, dtype=np.float64)[:2]
    return float(np.dot(d, opening.outward)) - opening.front


def in_front(opening: Opening, point: np.ndarray, xy: np.ndarray, depth: float, half_width: float) -> bool:
    """`xy` (the base centre) lies in front of the opening: at most `depth` m in front of the container's
    front face and within `half_width` m of the line straight out from `point`. The floor there is kept
    clear (layout FRONT_CLEARANCE and the fridge's door zone), so the arm may work low while driving."""
    d = np.asarray(xy, dtype=np.float64)[:2] - np.asarray(point, dtype=np.float64)[:2]
    out = np.asarray(opening.outward, dtype=np.float64)
    along = float(d @ out) - opening.front
    lateral = abs(float(d @ np.array([-out[1], out[0]])))
    return 0.0 <= along <= depth and lateral <= half_width


def low_carry(sim, z: float) -> np.ndarray:
    """World point above the resting ee's floor position at height `z`: the cup held in front of the base
    as at rest, but already as low as it will enter a container."""
    p = rest_world(sim)
    p[2] = z
    return p


def drive_in(sim, follower, opening: Opening, point: np.ndarray, cfg) -> tuple[np.ndarray, bool]:
    """Base action driving straight into the opening (turning to face straight in) until `point`
    is within `cfg["reach"]` (`cfg["reach_upper"]` from `cfg["upper_from"]` up) of the base centre, the
    base disc comes within `cfg["base_margin"]` of the front face, or the base is blocked. Returns (base
    action, finished)."""
    dist = float(np.linalg.norm(np.asarray(point, dtype=np.float64)[:2] - sim.base_xy))
    radius = float(sim.cfg["base"]["radius"])
    # an upper shelf from farther out: close in, the elbow (bent out beside the high cup) hits the side wall
    reach = cfg["reach_upper"] if float(point[2]) >= cfg["upper_from"] else cfg["reach"]
    if dist <= reach or front_distance(opening, point, sim.base_xy) <= radius + cfg["base_margin"] or sim.base_collided:
        return np.zeros(2), True
    # facing straight in, not at `point`: turned toward a point near a side wall, the elbow (right of the
    # base) hit the fridge's right wall
    inward = -np.asarray(opening.outward, dtype=np.float64)
    depth = float((np.asarray(point, dtype=np.float64)[:2] - sim.base_xy) @ inward)
    turn, _ = follower.face_point(sim, sim.base_xy + max(depth, 0.1) * inward)
    return np.array([cfg["drive_speed"], turn[1]]), False


def drive_out(sim, opening: Opening, point: np.ndarray, cfg) -> tuple[np.ndarray, bool]:
    """Base action backing straight out until the base stands `cfg["stand_dist"]` in front of the
    container again (the arm, still inside, comes out horizontally). Returns (base action, finished)."""
    if front_distance(opening, point, sim.base_xy) >= cfg["stand_dist"]:
        return np.zeros(2), True
    return np.array([-cfg["drive_speed"], 0.0]), False


def base_to_world(sim, p_base: np.ndarray) -> np.ndarray:
    """A base-frame point (x forward, y left, z up from the floor) in the world, for the current base pose."""
    p = np.asarray(p_base, dtype=np.float64)
    c, s = np.cos(sim.base_yaw), np.sin(sim.base_yaw)
    xy = np.asarray(sim.base_xy, dtype=np.float64) + np.array([c * p[0] - s * p[1], s * p[0] + c * p[1]])
    return np.array([xy[0], xy[1], p[2]])


def rest_world(sim) -> np.ndarray:
    """World position of the resting ee for the current base pose."""
    return base_to_world(sim, sim.resting_pos_base)


def work_height(opening: Opening | None, wanted: float, cfg) -> float:
    """`inside_height` with the `shelf` config (arm above the cup, ceiling margin, tilt); `wanted`
    unchanged outside a container."""
    if opening is None:
        return float(wanted)
    return inside_height(opening, wanted, cfg["arm_above_cup"], cfg["ceiling_margin"], tilt_for(opening, cfg))


def arm_to_rest(ik, sim, opening: Opening | None, cfg) -> np.ndarray:
    """Arm action back to rest. Out of a container the arm is far from its rest joints: while the ee is
    more than `cfg["rest_switch"]` from rest it goes straight toward the resting ee (fast; the cup free
    to stay tilted: turning it back down cost the wrist ~60 steps, and the tasks only count where the ee
    is), then the joints go to rest."""
    if opening is not None and ik.rest_error(sim) > cfg["rest_switch"]:
        return ik.action_towards(sim, rest_world(sim))
    return ik.action_to_rest(sim)
