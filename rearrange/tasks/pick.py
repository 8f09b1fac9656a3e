"""Pick skill task (habitat-lab RearrangePickTask-v0 with RearrangePickReward, notes 3.3).

Reward per step: slack; dist_reward x decrease of ee->object before the grasp and of ee->rest after
it; pick_reward once on grasping the target; wrong_pick_pen on grasping anything else (ends);
drop_pen when the held target is lost (ends); contact-force penalty and force termination;
success_reward when successful. Optional (deviation, `approach_reward` > 0): approach_reward x decrease
of the geodesic base distance to the navigable points within `approach_reach` of the object, until the
first grasp of the target (`rearrange.tasks.approach`); and (`exit_offset` > 0) for a target in a fridge,
the held object's remaining way out of the compartment added to the ee->rest distance (`ContainerExit`);
and (`knock_pen` > 0) knock_pen once for each other object of the episode moved more than `knock_dist`
from where the episode put it (`KnockWatch`; `info["knocked"]` counts them whatever the cost); and
(`target_push_pen` > 0) target_push_pen per metre the target itself is pushed from its reset position before
its first grasp, up to `target_push_cap` (`PushWatch`; `info["target_push"]` is that distance whatever the
cost), the episode ending at the cap with `target_push_should_end`; and (`base_change_pen` > 0) base_change_pen
x the L1 change of the base command from the step before (`CommandChange`), against a mean action that flips the
base back and forth beside its target; `info["base_change"]`, whatever the cost, is that change averaged over the
episode's steps so far (eval-skill's measure of a shaking base).
Success: holding the target with the ee within `ee_resting_threshold` of the resting position; the
episode ends on success.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from configs.ranges import check_range
from rearrange.actions import ACTION_SLICES
from rearrange.episodes import Episode
from rearrange.grasp_pose import ArmStartNoise
from rearrange.sensors import target_from_episode
from rearrange.tasks.approach import ApproachShaping, ContainerExit, check_approach_cfg, check_offset_cfg
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import CommandChange, DistanceDelta, KnockWatch, PushWatch, norm
from rearrange.tasks.skill_base import SkillTask, ee_to_rest, read_config

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


@dataclass(frozen=True)
class PickReward:
    """The `reward` node of configs/skill/pick.yaml (force and approach are read by their own classes)."""

    slack: float
    success_reward: float
    dist_reward: float
    pick_reward: float
    wrong_pick_pen: float
    wrong_pick_should_end: bool
    drop_pen: float
    drop_should_end: bool
    knock_pen: float = 0.0  # deviation when > 0 (absent in configs saved before 2026-11-28: off)
    knock_dist: float = 0.1
    knock_should_end: bool = False
    target_push_pen: float = 0.0  # deviation when > 0 (absent in configs saved before 2026-12-02: off)
    target_push_cap: float = 0.3
    target_push_should_end: bool = False
    base_change_pen: float = 0.0  # deviation when > 0 (absent in configs saved before 2026-12-06: off)


@dataclass(frozen=True)
class PickSuccess:
    """The `success` node of configs/skill/pick.yaml."""

    ee_resting_threshold: float
    end_on_success: bool


class PickTask(SkillTask):
    """Pick up the episode's first target object and bring the arm back to its resting position."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.block_release = bool(cfg["block_release"])
        self.arm_noise = ArmStartNoise.from_node(cfg.get("start_arm"))
        self.reward_cfg = read_config(PickReward, cfg["reward"])
        self.success_cfg = read_config(PickSuccess, cfg["success"])
        self.dist = DistanceDelta(self.reward_cfg.dist_reward)
        self.approach = ApproachShaping(*check_approach_cfg(cfg["reward"], self.name))
        self.exit = ContainerExit(check_offset_cfg(cfg["reward"], "exit_offset", self.name))
        r = self.reward_cfg
        check_range("skill.reward.knock_pen", r.knock_pen)
        check_range("skill.reward.knock_dist", r.knock_dist, low_open=True, unit="m")
        self.knocks = KnockWatch(r.knock_dist)
        check_range("skill.reward.target_push_pen", r.target_push_pen, unit="per m")
        check_range("skill.reward.target_push_cap", r.target_push_cap, low_open=True, unit="m")
        self.push = PushWatch(r.target_push_cap)
        check_range("skill.reward.base_change_pen", r.base_change_pen, unit="per unit of change")
        self.base_change = CommandChange()
        self.target: str | None = None
        self.prev_grasped: str | None = None
        self.picked_once = False

    def reset(self, sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
        if not episode.targets:
            raise ValueError(f"pick episode {episode.episode_id} has no target object")
        self.sensor_target = target_from_episode(episode)
        self.target = episode.targets[0].object
        self.grip_disabled = False
        if sim.grasped is None:  # the arm off rest, as a place or a blocked arm reset leaves it in the HAB tasks
            self.arm_noise.apply(sim, rng)  # (training only)
        self.prev_grasped = sim.grasped
        self.picked_once = False
        if self.force is not None:
            self.force.reset()
        receptacle = episode.object_spec(self.target).receptacle
        self.exit.reset(sim, receptacle)
        self.dist.reset(self._distance(sim))
        self.approach.reset(sim, sim.object_pos(self.target), receptacle)
        self.knocks.reset(sim, [o.name for o in episode.objects if o.name != self.target])
        self.push.reset(sim.object_pos(self.target))
        self.base_change.reset()
        if sim.grasped == self.target:
            self.approach.stop()
            self.push.stop()

    def _distance(self, sim: RearrangeSim) -> float:
        if sim.grasped == self.target:
            return ee_to_rest(sim) + self.exit.depth(sim.object_pos(self.target))
        return norm(sim.object_pos(self.target) - sim.ee_pos)

    def step(self, sim: RearrangeSim, full_action: np.ndarray) -> TaskStep:
        r, s = self.reward_cfg, self.success_cfg
        terms: dict[str, float] = {"slack": r.slack}
        info: dict[str, float] = {}
        terminated = False
        grasped = sim.grasped
        new_grasp = grasped is not None and grasped != self.prev_grasped
        if new_grasp and grasped == self.target:
            if not self.picked_once:
                terms["pick"] = r.pick_reward
                self.picked_once = True
            self.approach.stop()  # the base has arrived: no approach term after the grasp
            self.push.stop()  # the grasp moves the target from here on
            self.dist.reset(None)  # the distance switches to ee->rest: no delta this step
            if self.block_release:
                self.grip_disabled = True
            info["did_pick"] = 1.0
        elif new_grasp:
            terms["wrong_pick"] = -r.wrong_pick_pen
            terminated |= r.wrong_pick_should_end
            info["wrong_pick"] = 1.0
        if self.prev_grasped == self.target and grasped != self.target:
            terms["drop"] = -r.drop_pen
            terminated |= r.drop_should_end
            self.dist.reset(None)
            info["dropped"] = 1.0
        self.prev_grasped = grasped
        terms["dist"] = self.dist(self._distance(sim))
        terms["approach"] = self.approach(sim)
        terminated |= self._force_step(sim, terms, info)
        knocked = self.knocks(sim)
        if knocked and r.knock_pen > 0.0:
            terms["knock"] = -r.knock_pen * knocked
            terminated |= r.knock_should_end
        info["knocked"] = float(self.knocks.count)
        pushed = self.push(sim.object_pos(self.target))
        if pushed > 0.0 and r.target_push_pen > 0.0:
            terms["target_push"] = -r.target_push_pen * pushed
        if self.push.at_cap and r.target_push_should_end:
            terminated = True
        info["target_push"] = self.push.furthest
        change = self.base_change(full_action[ACTION_SLICES["base"]])
        if change > 0.0 and r.base_change_pen > 0.0:
            terms["base_change"] = -r.base_change_pen * change
        info["base_change"] = self.base_change.mean
        rest = ee_to_rest(sim)
        success = grasped == self.target and rest < s.ee_resting_threshold
        if success:
            terms["success"] = r.success_reward
            terminated |= s.end_on_success
        return self._task_step(terms, terminated, success, info)
