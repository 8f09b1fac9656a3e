"""What every oracle shares: the act/reset interface, phases, and building the action vector.

An oracle is a scripted controller that reads privileged simulator state (object and handle
positions, the navigation map) but moves the robot only through the 11-dim action vector a policy
would send (`rearrange.actions`): arm joint deltas, suction, base velocity, stop. `act` returns the
full vector; `select_subset` cuts out the entries a skill env exposes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rearrange.actions import ACTION_DIM, ACTION_SLICES, check_subsets, subset_entries
from rearrange.sensors import SensorTarget, target_from_episode
from skills.oracles.base_follow import (
    BaseFollower,
    FollowGains,
    arm_safe_base_action,
    furniture_clearance,
    planning_map,
    reach_clear,
    rest_arm_clear,
    standing_point,
    wall_between,
    wrap_angle,
)
from skills.oracles.held import held_bottom
from skills.oracles.ik import ArmIK, IKGains

GRASP = 1.0
RELEASE = -1.0


def full_action(arm: np.ndarray | None = None, grip: float = RELEASE, base: np.ndarray | None = None,
                stop: bool = False) -> np.ndarray:
    """The 11-vector from its parts (missing arm/base = 0, stop -1 unless asked), clipped to [-1, 1]."""
    a = np.zeros(ACTION_DIM, dtype=np.float64)
    if arm is not None:
        a[ACTION_SLICES["arm"]] = arm
    a[ACTION_SLICES["grip"]] = grip
    if base is not None:
        a[ACTION_SLICES["base"]] = base
    a[ACTION_SLICES["stop"]] = 1.0 if stop else -1.0
    return np.clip(a, -1.0, 1.0)


def select_subset(subset_names: Sequence[str], full: np.ndarray) -> np.ndarray:
    """The entries of a full 11-vector that a skill env with these action subsets takes, in order.

    The inverse of `rearrange.actions.expand_action` on the entries the subsets cover. The oracles act in
    joint space, which has no `arm_ee` counterpart: such an env takes an oracle's action through
    `RearrangeEnv.step_full(rearrange.actions.restrict_full(...))` instead (oracle starts do).
    """
    names = check_subsets(subset_names)
    if "arm_ee" in names:
        raise ValueError("the oracles act in joint space and cannot fill an 'arm_ee' action (imitation and "
                         "the oracle agent need action_subsets with 'arm')")
    return subset_entries(names, full)


class Oracle:
    """Base class: a phase machine with an IK arm controller and a base path follower.

    Subclasses implement `_start(sim, target)` (read the goal, choose the first phase) and
    `_step(sim) -> np.ndarray` (one full action). `done` turns True when the oracle has finished
    its skill (for skills with a stop action, that is the step it calls stop). `PHASES` names every
    phase `_step` may enter (`phase` is one of them, or "idle" before the start).
    """

    skill = ""
    PHASES: tuple[str, ...] = ()

    def __init__(self, cfg: Mapping[str, Any]):
        self.cfg = cfg
        self.ik = ArmIK(IKGains.from_cfg(cfg["ik"]))
        self.follower = BaseFollower(FollowGains.from_cfg(cfg["base"]))
        self.phase = "idle"
        self.phase_steps = 0
        self._approach = "start"
        self._unsafe_steps = 0
        self.steps = 0
        self.done = False
        # The approach ends as soon as the work point is in the work zone, on every step rather than only
        # when it starts (off: the oracle drives on to the standing point it chose). imitate-skill turns it
        # on: a policy that cannot see the chosen standing point gets consistent labels where it has the
        # point in reach (skills/imitate.py).
        self.ready_in_zone = False

    # ------------------------------------------------------------------ interface

    def reset(self, sim, episode) -> None:
        """Start the skill for `episode` (its first target, handle, nav goal) from the sim's state."""
        self.start(sim, target_from_episode(episode))

    def start(self, sim, target: SensorTarget) -> None:
        """Start the skill on an explicit target (what the HAB agent calls for each plan step)."""
        self.phase = "idle"
        self.phase_steps = 0
        self._approach = "start"
        self.steps = 0
        self._unsafe_steps = 0
        self.done = False
        self.follower.clear()
        self.target = target
        self._start(sim, target)

    def act(self, sim) -> np.ndarray:
        """The full 11-dim action for this step.

        While the arm is near its rest pose (where it sticks out of the base disc), base motion that
        would swing it into a wall or tall furniture (for a held object: anything taller than the
        object's bottom, such as an open drawer's front) is replaced by a safe alternative.
        """
        action = self._step(sim)
        base = action[ACTION_SLICES["base"]]
        safety = self.cfg["arm_safety"]
        if np.any(base != 0.0) and self.ik.rest_error(sim) < safety["near_rest"] and self.arm_safety_applies():
            height = float(safety["height"])
            if sim.grasped in sim.object_names:  # a held object hangs lower than the arm: a drawer front counts
                height = min(height, held_bottom(sim, sim.grasped))
            safe = arm_safe_base_action(sim, base, safety["arm_points"], height, safety["margin"])
            if safe is None or not np.array_equal(safe, base):
                # overridden too often in this phase (no safe way on): creep on with the intended
                # motion, slow contact is gentle
                self._unsafe_steps += 1
                if safe is None or self._unsafe_steps > safety["patience"]:
                    safe = np.asarray(base) * safety["creep"]
            action[ACTION_SLICES["base"]] = safe
        self.steps += 1
        self.phase_steps += 1
        return action

    def arm_safety_applies(self) -> bool:
        """Whether `act` may replace base motion that would bring the arm at rest into the scene (a
        phase that pushes something with the base on purpose says no)."""
        return True

    # ------------------------------------------------------------------ helpers for subclasses

    def _start(self, sim, target: SensorTarget) -> None:
        raise NotImplementedError

    def _step(self, sim) -> np.ndarray:
        raise NotImplementedError

    def goto(self, phase: str) -> None:
        self.phase = phase
        self.phase_steps = 0
        self._approach = "start"
        self._unsafe_steps = 0

    def in_work_zone(self, sim, point: np.ndarray, zone: Mapping[str, float]) -> bool:
        """True if `point` (world) lies where the arm can work on it without moving the base.

        `zone` has `min_dist`, `max_dist` (horizontal, from the base centre) and `max_bearing` (rad);
        a wall between the base and the point rules it out.
        """
        p = np.asarray(sim.to_base(np.asarray(point, dtype=np.float64)))
        dist = float(np.hypot(p[0], p[1]))
        bearing = abs(float(np.arctan2(p[1], p[0])))
        if not (zone["min_dist"] <= dist <= zone["max_dist"] and bearing <= zone["max_bearing"]):
            return False
        return not bool(wall_between(sim, np.asarray(sim.base_xy)[None], np.asarray(point)[:2])[0])

    def _in_reach(self, sim, point: np.ndarray, zone: Mapping[str, float]) -> bool:
        """`in_work_zone` without the bearing condition: the base only has to turn to face the point."""
        wide = dict(zone)
        wide["max_bearing"] = np.pi
        return self.in_work_zone(sim, point, wide)

    def approach(self, sim, point: np.ndarray, zone: Mapping[str, float], valid=None,
                 stand: np.ndarray | None = None, force_stand: bool = False,
                 settle_in_reach: bool = False) -> tuple[np.ndarray, bool]:
        """Base action bringing `point` into the work zone: drive to a standing point, then face it.

        Returns (base action (2,), finished). The plan is made on the first call after `goto`;
        `valid` filters standing points (see `standing_point`); `stand`, if given, is used instead of
        searching for one; with `force_stand` the base goes there even if the point is in the zone
        already (unless it stands within the follower's tolerance of it). With `settle_in_reach`, a base
        whose last bit of driving is blocked (it stalls, or the arm safety check overrides it: the resting
        arm would touch a wall or furniture) stops there and faces the point if it is already within reach.
        """
        if self.ready_in_zone and self._approach != "start" and not force_stand and self.in_work_zone(sim, point, zone):
            self._approach = "face"
            return np.zeros(2), True
        if self._approach == "start":
            near_stand = stand is not None and float(np.linalg.norm(np.asarray(stand) - sim.base_xy)) < \
                self.follower.gains.goal_tolerance
            if self.in_work_zone(sim, point, zone) and (not force_stand or stand is None or near_stand):
                return np.zeros(2), True
            if valid is None:
                safety = self.cfg["arm_safety"]
                valid = rest_arm_clear(sim, point, safety["arm_points"], safety["height"], safety["margin"])
            if stand is None:
                stand = standing_point(sim, point, zone["preferred_dist"], zone["search_radius"],
                                       zone["geodesic_weight"], valid)
            if stand is None:  # nowhere with a free arm: the nearest good working distance in reach
                stand = standing_point(sim, point, zone["preferred_dist"], zone["search_radius"],
                                       zone["geodesic_weight"], reach_clear(sim, point))
            if stand is None:
                stand = standing_point(sim, point, zone["preferred_dist"], zone["search_radius"],
                                       zone["geodesic_weight"])
            self._stand = stand
            self._approach = "face"
            if stand is not None:
                pre = self._pre_stand(sim, point, stand, zone)
                if pre is not None and self.follower.set_goal(sim, pre):
                    self._approach = "drive"
                elif self.follower.set_goal(sim, stand):
                    self._approach = "final"
                    self._final_unsafe = self._unsafe_steps
        if self._approach == "drive":
            if not self.follower.arrived(sim):
                return self.follower.act(sim), False
            self._approach = "align"
        if self._approach == "align":
            # at the pre-standing point: face the work point, then drive straight in
            action, facing = self.follower.face_point(sim, point)
            if not facing:
                return action, False
            self.follower.set_goal(sim, self._stand)
            self._approach = "final"
            self._final_unsafe = self._unsafe_steps
        if self._approach == "final":
            settle = (settle_in_reach and (self._unsafe_steps > self._final_unsafe or bool(sim.base_collided))
                      and self._in_reach(sim, point, zone))
            if not self.follower.arrived(sim) and not settle:
                return self.follower.act(sim), False
            self._approach = "face"
        return self.follower.face_point(sim, point)

    def _near_stand(self, sim, dist: float) -> bool:
        """On the approach's last straight bit (`final` drive or `face`), within `dist` of the standing
        point: a fridge-shelf pick or place starts lowering the cup to its entry point here."""
        return self._approach in ("final", "face") and float(np.linalg.norm(self._stand - sim.base_xy)) < dist

    def _pre_stand(self, sim, point: np.ndarray, stand: np.ndarray, zone: Mapping[str, float]) -> np.ndarray | None:
        """A point behind the standing point on the line to the work point, from which the base drives
        straight in (so the arm, pointing at the work point, never sweeps sideways near furniture)."""
        navmap = planning_map(sim)
        facing = np.asarray(point, dtype=np.float64)[:2] - stand
        facing = facing / max(float(np.linalg.norm(facing)), 1e-9)
        if float(np.linalg.norm(stand - np.asarray(sim.base_xy))) < zone["pre_stand_dist"]:
            return None
        safety = self.cfg["arm_safety"]
        arm_reach = float(np.max(np.linalg.norm(np.asarray(safety["arm_points"], dtype=np.float64), axis=1)))
        # farther out last: beside an open fridge door neither nearer point leaves room to turn, and the
        # base drove onto the standing point sideways and turned the arm into the door there
        for dist in (zone["pre_stand_dist"], 0.5 * zone["pre_stand_dist"], zone["pre_stand_far"]):
            pre = stand - dist * facing
            if not (navmap.is_navigable(pre) and navmap.segment_clear(pre, stand)):
                continue
            # the base turns in place here: the arm sweeps a full circle
            if furniture_clearance(sim, pre[None], safety["height"])[0] > arm_reach + safety["margin"]:
                return pre
        return None

    @staticmethod
    def bearing_to(sim, point: np.ndarray) -> float:
        d = np.asarray(point, dtype=np.float64)[:2] - np.asarray(sim.base_xy, dtype=np.float64)
        return wrap_angle(float(np.arctan2(d[1], d[0])) - float(sim.base_yaw))
