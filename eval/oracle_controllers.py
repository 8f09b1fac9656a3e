"""The scripted oracles behind the HAB agent's skill-controller interface (`SkillController`).

The agent (`eval.agent.HabAgent`) runs any skill through two calls, `start(sim, target, retry)` and
`act(sim, obs)` -> one full action; learned policies implement them in `eval.skill_library.PolicyController`,
the oracle controllers (`skills.oracles`) here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rearrange.actions import ACTION_DIM
from rearrange.sensors import SensorTarget
from skills.definitions import SkillDef, get_skill

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


class SkillController(Protocol):
    """A skill the agent can run: started on a target, then one full 11-dim action per step."""

    skill: SkillDef

    def start(self, sim: RearrangeSim, target: SensorTarget, retry: bool = False) -> None: ...

    def act(self, sim: RearrangeSim, obs: Mapping[str, np.ndarray]) -> np.ndarray: ...


class OracleController:
    """A scripted oracle (`skills.oracles`) behind the controller interface."""

    def __init__(self, skill: SkillDef, oracle: Any) -> None:
        self.skill = skill
        self.oracle = oracle

    def start(self, sim: RearrangeSim, target: SensorTarget, retry: bool = False) -> None:
        self.oracle.start(sim, target)  # an oracle acts the same on a retry

    def act(self, sim: RearrangeSim, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.asarray(self.oracle.act(sim), dtype=np.float64).reshape(ACTION_DIM)


class OracleSkills:
    """Skill name -> `OracleController` (one oracle object per skill, reused across calls)."""

    def __init__(self, oracle_cfg: Mapping[str, Any] | None = None) -> None:
        from skills.oracles.factory import oracle_config

        self.cfg = oracle_config() if oracle_cfg is None else oracle_cfg
        self._cache: dict[str, OracleController] = {}

    def __call__(self, skill: str) -> SkillController:
        from skills.oracles.factory import make_oracle

        if skill not in self._cache:
            self._cache[skill] = OracleController(get_skill(skill), make_oracle(skill, self.cfg))
        return self._cache[skill]
