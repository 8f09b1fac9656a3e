"""Running one skill episode with its oracle, shared by the oracle and container-episode tests."""

from __future__ import annotations

from typing import Any

from rearrange.env import make_registered_env
from rearrange.episodes import Episode
from rearrange.tasks.skill_tasks import SKILL_ENV_IDS, register_skill_envs
from skills.oracles.base import select_subset
from skills.oracles.factory import make_oracle


def run_oracle_episode(skill: str, episode: Episode, cfg: Any = None) -> tuple[dict, list[str], Any]:
    """Run `skill`'s oracle on one episode to its end: (final info, the phases it went through, oracle)."""
    register_skill_envs()
    env = make_registered_env(SKILL_ENV_IDS[skill], episodes=[episode])
    oracle = make_oracle(skill, cfg) if cfg is not None else make_oracle(skill)
    phases: list[str] = []
    try:
        env.reset(options={"episode_index": 0})
        oracle.start(env.sim, env.task.sensor_target)
        while True:
            action = select_subset(env.task.action_subsets, oracle.act(env.sim))
            if not phases or phases[-1] != oracle.phase:
                phases.append(oracle.phase)
                assert oracle.phase in oracle.PHASES, f"{skill} oracle phase {oracle.phase} missing from its PHASES"
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                return info, phases, oracle
    finally:
        env.close()
