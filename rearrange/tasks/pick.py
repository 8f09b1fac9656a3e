"""Pick skill task (habitat-lab RearrangePickTask-v0 with RearrangePickReward, notes 3.3).

Reward per step: slack; dist_reward x decrease of ee->object before the grasp and of ee->rest after
it; pick_reward once on grasping the target; wrong_pick_pen on grasping anything else (ends);
drop_pen when the held target is lost (ends); contact-force penalty and force termination;
success_reward when successful. Optional (deviation, `approach_reward` > 0): approach_reward x decrease
of the geodesic base distance to the navigable points within `approach_reach` of the object, until the
first grasp of the target (`rearrange.tasks.approach`). Success: holding the target with the ee within
`ee_resting_threshold` of the resting position; the episode ends on success.
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
from rearrange.tasks.skill_base import SkillTask, ee_to_rest


class PickTask(SkillTask):
    """Pick up the episode's first target object and bring the arm back to its resting position."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.block_release = bool(cfg["block_release"])
        self.dist = DistanceDelta(self.reward_cfg["dist_reward"])
        self.approach = ApproachShaping(*check_approach_cfg(self.reward_cfg, self.name))
        self.target: str | None = None
        self.prev_grasped: str | None = None
        self.picked_once = False

    def reset(self, sim: Any, episode: Episode, rng: np.random.Generator) -> None:
        if not episode.targets:
            raise ValueError(f"pick episode {episode.episode_id} has no target object")
        self.sensor_target = target_from_episode(episode)
        self.target = episode.targets[0].object
        self.grip_disabled = False
        self.prev_grasped = sim.grasped
        self.picked_once = False
        if self.force is not None:
            self.force.reset()
        self.dist.reset(self._distance(sim))
        self.approach.reset(sim, sim.object_pos(self.target))
        if sim.grasped == self.target:
            self.approach.stop()

    def _distance(self, sim: Any) -> float:
        if sim.grasped == self.target:
            return ee_to_rest(sim)
        return norm(sim.object_pos(self.target) - sim.ee_pos)

    def step(self, sim: Any, full_action: np.ndarray) -> TaskStep:
        r = self.reward_cfg
        terms: dict[str, float] = {"slack": float(r["slack"])}
        info: dict[str, float] = {}
        terminated = False
        grasped = sim.grasped
        new_grasp = grasped is not None and grasped != self.prev_grasped
        if new_grasp and grasped == self.target:
            if not self.picked_once:
                terms["pick"] = float(r["pick_reward"])
                self.picked_once = True
            self.approach.stop()  # the base has arrived: no approach term after the grasp
            self.dist.reset(None)  # the distance switches to ee->rest: no delta this step
            if self.block_release:
                self.grip_disabled = True
            info["did_pick"] = 1.0
        elif new_grasp:
            terms["wrong_pick"] = -float(r["wrong_pick_pen"])
            terminated |= bool(r["wrong_pick_should_end"])
            info["wrong_pick"] = 1.0
        if self.prev_grasped == self.target and grasped != self.target:
            terms["drop"] = -float(r["drop_pen"])
            terminated |= bool(r["drop_should_end"])
            self.dist.reset(None)
            info["dropped"] = 1.0
        self.prev_grasped = grasped
        terms["dist"] = self.dist(self._distance(sim))
        terms["approach"] = self.approach(sim)
        terminated |= self._force_step(sim, terms, info)
        rest = ee_to_rest(sim)
        success = grasped == self.target and rest < float(self.success_cfg["ee_resting_threshold"])
        if success:
            terms["success"] = float(r["success_reward"])
            terminated |= bool(self.success_cfg["end_on_success"])
        return self._task_step(terms, terminated, success, info)
