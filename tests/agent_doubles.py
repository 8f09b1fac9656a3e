"""Skill factories for HAB-agent tests: the real oracles, with one call replaced to inject a failure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eval.agent import OracleSkills


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
