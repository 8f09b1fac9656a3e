"""Place's object->goal distance through a fridge's opening (rearrange/tasks/approach.py OpeningPath):
geometry on a real layout (beside the shell vs in front of the opening, inside, off, other receptacles),
the place task's dense term on it, and a bad value."""

import numpy as np
import pytest
from reward_envs import skill_env_on

from rearrange.tasks.approach import check_offset_cfg

OFFSET = 0.1


def place_env(receptacle_kind: str, offset: float = OFFSET):
    """A place env on the first train episode (seed 0) whose goal is on a `receptacle_kind`."""
    return skill_env_on("place", receptacle_kind, "opening_path_offset", offset)


def fridge_frame(env):
    """(goal, unit vector out of the opening, unit vector along the front) of a fridge-shelf episode."""
    art = env.sim.layout.articulated["fridge"]
    out = art.opening_outward()
    return env.task.goal.copy(), out, np.array([-out[1], out[0]])


def test_fridge_goal_is_measured_through_the_opening():
    env = place_env("fridge")
    path, (goal, out, side) = env.task.path, fridge_frame(env)
    assert path.entry is not None
    # the entry point: straight out of the goal, in front of the shelf, a little above the goal
    along = path.entry[:2] - goal[:2]
    assert abs(float(along @ side)) < 1e-9 and float(along @ out) > OFFSET
    assert path.entry[2] == pytest.approx(goal[2] + path.lift)
    # beside the shell (through its side wall): nearer in a straight line than a point in front of the
    # opening, but farther along the way in
    beside = goal + np.r_[side[0], side[1], 0.0] * 0.55
    in_front = path.entry + np.r_[out[0], out[1], 0.0] * 0.3
    assert np.linalg.norm(beside - goal) < np.linalg.norm(in_front - goal)
    assert path.distance(beside) > path.distance(in_front)
    assert path.distance(in_front) == pytest.approx(0.3 + np.linalg.norm(path.entry - goal))
    # inside the shelf the straight distance
    inside = goal + np.r_[side[0], side[1], 0.0] * 0.1 + np.array([0.0, 0.0, 0.05])
    assert path.distance(inside) == pytest.approx(np.linalg.norm(inside - goal))
    # on the way in the distance only shrinks
    way = [in_front, path.entry, (path.entry + goal) / 2, goal]
    dists = [path.distance(p) for p in way]
    assert all(a > b for a, b in zip(dists[:-1], dists[1:], strict=True)) and dists[-1] == pytest.approx(0.0)


@pytest.mark.parametrize("kind", ["surface", "drawer"])
def test_other_goals_keep_the_straight_distance(kind):
    env = place_env(kind)
    assert env.task.path.entry is None
    point = env.task.goal + np.array([0.4, -0.3, 0.2])
    assert env.task.path.distance(point) == pytest.approx(np.linalg.norm(point - env.task.goal))


def test_offset_zero_is_habitats_straight_distance():
    env = place_env("fridge", offset=0.0)
    goal, _, side = fridge_frame(env)
    beside = goal + np.r_[side[0], side[1], 0.0] * 0.55
    assert env.task.path.entry is None
    assert env.task.path.distance(beside) == pytest.approx(0.55)


def test_place_dense_term_follows_the_path_distance():
    env = place_env("fridge")
    sim, task = env.sim, env.task
    before = task.path.distance(sim.object_pos(task.target))
    assert before > np.linalg.norm(sim.object_pos(task.target) - task.goal)  # the start is outside the shell
    arm = np.zeros(7)
    arm[0] = 1.0  # swing the arm: the held object moves
    step = np.concatenate([arm, [1.0], [0.0, 0.0]])
    _, _, _, _, info = env.step(step)
    after = task.path.distance(sim.object_pos(task.target))
    assert after != pytest.approx(before)
    expected = task.reward_cfg.dist_reward * (before - after)
    assert info["reward/dist"] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("value", [-0.1, 2.0, float("nan")])
def test_bad_offset_is_rejected(value):
    with pytest.raises(ValueError, match="skill.reward.opening_path_offset must be in"):
        check_offset_cfg({"opening_path_offset": value}, "opening_path_offset", "place")
