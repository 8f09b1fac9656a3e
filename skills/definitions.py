"""Skill definitions: the one place that says, for each of the seven skills, which observation keys
it reads, which action subsets it outputs, when the HAB agent should stop running it, its timeout
and which PDDL actions it serves. Used by `train-skill`, `eval-skill` and the HAB agent.

Numbers (thresholds, timeouts, PDDL names) come from `configs/skill/<name>.yaml` (`hab:` node); obs
keys and action subsets are the same ones the skill's training task uses, so a trained policy and
its definition cannot disagree.

Termination predicates are plain functions of a measure dict with these keys (numpy or Python
values; the observation keys are the sensors' names):

    is_holding                 (1,) or scalar, > 0.5 means holding an object
    relative_resting_position  (3,) resting position - ee position, base frame
    stop                       the skill's own stop output (its `stop` action entry), > 0 = stop
    left_start_zone            bool: the ee has been farther than start_zone_radius from where it
                               was when the skill started (sticky; `SkillMonitor` keeps it)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from rearrange.actions import SUBSET_ORDER, SUBSET_SIZES, subset_dim
from rearrange.sensors import check_sensor_names
from rearrange.tasks.skill_base import skill_action_subsets, skill_base_reverse_speed
from rearrange.tasks.skill_tasks import SKILL_NAMES, check_skill_name, load_skill_config, skill_node

Measures = Mapping[str, Any]


def _holding(m: Measures) -> bool:
    return float(np.asarray(m["is_holding"]).reshape(-1)[0]) > 0.5


def _rest_dist(m: Measures) -> float:
    return float(np.linalg.norm(np.asarray(m["relative_resting_position"], dtype=np.float64)))


def _stop(m: Measures) -> bool:
    return float(np.asarray(m.get("stop", 0.0)).reshape(-1)[0]) > 0.0


def pick_done(m: Measures, at_resting_threshold: float) -> bool:
    """Pick: holding an object and the ee back near the resting position."""
    return _holding(m) and _rest_dist(m) < at_resting_threshold


def place_done(m: Measures, at_resting_threshold: float) -> bool:
    """Place: not holding and the ee back near the resting position."""
    return (not _holding(m)) and _rest_dist(m) < at_resting_threshold


def art_done(m: Measures, at_resting_threshold: float) -> bool:
    """Open/close: not holding, at rest and the ee has left its start zone; or the skill's stop."""
    at_rest_after_work = (not _holding(m)) and _rest_dist(m) < at_resting_threshold and bool(
        m.get("left_start_zone", False))
    return at_rest_after_work or _stop(m)


def nav_done(m: Measures) -> bool:
    """Navigate: the skill's own stop output > 0."""
    return _stop(m)


@dataclass(frozen=True)
class SkillDef:
    """Everything a caller needs to run a skill policy inside a bigger agent."""

    name: str
    obs_keys: tuple[str, ...]
    action_subsets: tuple[str, ...]  # in rearrange.actions.SUBSET_ORDER
    termination: Callable[[Measures], bool]
    timeout: int  # max skill steps for the HAB agent (a timeout is a failed skill)
    pddl_actions: tuple[str, ...]
    train_max_steps: int  # episode length of the training task
    base_movement: bool
    start_zone_radius: float | None = None  # art skills: radius of the ee start zone
    base_reverse_speed: float = 1.0  # reverse base speed commands are scaled by this (the skill env's)

    @property
    def action_dim(self) -> int:
        return subset_dim(self.action_subsets)

    def should_terminate(self, measures: Measures) -> bool:
        """The termination predicate on a measure dict (keys in the module docstring)."""
        return bool(self.termination(measures))

    def subset_slices(self) -> dict[str, slice]:
        """Where each subset sits inside this skill's action vector."""
        out, k = {}, 0
        for name in self.action_subsets:
            n = SUBSET_SIZES[name]
            out[name] = slice(k, k + n)
            k += n
        return out

    def initial_action_mean(self, by_subset: Mapping[str, float]) -> list[float] | None:
        """The untrained policy's action mean, one value per dimension, from per-subset values
        (`skill_initial_action` in the training profile; subsets it leaves out start at 0, subsets
        this skill lacks are ignored). None where no subset of this skill is given."""
        _check_subsets("skill_initial_action", by_subset)
        if not set(by_subset) & set(self.action_subsets):
            return None
        mean = [0.0] * self.action_dim
        for name, sl in self.subset_slices().items():
            for k in range(sl.start, sl.stop):
                mean[k] = float(by_subset.get(name, 0.0))
        return mean

    def action_dims(self, subsets: Sequence[str]) -> list[int]:
        """The dimensions of this skill's action vector that the named subsets occupy (`skill_binary_actions`
        in the training profile; subsets this skill lacks are ignored)."""
        _check_subsets("skill_binary_actions", subsets)
        slices = self.subset_slices()
        return [k for name in subsets if name in slices for k in range(slices[name].start, slices[name].stop)]

    def stop_value(self, action: Sequence[float] | np.ndarray) -> float:
        """The skill action's stop entry (0 if the skill has no stop)."""
        sl = self.subset_slices().get("stop")
        return 0.0 if sl is None else float(np.asarray(action, dtype=np.float64).reshape(-1)[sl][0])


