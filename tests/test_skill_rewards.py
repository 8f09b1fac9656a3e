"""Skill rewards: the shared pieces on numbers, then each skill task on a real sim and episode
(every reward term has the right sign and fires once where it should)."""

import numpy as np
import pytest

from rearrange.tasks.rewards import DistanceDelta, ForceMonitor, heading_error
from rearrange.tasks.skill_tasks import load_skill_config

# ----------------------------------------------------------------------------- pieces on numbers


def test_distance_delta_sign_and_stale_reset():
    d = DistanceDelta(2.0)
    d.reset(1.0)
    assert d(0.9) == pytest.approx(0.2)  # closer: positive
    assert d(1.0) == pytest.approx(-0.2)  # farther: negative
    d.reset(None)
    assert d(5.0) == 0.0  # first reading after a stale reset pays nothing
    assert d(float("inf")) == 0.0 and d(4.0) == pytest.approx(2.0)  # inf is skipped, 5 -> 4 kept


def test_force_penalty_above_min_force_capped_and_terminates():
    force_cfg = load_skill_config("pick")["reward"]["force"]
    fm = ForceMonitor(force_cfg)
    assert fm(19.0).penalty == 0.0 and fm.accumulated == 0.0  # at/below 20 N: free
    step = fm(50.0)
    assert step.penalty == pytest.approx(1e-4 * 50.0) and not step.terminate
    assert fm(500.0).penalty == pytest.approx(0.01)  # capped per step
    fm.reset()
    step = fm(10001.0)  # above the instant limit
    assert step.terminate and step.penalty == pytest.approx(0.01 + force_cfg["force_end_pen"])
    fm.reset()
    for _ in range(10000 // 100):
        assert not fm(100.0).terminate
    assert fm(100.0).terminate  # accumulated > 10000


def test_accumulated_limit_can_be_off():
    cfg = load_skill_config("open_cab")["reward"]["force"]
    assert cfg["max_accum_force"] == 0.0
    fm = ForceMonitor(cfg)
    assert not any(fm(5000.0).terminate for _ in range(10))


def test_heading_error():
    assert heading_error([0, 0], 0.0, [1, 0]) == pytest.approx(0.0)
    assert heading_error([0, 0], 0.0, [0, 1]) == pytest.approx(np.pi / 2)
    assert heading_error([0, 0], np.pi / 2, [0, -1]) == pytest.approx(np.pi)
    assert heading_error([1, 1], 3 * np.pi, [0, 1]) == pytest.approx(0.0)
