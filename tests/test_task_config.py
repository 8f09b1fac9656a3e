"""Skill task configs are read once, at construction: `step` and `reset` never look a config key up,
a missing key fails when the task is built, and values keep the types the dataclasses declare."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from configs.ranges import check_range
from rearrange.tasks.skill_base import read_config
from rearrange.tasks.skill_tasks import SKILL_NAMES, SKILL_TASKS, load_skill_config

SIM_CFG = {"camera": {"head": {"width": 32, "height": 32}}}


class SealableConfig(Mapping):
    """A read-only view of a config tree that raises on any lookup once `seal()` was called."""

    def __init__(self, data: Mapping[str, Any], state: dict[str, bool] | None = None) -> None:
        self._data = data
        self._state = {"sealed": False} if state is None else state

    def seal(self) -> None:
        self._state["sealed"] = True

    def __getitem__(self, key: str) -> Any:
        if self._state["sealed"]:
            raise AssertionError(f"config key '{key}' looked up after construction")
        value = self._data[key]
        return SealableConfig(value, self._state) if isinstance(value, Mapping) else value

    def __iter__(self) -> Iterator[str]:
        if self._state["sealed"]:
            raise AssertionError("config iterated after construction")
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_reset_and_step_read_no_config(skill):
    from rearrange.env import RearrangeEnv
    from rearrange.generate import generate_episodes

    cfg = SealableConfig(load_skill_config(skill))
    task = SKILL_TASKS[skill](cfg)
    cfg.seal()
    env = RearrangeEnv(task, generate_episodes(skill, "train", 1, 0), sim_cfg=SIM_CFG)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(20):
            a = rng.uniform(-1.0, 1.0, size=env.action_space.shape)
            if "stop" in task.action_subsets:
                a[-1] = -1.0  # stop is the last subset: keep the episode going
            _, reward, terminated, truncated, info = env.step(a)
            assert np.isfinite(reward) and "reward/slack" in info
            if terminated or truncated:
                env.reset(seed=1)
    finally:
        env.close()


@pytest.mark.parametrize("skill", SKILL_NAMES)
def test_missing_reward_key_fails_at_construction(skill):
    cfg = load_skill_config(skill)
    del cfg["reward"]["slack"]
    with pytest.raises(KeyError, match="slack"):
        SKILL_TASKS[skill](cfg)


def test_read_config_converts_by_annotation_and_ignores_other_keys():
    @dataclass(frozen=True)
    class Node:
        coef: float
        flag: bool
        kind: str

    node = read_config(Node, {"coef": 2, "flag": 1, "kind": "geodesic", "other": {"x": 1}})
    assert node == Node(coef=2.0, flag=True, kind="geodesic")
    assert type(node.coef) is float and type(node.flag) is bool
    with pytest.raises(KeyError, match="flag"):
        read_config(Node, {"coef": 1.0, "kind": "x"})


def test_check_range_names_key_range_and_value_and_refuses_nan_and_infinity():
    assert check_range("skill.reward.x", "0.5") == 0.5  # converted
    assert check_range("k", 0.0) == 0.0 and check_range("k", 1.0, 0.0, 1.0) == 1.0  # closed ends are in
    with pytest.raises(ValueError, match=r"^skill.reward.x must be >= 0 \(got -1\)$"):
        check_range("skill.reward.x", -1)
    with pytest.raises(ValueError, match=r"^d must be > 0 m \(got 0.0, skill pick\)$"):
        check_range("d", 0.0, low_open=True, unit="m", where=", skill pick")
    with pytest.raises(ValueError, match=r"^s must be in \(0, 1\] \(got 1.5\)$"):
        check_range("s", 1.5, 0.0, 1.0, low_open=True)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="must be >= 0"):
            check_range("k", bad)


@pytest.mark.parametrize(("skill", "section", "key", "value", "message"), [
    ("nav", "reward", "collision_pen", -0.1, r"skill.reward.collision_pen must be >= 0 \(got -0.1\)"),
    ("pick", "reward", "knock_dist", 0.0, r"skill.reward.knock_dist must be > 0 m \(got 0.0\)"),
    ("place", "reward", "displaced_pen", float("inf"), r"skill.reward.displaced_pen must be >= 0 \(got inf\)"),
    ("place", "reward", "place_reward_dist", 0.2, r"skill.reward.place_reward_dist must be in \[0, 0.15\] m"),
    ("place", "reward", "place_reward_falloff", 1.5, r"skill.reward.place_reward_falloff must be in \[0, 1\]"),
    ("place", None, "release_guard", -1.0, r"skill.release_guard must be >= 0 m \(0: off\) \(got -1.0\)"),
    ("place", "reward", "approach_reach", 0.0, r"skill.reward.approach_reach must be > 0 m \(got 0.0, skill place\)"),
])
def test_bad_skill_values_fail_at_construction_with_one_line(skill, section, key, value, message):
    cfg = load_skill_config(skill)
    (cfg[section] if section else cfg)[key] = value
    with pytest.raises(ValueError, match=message) as err:
        SKILL_TASKS[skill](cfg)
    assert "\n" not in str(err.value)
