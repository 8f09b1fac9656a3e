"""Place oracle: drive within reach of the goal, lower the held object onto it, release, rest.

Phases: `approach` (base to a standing point near the goal, facing it) -> `raise` (ee straight up
to the carrying height) -> `above` (IK so the held object hangs above the goal) -> `lower` (until the object is within the release height of the
goal; released only well inside the task's goal radius, else a new approach) -> `release` (suction
off for a few steps) -> `retreat` (ee straight up) -> `rest`
(joint-space return; done when the ee is within the rest tolerance). The offset between ee and
object is measured every step, so however the object was grasped it is the object that is placed.
"""

from __future__ import annotations

import numpy as np

from rearrange.sensors import SensorTarget
from rearrange.tasks.skill_tasks import load_skill_config
from skills.oracles.base import GRASP, RELEASE, Oracle, full_action


class PlaceOracle(Oracle):
    skill = "place"

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
        self.goto("approach" if sim.grasped == self.obj else "rest")

    def _ee_goal(self, sim, height: float) -> np.ndarray:
        """ee position that puts the held object `height` above the goal."""
        offset = np.asarray(sim.ee_pos) - np.asarray(sim.object_pos(self.obj))
        return self.goal + offset + np.array([0.0, 0.0, height])

    def _step(self, sim) -> np.ndarray:
        c = self.cfg["place"]
        zone = self.cfg["zone"]
        held = sim.grasped == self.obj

        if self.phase in ("approach", "above", "lower") and not held:
            self.goto("retreat")  # dropped (or never held): nothing left to place
            self.retreat_from = np.asarray(sim.ee_pos, dtype=np.float64).copy()

        if self.phase == "approach":
            base, ready = self.approach(sim, self.goal, zone)
            if ready:
                self.goto("raise")
            return full_action(arm=self.ik.action_to_rest(sim), grip=GRASP, base=base)

        if self.phase == "raise":
            # first up to the carrying height, so the held object clears the receptacle's edge
            goal = np.asarray(sim.ee_pos, dtype=np.float64).copy()
            goal[2] = max(goal[2], self._ee_goal(sim, c["above"])[2])
            if abs(goal[2] - sim.ee_pos[2]) < c["tolerance"] or self.phase_steps >= c["above_steps"]:
                self.goto("above")
            return full_action(arm=self.ik.action_towards(sim, goal), grip=GRASP)

        if self.phase == "above":
            goal = self._ee_goal(sim, c["above"])
            if not self.in_work_zone(sim, self.goal, zone):
                self.goto("approach")
            elif self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= c["above_steps"]:
                self.goto("lower")
            return full_action(arm=self.ik.action_towards(sim, goal), grip=GRASP)

        if self.phase == "lower":
            goal = self._ee_goal(sim, c["release_height"])
            obj = np.asarray(sim.object_pos(self.obj))
            near = np.linalg.norm(obj - (self.goal + [0.0, 0.0, c["release_height"]])) < c["tolerance"]
            at_goal = np.linalg.norm(obj - self.goal) < self.release_radius
            if (near or self.phase_steps >= c["lower_steps"]) and at_goal:
                self.goto("release")
            elif self.phase_steps >= c["lower_steps"]:
                self.goto("approach")  # cannot get it there from here: stand somewhere else
            return full_action(arm=self.ik.action_towards(sim, goal, c["lower_speed"]), grip=GRASP)

        if self.phase == "release":
            if not held and self.phase_steps >= c["release_steps"]:
                self.retreat_from = np.asarray(sim.ee_pos, dtype=np.float64).copy()
                self.goto("retreat")
            return full_action(arm=np.zeros(7), grip=RELEASE)

        if self.phase == "retreat":
            goal = self.retreat_from + np.array([0.0, 0.0, c["retreat"]])
            if self.ik.ee_error(sim, goal) < c["tolerance"] or self.phase_steps >= c["retreat_steps"]:
                self.goto("rest")
            return full_action(arm=self.ik.action_towards(sim, goal), grip=RELEASE)

        # rest
        if self.ik.rest_error(sim) < c["rest_tolerance"]:
            self.done = True
        return full_action(arm=self.ik.action_to_rest(sim), grip=GRASP if held else RELEASE)
