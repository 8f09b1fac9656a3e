"""Typed reads of one config node (a mapping from a composed Hydra config): booleans, integers, numbers in
an interval, choices and lists, each failure a one-line `ConfigError` naming the full key, the valid range
or choices and the value given. The trainer's validation (`trainer/config_check.py`) and the evaluators'
(`eval/eval_config.py`) read their nodes through it, so a bad value reads the same everywhere:

    node = ConfigNode(cfg["eval"], "eval")
    node.integer("episodes", minimum=1)    # ConfigError("eval.episodes must be an integer >= 1; got 0")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from configs.compose import ConfigError
from configs.ranges import as_finite_float, interval_text, within

MISSING = object()  # `raw`'s answer for an absent optional key


class ConfigNode:
    """Typed reads of one config node; every failure is a ConfigError naming the full key."""

    def __init__(self, node: Mapping, prefix: str) -> None:
        self.node = node
        self.prefix = prefix

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}"

    def raw(self, name: str, optional: bool = False) -> Any:
        value = self.node.get(name, MISSING) if isinstance(self.node, Mapping) else MISSING
        if value is MISSING and not optional:
            raise ConfigError(f"{self.key(name)} is missing")
        return value

    def fail(self, name: str, expected: str, value: Any) -> ConfigError:
        return ConfigError(f"{self.key(name)} must be {expected}; got {value!r}")

    def child(self, name: str) -> ConfigNode:
        value = self.raw(name)
        if not isinstance(value, Mapping):
            raise self.fail(name, "a mapping of settings", value)
        return ConfigNode(value, self.key(name))

    def optional_child(self, name: str) -> ConfigNode | None:
        """The sub-node, or None where the key is absent or null."""
        value = self.raw(name, optional=True)
        return None if value is MISSING or value is None else self.child(name)

    def boolean(self, name: str, optional: bool = False) -> bool | None:
        value = self.raw(name, optional)
        if value is MISSING:
            return None
        if not isinstance(value, bool):
            raise self.fail(name, "true or false", value)
        return value

    def integer(self, name: str, minimum: int | None = None, optional: bool = False,
                allow_none: bool = False) -> int | None:
        value = self.raw(name, optional)
        if value is MISSING or (allow_none and value is None):
            return None
        bound = "" if minimum is None else f" >= {minimum}"
        expected = f"an integer{bound}" + (" or null" if allow_none else "")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(name, expected, value)
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise self.fail(name, expected, value)
        if minimum is not None and value < minimum:
            raise self.fail(name, expected, value)
        return int(value)

    def number(self, name: str, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False, optional: bool = False) -> float | None:
        """A finite number in the interval given by `low`/`high` (open ends with `*_open`)."""
        value = self.raw(name, optional)
        if value is MISSING:
            return None
        expected = "a number" + interval_text(low, high, low_open, high_open)
        number = as_finite_float(value)
        if number is None or not within(number, low, high, low_open, high_open):
            raise self.fail(name, expected, value)
        return number

    def choice(self, name: str, choices: Sequence[str], optional: bool = False) -> str | None:
        value = self.raw(name, optional)
        if value is MISSING:
            return None
        if not isinstance(value, str) or value not in choices:
            raise self.fail(name, f"one of {', '.join(choices)}", value)
        return value

    def int_list(self, name: str, minimum: int, optional: bool = False) -> list[int] | None:
        value = self.raw(name, optional)
        if value is MISSING:
            return None
        expected = f"a list of integers >= {minimum}"
        if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
            raise self.fail(name, expected, value)
        if any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in value):
            raise self.fail(name, expected, list(value))
        return [int(v) for v in value]

    def number_list(self, name: str, low: float | None = None, high: float | None = None,
                    open_ends: bool = False) -> list[float]:
        """A non-empty list of finite numbers, each in the interval `low`/`high` (open with `open_ends`)."""
        value = self.raw(name)
        expected = "a non-empty list of numbers" + interval_text(low, high, open_ends, open_ends)
        if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence) or not value:
            raise self.fail(name, expected, value)
        numbers = [as_finite_float(v) for v in value]
        if any(n is None or not within(n, low, high, open_ends, open_ends) for n in numbers):
            raise self.fail(name, expected, list(value))
        return [float(n) for n in numbers if n is not None]
