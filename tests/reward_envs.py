"""Skill envs on a real sim for the reward tests: an env with config edits on the first train episode
(`make_env`), one on a given kind of receptacle (`skill_env_on`), and actions built from named parts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rearrange.arm_ik import delta_per_step, dls_solve

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

SIM_CFG = {"camera": {"head": {"width": 32, "height": 32}}}
_ENVS: dict[tuple[str, str, str, float], Any] = {}


def skill_env_on(skill: str, receptacle_kind: str, reward_key: str, value: float, fresh: bool = False) -> Any:
    """A reset `skill` env on the first train episode (seed 0) whose target is on a `receptacle_kind`
    (surface, fridge, drawer), with `skill.reward.<reward_key>` = `value`; built once per argument set
    and shared, or (`fresh`) a new one of its own for a test that steps it."""
    key = (skill, receptacle_kind, reward_key, value)
    if fresh or key not in _ENVS:
        env = make_env(skill, [episode_on(skill, receptacle_kind)], **{f"reward__{reward_key}": value})
        if fresh:
            return env
        _ENVS[key] = env
    return _ENVS[key]


def episode_on(skill: str, receptacle_kind: str) -> Any:
    """The first train episode (seed 0) of `skill` whose target is on a `receptacle_kind` (surface, fridge,
    drawer)."""
    from rearrange.generate import generate_episodes

    return next(e for e in generate_episodes(skill, "train", 12, 0) if e.info["receptacle_kind"] == receptacle_kind)


_EPISODES: dict[str, list] = {}


def episodes(kind: str) -> list:
    """The first train episode (seed 0) of skill `kind`, generated once."""
    if kind not in _EPISODES:
        from rearrange.generate import generate_episodes

        _EPISODES[kind] = generate_episodes(kind, "train", 1, 0)
    return _EPISODES[kind]


def make_env(kind: str, episode_list: list | None = None, **changes: Any) -> Any:
    """A RearrangeEnv of skill `kind`; `changes` are (dotted key -> value) edits of its skill config."""
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

    cfg = load_skill_config(kind)
    for dotted, value in changes.items():
        node = cfg
        *path, last = dotted.split("__")
        for key in path:
            node = node[key]
        node[last] = value
    env = RearrangeEnv(make_skill_task(cfg), episode_list or episodes(kind), sim_cfg=SIM_CFG)
    env.reset(seed=0)
    return env


def action(env: Any, arm: Any = None, grip: float | None = None, base: Any = None, stop: float | None = None) -> np.ndarray:
    """A subset action for `env` from named parts (missing parts 0)."""
    parts = {"arm": arm if arm is not None else np.zeros(7), "grip": [0.0 if grip is None else grip],
             "base": base if base is not None else np.zeros(2), "stop": [-1.0 if stop is None else stop]}
    return np.concatenate([np.asarray(parts[s], dtype=np.float64) for s in env.task.action_subsets])


def arm_toward(sim: RearrangeSim, point: Any, step: float = 0.02) -> np.ndarray:
    """Arm action moving the ee `step` m toward `point` (damped least squares on the ee Jacobian)."""
    d = np.asarray(point) - sim.ee_pos
    dq = dls_solve(sim.ee_jacobian(), d / max(np.linalg.norm(d), 1e-9) * step, damping=0.01)
    return np.clip(dq / delta_per_step(sim), -1.0, 1.0)


def arm_to_rest(sim: RearrangeSim) -> np.ndarray:
    """Arm action moving the joints toward rest at full speed."""
    return np.clip((sim.REST_ARM_QPOS - sim.arm_qpos) / delta_per_step(sim), -1.0, 1.0)
