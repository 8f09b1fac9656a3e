"""The base range finder (`base_ranges`): clearances round the base's rim that follow the robot's heading,
see a wall ahead or behind at its distance, never see the robot itself, and fit the sensor's space."""

from __future__ import annotations

import numpy as np
import pytest

from rearrange.layout import generate_layout
from rearrange.raycast import BASE_RANGE_HEIGHTS, BASE_RANGE_MAX, BASE_RANGE_RAYS
from rearrange.sensors import SensorTarget, observe, sensor_space
from rearrange.sim import RearrangeSim
from tests.sim_poses import face_south_wall

AHEAD, LEFT, BEHIND = 0, BASE_RANGE_RAYS // 4, BASE_RANGE_RAYS // 2


@pytest.fixture(scope="module")
def sim():
    s = RearrangeSim(generate_layout(101), [])
    yield s
    s.close()


def _rings(sim: RearrangeSim) -> np.ndarray:
    return sim.base_ranges().reshape(len(BASE_RANGE_HEIGHTS), BASE_RANGE_RAYS)


def test_wall_ahead_then_behind_at_its_clearance(sim):
    radius = float(sim.cfg["base"]["radius"])
    face_south_wall(sim, 1.0)
    rings = _rings(sim)
    # the base centre is 1 m from the wall face: the rim 0.7 m, on both heights; the floor behind is free
    assert rings[:, AHEAD] == pytest.approx([1.0 - radius] * len(BASE_RANGE_HEIGHTS), abs=1e-3)
    assert np.all(rings[:, BEHIND] > 1.0 - radius + 0.1)  # free base points 0.9 m behind: clearance >= 0.9
    # rays beside the one straight ahead meet the same plane farther out (1 / cos of their angle)
    step = 2 * np.pi / BASE_RANGE_RAYS
    assert rings[0, 1] == pytest.approx(1.0 / np.cos(step) - radius, abs=1e-3)
    face_south_wall(sim, 1.0, yaw_offset=np.pi)  # the same spot, turned round: the wall is behind now
    turned = _rings(sim)
    assert turned[:, BEHIND] == pytest.approx(rings[:, AHEAD], abs=1e-3)
    assert np.all(turned[:, AHEAD] > 1.0 - radius + 0.1)  # free base points 0.9 m behind: clearance >= 0.9
    face_south_wall(sim, 1.0, yaw_offset=-np.pi / 2)  # turned right: the wall is on the left
    assert _rings(sim)[:, LEFT] == pytest.approx(rings[:, AHEAD], abs=1e-3)


def test_far_walls_read_as_max_range_and_the_robot_is_not_seen(sim):
    face_south_wall(sim, 0.3 + BASE_RANGE_MAX + 0.2)  # the wall beyond the range
    rings = _rings(sim)
    assert rings[:, AHEAD] == pytest.approx([BASE_RANGE_MAX] * len(BASE_RANGE_HEIGHTS))
    assert rings.min() > 0.0  # the base disc and torso column (inside the rim) are passed through


def test_observation_fits_the_sensor_space(sim):
    face_south_wall(sim, 0.5)
    obs = observe(sim, SensorTarget(), ["base_ranges"])["base_ranges"]
    space = sensor_space("base_ranges")
    assert obs.dtype == np.float32 and space.shape == (BASE_RANGE_RAYS * len(BASE_RANGE_HEIGHTS),)
    assert space.contains(obs) and obs.min() == pytest.approx(0.2, abs=1e-3)
