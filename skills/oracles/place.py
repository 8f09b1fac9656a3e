"""Place oracle: drive within reach of the goal, lower the held object onto it, release, rest.

Phases: `approach` (base to a standing point near the goal, facing it, the object carried a little
above the rest pose) -> `raise` (ee straight up to the carrying height) -> `above` (IK so the held
object hangs above the goal) -> `lower` (until the object is within the release height of the goal;
released only well inside the task's goal radius, else a new approach) -> `release` (suction off for
a few steps) -> `retreat` (ee straight up) -> `rest` (joint-space return; done when the ee is within
the rest tolerance). The offset between ee and object is measured every step, so however the object
was grasped it is the object that is placed. Into an open drawer, `raise` and `above` keep the held
object over the drawer's front until it hangs over the goal (`container.over_rims`), and `retreat`
takes the cup back up over the front; a straight line pushed the drawer shut and dropped the object
on the floor.

A goal on a fridge shelf is reached through the door opening (`skills.oracles.container`): the base
stands straight in front, the cup (pointing down) goes to an `entry` point in front of the opening at
a height where the wrist clears the board above, the base drives in (`drive_in`), the arm reaches in
horizontally, and after the release the base backs out (`drive_out`) before the arm returns to rest.
"""

from __future__ import annotations

import numpy as np

from rearrange.sensors import SensorTarget
from rearrange.tasks.skill_tasks import load_skill_config
from skills.oracles.base import GRASP, RELEASE, Oracle, full_action
from skills.oracles.base_follow import rest_arm_clear
from skills.oracles.container import (
    arm_to_rest,
    drive_in,
    drive_out,
    entry_point,
    in_front,
    low_carry,
    opening_of,
    over_rims,
    reach_axis,
    rim_exit_height,
    stand_in_front,
    tilt_for,
    work_height,
)
from skills.oracles.held import carry_point, hang_depth, held_extent, held_rest_clear


