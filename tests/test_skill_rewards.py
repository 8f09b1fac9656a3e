"""Skill rewards: the shared pieces on numbers, then each skill task on a real sim and episode
(every reward term has the right sign and fires once where it should)."""

import numpy as np
import pytest
from sim_poses import put_at_suction_cup

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


# ----------------------------------------------------------------------------- tasks on a real sim

SIM_CFG = {"camera": {"head": {"width": 32, "height": 32}}}  # small depth frames: tests don't look at them
_EPISODES: dict = {}


def episodes(kind: str):
    if kind not in _EPISODES:
        from rearrange.generate import generate_episodes

        _EPISODES[kind] = generate_episodes(kind, "train", 1, 0)
    return _EPISODES[kind]


def make_env(kind: str, episode_list=None, **changes):
    """A RearrangeEnv of skill `kind`; `changes` are (dotted key -> value) edits of its skill config."""
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import make_skill_task

    cfg = load_skill_config(kind)
    for dotted, value in changes.items():
        node = cfg
        *path, last = dotted.split("__")
        for key in path:
            node = node[key]
        node[last] = value
    env = RearrangeEnv(make_skill_task(cfg), episode_list or episodes(kind), sim_cfg=SIM_CFG)
    env.reset(seed=0)
    return env


def action(env, arm=None, grip=None, base=None, stop=None):
    """A subset action for `env` from named parts (missing parts 0)."""
    parts = {"arm": arm if arm is not None else np.zeros(7), "grip": [0.0 if grip is None else grip],
             "base": base if base is not None else np.zeros(2), "stop": [-1.0 if stop is None else stop]}
    return np.concatenate([np.asarray(parts[s], dtype=np.float64) for s in env.task.action_subsets])


def arm_toward(sim, point, step=0.02):
    """Arm action moving the ee `step` m toward `point` (damped least squares on the ee Jacobian)."""
    jac = sim.ee_jacobian()
    d = np.asarray(point) - sim.ee_pos
    dx = d / max(np.linalg.norm(d), 1e-9) * step
    dq = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), dx)
    return np.clip(dq / 0.0125, -1.0, 1.0)


def arm_to_rest(sim):
    return np.clip((sim.REST_ARM_QPOS - sim.arm_qpos) / 0.0125, -1.0, 1.0)


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


def _place_episode_with_goal_at_hand():
    """The place episode with its goal moved to where the held object starts."""
    import copy

    env = make_env("place")
    held = env.sim.object_pos(env.task.target)
    env.close()
    ep = copy.deepcopy(episodes("place")[0])
    ep.targets[0].goal_pos = [float(v) for v in held]
    return ep


def test_place_moving_object_to_goal_pays_and_far_release_ends():
    env = make_env("place")
    sim, target, goal = env.sim, env.task.target, env.task.goal
    assert sim.grasped == target  # starts holding
    _, _, term, _, info = env.step(action(env, arm=arm_toward(sim, goal), grip=1.0))
    rewards = []
    for _ in range(4):
        _, _, term, _, info = env.step(action(env, arm=arm_toward(sim, goal), grip=1.0))
        rewards.append(info["reward/dist"])
    assert info["object_to_goal_dist"] > 0.15 and all(r > 0 for r in rewards) and not term
    _, _, term, _, info = env.step(action(env, grip=-1.0))  # release far from the goal
    assert term and info["wrong_drop"] == 1.0 and "reward/place" not in info and info["success"] == 0.0
    assert info["reward/drop"] == -env.task.reward_cfg.drop_pen
    env.close()


