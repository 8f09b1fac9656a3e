"""obj_path_compass and obj_goal_path_compass (rearrange/sensors.py): pick's map reading of the way to its
object, place's of the way to its goal. On a real sim and episode: the distance is the approach term's geodesic
distance to the reach region, turning by the bearing and driving ahead shortens it, inside the region it is 0
and points at the target, a held object reads (0, 1, 0) for pick; on numbers: the field heading detours round
a wall, and a fridge-shelf object is reached only from in front of the opening (the layout helper that finds
the container); a cached pursuit point is never served for another field at a reused address."""

import numpy as np
import pytest
from reward_envs import action
from sim_poses import put_at_suction_cup
from test_approach_shaping import approach_env, episodes, teleport

from rearrange.apartment import ApartmentLayout, Box
from rearrange.navmap import NavMap
from rearrange.sensors import OBJ_PATH_REACH, SENSORS, SensorTarget, sensor_space

obj_path_compass = SENSORS["obj_path_compass"]
obj_goal_path_compass = SENSORS["obj_goal_path_compass"]


def test_heading_on_a_region_field_detours_round_a_wall():
    """A 6 x 4 m room split by a wall at x = 3 with a doorway at y in [1.5, 2.5]; the target right of the
    wall: from the left room the heading points at the doorway, not through the wall."""
    walls = [Box("a", (3.0, 0.75, 1.0), (0.05, 0.75, 1.0)), Box("b", (3.0, 3.25, 1.0), (0.05, 0.75, 1.0))]
    layout = ApartmentLayout(seed=0, bounds=((0.0, 0.0), (6.0, 4.0)), rooms=[], walls=walls, furniture=[],
                             receptacles={}, articulated={}, footprints=[])
    nav = NavMap(layout, resolution=0.05, robot_radius=0.3)
    target = np.array([4.02, 0.62])  # inside a cell, away from its edges
    field = nav.cached_region_field(target, 0.8)
    assert nav.cached_region_field(target + 0.001, 0.8) is field  # same cell: the cached field
    distance, direction = nav.field_heading(field, (2.0, 0.6), target)
    assert distance > 2.0 and direction[1] > 0.5  # up towards the doorway (y 1.5-2.5), not +x into the wall
    inside, toward = nav.field_heading(field, (3.5, 0.62), target)
    assert inside == 0.0 and toward == pytest.approx([1.0, 0.0], abs=1e-6)  # in reach: straight at the target


def test_space_and_empty_or_held_targets():
    space = sensor_space("obj_path_compass")
    assert space.shape == (3,) and space.low[1] == -1.0 and space.high[2] == 1.0
    env = approach_env("pick", episodes("pick")[0])
    sim = env.sim
    assert obj_path_compass(sim, SensorTarget()).tolist() == [0.0, 0.0, 0.0]
    target = env.task.sensor_target
    assert obj_path_compass(sim, target)[0] > 0.0  # the episodes start out of reach
    put_at_suction_cup(sim, target.object)
    env.step(action(env, grip=1.0))
    assert sim.grasped == target.object
    assert obj_path_compass(sim, target).tolist() == [0.0, 1.0, 0.0]
    env.close()


