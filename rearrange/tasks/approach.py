"""Approach shaping for the pick and place skills (a deviation from habitat-lab, off by default).

habitat-lab pays pick and place only for the decrease of a Euclidean distance (ee->object,
object->goal). With base movement that has a local optimum: the base pressed against the furniture
between the robot and the target (an object deep on a table, reachable only from another side).
Measured 2026-11-23 on the learned Pick (40 val episodes): 15 of 20 failures never brought the base
within 0.8 m of the object in their first 100 steps, 17 of 20 had the base blocked in >= 80% of steps.

`ApproachShaping` adds `approach_reward` x the decrease of the GEODESIC distance, on the floor's
navigation grid, from the base to the set of navigable base positions within `approach_reach`
(horizontal) of the target point. The grid is the layout's nav map with the open doors and drawers
where they are at the episode start (the obstacles the base sees; `nav_maps.planning_map`, cached
per layout and articulated state, shared with the oracles); the multi-source distance field is built
once per episode reset (one dijkstra), and each step reads the base's cell from it (O(1)). For a
target inside a container (fridge shelf, drawer) and `approach_opening_halfwidth` > 0 the region is
only the points straight out of the container's opening (within that half width of the line out of
it), as the episode generator requires: a base beside the fridge is within 0.8 m of a shelf object
but cannot reach it through the side wall.

`OpeningPath` does the same for the held object in place (`opening_path_offset` > 0): its distance to a
goal on a fridge shelf is measured through an entry point in front of the opening, not through the
shell's walls.

`ContainerExit` is pick's way back out (`exit_offset` > 0): once a fridge-shelf object is held, how far it
still lies inside the compartment is added to the ee->rest distance its dense term pays for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from configs.ranges import check_range
from rearrange.nav_maps import planning_map
from rearrange.navmap import NavMap
from rearrange.tasks.rewards import DistanceDelta

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

def check_approach_cfg(reward_cfg: Mapping[str, Any], skill: str) -> tuple[float, float, float]:
    """(approach_reward, approach_reach, approach_opening_halfwidth) of a pick/place reward config;
    ValueError on a bad value.

    A config without `approach_reward` (one saved before the term existed) has the term off; one without
    `approach_opening_halfwidth` (saved before it existed) uses the plain radius for containers too.
    """
    coef = float(reward_cfg.get("approach_reward", 0.0))
    if "approach_reach" not in reward_cfg and coef == 0.0:
        return 0.0, 1.0, 0.0  # off: the reach is never used
    if "approach_reach" not in reward_cfg:
        raise ValueError(f"skill.reward.approach_reach is missing (skill {skill} sets approach_reward)")
    where = f", skill {skill}"
    check_range("skill.reward.approach_reward", coef, where=where)
    reach = check_range("skill.reward.approach_reach", reward_cfg["approach_reach"], low_open=True, unit="m", where=where)
    half_width = check_range("skill.reward.approach_opening_halfwidth", reward_cfg.get("approach_opening_halfwidth", 0.0),
                             unit="m", where=where)
    return coef, reach, half_width


class ApproachShaping:
    """`coef` x decrease of the geodesic base distance to the navigable points within `reach` of a
    target; 0 when `coef` is 0 (nothing is built) and once `stop()` was called. `opening_halfwidth` > 0:
    a target in a container is approached through the container's opening (module docstring)."""

    def __init__(self, coef: float, reach: float, opening_halfwidth: float = 0.0) -> None:
        self.coef = float(coef)
        self.reach = float(reach)
        self.opening_halfwidth = float(opening_halfwidth)
        self.delta = DistanceDelta(self.coef)
        self.navmap: NavMap | None = None
        self.field: np.ndarray | None = None
        self.active = False

    def reset(self, sim: RearrangeSim, target_xyz: Any, receptacle: str | None = None) -> None:
        """Build the distance field to the reach region of `target_xyz` (on `receptacle`, a name in the
        sim's layout, or None) and start paying for progress."""
        self.active = self.coef > 0.0
        self.navmap = self.field = None
        self.delta.reset(None)
        if not self.active:
            return
        self.navmap = planning_map(sim)
        rec = sim.layout.receptacles.get(receptacle)
        opening = None
        if rec is not None and rec.container is not None and self.opening_halfwidth > 0.0:
            opening = (sim.layout.articulated[rec.container].opening_outward(), self.opening_halfwidth)
        self.field = self.navmap.region_distance_field(np.asarray(target_xyz, dtype=np.float64)[:2], self.reach,
                                                       opening)
        self.delta.reset(self.distance(sim))

    def distance(self, sim: RearrangeSim) -> float:
        """Geodesic distance (m) from the base to the reach region; inf when inactive."""
        if self.navmap is None or self.field is None:
            return float("inf")
        return self.navmap.field_at(self.field, sim.base_xy)

    def stop(self) -> None:
        """No term from now on (the target was grasped / released)."""
        self.active = False

    def __call__(self, sim: RearrangeSim) -> float:
        """This step's term (0.0 when inactive)."""
        if not self.active:
            return 0.0
        return self.delta(self.distance(sim))