@pytest.mark.parametrize("near", [0.0, 2.0])
def test_place_near_drop_reward_grows_as_the_release_comes_closer(near):
    """near_drop_reward > 0 (deviation): a wrong drop d m from the goal also pays near x max(0, 1 - d / 0.5);
    0 (habitat) leaves drop_pen alone, whatever the distance."""
    paid = []
    for shift in (0.25, 1.5):  # the goal this far from where the held object starts
        ep = _place_episode_with_goal_at_hand()
        ep.targets[0].goal_pos[2] += shift
        env = make_env("place", [ep], reward__near_drop_reward=near, reward__near_drop_dist=0.5)
        _, _, term, _, info = env.step(action(env, grip=-1.0))
        assert term and info["wrong_drop"] == 1.0
        d = info["object_to_goal_dist"]
        assert info["reward/drop"] == pytest.approx(-0.5 + near * max(0.0, 1.0 - d / 0.5), abs=0.02)
        paid.append(info["reward/drop"])
        env.close()
    assert (paid[0] > paid[1] + 0.5) if near else (paid[0] == paid[1] == -0.5)


def test_place_bad_near_drop_values_are_named():
    with pytest.raises(ValueError, match="near_drop_dist"):
        make_env("place", reward__near_drop_dist=0.0)


def test_a_place_config_saved_before_near_drop_keys_still_loads():
    """Checkpoints carry their skill config; one written before the near_drop keys existed gets them off."""
    from rearrange.tasks.skill_tasks import make_skill_task

    cfg = load_skill_config("place")
    del cfg["reward"]["near_drop_reward"], cfg["reward"]["near_drop_dist"]
    assert make_skill_task(cfg).reward_cfg.near_drop_reward == 0.0


@pytest.mark.parametrize("guard", [0.0, 0.25])
def test_place_release_guard_holds_a_release_far_from_the_goal(guard):
    """skill.release_guard > 0 (deviation): a release with the object further than that from the goal is a hold
    (the episode goes on, holding); within it the release is as habitat's. 0 (habitat): the far release drops."""
    env = make_env("place", release_guard=guard)
    sim, target = env.sim, env.task.target
    assert sim.grasped == target and env.task._obj_to_goal(sim) > 0.25
    _, _, term, _, info = env.step(action(env, grip=-1.0))  # release far from the goal
    if guard:
        assert sim.grasped == target and not term and "wrong_drop" not in info
    else:
        assert sim.grasped is None and term and info["wrong_drop"] == 1.0
    env.close()
    env = make_env("place", [_place_episode_with_goal_at_hand()], release_guard=guard)
    _, _, term, _, info = env.step(action(env, grip=-1.0))  # at the goal: released either way
    assert env.sim.grasped is None and info["success"] == 1.0
    env.close()
    with pytest.raises(ValueError, match="skill.release_guard must be >= 0"):
        make_env("place", release_guard=-0.1)


def test_place_release_at_goal_pays_place_and_success():
    env = make_env("place", [_place_episode_with_goal_at_hand()])
    sim = env.sim
    _, _, term, _, info = env.step(action(env, grip=1.0))
    assert not term and info["object_to_goal_dist"] < 0.15
    _, reward, term, _, info = env.step(action(env, grip=-1.0))  # release at the goal, arm at rest
    assert sim.grasped is None
    assert info["reward/place"] == 5.0 and info["reward/success"] == 10.0 and info["success"] == 1.0 and term
    env.close()


def _turn_to(sim, xy):
    ang = np.arctan2(xy[1] - sim.base_xy[1], xy[0] - sim.base_xy[0]) - sim.base_yaw
    return float(np.clip(((ang + np.pi) % (2 * np.pi) - np.pi) / 0.0833, -1.0, 1.0))


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


