"""Skill envs with one reward option set, on a train episode whose target sits on a given kind of
receptacle; shared by the reward-shaping tests (place's opening path, pick's way out of the fridge)."""

from __future__ import annotations

from typing import Any

SIM_CFG = {"camera": {"head": {"width": 32, "height": 32}}}
_ENVS: dict[tuple[str, str, str, float], Any] = {}


def skill_env_on(skill: str, receptacle_kind: str, reward_key: str, value: float, fresh: bool = False) -> Any:
    """A reset `skill` env on the first train episode (seed 0) whose target is on a `receptacle_kind`
    (surface, fridge, drawer), with `skill.reward.<reward_key>` = `value`; built once per argument set
    and shared, or (`fresh`) a new one of its own for a test that steps it."""
    key = (skill, receptacle_kind, reward_key, value)
    if fresh or key not in _ENVS:
        from rearrange.env import RearrangeEnv
        from rearrange.generate import generate_episodes
        from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

        episode = next(e for e in generate_episodes(skill, "train", 12, 0)
                       if e.info["receptacle_kind"] == receptacle_kind)
        cfg = load_skill_config(skill)
        cfg["reward"][reward_key] = value
        env = RearrangeEnv(make_skill_task(cfg), [episode], sim_cfg=SIM_CFG)
        env.reset(seed=0)
        if fresh:
            return env
        _ENVS[key] = env
    return _ENVS[key]
