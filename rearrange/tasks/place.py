"""Place skill task (habitat-lab RearrangePlaceTask-v0 with PlaceReward, notes 3.3).

The episode starts with the target in the gripper (episode info `start_holding`, applied by the env).
Reward per step: slack; dist_reward x decrease of object->goal while the object is held or away
from the goal (not paid closer than `min_dist_to_goal`), x decrease of ee->rest after a release at
the goal; place_reward once on releasing within `obj_at_goal_threshold` of the goal; drop_pen and the
end of the episode for a release elsewhere; contact-force penalty and force termination;
success_reward when successful. Optional (deviation, `approach_reward` > 0): approach_reward x
decrease of the geodesic base distance to the navigable points within `approach_reach` of the goal,
while the object is held, until the first release (`rearrange.tasks.approach`). Success: not
holding, object at the goal, ee at rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rearrange.episodes import Episode
from rearrange.sensors import target_from_episode
from rearrange.tasks.approach import ApproachShaping, check_approach_cfg
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import DistanceDelta, norm
from rearrange.tasks.skill_base import SkillTask, ee_to_rest, holding_object


class PlaceTask(SkillTask):
    """Put the held target object down at its goal and bring the arm back to rest."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.block_regrasp = bool(cfg["block_regrasp"])
        self.dist = DistanceDelta(self.reward_cfg["dist_reward"])
        self.approach = ApproachShaping(*check_approach_cfg(self.reward_cfg, self.name))
        self.target: str | None = None
        self.goal = np.zeros(3)
        self.released = False
        self.mode = "object"  # which distance the dense reward follows: "object" (->goal) or "rest"

    def reset(self, sim: Any, episode: Episode, rng: np.random.Generator) -> None:
        if not episode.targets:
            raise ValueError(f"place episode {episode.episode_id} has no target")
        self.sensor_target = target_from_episode(episode)
        self.target = episode.targets[0].object
        self.goal = np.asarray(episode.targets[0].goal_pos, dtype=np.float64)
        self.grip_disabled = False
        self.released = False
        if self.force is not None:
            self.force.reset()
        self.mode = "object"
        self.dist.reset(self._obj_to_goal(sim))
        self.approach.reset(sim, self.goal)
        if sim.grasped != self.target:
            self.approach.stop()

    def _obj_to_goal(self, sim: Any) -> float:
        return norm(sim.object_pos(self.target) - self.goal)

    def step(self, sim: Any, full_action: np.ndarray) -> TaskStep:
        r = self.reward_cfg
        thresh = float(self.success_cfg["obj_at_goal_threshold"])
        terms: dict[str, float] = {"slack": float(r["slack"])}
        info: dict[str, float] = {}
        terminated = False
        held = sim.grasped == self.target
        obj_to_goal = self._obj_to_goal(sim)
        at_goal = obj_to_goal < thresh
        if not self.released and not held:
            self.released = True
            self.approach.stop()  # no approach term after the release
            if self.block_regrasp:
                self.grip_disabled = True
            if at_goal:
                terms["place"] = float(r["place_reward"])
                info["did_place"] = 1.0
            else:
                terms["drop"] = -float(r["drop_pen"])
                terminated |= bool(r["wrong_drop_should_end"])
                info["wrong_drop"] = 1.0
        mode = "rest" if (self.released and at_goal) else "object"
        if mode != self.mode:
            self.dist.reset(None)  # a different distance from now on: no delta this step
            self.mode = mode
        if mode == "object":
            dist_term = self.dist(obj_to_goal)
            terms["dist"] = dist_term if obj_to_goal >= float(r["min_dist_to_goal"]) else 0.0
        else:
            terms["dist"] = self.dist(ee_to_rest(sim))
        terms["approach"] = self.approach(sim)
        terminated |= self._force_step(sim, terms, info)
        success = (not holding_object(sim)) and at_goal and ee_to_rest(sim) < float(
            self.success_cfg["ee_resting_threshold"])
        if success:
            terms["success"] = float(r["success_reward"])
            terminated |= bool(self.success_cfg["end_on_success"])
        return self._task_step(terms, terminated, success, info)
