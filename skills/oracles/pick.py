"""Pick oracle: drive within reach, suction the object from above, lift, return the arm to rest.

Phases: `approach` (base to a standing point near the object, facing it, arm at rest) -> `raise`
(ee straight up when the object is higher) -> `above` (IK the suction cup above the object) ->
`descend` (move down onto it with suction on until the object attaches) -> `lift` (straight up; out
of an open drawer, until the object hangs over the drawer's front: `container.rim_exit_height`) ->
`back` (the base backs straight away while the held object, at its current place or where the arm
at rest would carry it, is over furniture it could hit on the way down) -> `rest` (joint-space
return to the rest pose; done when the ee is within the rest tolerance). A descent that attaches
nothing goes back to `above`; an object that leaves the work zone sends the oracle back to `approach`.

An object on a fridge shelf is reached through the door opening (`skills.oracles.container`, as the
place oracle does): the base stands straight in front (the cup, tilted into the fridge, already going
down to its entry height on the clear floor in front of the opening and to the `entry` point on the
last bit), the base drives straight in (`drive_in`) while the arm keeps the cup
at the entry point relative to the base, the cup goes above the object and down onto it, lifts only as
far as the board above allows, the base backs out (`drive_out`) and the arm goes straight to rest.
"""

from __future__ import annotations

import numpy as np

from rearrange.sensors import SensorTarget
from skills.oracles.base import GRASP, RELEASE, Oracle, full_action
from skills.oracles.base_follow import planning_map, predict_base_pose, rest_arm_clear
from skills.oracles.container import (
    base_to_world,
    drive_in,
    drive_out,
    entry_point,
    front_distance,
    in_front,
    low_carry,
    opening_of,
    reach_axis,
    rest_world,
    rim_exit_height,
    stand_in_front,
    tilt_for,
    work_height,
)
from skills.oracles.held import clear_of_tall_object, hang_depth, held_extent, held_object_blocked


