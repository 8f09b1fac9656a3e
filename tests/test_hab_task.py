"""HAB scenario task: stage measures, success, reward terms and the gym ids, on constructed states."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from rearrange.env import RearrangeEnv
from rearrange.generate import generate_episodes
from rearrange.tasks.hab import HAB_ENV_IDS, HabTask, load_hab_config, register_hab_envs

STOP = 10
GRIP = 7


@pytest.fixture(scope="module")
def cfg():
    return load_hab_config()


@pytest.fixture(scope="module")
def env(cfg):
    episodes = generate_episodes("prepare_groceries", "val", 1, 0)
    env = RearrangeEnv(HabTask("prepare_groceries", cfg, obs_keys=()), episodes, episode_order="cycle")
    yield env
    env.close()


def _still(grip: float | None = None, stop: bool = False) -> np.ndarray:
    a = np.zeros(11)
    a[GRIP] = -1.0 if grip is None else grip
    a[STOP] = 1.0 if stop else 0.0
    return a


def _regrasp(sim, obj: str) -> None:
    """Put the sim in its current state, but with `obj` held in the gripper."""
    poses = {n: (sim.object_pos(n), sim.object_quat(n)) for n in sim.object_names}
    arts = {n: sim.art_q(n) for n in sim.art_names}
    sim.reset_state(poses, arts, sim.base_xy, sim.base_yaw, grasped=obj)


def test_no_progress_pays_only_slack_and_stop_without_goal_fails(env, cfg):
    env.reset(options={"episode_index": 0})
    reward_cfg = cfg["hab_task"]["reward"]
    _, reward, terminated, truncated, info = env.step(_still())
    assert not terminated and not truncated
    assert info["stages_reached"] == 0.0
    assert info["goal_reached"] == 0.0
    assert reward == pytest.approx(reward_cfg["slack"], abs=reward_cfg["force"]["max_force_pen"] + 1e-9)
    _, reward, terminated, _, info = env.step(_still(stop=True))
    assert terminated  # stop ends the episode ...
    assert info["success"] == 0.0  # ... but the objects are not at their goals
    assert reward < 0


def test_stages_in_order_then_success_on_stop(env, cfg):
    env.reset(options={"episode_index": 0})
    sim, task = env.sim, env.task
    reward_cfg = cfg["hab_task"]["reward"]
    assert task.stage_names == ("pick_0", "place_0", "pick_1", "place_1", "pick_2", "place_2")
    episode = env.current_episode

    # teleporting an object to its goal without picking it first does not count as placing it
    t0 = episode.targets[0]
    sim.set_object_pose(t0.object, t0.goal_pos, sim.object_quat(t0.object))
    _, _, _, _, info = env.step(_still())
    assert info["stage/place_0"] == 0.0

    for i, t in enumerate(episode.targets):
        _regrasp(sim, t.object)
        task.grip_disabled = True  # keep holding on this step
        _, reward, terminated, _, info = env.step(_still(grip=1.0))
        task.grip_disabled = False
        assert not terminated
        assert info[f"stage/pick_{i}"] == 1.0 and info[f"stage/place_{i}"] == 0.0
        assert reward > reward_cfg["subgoal_reward"] + reward_cfg["slack"] - 0.02  # paid for the new stage
        env.step(_still(grip=-1.0))  # release
        assert sim.grasped is None
        sim.set_object_pose(t.object, t.goal_pos, sim.object_quat(t.object))
        _, reward, _, _, info = env.step(_still())
        assert info[f"stage/place_{i}"] == 1.0
        assert reward > 0.5 * reward_cfg["subgoal_reward"]
        # a stage is paid once
        _, reward, _, _, info = env.step(_still())
        assert reward < 0.5 * reward_cfg["subgoal_reward"]

    assert info["goal_reached"] == 1.0
    assert info["success"] == 0.0  # the goal holds, but success needs the stop call
    _, reward, terminated, _, info = env.step(_still(stop=True))
    assert terminated and info["success"] == 1.0
    assert reward > reward_cfg["success_reward"] - 0.1


def test_holding_an_object_is_not_success(env):
    env.reset(options={"episode_index": 0})
    sim = env.sim
    episode = env.current_episode
    for t in episode.targets:
        sim.set_object_pose(t.object, t.goal_pos, sim.object_quat(t.object))
    _, _, _, _, info = env.step(_still())
    assert info["goal_reached"] == 1.0
    _regrasp(sim, episode.targets[0].object)  # pick one back up
    env.task.grip_disabled = True
    _, _, terminated, _, info = env.step(_still(grip=1.0, stop=True))
    assert sim.grasped == episode.targets[0].object
    assert terminated
    assert info["goal_reached"] == 0.0 and info["success"] == 0.0


def test_max_steps_from_scenario_or_override(cfg):
    assert HabTask("tidy_house", cfg).max_steps == 4500  # configs/scenario/tidy_house.yaml
    assert HabTask("set_table", cfg).max_steps == 3000
    node = dict(cfg["hab_task"], max_steps=77)
    assert HabTask("set_table", {"hab_task": node}).max_steps == 77
    with pytest.raises(ValueError, match="valid choices"):
        HabTask("tidy_kitchen", cfg)


def test_gym_ids_give_full_action_space():
    register_hab_envs()
    for env_id in HAB_ENV_IDS.values():
        assert env_id in gymnasium.registry
    env = gymnasium.make("rearrange/SetTable-v0", episode_count=1).unwrapped
    try:
        assert isinstance(env.task, HabTask) and env.task.scenario == "set_table"
        assert env.action_space.shape == (11,)
        env.reset(seed=0)
        assert env.task.stage_names[0] == "open_0"  # the drawer holding the bowl starts closed
        _, _, _, _, info = env.step(np.zeros(11))
        assert "robot_contact_force" in info and "accum_force" in info and "stage/open_0" in info
    finally:
        env.close()
