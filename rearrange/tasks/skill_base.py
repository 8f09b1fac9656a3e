"""What every skill task shares: reading its `configs/skill/<name>.yaml` node, the action subsets
(with or without base movement), the contact-force monitor, and assembling a `TaskStep` whose info
lists every reward term (`reward/<term>`) so tests and logs can see what paid what.

Config values are read and converted once, at construction: each skill declares frozen dataclasses
for its `reward` and `success` nodes (`read_config` fills them), so `step` does no dict lookups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, fields
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from configs.ranges import check_range
from rearrange.actions import check_subsets
from rearrange.sensors import SensorTarget, check_sensor_names
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import ForceMonitor, ForceStep, norm

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

ConfigT = TypeVar("ConfigT")


def read_config(cls: type[ConfigT], node: Mapping[str, Any]) -> ConfigT:
    """The dataclass `cls` with each field read from `node` under its own name and converted by its
    annotated type (`float`, `bool`, `str`); a field with a default may be absent (a key added after
    checkpoints were saved without it), KeyError on any other missing key; other keys are ignored."""
    hints = get_type_hints(cls)
    return cls(**{f.name: hints[f.name](node[f.name]) for f in fields(cls)  # type: ignore[arg-type]
                  if f.name in node or (f.default is MISSING and f.default_factory is MISSING)})


def skill_base_reverse_speed(cfg: Mapping[str, Any]) -> float:
    """The skill's `base_reverse_speed` in (0, 1] (absent: 1, habitat's); ValueError (one line) otherwise."""
    return check_range("skill.base_reverse_speed", cfg.get("base_reverse_speed", 1.0), 0.0, 1.0, low_open=True)


def skill_action_subsets(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    """The skill's action subsets; `base` is dropped when `base_movement` is false (the ablation)."""
    subsets: Sequence[str] = list(cfg["action_subsets"])
    if not bool(cfg["base_movement"]):
        if "arm" not in subsets and "arm_ee" not in subsets:
            raise ValueError(f"skill {cfg['name']} cannot run without base movement (base_movement=false "
                             "is only for the manipulation skills)")
        subsets = [s for s in subsets if s != "base"]
    return check_subsets(subsets)


def skill_obs_keys(cfg: Mapping[str, Any]) -> tuple[str, ...]:
    """The sensors a skill env serves: `obs_keys` (the policy's) then `critic_obs_keys` (absent: none), the
    vector sensors only the critic reads while training (`policy.critic_only_keys`, an asymmetric
    actor-critic). ValueError (one line) for an unknown sensor, an image or a key in both lists."""
    obs_keys = tuple(str(k) for k in cfg["obs_keys"])
    critic_keys = tuple(str(k) for k in (cfg.get("critic_obs_keys") or ()))
    try:
        check_sensor_names(obs_keys + critic_keys)
    except ValueError as exc:
        raise ValueError(f"skill.obs_keys / skill.critic_obs_keys: {exc}") from None
    bad = [k for k in critic_keys if k in obs_keys or k == "head_depth"]
    if bad or len(set(critic_keys)) != len(critic_keys):
        raise ValueError(f"skill.critic_obs_keys must be vector sensors, each once, that are not in skill.obs_keys "
                         f"(got {', '.join(critic_keys)}; obs_keys: {', '.join(obs_keys)})")
    return obs_keys + critic_keys


def ee_to_rest(sim: RearrangeSim) -> float:
    """|resting position - ee position| in the base frame (habitat's relative_resting_position norm)."""
    return norm(sim.resting_pos_base - sim.ee_pos_base)


def holding_object(sim: RearrangeSim) -> bool:
    """The gripper holds a movable object (not a handle), like the `is_holding` sensor."""
    return sim.grasped is not None and sim.grasped in sim.object_names


class SkillTask:
    """Base of the seven skill tasks; subclasses implement `reset` and `step` (see `Task`).

    `cfg` (the skill's config node) is read only here and in the subclasses' constructors.
    """

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.cfg = cfg
        self.name = str(cfg["name"])
        self.obs_keys = skill_obs_keys(cfg)
        self.action_subsets = skill_action_subsets(cfg)
        self.base_reverse_speed = skill_base_reverse_speed(cfg)
        self.arm_to_rest = False  # nav may set it (configs/skill/nav.yaml)
        self.max_steps = int(cfg["max_steps"])
        self.sensor_target = SensorTarget()
        self.grip_disabled = False
        force_cfg = cfg["reward"].get("force")
        self.force = ForceMonitor(force_cfg) if force_cfg is not None else None

    def _force_step(self, sim: RearrangeSim, terms: dict[str, float], info: dict[str, float]) -> bool:
        """Charge the contact-force penalty into `terms`; True if force termination fired."""
        if self.force is None:
            return False
        fs: ForceStep = self.force(sim.robot_contact_force)
        terms["force"] = -fs.penalty
        info["counted_force"] = fs.added
        info["accum_force"] = fs.accumulated
        info["force_terminate"] = float(fs.terminate)
        return fs.terminate

    def _task_step(self, terms: dict[str, float], terminated: bool, success: bool,
                   info: dict[str, float]) -> TaskStep:
        """Sum the reward terms (slack and success bonus included by the caller) into a `TaskStep`."""
        for key, value in terms.items():
            info[f"reward/{key}"] = float(value)
        return TaskStep(reward=float(sum(terms.values())), terminated=bool(terminated), success=bool(success),
                        info=info)