class PickOracle(Oracle):
    skill = "pick"
    PHASES = ("approach", "raise", "drive_in", "above", "descend", "lift", "back", "drive_out", "rest")

    def _start(self, sim, target: SensorTarget) -> None:
        if target.object is None:
            raise ValueError("pick oracle needs a target object")
        self.obj = target.object
        self.start_pos = np.asarray(sim.object_pos(self.obj), dtype=np.float64).copy()
        self.opening = opening_of(sim, self.start_pos, self.cfg["shelf"]["front_gap"])
        self.goto("rest" if sim.grasped == self.obj else "approach")

    def arm_safety_applies(self) -> bool:
        """Not while driving into or out of a fridge opening: the arm reaches in on purpose, posed for
        the shelf, and for an upper shelf close enough to its rest pose that the check (for the arm at
        rest) sees the fridge ahead and backs the base off every few steps."""
        return self.phase not in ("drive_in", "drive_out")

    def _above(self, obj: np.ndarray) -> np.ndarray:
        """ee goal above the object before descending (inside a container, under its ceiling)."""
        goal = obj + np.array([0.0, 0.0, self.cfg["pick"]["above"]])
        goal[2] = max(work_height(self.opening, goal[2], self.cfg["shelf"]), obj[2])
        return goal

    def _entry(self, obj: np.ndarray) -> np.ndarray:
        return entry_point(self.opening, obj, self._above(obj)[2], self.cfg["shelf"]["entry_clearance"])

    def _shelf_step(self, sim, obj: np.ndarray, held: bool) -> np.ndarray | None:
        """The phases that differ for an object on a fridge shelf (None: the common phase code runs)."""
        c = self.cfg["pick"]
        s = self.cfg["shelf"]
        axis = reach_axis(self.opening, tilt_for(self.opening, s))
        if self.phase == "approach":
            stand = stand_in_front(self.opening, self.start_pos, s["stand_dist"])
            base, ready = self.approach(sim, obj, self.cfg["zone"], stand=stand, force_stand=True)
            if ready:
                # the cup keeps this place relative to the base while the base drives in
                self.entry_base = np.asarray(sim.to_base(self._entry(self.start_pos)), dtype=np.float64)
                self.goto("drive_in")
            if self._near_stand(sim, s["entry_early"]):
                # on the last straight bit in front of the opening: lower the cup to the entry already
                return full_action(arm=self.ik.action_towards(sim, self._entry(self.start_pos), axis=axis),
                                   grip=RELEASE, base=base)
            if in_front(self.opening, self.start_pos, sim.base_xy, s["low_depth"], s["low_half_width"]):
                # on the clear floor in front of the opening: the cup goes down to the entry height while
                # the base still drives (lowering the arm takes ~80 steps, too many to wait for)
                goal = low_carry(sim, self._entry(self.start_pos)[2])
                return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=RELEASE, base=base)
            # the cup tilted as it will work inside from the start: turning the wrist is slow
            return full_action(arm=self.ik.action_towards(sim, rest_world(sim), axis=axis), grip=RELEASE, base=base)

        if self.phase == "drive_in":
            # the cup goes down to the entry point (relative to the base) while the base drives in; the
            # base waits while the cup, still too high for the wrist to pass under the ceiling, would
            # cross the front face
            goal = base_to_world(sim, self.entry_base)
            base, done = drive_in(sim, self.follower, self.opening, self.start_pos, s)
            high = float(sim.ee_pos[2]) > work_height(self.opening, np.inf, s)
            if high and front_distance(self.opening, self.start_pos, sim.ee_pos) < s["cross_margin"]:
                base, done = np.zeros(2), False
            # on to `above` once the cup is at the entry point too: from a start close to the fridge the
            # base is done at once, and a cup still low (left there by a place) went up into the board
            at_entry = self.ik.ee_error(sim, goal) < 2 * c["tolerance"]
            if (done and at_entry) or self.phase_steps >= s["drive_steps"] + s["entry_steps"]:
                self.goto("above")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=RELEASE, base=base)

        if self.phase == "above":
            # over the object (the cup is at the working height already): down as soon as it is over it
            goal = self._above(obj)
            if float(np.linalg.norm(goal[:2] - sim.ee_pos[:2])) < c["tolerance"] or \
                    self.phase_steps >= c["above_steps"]:
                self.goto("descend")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=RELEASE)

        if self.phase == "descend":
            goal = obj + np.array([0.0, 0.0, -c["press"]])
            if self.phase_steps >= c["descend_steps"]:
                self.goto("above")
            return full_action(arm=self.ik.action_towards(sim, goal, c["descend_speed"], axis=axis), grip=GRASP)

        if self.phase == "lift":
            # only a little (off the shelf), under the ceiling; the rest of the way up happens backing out
            goal = self.lift_from + np.array([0.0, 0.0, s["pick_lift"]])
            goal[2] = max(work_height(self.opening, goal[2], s), self.lift_from[2])
            if self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= c["lift_steps"]:
                self.goto("drive_out")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=GRASP)

        if self.phase == "drive_out":
            # backing out, the arm already heads for rest, kept under the ceiling until the cup is out
            base, done = drive_out(sim, self.opening, self.start_pos, s)
            goal = rest_world(sim)
            if front_distance(self.opening, self.start_pos, sim.ee_pos) < s["cross_margin"]:
                goal[2] = max(work_height(self.opening, goal[2], s), self.lift_from[2])
            if done or self.phase_steps >= s["drive_steps"]:
                self.goto("rest")
            return full_action(arm=self.ik.action_towards(sim, goal, axis=axis), grip=GRASP if held else RELEASE,
                               base=base)

        if self.phase == "rest":
            if self.ik.rest_error(sim) < c["rest_tolerance"]:
                self.done = True
            # out of the fridge: straight to the resting ee, the cup free to stay tilted (turning it back
            # takes the roll joints ~60 steps, and the task only counts where the ee is)
            return full_action(arm=self.ik.action_towards(sim, rest_world(sim)),
                               grip=GRASP if held else RELEASE)
        return None

    def _step(self, sim) -> np.ndarray:
        c = self.cfg["pick"]
        zone = self.cfg["zone"]
        obj = np.asarray(sim.object_pos(self.obj), dtype=np.float64)
        held = sim.grasped == self.obj
        if held and self.phase in ("approach", "above", "descend"):
            self.lift_from = np.asarray(sim.ee_pos, dtype=np.float64).copy()
            self.goto("lift")
        if sim.grasped is not None and not held:
            # touched the wrong thing: let go and try again from above
            self.goto("above")
            return full_action(arm=self.ik.action_towards(sim, self._above(obj)), grip=RELEASE)
        if self.opening is not None:
            action = self._shelf_step(sim, obj, held)
            if action is not None:
                return action

        if self.phase == "approach":
            safety = self.cfg["arm_safety"]
            valid = clear_of_tall_object(sim, self.obj, safety["arm_points"], safety["margin"],
                                         rest_arm_clear(sim, obj, safety["arm_points"], safety["height"],
                                                        safety["margin"]))
            base, ready = self.approach(sim, obj, zone, valid=valid, settle_in_reach=True)
            if ready:
                self.goto("raise")
            return full_action(arm=self.ik.action_to_rest(sim), grip=RELEASE, base=base)

        if self.phase == "raise":
            # first straight up if the object is higher than the ee, so the arm clears the receptacle
            goal = np.asarray(sim.ee_pos, dtype=np.float64).copy()
            goal[2] = max(goal[2], obj[2] + c["above"])
            if abs(goal[2] - sim.ee_pos[2]) < c["tolerance"] or self.phase_steps >= c["above_steps"]:
                self.goto("above")
            return full_action(arm=self.ik.action_towards(sim, goal), grip=RELEASE)

        if self.phase == "above":
            goal = obj + np.array([0.0, 0.0, c["above"]])
            if not self.in_work_zone(sim, obj, zone):
                self.goto("approach")
            elif self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= c["above_steps"]:
                self.goto("descend")
            return full_action(arm=self.ik.action_towards(sim, goal), grip=RELEASE)

        if self.phase == "descend":
            goal = obj + np.array([0.0, 0.0, -c["press"]])
            if self.phase_steps >= c["descend_steps"]:
                self.goto("above")
            return full_action(arm=self.ik.action_towards(sim, goal, c["descend_speed"]), grip=GRASP)

        if self.phase == "lift":
            goal = self.lift_from + np.array([0.0, 0.0, c["lift"]])
            # out of an open drawer: over its front before the base backs away
            exit_z = rim_exit_height(sim, hang_depth(sim, self.obj), held_extent(sim, self.obj)[1], self.cfg["rim"])
            goal[2] = max(goal[2], exit_z)
            if self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= c["lift_steps"]:
                self.goto("back")
                self.backed = 0.0
            return full_action(arm=self.ik.action_towards(sim, goal), grip=GRASP)

        if self.phase == "back" and held:
            # the arm at rest would lower the object onto (or drag it through) the furniture it came
            # from: back the base straight away first, arm still, as far as the map allows
            base = np.array([-c["back_speed"], 0.0])
            xy, _ = predict_base_pose(sim, base)
            step = float(np.linalg.norm(xy - sim.base_xy))
            if (held_object_blocked(sim, self.obj, c["back_margin"]) and self.backed + step <= c["back_max"]
                    and planning_map(sim).is_navigable(xy)):
                self.backed += step
                return full_action(arm=np.zeros(7), grip=GRASP, base=base)
            self.goto("rest")

        # rest
        if self.ik.rest_error(sim) < c["rest_tolerance"]:
            self.done = True
        return full_action(arm=self.ik.action_to_rest(sim), grip=GRASP if held else RELEASE)
