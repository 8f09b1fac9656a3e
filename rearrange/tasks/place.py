"""Place skill task (habitat-lab RearrangePlaceTask-v0 with PlaceReward, notes 3.3).

The episode starts with the target in the gripper (episode info `start_holding`, applied by the env).
Habitat's reward per step: slack; dist_reward x decrease of object->goal while the object is held or
away from the goal (not paid closer than `min_dist_to_goal`), x decrease of ee->rest after a release at
the goal; place_reward once on releasing within `obj_at_goal_threshold` of the goal; drop_pen and the
end of the episode for a release elsewhere; contact-force penalty and force termination; success_reward
when successful. Success: not holding, object at the goal, ee at rest.

Deviations from habitat (each off at its dataclass default; configs/skill/place.yaml sets which are on, and why):
- `near_drop_reward` > 0: a wrong drop also pays a share of it, growing as the release comes closer.
- `displaced_pen` > 0: an object released at the goal that later leaves it (tipped, rolled, knocked)
  costs this once; `displaced_should_end` ends the episode then (regrasp blocked: it cannot succeed).
- `place_reward_dist` > 0: place_reward only for a release this close to the goal; a release between
  it and the success threshold pays nothing and the episode goes on (it can still succeed).
- `place_reward_falloff` > 0: the release pays less the farther from the goal it lands, falling linearly
  by this share of place_reward from the goal out to the distance that still pays.
- `approach_reward` > 0: approach_reward x decrease of the geodesic base distance to the navigable
  points within `approach_reach` of the goal, while held, until the first release (`rearrange.tasks.approach`).
- `opening_path_offset` > 0: the dense term's object->goal distance through a fridge's opening (`OpeningPath`).
- `exit_offset` > 0: after a release on a fridge shelf, the ee's remaining way out of the compartment is added to
  the ee->rest distance of the dense term (`ContainerExit`, pick's key of the same name, measured on the gripper).
- `start_grasp`: the held object starts in a varied pose in the gripper (`rearrange.grasp_pose`).
- `release_guard` > 0 (a skill key, not a reward one): a release further than this from the goal is a hold.
- `shut_pen` > 0: while the object is held, pushing the goal's container (drawer, fridge door) more than
  `shut_dist` toward closed from where it started costs this once; `shut_should_end` ends the episode then
  (inside Tidy House the held object pushed an open drawer shut in every drawer place whose object then fell
  to the floor, 10 of 10 over val seeds 0 and 1, stop 76).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from configs.ranges import check_range
from rearrange.episodes import Episode
from rearrange.grasp_pose import GraspNoise, perturb_arm, perturb_grasp
from rearrange.sensors import target_from_episode
from rearrange.tasks.approach import (
    ApproachShaping,
    ContainerExit,
    OpeningPath,
    check_approach_cfg,
    check_offset_cfg,
)
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import DistanceDelta, norm
from rearrange.tasks.skill_base import SkillTask, ee_to_rest, holding_object, read_config

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


@dataclass(frozen=True)
class PlaceReward:
    """The `reward` node of configs/skill/place.yaml (force and approach are read by their own classes)."""

    slack: float
    success_reward: float
    dist_reward: float
    min_dist_to_goal: float
    place_reward: float
    drop_pen: float
    wrong_drop_should_end: bool
    near_drop_reward: float = 0.0  # deviation when > 0: a wrong drop d metres from the goal also pays
    near_drop_dist: float = 0.5  # near_drop_reward x max(0, 1 - d / near_drop_dist)
    displaced_pen: float = 0.0  # deviation when > 0: once, when an object released at the goal leaves it
    displaced_should_end: bool = False  # deviation when true: that ends the episode
    place_reward_dist: float = 0.0  # deviation when > 0: place_reward only for a release this close to the goal
    place_reward_falloff: float = 0.0  # deviation when > 0: place_reward x (1 - this x d / the distance that pays)
    shut_pen: float = 0.0  # deviation when > 0: once, when the held object's goal container is pushed toward closed
    shut_dist: float = 0.05  # m (drawer) or rad (door) of that push
    shut_should_end: bool = False  # deviation when true: that ends the episode


@dataclass(frozen=True)
class PlaceSuccess:
    """The `success` node of configs/skill/place.yaml."""

    obj_at_goal_threshold: float
    ee_resting_threshold: float
    end_on_success: bool


class PlaceTask(SkillTask):
    """Put the held target object down at its goal and bring the arm back to rest."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.block_regrasp = bool(cfg["block_regrasp"])
        # absent in checkpoints saved before the key: off
        self.release_guard = check_range("skill.release_guard", cfg.get("release_guard", 0.0), unit="m (0: off)")
        self.reward_cfg = r = read_config(PlaceReward, cfg["reward"])
        self.success_cfg = read_config(PlaceSuccess, cfg["success"])
        check_range("skill.reward.near_drop_reward", r.near_drop_reward)
        check_range("skill.reward.near_drop_dist", r.near_drop_dist, low_open=True, unit="m")
        check_range("skill.reward.displaced_pen", r.displaced_pen)
        check_range("skill.reward.place_reward_dist", r.place_reward_dist, 0.0, self.success_cfg.obj_at_goal_threshold,
                    unit="m (success.obj_at_goal_threshold at most)")
        check_range("skill.reward.place_reward_falloff", r.place_reward_falloff, 0.0, 1.0)
        check_range("skill.reward.shut_pen", r.shut_pen)
        check_range("skill.reward.shut_dist", r.shut_dist, low_open=True, unit="m or rad")
        self.dist = DistanceDelta(self.reward_cfg.dist_reward)
        self.approach = ApproachShaping(*check_approach_cfg(cfg["reward"], self.name))
        self.path = OpeningPath(check_offset_cfg(cfg["reward"], "opening_path_offset", self.name))
        self.exit = ContainerExit(check_offset_cfg(cfg["reward"], "exit_offset", self.name))
        self.grasp_noise = GraspNoise.from_node(cfg.get("start_grasp"))
        self.target: str | None = None
        self.goal = np.zeros(3)
        self.released = False
        self.placed = False  # released within obj_at_goal_threshold of the goal
        self.displaced = False  # placed, then left the goal
        self.container: str | None = None  # the goal's articulated container, watched for `shut_pen`
        self.container_open = 0.0  # how far it stood open at the start
        self.shut = False
        self.mode = "object"  # which distance the dense reward follows: "object" (->goal) or "rest"

    def reset(self, sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
        if not episode.targets:
            raise ValueError(f"place episode {episode.episode_id} has no target")
        self.sensor_target = target_from_episode(episode)
        self.target = episode.targets[0].object
        self.goal = np.asarray(episode.targets[0].goal_pos, dtype=np.float64)
        self.grip_disabled = False
        self.released = False
        self.placed = False
        self.displaced = False
        self.shut = False
        rec = sim.layout.receptacles.get(episode.targets[0].goal_receptacle)
        self.container = rec.container if rec is not None else None
        if self.container is not None:
            self.container_open = sim.art_opening(self.container)
        if self.grasp_noise.active and sim.grasped == self.target:
            if self.grasp_noise.max_arm_offset > 0.0:
                perturb_arm(sim, rng, self.grasp_noise.max_arm_offset, self.success_cfg.ee_resting_threshold)
            perturb_grasp(sim, rng, self.grasp_noise)
        if self.force is not None:
            self.force.reset()
        self.mode = "object"
        self.path.reset(sim, self.goal, episode.targets[0].goal_receptacle)
        self.exit.reset(sim, episode.targets[0].goal_receptacle)
        self.dist.reset(self.path.distance(sim.object_pos(self.target)))
        self.approach.reset(sim, self.goal, episode.targets[0].goal_receptacle)
        if sim.grasped != self.target:
            self.approach.stop()
        self._guard_release(sim)

    def _obj_to_goal(self, sim: RearrangeSim) -> float:
        return norm(sim.object_pos(self.target) - self.goal)

    def step(self, sim: RearrangeSim, full_action: np.ndarray) -> TaskStep:
        r, s = self.reward_cfg, self.success_cfg
        terms: dict[str, float] = {"slack": r.slack}
        info: dict[str, float] = {}
        terminated = False
        held = sim.grasped == self.target
        obj_to_goal = self._obj_to_goal(sim)
        at_goal = obj_to_goal < s.obj_at_goal_threshold
        if not self.released and not held:
            self.released = True
            self.approach.stop()  # no approach term after the release
            if self.block_regrasp:
                self.grip_disabled = True
            if at_goal:
                pays_within = r.place_reward_dist or s.obj_at_goal_threshold
                if obj_to_goal < pays_within:
                    terms["place"] = r.place_reward * (1.0 - r.place_reward_falloff * obj_to_goal / pays_within)
                info["did_place"] = 1.0
                self.placed = True
            else:
                terms["drop"] = -r.drop_pen + r.near_drop_reward * max(0.0, 1.0 - obj_to_goal / r.near_drop_dist)
                terminated |= r.wrong_drop_should_end
                info["wrong_drop"] = 1.0
        elif self.placed and not at_goal and not self.displaced:
            self.displaced = True
            info["displaced"] = 1.0
            if r.displaced_pen > 0.0:
                terms["displaced"] = -r.displaced_pen
            terminated |= r.displaced_should_end
        if held and self.container is not None and not self.shut \
                and sim.art_opening(self.container) < self.container_open - r.shut_dist:
            self.shut = True
            info["shut"] = 1.0
            if r.shut_pen > 0.0:
                terms["shut"] = -r.shut_pen
            terminated |= r.shut_should_end
        mode = "rest" if (self.released and at_goal) else "object"
        if mode != self.mode:
            self.dist.reset(None)  # a different distance from now on: no delta this step
            self.mode = mode
        if mode == "object":
            dist_term = self.dist(self.path.distance(sim.object_pos(self.target)))
            terms["dist"] = dist_term if obj_to_goal >= r.min_dist_to_goal else 0.0
        else:
            terms["dist"] = self.dist(self.rest_distance(sim))
        terms["approach"] = self.approach(sim)
        terminated |= self._force_step(sim, terms, info)
        success = (not holding_object(sim)) and at_goal and ee_to_rest(sim) < s.ee_resting_threshold
        if success:
            terms["success"] = r.success_reward
            terminated |= s.end_on_success
        self._guard_release(sim)
        return self._task_step(terms, terminated, success, info)

    def rest_distance(self, sim: RearrangeSim) -> float:
        """The dense term's distance after a release at the goal: ee->rest, plus (`exit_offset` > 0, a fridge
        shelf) the ee's remaining way out of the compartment."""
        return ee_to_rest(sim) + self.exit.depth(sim.ee_pos)

    def _guard_release(self, sim: RearrangeSim) -> None:
        """`skill.release_guard`: while the target is held further than that from its goal, the next step's
        grip entry is ignored (a release there is a hold), as the HAB agent's guard does."""
        if self.release_guard > 0.0 and sim.grasped == self.target:
            self.grip_disabled = self._obj_to_goal(sim) > self.release_guard