@pytest.mark.parametrize("must_call_stop", [False, True], ids=["no_stop_needed", "habitat_stop"])
@pytest.mark.parametrize("kind", ["open_fridge", "open_cab"])
def test_art_reward_rises_toward_desired_state_and_bonus_once(kind, must_call_stop):
    env = make_env(kind, success__must_call_stop=must_call_stop)
    sim, task = env.sim, env.task
    # step back 1.2 m so that the teleported door/drawer does not hit the robot (that would be a
    # force termination, tested elsewhere)
    back = sim.base_xy - 1.2 * np.array([np.cos(sim.base_yaw), np.sin(sim.base_yaw)])
    assert sim.base_is_free(back)
    sim.set_base_pose(back, sim.base_yaw)
    task.reset(sim, env.current_episode, np.random.default_rng(0))
    art = task.art
    lo, hi = sim.art_range(art)
    assert task.desired == pytest.approx(min(load_skill_config(kind)["articulated"]["desired_state"], hi))
    rewards = []
    for frac in (0.2, 0.4, 0.6):
        sim.set_art_q(art, lo + frac * (task.desired - lo))
        _, _, term, _, info = env.step(action(env, grip=-1.0))
        rewards.append(info["reward/art_dist"])
        assert not term
    assert all(r > 0 for r in rewards)
    sim.set_art_q(art, lo + 0.3 * (task.desired - lo))  # back toward closed: negative
    _, _, _, _, info = env.step(action(env, grip=-1.0))
    assert info["reward/art_dist"] < 0
    sim.set_art_q(art, task.desired)
    _, _, term, _, info = env.step(action(env, grip=-1.0))
    assert info["reward/at_desired_state"] == 5.0 and info["at_desired_state"] == 1.0
    if not must_call_stop:  # the shipped configs (deviation): open, released, arm at rest is success
        assert term and info["success"] == 1.0 and info["reward/success"] == 10.0
        env.close()
        return
    assert not term and info["success"] == 0.0
    _, _, term, _, info = env.step(action(env, grip=-1.0))
    assert "reward/at_desired_state" not in info and not term  # once; no stop, no end
    _, _, term, _, info = env.step(action(env, grip=-1.0, stop=1.0))  # at rest, not grasping, stop
    assert term and info["success"] == 1.0 and info["reward/success"] == 10.0
    assert "reward/early_stop" not in info  # a successful stop costs nothing
    env.close()


def test_art_stop_before_desired_state_ends_without_success_and_pays_early_stop_pen():
    env = make_env("open_fridge")
    _, reward, term, _, info = env.step(action(env, grip=-1.0, stop=1.0))
    assert term and info["success"] == 0.0 and "reward/success" not in info
    assert info["reward/early_stop"] == -2.0 and reward < -1.9
    env.close()
    env = make_env("open_fridge", reward__early_stop_pen=0.0)  # habitat's setting: no such term
    _, reward, term, _, info = env.step(action(env, grip=-1.0, stop=1.0))
    assert term and "reward/early_stop" not in info and reward > -0.5
    env.close()


def test_art_wrong_grasp_penalty_ends():
    env = make_env("open_cab")
    sim = env.sim
    put_at_suction_cup(sim, sim.object_names[0])
    _, _, term, _, info = env.step(action(env, grip=1.0))
    assert sim.grasped == sim.object_names[0]
    assert info["reward/wrong_grasp"] == -5.0 and term and "reward/grasp" not in info
    env.close()


def test_close_task_ignores_grip():
    env = make_env("close_cab")
    sim = env.sim
    assert env.task.grip_disabled
    put_at_suction_cup(sim, sim.object_names[0])
    _, _, term, _, info = env.step(action(env, grip=1.0))
    assert sim.grasped is None and "reward/wrong_grasp" not in info
    env.close()


