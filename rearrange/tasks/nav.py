"""Navigate skill task (habitat-lab NavToObjTask-v0 with NavToObjReward, notes 3.3).

The goal is the episode's `info.nav_goal` (x, y[, z]). Reward per step: slack; dist_reward x decrease
of the distance to the goal (geodesic on the nav map or 2-D Euclidean, `reward.distance`);
angle_dist_reward x decrease of the heading error while closer than `turn_reward_dist`;
success_reward when successful; minus `early_stop_pen` when stop ends the episode without success (a
deviation as in the articulated skills; absent: 0, habitat's reward); minus `collision_pen` on every
step whose base motion furniture or a wall blocked (a deviation; absent: 0, habitat's reward). Success:
2-D distance < `success_distance`, heading error < `success_angle`, and the stop action called. Calling
stop ends the episode, success or not.

Ours, off by default (the nav that `agent.rest_arm_during_nav` runs): `arm_to_rest` has the env swing the
arm back to rest while the nav drives (the agent's command, `rearrange.arm_rest`), and `start_arm` starts
the arm off rest (`rearrange.grasp_pose.ArmStartNoise`, as pick's), so the nav learns with an arm moving
across its camera's view, as it meets it after a pick or a place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from configs.ranges import check_range
from rearrange.actions import ACTION_SLICES, BASE_LINEAR
from rearrange.episodes import Episode
from rearrange.grasp_pose import ArmStartNoise
from rearrange.sensors import target_from_episode
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import DistanceDelta, heading_error
from rearrange.tasks.skill_base import SkillTask, read_config

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

DISTANCES = ("geodesic", "euclidean")
STOP_INDEX = ACTION_SLICES["stop"].start


@dataclass(frozen=True)
class NavReward:
    """The `reward` node of configs/skill/nav.yaml."""

    slack: float
    success_reward: float
    dist_reward: float
    distance: str  # one of DISTANCES
    angle_dist_reward: float
    turn_reward_dist: float
    early_stop_pen: float = 0.0  # absent in nav checkpoints saved before the key: habitat's 0
    collision_pen: float = 0.0  # the same


@dataclass(frozen=True)
class NavSuccess:
    """The `success` node of configs/skill/nav.yaml."""

    success_distance: float
    success_angle: float
    must_call_stop: bool
    end_on_stop: bool


class NavTask(SkillTask):
    """Drive the base to the navigation goal, face it, and call stop."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.reward_cfg = read_config(NavReward, cfg["reward"])
        self.success_cfg = read_config(NavSuccess, cfg["success"])
        self.distance_kind = self.reward_cfg.distance
        if self.distance_kind not in DISTANCES:
            raise ValueError(f"unknown nav reward distance '{self.distance_kind}'; valid choices: "
                             f"{', '.join(DISTANCES)}")
        self.dist = DistanceDelta(self.reward_cfg.dist_reward)
        self.angle = DistanceDelta(self.reward_cfg.angle_dist_reward)
        for name in ("early_stop_pen", "collision_pen"):
            check_range(f"skill.reward.{name}", getattr(self.reward_cfg, name))
        self.goal_xy = np.zeros(2)
        self.arm_to_rest = bool(cfg.get("arm_to_rest", False))
        self.arm_noise = ArmStartNoise.from_node(cfg.get("start_arm"))

    def reset(self, sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
        if "nav_goal" not in episode.info:
            raise ValueError(f"nav episode {episode.episode_id} has no info.nav_goal")
        self.sensor_target = target_from_episode(episode)
        self.goal_xy = np.asarray(episode.info["nav_goal"], dtype=np.float64)[:2]
        self.grip_disabled = False
        self.arm_noise.apply(sim, rng)
        self.dist.reset(self._reward_distance(sim))
        self.angle.reset(None)
        if self.euclidean(sim) < self.reward_cfg.turn_reward_dist:
            self.angle.reset(self.heading_error(sim))

    def euclidean(self, sim: RearrangeSim) -> float:
        """2-D distance base -> goal (success and turn-reward range use this)."""
        return float(np.linalg.norm(self.goal_xy - np.asarray(sim.base_xy, dtype=np.float64)))

    def heading_error(self, sim: RearrangeSim) -> float:
        return heading_error(sim.base_xy, sim.base_yaw, self.goal_xy)

    def _reward_distance(self, sim: RearrangeSim) -> float:
        if self.distance_kind == "geodesic":
            # the distance goal_path_compass reads: to the goal's reach cell, on its side of any wall
            field = sim.navmap.distance_field(self.goal_xy)
            return float("inf") if field is None else sim.navmap.field_at(field, sim.base_xy)
        return self.euclidean(sim)

    def step(self, sim: RearrangeSim, full_action: np.ndarray) -> TaskStep:
        r, s = self.reward_cfg, self.success_cfg
        terms: dict[str, float] = {"slack": r.slack}
        reverse = min(max(-float(full_action[BASE_LINEAR]), 0.0), 1.0)  # the reverse speed command, 0..1
        stop = float(full_action[STOP_INDEX]) > 0.0
        terms["dist"] = self.dist(self._reward_distance(sim))
        if r.collision_pen > 0.0 and sim.base_collided:
            terms["collision"] = -r.collision_pen
        d = self.euclidean(sim)
        angle = self.heading_error(sim)
        if d < r.turn_reward_dist:
            terms["angle"] = self.angle(angle)
        else:
            self.angle.reset(None)
        at_goal = d < s.success_distance and angle < s.success_angle
        success = at_goal and (stop or not s.must_call_stop)
        terminated = stop and s.end_on_stop
        if success:
            terms["success"] = r.success_reward
            terminated = True
        elif terminated and r.early_stop_pen > 0.0:
            terms["early_stop"] = -r.early_stop_pen
        info = {"nav_dist": d, "nav_angle": angle, "stop": float(stop), "at_goal": float(at_goal), "reverse": reverse}
        return self._task_step(terms, terminated, success, info)
