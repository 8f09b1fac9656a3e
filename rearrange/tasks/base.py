"""The task interface `RearrangeEnv` calls, and `ExploreTask` (no reward, no end).

A task decides, for one episode: which sensors the policy sees (`obs_keys`), which action subsets
it controls (`action_subsets`, names from `rearrange.actions.ACTION_SLICES`), the step limit
(`max_steps`, after which the env truncates), and after every sim step the reward, whether the
episode ended (`terminated`) and whether it succeeded. There are no hidden delays: whatever `step`
returns takes effect on that very step.

Call order, per episode:
    task.reset(sim, episode, rng)       # after the env applied the episode state to the sim
    loop: sim.step(...); ts = task.step(sim, full_action)
`full_action` is the clipped 11-vector the sim executed (unused subsets are 0). A task may change
what the sensors point at through its `sensor_target` attribute (a `SensorTarget`), which the env
reads after `reset` and after every `step`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rearrange.actions import FULL_SUBSETS
from rearrange.episodes import Episode
from rearrange.sensors import SENSOR_NAMES, SensorTarget, target_from_episode

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


@dataclass
class TaskStep:
    """What a task says about one step."""

    reward: float
    terminated: bool
    success: bool
    info: dict[str, float] = field(default_factory=dict)


class Task(Protocol):
    """Interface of every task (see the module docstring for the call order)."""

    obs_keys: Sequence[str]
    action_subsets: Sequence[str]
    max_steps: int
    sensor_target: SensorTarget
    grip_disabled: bool  # True: the env never sends a grip command (close tasks)
    base_reverse_speed: float  # reverse base speed commands are scaled by this (1: as forwards)
    arm_to_rest: bool  # True: the env replaces the arm command with the one that drives the arm to rest

    def reset(self, sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
        """Start an episode; the sim already holds the episode's state."""
        ...

    def step(self, sim: RearrangeSim, full_action: np.ndarray) -> TaskStep:
        """Score the step the sim just took with `full_action`."""
        ...


class ExploreTask:
    """Reward 0, never terminates, every sensor, the full 11-dim action; sensors point at target 0."""

    def __init__(self, max_steps: int = 500, obs_keys: Sequence[str] = SENSOR_NAMES,
                 action_subsets: Sequence[str] = FULL_SUBSETS) -> None:
        self.obs_keys = tuple(obs_keys)
        self.action_subsets = tuple(action_subsets)
        self.max_steps = int(max_steps)
        self.grip_disabled = False
        self.base_reverse_speed = 1.0
        self.arm_to_rest = False
        self.sensor_target = SensorTarget()

    def reset(self, sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
        self.sensor_target = target_from_episode(episode)

    def step(self, sim: RearrangeSim, full_action: np.ndarray) -> TaskStep:
        return TaskStep(reward=0.0, terminated=False, success=False, info={})


def make_explore_task(cfg: Any = None) -> ExploreTask:
    """Factory used by the env registry (`cfg` may set `max_steps`)."""
    max_steps = 500 if cfg is None else int(cfg.get("max_steps", 500))
    return ExploreTask(max_steps=max_steps)
