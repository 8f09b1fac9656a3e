"""Navigate skill task (habitat-lab NavToObjTask-v0 with NavToObjReward, notes 3.3).

The goal is the episode's `info.nav_goal` (x, y[, z]). Reward per step: slack; dist_reward x decrease
of the distance to the goal (geodesic on the nav map or 2-D Euclidean, `reward.distance`);
angle_dist_reward x decrease of the heading error while closer than `turn_reward_dist`;
success_reward when successful. Success: 2-D distance < `success_distance`, heading error <
`success_angle`, and the stop action called. Calling stop ends the episode, success or not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rearrange.actions import ACTION_SLICES
from rearrange.episodes import Episode
from rearrange.sensors import target_from_episode
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import DistanceDelta, heading_error
from rearrange.tasks.skill_base import SkillTask

DISTANCES = ("geodesic", "euclidean")
STOP_INDEX = ACTION_SLICES["stop"].start


class NavTask(SkillTask):
    """Drive the base to the navigation goal, face it, and call stop."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.distance_kind = str(self.reward_cfg["distance"])
        if self.distance_kind not in DISTANCES:
            raise ValueError(f"unknown nav reward distance '{self.distance_kind}'; valid choices: "
                             f"{', '.join(DISTANCES)}")
        self.dist = DistanceDelta(self.reward_cfg["dist_reward"])
        self.angle = DistanceDelta(self.reward_cfg["angle_dist_reward"])
        self.goal_xy = np.zeros(2)

    def reset(self, sim: Any, episode: Episode, rng: np.random.Generator) -> None:
        if "nav_goal" not in episode.info:
            raise ValueError(f"nav episode {episode.episode_id} has no info.nav_goal")
        self.sensor_target = target_from_episode(episode)
        self.goal_xy = np.asarray(episode.info["nav_goal"], dtype=np.float64)[:2]
        self.grip_disabled = False
        self.dist.reset(self._reward_distance(sim))
        self.angle.reset(None)
        if self.euclidean(sim) < float(self.reward_cfg["turn_reward_dist"]):
            self.angle.reset(self.heading_error(sim))

    def euclidean(self, sim: Any) -> float:
        """2-D distance base -> goal (success and turn-reward range use this)."""
        return float(np.linalg.norm(self.goal_xy - np.asarray(sim.base_xy, dtype=np.float64)))

    def heading_error(self, sim: Any) -> float:
        return heading_error(sim.base_xy, sim.base_yaw, self.goal_xy)

    def _reward_distance(self, sim: Any) -> float:
        if self.distance_kind == "geodesic":
            return float(sim.navmap.geodesic_distance(sim.base_xy, self.goal_xy))
        return self.euclidean(sim)

    def step(self, sim: Any, full_action: np.ndarray) -> TaskStep:
        r = self.reward_cfg
        s = self.success_cfg
        terms: dict[str, float] = {"slack": float(r["slack"])}
        stop = float(full_action[STOP_INDEX]) > 0.0
        terms["dist"] = self.dist(self._reward_distance(sim))
        d = self.euclidean(sim)
        angle = self.heading_error(sim)
        if d < float(r["turn_reward_dist"]):
            terms["angle"] = self.angle(angle)
        else:
            self.angle.reset(None)
        at_goal = d < float(s["success_distance"]) and angle < float(s["success_angle"])
        success = at_goal and (stop or not bool(s["must_call_stop"]))
        terminated = stop and bool(s["end_on_stop"])
        if success:
            terms["success"] = float(r["success_reward"])
            terminated = True
        info = {"nav_dist": d, "nav_angle": angle, "stop": float(stop), "at_goal": float(at_goal)}
        return self._task_step(terms, terminated, success, info)
