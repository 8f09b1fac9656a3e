"""The seven skill tasks: a plain dict from skill name to task class, their Gymnasium ids, and the
function that adds those ids to `rearrange.env.ENV_SPECS` and registers them.

    task = make_skill_task(load_skill_config("pick"))      # or a composed config with a `skill` node
    register_skill_envs(); gymnasium.make("rearrange/Pick-v0")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from configs.compose import load_config_file
from rearrange.episodes import SKILL_KINDS
from rearrange.tasks.articulated import ArtObjTask
from rearrange.tasks.nav import NavTask
from rearrange.tasks.pick import PickTask
from rearrange.tasks.place import PlaceTask
from rearrange.tasks.skill_base import SkillTask

SKILL_NAMES: tuple[str, ...] = SKILL_KINDS  # pick, place, nav, open_fridge, close_fridge, open_cab, close_cab

SKILL_TASKS: dict[str, type[SkillTask]] = {
    "pick": PickTask,
    "place": PlaceTask,
    "nav": NavTask,
    "open_fridge": ArtObjTask,
    "close_fridge": ArtObjTask,
    "open_cab": ArtObjTask,
    "close_cab": ArtObjTask,
}

SKILL_ENV_IDS: dict[str, str] = {
    "pick": "rearrange/Pick-v0",
    "place": "rearrange/Place-v0",
    "nav": "rearrange/Nav-v0",
    "open_fridge": "rearrange/OpenFridge-v0",
    "close_fridge": "rearrange/CloseFridge-v0",
    "open_cab": "rearrange/OpenCab-v0",
    "close_cab": "rearrange/CloseCab-v0",
}


def check_skill_name(name: str) -> str:
    """`name` if it is one of the seven skills, else ValueError (one line listing them)."""
    if name not in SKILL_TASKS:
        raise ValueError(f"unknown skill '{name}'; valid choices: {', '.join(SKILL_NAMES)}")
    return name


def load_skill_config(name: str) -> dict[str, Any]:
    """`configs/skill/<name>.yaml` as a plain dict (no Hydra composition needed)."""
    check_skill_name(name)
    return load_config_file(f"skill/{name}.yaml")


def skill_node(cfg: Mapping[str, Any] | None, default_name: str | None = None) -> Mapping[str, Any]:
    """The skill config node of `cfg` (a whole composed config with a `skill` key, or the node itself)."""
    if cfg is None:
        if default_name is None:
            raise ValueError("no skill config given")
        return load_skill_config(default_name)
    if "skill" in cfg and isinstance(cfg["skill"], Mapping):
        return cfg["skill"]
    return cfg


def make_skill_task(cfg: Mapping[str, Any] | None) -> SkillTask:
    """Build the task of a skill config (its `name` picks the class)."""
    node = skill_node(cfg)
    return SKILL_TASKS[check_skill_name(str(node["name"]))](node)


def register_skill_envs() -> None:
    """Add the seven skill ids to `rearrange.env.ENV_SPECS` and register them with Gymnasium."""
    from rearrange.env import ENV_SPECS, EnvSpec, register_envs

    for name, env_id in SKILL_ENV_IDS.items():
        if env_id not in ENV_SPECS:
            ENV_SPECS[env_id] = EnvSpec(task_factory=make_skill_task, config_name=f"skill/{name}",
                                        episode_kind=name)
    register_envs()
