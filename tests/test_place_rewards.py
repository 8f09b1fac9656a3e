"""Place's reward on a real sim and episode: every term has the right sign and fires once where it should."""

import numpy as np
import pytest
from reward_envs import action, arm_toward, episode_on, episodes, make_env

from rearrange.tasks.skill_tasks import load_skill_config


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


@pytest.mark.parametrize("falloff", [0.0, 1.0])
def test_place_reward_falloff_pays_a_closer_release_more(falloff):
    """place_reward_falloff > 0 (deviation): the release pays place_reward x (1 - falloff x d / 0.15 m), so a
    release far inside the success threshold earns more than one at its edge; 0 (habitat) pays it whole."""
    paid = {}
    for offset in (0.0, 0.07):
        ep = _place_episode_with_goal_at_hand()
        ep.targets[0].goal_pos[2] += offset  # the held object starts this far below its goal
        env = make_env("place", [ep], reward__place_reward_falloff=falloff)
        env.step(action(env, grip=1.0))
        _, _, _, _, info = env.step(action(env, grip=-1.0))
        assert info["did_place"] == 1.0
        d = info["object_to_goal_dist"]
        assert info["reward/place"] == pytest.approx(5.0 * (1.0 - falloff * d / 0.15))
        paid[offset] = info["reward/place"]
        env.close()
    assert (paid[0.0] > paid[0.07] + 1.0) if falloff else (paid[0.0] == paid[0.07] == 5.0)


def test_place_reward_falloff_above_one_is_named():
    with pytest.raises(ValueError, match="place_reward_falloff"):
        make_env("place", reward__place_reward_falloff=1.5)


@pytest.mark.parametrize("end", [False, True])
def test_pushing_the_goal_drawer_shut_while_holding_costs_once(end):
    """shut_pen > 0 (deviation): the held object pushing its goal's drawer toward closed costs shut_pen once
    (inside Tidy House the object then fell in front of the shut drawer); shut_should_end ends the episode."""
    env = make_env("place", [episode_on("place", "drawer")], reward__shut_pen=3.0, reward__shut_should_end=end)
    sim, task = env.sim, env.task
    drawer = task.container
    assert drawer is not None and drawer.startswith("drawer") and sim.grasped == task.target
    opened = sim.art_q(drawer)
    _, _, term, _, info = env.step(action(env, grip=1.0))  # standing still: the drawer stays where it is
    assert "shut" not in info and "reward/shut" not in info and not term
    sim.set_art_q(drawer, opened - 0.2)  # pushed 0.2 m toward closed
    _, _, term, _, info = env.step(action(env, grip=1.0))
    assert info["shut"] == 1.0 and info["reward/shut"] == -3.0 and term == end
    if not end:
        _, _, term, _, info = env.step(action(env, grip=1.0))  # once only
        assert "reward/shut" not in info
    env.close()


def test_place_shut_dist_must_be_positive():
    with pytest.raises(ValueError, match="skill.reward.shut_dist"):
        make_env("place", reward__shut_dist=0.0)
