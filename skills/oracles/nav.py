"""Navigation oracle: follow the navmap path toward the goal, turn to face it, call stop.

Phases: `drive` (path following until the goal is within `stop_distance`, straight-line, or the
path ends) -> `face` (turn in place until the goal is within `yaw_tolerance` of straight ahead) ->
`stop` (the stop action; `done`). The arm stays at rest and the grasp state is kept.
"""

from __future__ import annotations

import numpy as np

from rearrange.sensors import SensorTarget
from skills.oracles.base import GRASP, RELEASE, Oracle, full_action
from skills.oracles.base_follow import standing_point


class NavOracle(Oracle):
    skill = "nav"
    PHASES = ("drive", "face", "stop")

    def _start(self, sim, target: SensorTarget) -> None:
        if target.nav_goal is None:
            raise ValueError("nav oracle needs a navigation goal")
        self.goal = np.asarray(target.nav_goal, dtype=np.float64)[:2]
        if not self.follower.set_goal(sim, self.goal):
            # nothing navigable near enough for the map to snap to: any reachable point from which
            # the goal is within the stopping distance
            c = self.cfg["nav"]
            stand = standing_point(sim, self.goal, c["stop_distance"], c["fallback_radius"],
                                   self.cfg["zone"]["geodesic_weight"])
            if stand is not None:
                self.follower.set_goal(sim, stand)
        self.goto("drive")

    def _step(self, sim) -> np.ndarray:
        c = self.cfg["nav"]
        grip = GRASP if sim.grasped is not None else RELEASE
        dist = float(np.linalg.norm(self.goal - np.asarray(sim.base_xy)))
        if self.phase == "drive":
            if dist < c["stop_distance"] or self.follower.arrived(sim):
                self.goto("face")
            else:
                return full_action(arm=self.ik.action_to_rest(sim), grip=grip, base=self.follower.act(sim))
        if self.phase == "face":
            base, facing = self.follower.face_point(sim, self.goal)
            if not facing:
                return full_action(arm=self.ik.action_to_rest(sim), grip=grip, base=base)
            self.goto("stop")
        self.done = True
        return full_action(grip=grip, stop=True)
