"""The open/close skills' reward on a real sim and episode: rising toward the desired state, the grasp, wrong grasps and early stops."""

import numpy as np
import pytest
from reward_envs import action, arm_toward, make_env
from sim_poses import put_at_suction_cup

from rearrange.tasks.skill_tasks import load_skill_config


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
