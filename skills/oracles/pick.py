"""Pick oracle: drive within reach, suction the object from above, lift, return the arm to rest.

Phases: `approach` (base to a standing point near the object, facing it, arm at rest) -> `raise`
(ee straight up when the object is higher) -> `above` (IK the suction cup above the object) ->
`descend` (move down onto it with suction on until the object attaches) -> `lift` (straight up) ->
`back` (the base backs straight away while the held object, at its current place or where the arm
at rest would carry it, is over furniture it could hit on the way down) -> `rest` (joint-space
return to the rest pose; done when the ee is within the rest tolerance). A descent that attaches
nothing goes back to `above`; an object that leaves the work zone sends the oracle back to `approach`.
"""

from __future__ import annotations

import numpy as np

from rearrange.sensors import SensorTarget
from skills.oracles.base import GRASP, RELEASE, Oracle, full_action
from skills.oracles.base_follow import planning_map, predict_base_pose, rest_arm_clear
from skills.oracles.held import clear_of_tall_object, held_object_blocked


class PickOracle(Oracle):
    skill = "pick"

    def _start(self, sim, target: SensorTarget) -> None:
        if target.object is None:
            raise ValueError("pick oracle needs a target object")
        self.obj = target.object
        self.goto("rest" if sim.grasped == self.obj else "approach")

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
            return full_action(arm=self.ik.action_towards(sim, obj + [0, 0, c["above"]]), grip=RELEASE)

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
