"""Oracle base planning around the scene's moving parts: open doors and drawers are obstacles, a target
inside the fridge is reached through its opening, a stalled base backs off."""

from __future__ import annotations

import numpy as np
import pytest

from rearrange.layout import generate_layout, layout_seeds
from rearrange.sim import RearrangeSim
from skills.oracles.base_follow import (
    BaseFollower,
    FollowGains,
    container_outward,
    planning_map,
    reach_clear,
    standing_point,
)
from skills.oracles.factory import oracle_config


@pytest.fixture(scope="module")
def sim():
    s = RearrangeSim(generate_layout(layout_seeds("val")[0]), ["apple"])
    yield s
    s.close()


def test_open_fridge_door_is_an_obstacle_of_the_planning_map(sim):
    art = sim.layout.articulated["fridge"]
    sim.set_art_q("fridge", 0.0)
    assert planning_map(sim) is sim.navmap  # nothing open: the static map
    sim.set_art_q("fridge", np.pi / 2)
    door = max((b for b in sim.moving_part_boxes() if b.name.startswith("fridge")),
               key=lambda b: b.half_size[0] * b.half_size[1])
    # points on the door that the static map calls navigable are blocked on the planning map
    c, s = np.cos(door.yaw), np.sin(door.yaw)
    along = [np.asarray(door.center[:2]) + t * np.array([c, s]) for t in np.linspace(-0.35, 0.35, 8)]
    static_free = [p for p in along if sim.navmap.is_navigable(p)]
    assert static_free
    assert not any(planning_map(sim).is_navigable(p) for p in static_free)
    sim.set_art_q("fridge", 0.0)
    assert art.name == "fridge"


def test_target_in_fridge_is_reached_from_the_front(sim):
    shelf = sim.layout.receptacles["fridge_shelf_0"]
    target = np.array([shelf.center[0], shelf.center[1], shelf.center[2] + 0.04])
    outward = container_outward(sim, target)
    yaw = sim.layout.articulated["fridge"].facing_yaw
    assert outward is not None and outward @ np.array([np.cos(yaw), np.sin(yaw)]) == pytest.approx(-1.0)
    assert container_outward(sim, np.array([*target[:2], target[2] + 2.0])) is None  # above the fridge
    sim.set_art_q("fridge", np.pi / 2)
    stand = standing_point(sim, target, 0.6, 0.9, 0.1, reach_clear(sim, target))
    assert stand is not None
    to_stand = (stand - target[:2]) / np.linalg.norm(stand - target[:2])
    assert to_stand @ outward >= np.cos(np.pi / 4) - 1e-9
    sim.set_art_q("fridge", 0.0)


def test_stalled_base_backs_off_then_replans(sim):
    cfg = oracle_config()
    follower = BaseFollower(FollowGains.from_cfg(cfg["base"]))
    rng = np.random.default_rng(0)
    start = sim.navmap.sample_navigable(rng)
    sim.reset_state({}, {}, start, 0.0)
    goal = sim.navmap.sample_navigable(rng)
    assert follower.set_goal(sim, goal)
    sim.base_collided = True  # as after a stalled step
    actions = [follower.act(sim) for _ in range(cfg["base"]["stuck_steps"] + 2)]
    backing = [a for a in actions if a[0] < 0]
    assert backing and all(a[0] == -1.0 and a[1] == 0.0 for a in backing)
