"""Nav's reward on a real sim and episode: driving along the path and turning toward the goal pay, stops end."""

import numpy as np
import pytest
from reward_envs import action, make_env
from sim_poses import face_south_wall

from rearrange.sensors import wrap_angle


def _turn_to(sim, xy):
    ang = np.arctan2(xy[1] - sim.base_xy[1], xy[0] - sim.base_xy[0]) - sim.base_yaw
    return float(np.clip(wrap_angle(ang) / 0.0833, -1.0, 1.0))


def test_nav_driving_along_path_pays_and_stop_far_ends_without_success():
    env = make_env("nav")
    sim, goal = env.sim, env.task.goal_xy
    path = sim.navmap.path(sim.base_xy, goal)
    assert len(path) >= 2
    waypoint = path[1] if np.linalg.norm(path[1] - sim.base_xy) > 0.2 else path[min(2, len(path) - 1)]
    for _ in range(40):  # face the first waypoint
        turn = _turn_to(sim, waypoint)
        if abs(turn) < 0.05:
            break
        env.step(action(env, base=[0.0, turn]))
    total = 0.0
    for _ in range(6):
        _, _, term, _, info = env.step(action(env, base=[1.0, _turn_to(sim, waypoint)]))
        total += info["reward/dist"]
        assert not term
    assert total > 0.2  # ~0.5 m of progress on the geodesic
    assert info["nav_dist"] > 1.5
    _, reward, term, _, info = env.step(action(env, stop=1.0))
    assert term and info["success"] == 0.0 and "reward/success" not in info
    assert "reward/early_stop" not in info  # habitat's reward: a stop short of the goal costs nothing
    env.close()


def test_nav_early_stop_pen_charges_a_stop_short_of_the_goal_only():
    env = make_env("nav", reward__early_stop_pen=2.0)
    _, reward, term, _, info = env.step(action(env, stop=1.0))  # at the start, > 3 m from the goal
    assert term and info["success"] == 0.0 and info["reward/early_stop"] == -2.0 and reward < -1.9
    env.close()
    with pytest.raises(ValueError, match="early_stop_pen must be >= 0"):
        make_env("nav", reward__early_stop_pen=-1.0)


def test_nav_turning_toward_goal_pays_and_stop_at_goal_succeeds():
    env = make_env("nav")
    sim, goal = env.sim, env.task.goal_xy
    # stand on the navigable point nearest the goal, facing away from it
    free = sim.navmap.nearest_navigable(goal)
    assert free is not None and np.linalg.norm(free - goal) < 1.4
    away = np.arctan2(free[1] - goal[1], free[0] - goal[0])
    sim.set_base_pose(free, away)
    env.task.reset(sim, env.current_episode, np.random.default_rng(0))
    turns = []
    for _ in range(60):
        turn = _turn_to(sim, goal)
        if abs(turn) < 0.02:
            break
        _, _, term, _, info = env.step(action(env, base=[0.0, turn]))
        turns.append(info["reward/angle"])
        assert not term
    assert sum(turns) == pytest.approx(np.pi - info["nav_angle"], abs=0.3) and sum(turns) > 2.0
    _, reward, term, _, info = env.step(action(env, stop=1.0))
    assert term and info["success"] == 1.0 and info["reward/success"] == 10.0
    env.close()


def test_nav_collision_pen_charges_blocked_steps_only():
    env = make_env("nav", reward__collision_pen=0.05)
    sim = env.sim
    face_south_wall(sim, 0.45)  # the base's front a few cm from the wall, free floor behind it
    env.task.reset(sim, env.current_episode, np.random.default_rng(0))
    for _ in range(6):  # drive into the wall: the term is there exactly on the blocked steps
        _, _, term, _, info = env.step(action(env, base=[1.0, 0.0]))
        assert info.get("reward/collision", 0.0) == (-0.05 if sim.base_collided else 0.0)
        assert not term
    assert sim.base_collided and info["base_collided"] == 1.0
    _, _, _, _, info = env.step(action(env, base=[-1.0, 0.0]))  # back off into free floor
    assert not sim.base_collided and "reward/collision" not in info
    env.close()
    off = make_env("nav")  # habitat's reward (the default): no such term, blocked or not
    face_south_wall(off.sim, 0.45)
    for _ in range(6):
        _, _, _, _, info = off.step(action(off, base=[1.0, 0.0]))
    assert off.sim.base_collided and "reward/collision" not in info
    off.close()
    with pytest.raises(ValueError, match="collision_pen must be >= 0"):
        make_env("nav", reward__collision_pen=-0.1)


def test_base_blocked_reads_one_while_the_base_is_pressed_against_a_wall():
    """The bumper sensor: 0 while the base drives freely or stands, 1 on a step whose motion the wall stopped."""
    env = make_env("nav", obs_keys=["goal_to_agent_gps_compass", "base_blocked"])
    face_south_wall(env.sim, dist=0.6)
    readings = []
    for _ in range(12):  # forward into the wall, 0.08 m a step: free at first, then stalled
        obs, _, _, _, info = env.step(action(env, base=[1.0, 0.0]))
        readings.append(float(obs["base_blocked"][0]))
        assert readings[-1] == info["base_collided"]
    assert readings[0] == 0.0 and readings[-1] == 1.0
    obs, *_ = env.step(action(env, base=[-1.0, 0.0]))  # backing away is free again
    assert obs["base_blocked"][0] == 0.0
    obs, *_ = env.step(action(env))  # standing still blocks nothing
    assert obs["base_blocked"][0] == 0.0
    env.close()


def test_nav_reward_and_compass_measure_to_the_goal_on_its_side_of_a_wall():
    """Stop 90: nav train episode 78's goal (an object at the back of a shelf unit against a wall) is nearer the
    floor behind the wall than the floor in front of the shelf; the geodesic reward and the path compass both
    measure to the shelf's side, never to the cell through the wall."""
    from rearrange.generate import generate_episodes
    from rearrange.sensors import goal_path_compass

    env = make_env("nav", [generate_episodes("nav", "train", 79, 0)[78]])
    sim, nav, goal = env.sim, env.sim.navmap, env.task.goal_xy
    behind = nav.snap_cell(goal)
    stand = nav.reach_point(goal)
    assert nav.cell_to_world(behind) != pytest.approx(stand, abs=0.2)  # the plain snap is another place
    distance = env.task._reward_distance(sim)
    assert distance == pytest.approx(nav.field_at(nav.distance_field(stand), sim.base_xy))
    assert distance != pytest.approx(nav.geodesic_distance(sim.base_xy, nav.cell_to_world(behind)), abs=0.1)
    assert float(goal_path_compass(sim, env.task.sensor_target)[0]) == pytest.approx(distance, abs=1e-4)
    env.close()
