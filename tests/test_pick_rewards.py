"""Pick's reward on a real sim and episode: every term has the right sign and fires once where it should."""

import numpy as np
import pytest
from reward_envs import action, arm_to_rest, arm_toward, make_env
from sim_poses import put_at_suction_cup


def test_pick_dist_reward_sign_toward_and_away():
    env = make_env("pick")
    sim, target = env.sim, env.task.target
    prev = np.linalg.norm(sim.object_pos(target) - sim.ee_pos)
    toward = []
    for _ in range(5):
        _, _, term, _, info = env.step(action(env, arm=arm_toward(sim, sim.object_pos(target)), grip=-1.0))
        assert info["reward/dist"] == pytest.approx(2.0 * (prev - info["ee_to_object_dist"]), abs=1e-9)
        prev = info["ee_to_object_dist"]
        toward.append(info["reward/dist"])
        assert not term
    assert all(r > 0 for r in toward)
    away = []
    for _ in range(3):
        away_point = 2 * sim.ee_pos - sim.object_pos(target)
        _, _, _, _, info = env.step(action(env, arm=arm_toward(sim, away_point), grip=-1.0))
        away.append(info["reward/dist"])
    assert sum(away) < 0
    env.close()


def test_pick_bonus_once_then_success_ends_with_bonus():
    env = make_env("pick")
    sim, target = env.sim, env.task.target
    for _ in range(25):  # arm out, away from the resting position (grip off)
        env.step(action(env, arm=arm_toward(sim, sim.object_pos(target)), grip=-1.0))
    assert np.linalg.norm(sim.resting_pos_base - sim.ee_pos_base) > 0.15
    put_at_suction_cup(sim, target)
    _, reward, term, _, info = env.step(action(env, grip=1.0))
    assert sim.grasped == target
    assert info["reward/pick"] == 2.0 and info["reward/dist"] == 0.0 and not term and info["success"] == 0.0
    # holding: no second bonus, and releasing is blocked (block_release)
    _, _, term, _, info = env.step(action(env, grip=-1.0))
    assert "reward/pick" not in info and sim.grasped == target and not term
    total_bonus, steps = 0.0, 0
    while not term and steps < 100:  # back to rest with the object
        _, reward, term, _, info = env.step(action(env, arm=arm_to_rest(sim), grip=1.0))
        total_bonus += info.get("reward/pick", 0.0)
        steps += 1
        if not term:
            assert info["reward/dist"] > -1e-3  # ee -> rest shrinks
    assert term and info["success"] == 1.0 and info["reward/success"] == 10.0 and total_bonus == 0.0
    assert reward == pytest.approx(sum(v for k, v in info.items() if k.startswith("reward/")))
    env.close()


def test_pick_wrong_object_penalty_ends():
    env = make_env("pick")
    sim = env.sim
    other = next(n for n in sim.object_names if n != env.task.target)
    put_at_suction_cup(sim, other)
    _, reward, term, _, info = env.step(action(env, grip=1.0))
    assert sim.grasped == other
    assert info["reward/wrong_pick"] == -0.5 and term and info["success"] == 0.0 and "reward/pick" not in info
    env.close()


def test_pick_drop_penalty_when_release_allowed():
    env = make_env("pick", block_release=False)
    sim, target = env.sim, env.task.target
    for _ in range(25):
        env.step(action(env, arm=arm_toward(sim, sim.object_pos(target)), grip=-1.0))
    put_at_suction_cup(sim, target)
    _, _, term, _, info = env.step(action(env, grip=1.0))
    assert info["reward/pick"] == 2.0 and not term
    _, _, term, _, info = env.step(action(env, grip=-1.0))
    assert sim.grasped is None and info["reward/drop"] == -0.5 and term
    env.close()


def test_contact_force_penalty_and_force_termination():
    env = make_env("pick")
    sim = env.sim
    other = next(n for n in sim.object_names if n != env.task.target)
    sim.set_object_pose(other, sim.ee_pos, [1.0, 0.0, 0.0, 0.0])  # knock an object into the gripper
    _, _, term, _, info = env.step(action(env, grip=-1.0))
    force = info["robot_contact_force"]
    assert force > 20.0
    assert info["reward/force"] == pytest.approx(-min(1e-4 * force, 0.01)) and info["reward/force"] < 0
    assert not term
    _, _, _, _, info = env.step(action(env, grip=-1.0))
    assert info["robot_contact_force"] <= 20.0 and info["reward/force"] == 0.0  # no contact, no charge
    env.close()
    env = make_env("pick", reward__force__max_instant_force=100.0)
    sim = env.sim
    sim.set_object_pose(other, sim.ee_pos, [1.0, 0.0, 0.0, 0.0])
    _, _, term, _, info = env.step(action(env, grip=-1.0))
    assert term and info["force_terminate"] == 1.0
    assert info["reward/force"] == pytest.approx(-(0.01 + 1.0))  # capped penalty + force_end_pen
    env.close()