def _check_subsets(key: str, names: Iterable[str]) -> None:
    """ValueError (one line naming `key` and the valid choices) for a name that is not an action subset."""
    unknown = sorted(set(names) - set(SUBSET_SIZES))
    if unknown:
        raise ValueError(f"{key} has unknown action subset(s) {', '.join(unknown)}; "
                         f"valid choices: {', '.join(SUBSET_ORDER)}")


def skill_def_from_config(cfg: Mapping[str, Any]) -> SkillDef:
    """The definition of the skill config `cfg` (a composed config with a `skill` node, or the node)."""
    node = skill_node(cfg)
    name = check_skill_name(str(node["name"]))
    hab = node["hab"]
    if name == "pick":
        termination: Callable[[Measures], bool] = partial(pick_done, at_resting_threshold=float(hab["at_resting_threshold"]))
    elif name == "place":
        termination = partial(place_done, at_resting_threshold=float(hab["at_resting_threshold"]))
    elif name == "nav":
        termination = nav_done
    else:
        termination = partial(art_done, at_resting_threshold=float(hab["at_resting_threshold"]))
    radius = hab.get("start_zone_radius")
    obs_keys = tuple(node["obs_keys"])
    try:
        check_sensor_names(obs_keys)
    except ValueError as exc:
        raise ValueError(f"skill.obs_keys: {exc}") from None
    return SkillDef(
        name=name,
        obs_keys=obs_keys,
        action_subsets=skill_action_subsets(node),
        termination=termination,
        timeout=int(hab["timeout"]),
        pddl_actions=tuple(hab["pddl_actions"]),
        train_max_steps=int(node["max_steps"]),
        base_movement=bool(node["base_movement"]),
        start_zone_radius=None if radius is None else float(radius),
        base_reverse_speed=skill_base_reverse_speed(node),
    )


def get_skill(name: str, base_movement: bool = True) -> SkillDef:
    """The definition of skill `name` from its config; ValueError (one line listing the seven) if unknown."""
    check_skill_name(name)
    cfg = load_skill_config(name)
    cfg["base_movement"] = bool(base_movement)
    return skill_def_from_config(cfg)


def skill_for_pddl_action(action_name: str) -> SkillDef:
    """The skill that executes PDDL action `action_name` (e.g. "nav_to_receptacle" -> nav)."""
    for name in SKILL_NAMES:
        skill = get_skill(name)
        if action_name in skill.pddl_actions:
            return skill
    valid = [a for n in SKILL_NAMES for a in get_skill(n).pddl_actions]
    raise ValueError(f"no skill serves PDDL action '{action_name}'; valid choices: {', '.join(valid)}")


class SkillMonitor:
    """Runs a skill's termination predicate and timeout over a stream of observations and actions.

    Call `reset(obs)` when the skill starts, then `step(obs, action)` after every skill action with
    the observation that followed it. `step` returns (done, timed_out): done is true when the
    predicate fires or the timeout is reached; timed_out says it was the timeout (a failed skill).
    """

    def __init__(self, skill: SkillDef) -> None:
        self.skill = skill
        self.steps = 0
        self.left_start_zone = False
        self._start_rel_rest = np.zeros(3)

    def reset(self, obs: Measures) -> None:
        self.steps = 0
        self.left_start_zone = False
        self._start_rel_rest = np.asarray(obs["relative_resting_position"], dtype=np.float64).copy() \
            if "relative_resting_position" in obs else np.zeros(3)

    def measures(self, obs: Measures, action: Sequence[float] | np.ndarray) -> dict[str, Any]:
        """The measure dict the predicate reads: the observation plus stop and left_start_zone."""
        m = dict(obs)
        m["stop"] = self.skill.stop_value(action)
        if self.skill.start_zone_radius is not None and "relative_resting_position" in obs:
            moved = np.linalg.norm(np.asarray(obs["relative_resting_position"], dtype=np.float64)
                                   - self._start_rel_rest)
            self.left_start_zone |= bool(moved > self.skill.start_zone_radius)
        m["left_start_zone"] = self.left_start_zone
        return m

    def spend(self, steps: int) -> bool:
        """Count `steps` the agent ran for this skill without its actions (eval-hab's nav unstick drive)
        towards its timeout; True if they used the time up (the call ends as a timeout: another `step`
        would overrun it)."""
        self.steps += int(steps)
        return self.steps_left == 0

    @property
    def steps_left(self) -> int:
        """Steps before the skill's timeout."""
        return max(0, int(self.skill.timeout) - self.steps)

    def step(self, obs: Measures, action: Sequence[float] | np.ndarray) -> tuple[bool, bool]:
        self.steps += 1
        if self.skill.should_terminate(self.measures(obs, action)):
            return True, False
        timed_out = self.steps >= self.skill.timeout
        return timed_out, timed_out


__all__ = ["SKILL_NAMES", "SUBSET_ORDER", "SkillDef", "SkillMonitor", "art_done", "get_skill", "nav_done",
           "pick_done", "place_done", "skill_def_from_config", "skill_for_pddl_action"]
