"""Skill name -> oracle class, and building an oracle from `configs/oracle.yaml`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skills.oracles.articulated import CloseCabOracle, CloseFridgeOracle, OpenCabOracle, OpenFridgeOracle
from skills.oracles.base import Oracle
from skills.oracles.nav import NavOracle
from skills.oracles.pick import PickOracle
from skills.oracles.place import PlaceOracle

ORACLES: dict[str, type[Oracle]] = {
    "pick": PickOracle,
    "place": PlaceOracle,
    "nav": NavOracle,
    "open_fridge": OpenFridgeOracle,
    "close_fridge": CloseFridgeOracle,
    "open_cab": OpenCabOracle,
    "close_cab": CloseCabOracle,
}


def oracle_config(overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """`configs/oracle.yaml` (with Hydra overrides) as a plain dict."""
    from configs.compose import compose, to_plain

    return to_plain(compose("oracle", overrides))


def make_oracle(skill: str, cfg: Mapping[str, Any] | None = None) -> Oracle:
    """The oracle of `skill`; ValueError naming the valid skills for an unknown one."""
    if skill not in ORACLES:
        raise ValueError(f"unknown skill '{skill}'; valid choices: {', '.join(ORACLES)}")
    return ORACLES[skill](oracle_config() if cfg is None else cfg)
