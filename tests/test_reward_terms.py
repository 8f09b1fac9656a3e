"""The reward pieces every skill shares, on numbers: distance deltas, the force monitor, heading error."""

import numpy as np
import pytest

from rearrange.tasks.rewards import DistanceDelta, ForceMonitor, heading_error
from rearrange.tasks.skill_tasks import load_skill_config


def test_distance_delta_sign_and_stale_reset():
    d = DistanceDelta(2.0)
    d.reset(1.0)
    assert d(0.9) == pytest.approx(0.2)  # closer: positive
    assert d(1.0) == pytest.approx(-0.2)  # farther: negative
    d.reset(None)
    assert d(5.0) == 0.0  # first reading after a stale reset pays nothing
    assert d(float("inf")) == 0.0 and d(4.0) == pytest.approx(2.0)  # inf is skipped, 5 -> 4 kept


def test_force_penalty_counts_rises_above_min_force_capped_and_terminates():
    force_cfg = load_skill_config("pick")["reward"]["force"]
    fm = ForceMonitor(force_cfg)
    assert fm(19.0).penalty == 0.0 and fm.accumulated == 0.0  # a rise of at most 20 N: free
    step = fm(50.0)  # the level stayed 0 (a 19 N rise is not counted): a rise of 50 N
    assert step.added == pytest.approx(50.0) and step.penalty == pytest.approx(1e-4 * 50.0)
    assert fm(500.0).penalty == pytest.approx(0.01)  # rise 450, penalty capped per step
    fm.reset()
    step = fm(10001.0)  # above the instant limit
    assert step.terminate and step.penalty == pytest.approx(0.01 + force_cfg["force_end_pen"])


def test_steady_push_counts_once_new_impacts_count_again():
    """habitat-lab RobotForce: only a rise over the last counted level accumulates."""
    fm = ForceMonitor(load_skill_config("pick")["reward"]["force"])
    assert fm(300.0).added == pytest.approx(300.0)
    for _ in range(200):  # resting on the table with 300 N: nothing more is counted
        step = fm(300.0)
        assert step.added == 0.0 and step.penalty == 0.0
    assert fm(310.0).added == 0.0  # a rise of 10 N is below min_force
    assert fm(0.0).added == 0.0  # contact released: the level falls to 0
    assert fm(300.0).added == pytest.approx(300.0)  # a new impact counts again
    assert fm.accumulated == pytest.approx(600.0)
    for _ in range(16):
        fm(0.0)
        step = fm(600.0)
    assert step.terminate  # 600 + 16 * 600 > 10000: repeated impacts still end the episode


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
