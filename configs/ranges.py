"""Numeric ranges of config values: reading a value as a finite number, testing it against an interval and
naming that interval in a one-line error (`check_range`). Shared by the trainer's config validation
(`trainer/config_check.py`), the skill tasks' checks at construction (`rearrange/tasks/`), the oracle-start
curriculum (`skills/oracle_start.py`) and the episode generator's probabilities (`rearrange/generate.py`), so all
of them say "must be >= 0" or "in (0, 1]" the same way. Standard library only, like the rest of this package.
"""

from __future__ import annotations

import math
from typing import Any


def as_finite_float(value: Any) -> float | None:
    """`value` as a finite float (numbers and numeric strings such as '1e-4'), else None (bools included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def within(number: float, low: float | None, high: float | None, low_open: bool, high_open: bool) -> bool:
    """Whether `number` lies in the interval `low`/`high` (None: unbounded; open ends with `*_open`)."""
    if low is not None and (number < low or (low_open and number == low)):
        return False
    return high is None or not (number > high or (high_open and number == high))


def interval_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    """The interval as an error message names it, with a leading space (" >= 0", " in (0, 1]"; "" if unbounded)."""
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def check_range(key: str, value: Any, low: float | None = 0.0, high: float | None = None, *, low_open: bool = False,
                unit: str = "", where: str = "") -> float:
    """`value` as a finite float when it lies in [low, high] ((low, high] with `low_open`; None: unbounded);
    otherwise one ValueError line naming `key`, the valid range and the value (`where` is appended to it, e.g.
    ", skill pick"). NaN, infinities, bools and text that is not a number are never in range."""
    number = as_finite_float(value)
    if number is None or not within(number, low, high, low_open, False):
        raise ValueError(f"{key} must be{interval_text(low, high, low_open, False)}{' ' + unit if unit else ''} "
                         f"(got {value}{where})")
    return number
