"""Open/close fridge and drawer tasks (habitat-lab articulated_object_task.py, ArtObjReward and
ArtObjSuccess, notes 3.3).

The episode's `info.handle` names the handle marker; the articulated object is the one of the
layout that owns it. The desired joint state comes from the config, clipped to the joint's range.
Reward per step: slack; art_dist_reward x decrease of |joint - desired| while not at the desired
state; grasp_reward on the first grasp of the right handle; wrong_grasp_pen on grasping anything
else (ends if `wrong_grasp_end`); art_at_desired_state_reward once; ee_dist_reward x decrease of
ee->rest while at the desired state, else marker_dist_reward x decrease of ee->handle while not
grasping; contact-force penalty and force termination; success_reward when successful, else
early_stop_pen when the stop action ends the episode (a deviation, 0 in habitat).
Success: at the desired state, nothing grasped, ee within `ee_resting_threshold` of rest, and stop
called. Calling stop ends the episode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rearrange.actions import ACTION_SLICES
from rearrange.episodes import Episode
from rearrange.sensors import target_from_episode
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import DistanceDelta, norm
from rearrange.tasks.skill_base import SkillTask, ee_to_rest, read_config

if TYPE_CHECKING:
    from rearrange.apartment import ApartmentLayout
    from rearrange.sim import RearrangeSim

STOP_INDEX = ACTION_SLICES["stop"].start


@dataclass(frozen=True)
class ArtReward:
    """The `reward` node of configs/skill/{open,close}_{fridge,cab}.yaml (force: `ForceMonitor`)."""

    slack: float
    success_reward: float
    art_dist_reward: float
    grasp_reward: float
    wrong_grasp_pen: float
    wrong_grasp_end: bool
    art_at_desired_state_reward: float
    marker_dist_reward: float
    ee_dist_reward: float
    early_stop_pen: float  # paid when stop ends the episode without success (habitat: none, 0)


@dataclass(frozen=True)
class ArtSuccess:
    """The `success` node of the four articulated skill configs."""

    ee_resting_threshold: float
    must_call_stop: bool
    end_on_stop: bool


@dataclass(frozen=True)
class ArtGoal:
    """The `articulated` node: the desired joint state and when the joint counts as there."""

    desired_state: float  # clipped to the joint's range at reset
    use_absolute_distance: bool
    success_dist_threshold: float
    disable_grip: bool


def art_for_handle(layout: ApartmentLayout, handle: str) -> str:
    """Name of the articulated object whose handle marker is `handle`."""
    for name, art in layout.articulated.items():
        if art.handle == handle:
            return name
    handles = ", ".join(a.handle for a in layout.articulated.values())
    raise ValueError(f"unknown handle '{handle}'; valid choices: {handles}")


class ArtObjTask(SkillTask):
    """Bring an articulated object's joint to a desired state, release, rest the arm, call stop."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.reward_cfg = read_config(ArtReward, cfg["reward"])
        self.success_cfg = read_config(ArtSuccess, cfg["success"])
        self.art_cfg = read_config(ArtGoal, cfg["articulated"])
        self.disable_grip = self.art_cfg.disable_grip
        self.marker_dist = DistanceDelta(self.reward_cfg.marker_dist_reward)
        self.rest_dist = DistanceDelta(self.reward_cfg.ee_dist_reward)
        self.art_dist = DistanceDelta(self.reward_cfg.art_dist_reward)
        self.handle = ""
        self.art = ""
        self.desired = 0.0
        self.any_grasped = False
        self.any_at_desired = False
        self.prev_grasped: str | None = None

    def reset(self, sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
        if "handle" not in episode.info:
            raise ValueError(f"{self.name} episode {episode.episode_id} has no info.handle")
        self.sensor_target = target_from_episode(episode)
        self.handle = str(episode.info["handle"])
        self.art = art_for_handle(sim.layout, self.handle)
        lo, hi = sim.art_range(self.art)
        self.desired = float(np.clip(self.art_cfg.desired_state, lo, hi))
        self.grip_disabled = self.disable_grip
        self.any_grasped = False
        self.any_at_desired = False
        self.prev_grasped = sim.grasped
        if self.force is not None:
            self.force.reset()
        self.art_dist.reset(self.art_distance(sim))
        self.marker_dist.reset(self._ee_to_handle(sim))
        self.rest_dist.reset(ee_to_rest(sim))

    def art_distance(self, sim: RearrangeSim) -> float:
        """|joint - desired state|."""
        return abs(float(sim.art_q(self.art)) - self.desired)

    def at_desired_state(self, sim: RearrangeSim) -> bool:
        q = float(sim.art_q(self.art))
        thresh = self.art_cfg.success_dist_threshold
        if self.art_cfg.use_absolute_distance:
            return abs(q - self.desired) < thresh
        # one-sided, habitat's relative mode: the joint is at least (desired - threshold) along the way
        # from its start towards the desired state (opening: q > desired - thresh)
        return self.desired - q < thresh

    def _ee_to_handle(self, sim: RearrangeSim) -> float:
        return norm(sim.handle_pos(self.handle) - sim.ee_pos)

    def step(self, sim: RearrangeSim, full_action: np.ndarray) -> TaskStep:
        r, s = self.reward_cfg, self.success_cfg
        terms: dict[str, float] = {"slack": r.slack}
        info: dict[str, float] = {}
        terminated = False
        grasped = sim.grasped
        stop = float(full_action[STOP_INDEX]) > 0.0
        at_desired = self.at_desired_state(sim)
        art_term = self.art_dist(self.art_distance(sim))  # tracked every step, paid until at desired
        if not at_desired:
            terms["art_dist"] = art_term
        if grasped is not None and grasped != self.prev_grasped:
            if grasped == self.handle:
                if not self.any_grasped:
                    terms["grasp"] = r.grasp_reward
                info["did_grasp"] = 1.0
            else:
                terms["wrong_grasp"] = -r.wrong_grasp_pen
                terminated |= r.wrong_grasp_end
                info["wrong_grasp"] = 1.0
            self.any_grasped = True
        self.prev_grasped = grasped
        rest_term = self.rest_dist(ee_to_rest(sim))
        marker_term = self.marker_dist(self._ee_to_handle(sim))
        if at_desired:
            if not self.any_at_desired:
                terms["at_desired_state"] = r.art_at_desired_state_reward
                self.any_at_desired = True
            terms["ee_dist"] = rest_term
        elif grasped is None:
            terms["marker_dist"] = marker_term
        terminated |= self._force_step(sim, terms, info)
        rest = ee_to_rest(sim)
        success = at_desired and grasped is None and rest < s.ee_resting_threshold and (
            stop or not s.must_call_stop)
        if stop and s.end_on_stop:
            terminated = True
        if success:
            terms["success"] = r.success_reward
            terminated = True
        elif stop and s.end_on_stop and r.early_stop_pen:
            terms["early_stop"] = -r.early_stop_pen
        info.update({"art_q": float(sim.art_q(self.art)), "art_dist": self.art_distance(sim),
                     "at_desired_state": float(at_desired), "stop": float(stop)})
        return self._task_step(terms, terminated, success, info)