class PlaceOracle(Oracle):
    skill = "place"
    PHASES = ("approach", "raise", "entry", "drive_in", "above", "lower", "release", "retreat", "drive_out", "rest")

    def __init__(self, cfg):
        super().__init__(cfg)
        # releasing farther from the goal than the task's threshold ends the episode: stay inside it
        threshold = float(load_skill_config("place")["success"]["obj_at_goal_threshold"])
        self.release_radius = cfg["place"]["release_fraction"] * threshold

    def _start(self, sim, target: SensorTarget) -> None:
        if target.goal_pos is None:
            raise ValueError("place oracle needs a goal position")
        self.obj = target.object if target.object is not None else sim.grasped
        self.goal = np.asarray(target.goal_pos, dtype=np.float64)
        self.opening = opening_of(sim, self.goal, self.cfg["shelf"]["front_gap"])
        self.goto("approach" if sim.grasped == self.obj else "rest")

    def arm_safety_applies(self) -> bool:
        """Not while driving into or out of a fridge opening: the arm reaches in on purpose, posed for
        the shelf, and for an upper shelf close enough to its rest pose that the check (for the arm at
        rest) sees the fridge ahead and backs the base off every few steps."""
        return self.phase not in ("drive_in", "drive_out")

    def _ee_goal(self, sim, height: float) -> np.ndarray:
        """ee position that puts the held object `height` above the goal (inside a container no
        higher than the wrist allows, though never lower than the release height)."""
        offset = np.asarray(sim.ee_pos) - np.asarray(sim.object_pos(self.obj))
        goal = self.goal + offset + np.array([0.0, 0.0, height])
        if self.opening is not None:
            s = self.cfg["shelf"]
            low = self.goal[2] + offset[2] + self.cfg["place"]["release_height"]
            goal[2] = max(work_height(self.opening, goal[2], s), low)
        return goal

    def _entry(self, sim) -> np.ndarray:
        """The cup's entry point in front of the opening, at the height it works at inside."""
        return entry_point(self.opening, self.goal, self._ee_goal(sim, self.cfg["place"]["above"])[2],
                           self.cfg["shelf"]["entry_clearance"])

    def _over_rims(self, sim, height: float) -> np.ndarray:
        """`_ee_goal`, but while the held object is not yet over the goal it passes above the rims of
        open drawers on the way (a low straight line pushes the drawer shut and the object misses it)."""
        return over_rims(sim, self._ee_goal(sim, height), hang_depth(sim, self.obj), held_extent(sim, self.obj)[1],
                         self.cfg["rim"], self.cfg["place"]["tolerance"])

    def _ceiling_cap(self, z: float) -> float:
        return work_height(self.opening, z, self.cfg["shelf"])

    def _step(self, sim) -> np.ndarray:
        c = self.cfg["place"]
        s = self.cfg["shelf"]
        zone = self.cfg["zone"]
        held = sim.grasped == self.obj
        axis = None if self.opening is None else reach_axis(self.opening, tilt_for(self.opening, s))

        if self.phase in ("approach", "entry", "drive_in", "above", "lower") and not held:
            self.goto("retreat")  # dropped (or never held): nothing left to place
            self.retreat_from = np.asarray(sim.ee_pos, dtype=np.float64).copy()

        if self.phase == "approach":
            safety = self.cfg["arm_safety"]
            if self.opening is not None:
                stand = stand_in_front(self.opening, self.goal, s["stand_dist"])
                base, ready = self.approach(sim, self.goal, zone, stand=stand, force_stand=True)
            else:
                valid = rest_arm_clear(sim, self.goal, safety["arm_points"], safety["height"], safety["margin"])
                valid = held_rest_clear(sim, self.obj, self.goal, safety["margin"], valid, c["carry_lift"])
                base, ready = self.approach(sim, self.goal, zone, valid=valid, settle_in_reach=True)
            if ready:
                self.goto("raise" if self.opening is None else "entry")
            if self.opening is not None and self._near_stand(sim, s["entry_early"]):
                # on the last straight bit in front of the opening: lower the cup to the entry already
                return full_action(arm=self.ik.action_towards(sim, self._entry(sim), axis=axis), grip=GRASP, base=base)
            if self.opening is not None and in_front(self.opening, self.goal, sim.base_xy, s["low_depth"],
                                                     s["low_half_width"]):
                # on the clear floor in front of the opening: down to the entry height while still driving
                goal = low_carry(sim, self._entry(sim)[2])
                return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=GRASP, base=base)
            # carried a little above the rest pose, so the object clears counters and shelf tops (for a
            # fridge shelf with the cup already tilted as it will work inside: turning the wrist is slow)
            return full_action(arm=self.ik.action_towards(sim, carry_point(sim, c["carry_lift"]), axis=axis),
                               grip=GRASP, base=base)

        if self.phase == "entry":
            # the cup, pointing down, in front of the opening at the height it works at inside
            goal = self._entry(sim)
            if self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= s["entry_steps"]:
                self.goto("drive_in")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=GRASP)

        if self.phase == "drive_in":
            base, done = drive_in(sim, self.follower, self.opening, self.goal, s)
            if done or self.phase_steps >= s["drive_steps"]:
                self.goto("above")
            return full_action(arm=np.zeros(7), grip=GRASP, base=base)

        if self.phase == "raise":
            # first up to the carrying height, so the held object clears the receptacle's edge
            goal = np.asarray(sim.ee_pos, dtype=np.float64).copy()
            goal[2] = max(goal[2], self._over_rims(sim, c["above"])[2])
            if abs(goal[2] - sim.ee_pos[2]) < c["tolerance"] or self.phase_steps >= c["above_steps"]:
                self.goto("above")
            return full_action(arm=self.ik.action_towards(sim, goal), grip=GRASP)

        if self.phase == "above":
            goal = self._over_rims(sim, c["above"])
            if not self.in_work_zone(sim, self.goal, zone):
                self.goto("approach")
            elif self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= c["above_steps"]:
                self.goto("lower")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=GRASP)

        if self.phase == "lower":
            goal = self._ee_goal(sim, c["release_height"])
            obj = np.asarray(sim.object_pos(self.obj))
            near = np.linalg.norm(obj - (self.goal + [0.0, 0.0, c["release_height"]])) < c["tolerance"]
            at_goal = np.linalg.norm(obj - self.goal) < self.release_radius
            if (near or self.phase_steps >= c["lower_steps"]) and at_goal:
                self.goto("release")
            elif self.phase_steps >= c["lower_steps"]:
                self.goto("approach")  # cannot get it there from here: stand somewhere else
            return full_action(arm=self.ik.action_towards(sim, goal, c["lower_speed"], axis=axis), grip=GRASP)

        if self.phase == "release":
            if not held and self.phase_steps >= c["release_steps"]:
                self.retreat_from = np.asarray(sim.ee_pos, dtype=np.float64).copy()
                self.goto("retreat")
            return full_action(arm=np.zeros(7), grip=RELEASE)

        if self.phase == "retreat":
            goal = self.retreat_from + np.array([0.0, 0.0, c["retreat"]])
            goal[2] = max(self._ceiling_cap(goal[2]), self.retreat_from[2])
            # out of an open drawer: the cup over its front before the arm heads home
            goal[2] = max(goal[2], rim_exit_height(sim, 0.0, float(sim.cfg["suction"]["radius"]), self.cfg["rim"]))
            if self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= c["retreat_steps"]:
                self.goto("rest" if self.opening is None else "drive_out")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=RELEASE)

        if self.phase == "drive_out":
            base, done = drive_out(sim, self.opening, self.goal, s)
            if done or self.phase_steps >= s["drive_steps"]:
                self.goto("rest")
            return full_action(arm=np.zeros(7), grip=GRASP if held else RELEASE, base=base)

        # rest
        if self.ik.rest_error(sim) < c["rest_tolerance"]:
            self.done = True
        return full_action(arm=arm_to_rest(self.ik, sim, self.opening, s), grip=GRASP if held else RELEASE)