@pytest.mark.parametrize("pen,end", [(0.0, False), (1.0, True)])
def test_pick_knocking_another_object_counts_once_and_costs_knock_pen(pen, end):
    """knock_pen > 0 (deviation): another object of the episode moved past knock_dist from its start costs the pen
    once and knock_should_end ends the episode; `knocked` counts such objects whatever the cost; the target's own
    motion never counts."""
    env = make_env("pick", reward__knock_pen=pen, reward__knock_should_end=end)
    sim, target = env.sim, env.task.target
    others = [o.name for o in env.current_episode.objects if o.name != target]
    assert others, "the pick episode needs a second object"
    sim.set_object_pose(target, sim.object_pos(target) + np.array([0.0, 0.0, 0.3]), sim.object_quat(target))
    _, _, term, _, info = env.step(action(env))
    assert info["knocked"] == 0.0 and "reward/knock" not in info and not term
    sim.set_object_pose(others[0], sim.object_pos(others[0]) + np.array([0.0, 0.0, 0.3]), sim.object_quat(others[0]))
    _, _, term, _, info = env.step(action(env))
    assert info["knocked"] == 1.0 and term == end and info.get("reward/knock", 0.0) == -pen
    if not end:
        _, _, term, _, info = env.step(action(env))
        assert info["knocked"] == 1.0 and "reward/knock" not in info  # once per object
    env.close()


@pytest.mark.parametrize("pen,end", [(0.0, False), (10.0, False), (10.0, True)])
def test_pick_pushing_its_target_costs_per_metre_until_the_cap_and_grasp(pen, end):
    """target_push_pen > 0 (deviation): the target pushed from its reset position before the grasp costs pen per metre
    of each rise of its furthest displacement, counted up to target_push_cap; reaching the cap ends the episode with
    target_push_should_end; `target_push` reads the distance whatever the cost; after the grasp nothing is charged."""
    env = make_env("pick", reward__target_push_pen=pen, reward__target_push_cap=0.3,
                   reward__target_push_should_end=end)
    sim, target = env.sim, env.task.target
    start = sim.object_pos(target).copy()
    _, _, term, _, info = env.step(action(env))
    assert info["target_push"] < 0.01 and not term
    moved = info["target_push"]
    sim.set_object_pose(target, start + np.array([0.1, 0.0, 0.0]), sim.object_quat(target))  # nudged 10 cm
    _, _, term, _, info = env.step(action(env))
    assert 0.09 < info["target_push"] < 0.11 and not term
    assert info.get("reward/target_push", 0.0) == pytest.approx(-pen * (info["target_push"] - moved))
    moved = info["target_push"]
    sim.set_object_pose(target, start + np.array([0.0, 0.0, -0.8]), sim.object_quat(target))  # fallen 0.8 m
    _, _, term, _, info = env.step(action(env))
    assert info["target_push"] == pytest.approx(0.3) and term == end  # counted to the cap only
    assert info.get("reward/target_push", 0.0) == pytest.approx(-pen * (0.3 - moved))
    env.close()


def test_pick_push_watch_stops_at_the_grasp():
    env = make_env("pick", reward__target_push_pen=10.0)
    sim, target = env.sim, env.task.target
    for _ in range(25):
        env.step(action(env, arm=arm_toward(sim, sim.object_pos(target)), grip=-1.0))
    before = env.task.push.furthest
    put_at_suction_cup(sim, target)  # teleported into the cup: the grasp step charges nothing
    _, _, _, _, info = env.step(action(env, grip=1.0))
    assert sim.grasped == target and "reward/target_push" not in info and info["target_push"] == before
    for _ in range(5):  # carried away: still nothing
        _, _, _, _, info = env.step(action(env, arm=arm_to_rest(sim), grip=1.0))
        assert "reward/target_push" not in info and info["target_push"] == before
    env.close()


def test_pick_bad_knock_values_are_named():
    with pytest.raises(ValueError, match="knock_pen"):
        make_env("pick", reward__knock_pen=-1.0)
    with pytest.raises(ValueError, match="knock_dist"):
        make_env("pick", reward__knock_dist=0.0)
    with pytest.raises(ValueError, match="target_push_pen"):
        make_env("pick", reward__target_push_pen=-1.0)
    with pytest.raises(ValueError, match="target_push_cap"):
        make_env("pick", reward__target_push_cap=0.0)
    with pytest.raises(ValueError, match="base_change_pen"):
        make_env("pick", reward__base_change_pen=-0.1)


@pytest.mark.parametrize("pen", [0.0, 0.05])
def test_pick_base_change_costs_the_commands_step_to_step_change(pen):
    """base_change_pen > 0 (deviation): each step pays pen x the L1 change of the clipped base command from the step
    before (nothing on the episode's first step); a steady command pays nothing; `base_change` reads the episode's
    mean change per step whatever the cost."""
    env = make_env("pick", reward__base_change_pen=pen)
    _, _, _, _, info = env.step(action(env, base=[0.5, -0.5]))
    assert info["base_change"] == 0.0 and "reward/base_change" not in info  # no step before
    _, _, _, _, info = env.step(action(env, base=[0.5, -0.5]))
    assert info["base_change"] == 0.0 and "reward/base_change" not in info  # steady
    _, _, _, _, info = env.step(action(env, base=[-0.5, 3.0]))  # flipped, the turn clipped to 1: a change of 2.5
    assert info.get("reward/base_change", 0.0) == pytest.approx(-pen * 2.5)
    assert info["base_change"] == pytest.approx(2.5 / 2)  # mean over the two steps that had a step before
    env.reset()
    _, _, _, _, info = env.step(action(env, base=[1.0, 1.0]))
    assert info["base_change"] == 0.0 and "reward/base_change" not in info  # reset forgets the last episode
    env.close()