def hinged_opening_frame(sim: RearrangeSim, receptacle: str | None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float] | None:
    """(centre xy, outward unit xy, sideways unit xy, front plane along outward, half width) of a receptacle
    inside a hinged container (a fridge shelf), from the receptacle's footprint; None for any other
    receptacle (open surfaces, drawers: entered from above) and for `receptacle` None."""
    rec = sim.layout.receptacles.get(receptacle) if receptacle else None
    if rec is None or rec.container is None:
        return None
    art = sim.layout.articulated[rec.container]
    if art.joint_type != "hinge":
        return None
    out = np.asarray(art.opening_outward(), dtype=np.float64)
    side = np.array([-out[1], out[0]])
    centre = np.asarray(rec.center[:2], dtype=np.float64)
    c, s = math.cos(rec.yaw), math.sin(rec.yaw)
    hx, hy = rec.half_extent
    depth = hx * abs(c * out[0] + s * out[1]) + hy * abs(-s * out[0] + c * out[1])
    width = hx * abs(c * side[0] + s * side[1]) + hy * abs(-s * side[0] + c * side[1])
    return centre, out, side, float(centre @ out) + depth, width


def check_offset_cfg(reward_cfg: Mapping[str, Any], key: str, skill: str) -> float:
    """A [0, 1] m offset of a reward config (place's `opening_path_offset`, pick's and place's `exit_offset`;
    absent: 0.0, off); ValueError on a bad value."""
    return check_range(f"skill.reward.{key}", reward_cfg.get(key, 0.0), 0.0, 1.0, unit="m", where=f", skill {skill}")


class OpeningPath:
    """Object->goal distance measured along the way in through a side opening (a fridge shelf).

    habitat-lab pays place for the decrease of the straight object->goal distance. For a goal on a
    fridge shelf that line passes through the fridge's side walls and shelf boards: the distance shrinks
    as the arm pushes the object against the outside of the shell beside the goal (videos of the shipped
    place's failed fridge-shelf episodes, 2026-11-25: `checkpoints/place.md`, run 9). With `offset` > 0 and the goal on a receptacle of
    a hinged container, an object outside the container's footprint (extended `offset` out of its
    front) is measured to an entry point in front of the opening, straight out from the goal at the
    goal's height plus `lift`, and from there to the goal: |obj - entry| + |entry - goal|. Inside that
    footprint, and for every other goal (open surfaces, drawers, which are entered from above), the
    distance is the straight one. `offset` 0: the straight distance everywhere (habitat).
    """

    def __init__(self, offset: float, lift: float = 0.05) -> None:
        self.offset = float(offset)
        self.lift = float(lift)
        self.entry: np.ndarray | None = None
        self.goal = np.zeros(3)
        self._frame: tuple[np.ndarray, np.ndarray, np.ndarray, float, float] | None = None

    def reset(self, sim: RearrangeSim, goal: Any, receptacle: str | None) -> None:
        """Set the goal (3,) on `receptacle` (a name in the sim's layout, or None)."""
        self.goal = np.asarray(goal, dtype=np.float64).copy()
        self.entry = self._frame = None
        frame = hinged_opening_frame(sim, receptacle) if self.offset > 0.0 else None
        if frame is None:
            return
        centre, out, side, front, width = frame
        front += self.offset  # the plane of the entry point, along `out`
        self._frame = (centre, out, side, front, width)
        entry_xy = self.goal[:2] + out * (front - float(self.goal[:2] @ out))
        self.entry = np.array([entry_xy[0], entry_xy[1], self.goal[2] + self.lift])

    def distance(self, point: Any) -> float:
        """Distance (m) from `point` (3,) to the goal: via the entry point when outside the container."""
        p = np.asarray(point, dtype=np.float64)
        straight = float(np.linalg.norm(p - self.goal))
        if self.entry is None or self._frame is None:
            return straight
        centre, out, side, front, width = self._frame
        inside = float(p[:2] @ out) <= front and abs(float((p[:2] - centre) @ side)) <= width
        if inside:
            return straight
        return float(np.linalg.norm(p - self.entry) + np.linalg.norm(self.entry - self.goal))


class ContainerExit:
    """How far a point still has to travel out of a fridge compartment (`exit_offset` > 0; pick, place).

    After the grasp habitat pays pick for the decrease of |ee - rest| in the base frame. Inside a fridge
    compartment the way to rest goes up through the board above, and the way out (the base backing away,
    the arm drawn back) leaves that distance unchanged: nothing pays for leaving. With `offset` > 0 and the
    target on a receptacle of a hinged container, `depth(point)` is how far `point` lies behind a plane
    `offset` in front of the receptacle's front edge, along the opening's outward direction (0 once past
    it); pick adds it, for the held object, to the ee->rest distance of its dense term, and place, for the
    gripper, to the same distance after a release at the goal. A potential difference, so the best policy is
    unchanged; 0 for every other receptacle and with `offset` 0 (habitat).
    """

    def __init__(self, offset: float) -> None:
        self.offset = float(offset)
        self.out: np.ndarray | None = None
        self.front = 0.0

    def reset(self, sim: RearrangeSim, receptacle: str | None) -> None:
        """Set the container from `receptacle` (pick: the target's start, place: its goal; a name in the sim's
        layout, or None)."""
        self.out = None
        frame = hinged_opening_frame(sim, receptacle) if self.offset > 0.0 else None
        if frame is not None:
            self.out, self.front = frame[1], frame[3] + self.offset

    def depth(self, point: Any) -> float:
        """Distance (m) along the outward direction from `point` (3,) to the exit plane; 0 past it or off."""
        if self.out is None:
            return 0.0
        return max(0.0, self.front - float(np.asarray(point, dtype=np.float64)[:2] @ self.out))
