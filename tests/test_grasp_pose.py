"""Varied in-hand start poses for place (rearrange/grasp_pose.py): bounded, reproducible, held, off by default;
bad values of place's and pick's start-pose nodes named before any work."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cli_errors import one_line_exit_2
from test_oracle_pick_place import PLACE_ON_COUNTER

from rearrange.env import RearrangeEnv
from rearrange.episodes import episode_from_dict
from rearrange.grasp_pose import ArmStartNoise, GraspNoise
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task
from skills.train_cli import main as train_skill_main


def _env(max_tilt: float, max_lateral: float) -> RearrangeEnv:
    cfg = dict(load_skill_config("place"), start_grasp={"max_tilt": max_tilt, "max_lateral": max_lateral})
    return RearrangeEnv(make_skill_task(cfg), [episode_from_dict(PLACE_ON_COUNTER)])


def _in_hand(env: RearrangeEnv) -> tuple[float, float]:
    """(degrees between the object's down axis and the cup's pointing axis, the object centre's distance
    from that axis)."""
    sim = env.unwrapped.sim
    name = sim.grasped
    assert name is not None
    cup = sim.data.site_xmat[sim._ee_site].reshape(3, 3)[:, 0]
    ee, pos, quat = sim.ee_pos, sim.object_pos(name), sim.object_quat(name)
    w, v = quat[0], quat[1:]
    up = np.array([0.0, 0.0, 1.0])
    up = up + 2.0 * np.cross(v, np.cross(v, up) + w * up)  # the object's z axis in the world
    off = pos - ee
    return math.degrees(math.acos(np.clip(-up @ cup, -1.0, 1.0))), float(np.linalg.norm(off - (off @ cup) * cup))


def test_the_default_grasp_is_canonical_and_noise_tilts_within_bounds_and_holds():
    plain, noisy = _env(0.0, 0.0), _env(0.6, 0.03)
    try:
        plain.reset(seed=0)
        angle0, off0 = _in_hand(plain)
        assert angle0 < 2.0 and off0 < 0.005  # upright under the cup, on its axis
        angles = []
        for seed in range(8):
            noisy.reset(seed=seed)
            angle, off = _in_hand(noisy)
            angles.append(angle)
            # tilted about the contact point (the centre swings off the axis) and slid at most max_lateral
            assert off < 0.03 + 0.15 * math.sin(0.6) + 0.005
        assert max(angles) <= math.degrees(0.6) + 3.0 and max(angles) > 10.0 and len(set(np.round(angles, 3))) == 8
        # the varied grasp is a grasp: held, and kept while the policy does nothing
        before = _in_hand(noisy)
        hold = np.zeros(noisy.action_space.shape, dtype=np.float32)
        hold[7] = 1.0
        for _ in range(20):
            _, _, terminated, _, info = noisy.step(hold)
            assert not terminated and info["is_holding"] == 1.0
        after = _in_hand(noisy)
        assert abs(after[0] - before[0]) < 1.0 and abs(after[1] - before[1]) < 0.005
    finally:
        plain.close()
        noisy.close()


def test_varied_grasps_repeat_with_the_seed():
    first, second = _env(0.6, 0.03), _env(0.6, 0.03)
    try:
        first.reset(seed=5)
        second.reset(seed=5)
        assert np.allclose(first.unwrapped.sim.object_quat("obj_1"), second.unwrapped.sim.object_quat("obj_1"))
        assert np.allclose(first.unwrapped.sim.object_pos("obj_1"), second.unwrapped.sim.object_pos("obj_1"))
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("reader, node, key", [
    (GraspNoise, {"max_tilt": -0.1}, "start_grasp.max_tilt"), (GraspNoise, {"max_tilt": 2.0}, "start_grasp.max_tilt"),
    (GraspNoise, {"max_lateral": 0.5}, "start_grasp.max_lateral"), (ArmStartNoise, {"prob": 1.5}, "start_arm.prob"),
    (ArmStartNoise, {"max_offset": 2.0}, "start_arm.max_offset"),
    (ArmStartNoise, {"max_ee_shift": 0.0}, "start_arm.max_ee_shift")])
def test_bad_start_pose_values_are_named(reader, node, key):
    with pytest.raises(ValueError, match=f"skill.{key}"):
        reader.from_node(node)


@pytest.mark.parametrize("skill, override", [("place", "skill.start_grasp.max_tilt=3"), ("pick", "skill.start_arm.prob=2")])
def test_train_skill_rejects_a_bad_start_pose_before_any_work(capsys, tmp_path, skill, override):
    line = one_line_exit_2(capsys, train_skill_main, ["--skill", skill, "--out", str(tmp_path / "run"), override])
    assert override.split("=")[0] in line
    assert not (tmp_path / "run" / "episodes").exists()


def test_eval_skill_start_grasp_reaches_the_env_and_bad_values_are_one_line(capsys):
    from eval.skill_eval import OracleAgent, _make_env
    from eval.skill_eval import main as eval_skill_main

    env = _make_env(OracleAgent("place"), "place", [episode_from_dict(PLACE_ON_COUNTER)], None, {"max_tilt": 0.6})
    try:
        angles = []
        for seed in range(4):
            env.reset(seed=seed)
            angles.append(_in_hand(env)[0])
        assert max(angles) > 10.0
    finally:
        env.close()
    line = one_line_exit_2(capsys, eval_skill_main, ["--skill", "pick", "--episodes", "1",
                                                     "eval.start_grasp.max_tilt=0.5"])
    assert "place only" in line
    line = one_line_exit_2(capsys, eval_skill_main, ["--skill", "place", "--episodes", "1",
                                                     "eval.start_grasp.max_lateral=1"])
    assert "eval.start_grasp.max_lateral" in line


def test_arm_offsets_move_the_joints_but_keep_the_ee_near_rest_and_the_object_held():
    plain = _env(0.0, 0.0)
    cfg = dict(load_skill_config("place"), start_grasp={"max_arm_offset": 0.5})
    turned = RearrangeEnv(make_skill_task(cfg), [episode_from_dict(PLACE_ON_COUNTER)])
    try:
        plain.reset(seed=0)
        rest_q, rest_ee = plain.unwrapped.sim.arm_qpos, plain.unwrapped.sim.ee_pos
        moved = []
        for seed in range(5):
            _, info = turned.reset(seed=seed)
            sim = turned.unwrapped.sim
            moved.append(np.abs(sim.arm_qpos - rest_q).max())
            assert np.linalg.norm(sim.ee_pos - rest_ee) <= 0.15 + 1e-6 and info["is_holding"] == 1.0
            assert _in_hand(turned)[0] < 2.0  # the grasp itself unchanged
        assert max(moved) > 0.05
    finally:
        plain.close()
        turned.close()


def test_evaluators_start_a_place_policy_trained_with_varied_grasps_from_the_canonical_one():
    """The shipped place trained with skill.start_grasp on; eval-skill (and the checkpoint curve) start
    from habitat's one grasp unless eval.start_grasp asks for varied ones."""
    from eval.skill_eval import PolicyAgent, _make_env
    from skills.policy import SkillPolicy

    policy = SkillPolicy.from_checkpoint("checkpoints/place.pt", deterministic=True)
    assert GraspNoise.from_node(policy.config["skill"].get("start_grasp")).active
    episodes = [episode_from_dict(PLACE_ON_COUNTER)]
    canonical = _make_env(PolicyAgent(policy), "place", episodes, "checkpoints/place.pt")
    varied = _make_env(PolicyAgent(policy), "place", episodes, "checkpoints/place.pt", {"max_tilt": 0.6})
    try:
        tilts = []
        for seed in range(3):
            canonical.reset(seed=seed)
            assert _in_hand(canonical)[0] < 2.0
            varied.reset(seed=seed)
            tilts.append(_in_hand(varied)[0])
        assert max(tilts) > 10.0
    finally:
        canonical.close()
        varied.close()
