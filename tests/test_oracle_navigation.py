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


def test_path_through_a_narrow_doorway_keeps_the_arm_off_its_frame(sim):
    """Val layout 0: no path from the kitchen to the east room on the map inflated by 0.45 m, so the
    follower tries 0.4 m before the base radius. On the base-radius map the path grazed the doorway's
    south frame (free y 1.91-3.0 at x 7.96) and the arm at rest stuck on it for six re-plans."""
    cfg = oracle_config()
    assert list(cfg["base"]["plan_radii"])[:2] == [0.45, 0.4]
    follower = BaseFollower(FollowGains.from_cfg(cfg["base"]))
    sim.reset_state({}, {}, (2.33, 4.48), 0.0)
    assert follower.set_goal(sim, np.array([11.62, 1.38]))
    path = follower.path
    k = int(np.argmax(path[:, 0] > 7.96))
    a, b = path[k - 1], path[k]
    y = a[1] + (7.96 - a[0]) / (b[0] - a[0]) * (b[1] - a[1])
    assert 1.91 + 0.39 <= y <= 3.0 - 0.39


def test_held_object_keeps_the_base_off_an_open_drawer_front():
    """Driving toward an open drawer with a tall box held at rest: the drawer's front (0.86 m) is lower
    than the arm (the arm-safety height 0.9 m) but higher than the box's bottom, so the base stops
    short instead of pushing the drawer shut with the box. With nothing held, it is not in the way."""
    from skills.oracles.base import Oracle, full_action

    class Forward(Oracle):
        skill = "nav"

        def _start(self, sim, target) -> None:
            self.phase = "forward"

        def _step(self, sim) -> np.ndarray:
            return full_action(base=np.array([1.0, 0.0]))

    layout = generate_layout(layout_seeds("val")[0])
    s = RearrangeSim(layout, ["cracker_box"])
    try:
        drawer = layout.articulated["drawer_0"]
        inward = np.array([np.cos(drawer.facing_yaw), np.sin(drawer.facing_yaw)])
        rec = layout.receptacles["drawer_0"]
        start = np.asarray(rec.center[:2]) - (0.45 + 1.1) * inward
        for held in (True, False):
            s.reset_state({"obj_0": ((*start, 1.5), (1, 0, 0, 0))}, {"drawer_0": 0.45}, start,
                          float(drawer.facing_yaw), grasped="obj_0" if held else None)
            oracle = Forward(oracle_config())
            oracle.start(s, None)
            first = oracle.act(s)[8]
            for _ in range(15):
                a = oracle.act(s)
                s.step(a[0:7], 1.0 if held else None, a[8:10])
            if held:
                assert s.grasped == "obj_0"
                assert s.art_q("drawer_0") > 0.44, "the held box pushed the drawer in"
            else:
                assert first == 1.0  # nothing the resting arm could hit: full speed ahead
    finally:
        s.close()