def test_art_grasping_the_right_handle_pays_grasp_reward_once():
    # force limits off: reaching straight at the handle presses the arm against the fridge
    env = make_env("open_fridge", reward__force__max_instant_force=0.0, reward__force__max_accum_force=0.0)
    sim, handle = env.sim, env.task.handle
    # open_fridge starts up to ~1 m off (spawn.art_start_noise): stand squarely in front of the fridge
    fridge = sim.layout.articulated[env.current_episode.info["articulated"]]
    sim.set_base_pose(np.asarray(fridge.front_center, dtype=np.float64), fridge.facing_yaw)
    env.task.reset(sim, env.current_episode, np.random.default_rng(0))
    grasp_rewards, info = [], {}
    for _ in range(150):
        d = float(np.linalg.norm(sim.handle_pos(handle) - sim.ee_pos))
        step_arm = arm_toward(sim, sim.handle_pos(handle), step=min(0.02, d))
        _, _, term, _, info = env.step(action(env, arm=step_arm, grip=1.0 if d < 0.08 else -1.0))
        grasp_rewards.append(info.get("reward/grasp", 0.0))
        if sim.grasped is not None:
            break
    assert sim.grasped == handle and not term
    assert info["reward/grasp"] == 5.0 and sum(grasp_rewards) == 5.0 and "reward/wrong_grasp" not in info
    assert "reward/marker_dist" not in info  # no handle-distance reward while grasping
    env.step(action(env, grip=-1.0))  # release and grasp again: no second bonus
    for _ in range(5):
        _, _, _, _, info = env.step(action(env, arm=arm_toward(sim, sim.handle_pos(handle), step=0.01), grip=1.0))
        assert "reward/grasp" not in info
    env.close()


@pytest.mark.parametrize("pen,end", [(0.0, False), (5.5, True)])
def test_place_object_leaving_the_goal_after_the_release(pen, end):
    """displaced_pen > 0 (deviation): an object released at the goal that then leaves it costs the pen once, and
    displaced_should_end ends the episode; habitat's 0 / false leave it to run on, unpaid."""
    env = make_env("place", [_place_episode_with_goal_at_hand()], reward__displaced_pen=pen,
                   reward__displaced_should_end=end, success__end_on_success=False)  # the arm starts at rest
    sim, target = env.sim, env.task.target
    env.step(action(env, grip=1.0))
    _, _, term, _, info = env.step(action(env, grip=-1.0))  # released at the goal
    assert info["did_place"] == 1.0 and not term and "displaced" not in info
    sim.set_object_pose(target, env.task.goal + np.array([0.4, 0.0, 0.05]), sim.object_quat(target))  # knocked away
    _, _, term, _, info = env.step(action(env))
    assert info["displaced"] == 1.0 and term == end and info["success"] == 0.0
    assert info.get("reward/displaced", 0.0) == -pen
    if not end:
        _, _, term, _, info = env.step(action(env))
        assert "displaced" not in info and "reward/displaced" not in info  # once
    env.close()


def test_place_negative_displaced_pen_is_named():
    with pytest.raises(ValueError, match="displaced_pen"):
        make_env("place", reward__displaced_pen=-1.0)


@pytest.mark.parametrize("place_dist", [0.0, 0.01])
def test_place_reward_dist_pays_the_release_only_that_close(place_dist):
    """place_reward_dist > 0 (deviation): a release inside the success threshold but farther than this from the
    goal earns no place_reward and is no wrong drop (it still succeeds); 0 (habitat) pays anywhere within it."""
    ep = _place_episode_with_goal_at_hand()
    ep.targets[0].goal_pos[2] += 0.05  # the held object starts 0.05 m from the goal: inside 0.15, outside 0.01
    env = make_env("place", [ep], reward__place_reward_dist=place_dist)
    env.step(action(env, grip=1.0))
    _, _, term, _, info = env.step(action(env, grip=-1.0))
    assert info["did_place"] == 1.0 and "wrong_drop" not in info and 0.01 < info["object_to_goal_dist"] < 0.15
    assert info.get("reward/place", 0.0) == (0.0 if place_dist else 5.0)
    assert info["success"] == 1.0 and term
    env.close()


def test_place_reward_dist_beyond_the_success_threshold_is_named():
    with pytest.raises(ValueError, match="place_reward_dist"):
        make_env("place", reward__place_reward_dist=0.2)


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


def test_pick_bad_knock_values_are_named():
    with pytest.raises(ValueError, match="knock_pen"):
        make_env("pick", reward__knock_pen=-1.0)
    with pytest.raises(ValueError, match="knock_dist"):
        make_env("pick", reward__knock_dist=0.0)