def check_compass(env, sensor, target_xy: np.ndarray) -> None:
    """What both compasses promise on a real episode: equal to the approach term's geodesic distance (within a
    grid cell: the sensor's region is centred on the target's cell); facing the bearing and driving ahead
    shortens it; at a navigable point in reach it reads 0 (within a cell) and points at `target_xy`."""
    sim, target = env.sim, env.task.sensor_target
    distance, cos_b, sin_b = sensor(sim, target)
    assert distance == pytest.approx(env.task.approach.distance(sim), abs=2 * sim.navmap.resolution + 1e-6)
    assert cos_b**2 + sin_b**2 == pytest.approx(1.0, abs=1e-5)
    if distance > 0.3:
        teleport(env, sim.base_xy, sim.base_yaw + float(np.arctan2(sin_b, cos_b)))
        step = np.array([np.cos(sim.base_yaw), np.sin(sim.base_yaw)]) * 0.2
        teleport(env, sim.base_xy + step, sim.base_yaw)
        assert sensor(sim, target)[0] < distance
    cells = np.argwhere(env.task.approach.field == 0.0)
    teleport(env, env.task.approach.navmap.cell_to_world(cells[len(cells) // 2]), 0.0)
    distance, cos_b, sin_b = sensor(sim, target)
    to_target = np.asarray(target_xy)[:2] - sim.base_xy
    assert np.linalg.norm(to_target) <= OBJ_PATH_REACH + 0.1
    assert distance <= 2 * sim.navmap.resolution
    if distance == 0.0:
        assert np.arctan2(sin_b, cos_b) == pytest.approx(np.arctan2(to_target[1], to_target[0]) - sim.base_yaw,
                                                         abs=1e-4)


def test_distance_is_the_approach_distance_and_the_bearing_leads_there():
    """On real pick episodes: `check_compass` with the object as the target."""
    for episode in episodes("pick")[:3]:
        env = approach_env("pick", episode)
        check_compass(env, obj_path_compass, env.sim.object_pos(env.task.sensor_target.object))
        env.close()


def test_a_fridge_shelf_object_is_reached_through_the_opening():
    """The container helper finds the shelf an object lies on; from beside the fridge (within reach in a
    straight line, but behind its side wall) the sensor still reads a way round to the front."""
    from rearrange.generate import generate_episodes

    fridge_eps = [ep for ep in generate_episodes("pick", "train", 12, 3)
                  if ep.info.get("receptacle_kind") == "fridge"]
    if not fridge_eps:
        pytest.skip("no fridge-shelf episode among the 12 generated")
    env = approach_env("pick", fridge_eps[0])
    sim, target = env.sim, env.task.sensor_target
    obj = sim.object_pos(target.object)
    rec = sim.layout.container_receptacle_at(obj)
    assert rec is not None and rec.container == "fridge"
    assert sim.layout.container_receptacle_at(obj + np.array([0.0, 0.0, 1.0])) is None  # far above the shelf
    navmap = env.task.approach.navmap
    plain = navmap.region_distance_field(obj[:2], OBJ_PATH_REACH)  # every point in reach, the side ones too
    beside = np.argwhere((plain == 0.0) & (env.task.approach.field > 0.3))
    if not len(beside):
        pytest.skip("nothing navigable beside this fridge within reach")
    beside = [navmap.cell_to_world(beside[len(beside) // 2])]
    teleport(env, beside[0], 0.0)
    assert obj_path_compass(sim, target)[0] > 0.2  # in reach in a straight line, but not through the side wall
    assert env.task.approach.distance(sim) > 0.2  # as the approach term measures it
    env.close()


def test_cached_pursuit_points_follow_the_field_not_its_address():
    """`field_heading` caches its pursuit point per (field, cell), keyed by the field's id; an entry left by
    another array at the same address (ids are reused once an array is freed) must not be served: the
    result is the one a map that never cached anything gives."""
    walls = [Box("a", (3.0, 0.75, 1.0), (0.05, 0.75, 1.0)), Box("b", (3.0, 3.25, 1.0), (0.05, 0.75, 1.0))]
    layout = ApartmentLayout(seed=0, bounds=((0.0, 0.0), (6.0, 4.0)), rooms=[], walls=walls, furniture=[],
                             receptacles={}, articulated={}, footprints=[])
    nav = NavMap(layout, resolution=0.05, robot_radius=0.3)
    start, goal = (2.0, 0.62), np.array([0.62, 3.52])
    field = nav.region_distance_field(goal, 0.3)
    fresh = NavMap(layout, resolution=0.05, robot_radius=0.3).field_heading(field, start, goal)
    cell = nav.snap_cell(start, max_dist=float("inf"))
    stale = np.array([9.0, 0.62])  # what a freed field at this address would have cached: straight ahead in +x
    nav._pursuit_points[(id(field), cell, 1.0)] = (field.copy(), stale)
    got = nav.field_heading(field, start, goal)
    assert got[0] == pytest.approx(fresh[0]) and got[1] == pytest.approx(fresh[1])
    assert got[1][0] < 0.9  # not the stale +x direction
    assert nav.field_heading(field, start, goal)[1] == pytest.approx(fresh[1])  # and cached for this field now


def test_place_compass_reads_the_place_approach_distance_and_leads_there():
    """obj_goal_path_compass on real place episodes (the object held from the start): zeros without a goal,
    and `check_compass` with the goal as the target (the place approach term's region); unlike
    obj_path_compass it keeps reading while the object is held."""
    assert sensor_space("obj_goal_path_compass").shape == (3,)
    for episode in episodes("place")[:3]:
        env = approach_env("place", episode)
        sim, target = env.sim, env.task.sensor_target
        assert sim.grasped == target.object
        assert obj_goal_path_compass(sim, SensorTarget()).tolist() == [0.0, 0.0, 0.0]
        check_compass(env, obj_goal_path_compass, target.goal_pos)
        env.close()
