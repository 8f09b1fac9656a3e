"""Skill doubles for HAB-agent tests: the real oracles, with one call replaced to inject a failure; and the
HAB env those tests run them in."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from eval.oracle_controllers import OracleSkills

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


class Idle:
    """A skill controller that does nothing but keep the suction off until its call ends: a stalled skill
    (an injected failure), or for place a release on the first step, wherever the object is."""

    def __init__(self, skill: Any) -> None:
        self.skill = skill

    def start(self, sim: RearrangeSim, target: Any, retry: bool = False) -> None:
        pass

    def act(self, sim: RearrangeSim, obs: Any) -> np.ndarray:
        action = np.zeros(11)
        action[7] = -1.0  # grip < 0: release
        return action


class FirstCallReplaced:
    """Skill factory: the oracles, except that the first call of `skill` runs `replace(oracle controller)`."""

    def __init__(self, skill: str, replace: Callable[[Any], Any]) -> None:
        self.oracles = OracleSkills()
        self.skill = skill
        self.replace = replace
        self.used = False

    def __call__(self, name: str) -> Any:
        controller = self.oracles(name)
        if name == self.skill and not self.used:
            self.used = True
            return self.replace(controller)
        return controller


def hab_env(scenario: str, max_steps: int) -> Any:
    """A `RearrangeEnv` over the scenario's first val episode (seed 0), `hab_task.max_steps` = `max_steps`, no
    observations (the oracles read the simulator)."""
    from rearrange.env import RearrangeEnv
    from rearrange.generate import generate_episodes
    from rearrange.tasks.hab import HabTask, load_hab_config

    cfg = load_hab_config([f"hab_task.max_steps={max_steps}"])
    return RearrangeEnv(HabTask(scenario, cfg, obs_keys=()), generate_episodes(scenario, "val", 1, 0),
                        episode_order="cycle")
