"""Pick's varied start arm (configs/skill/pick.yaml start_arm, rearrange/grasp_pose.py): off rest within bounds,
clear of the scene, reproducible, off by default, training only (bad values: tests/test_grasp_pose.py)."""

from __future__ import annotations

import numpy as np
from cli_errors import one_line_exit_2

from rearrange.env import RearrangeEnv
from rearrange.generate import generate_episodes
from rearrange.grasp_pose import ArmStartNoise
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

EPISODES = generate_episodes("pick", "train", 4, 3)


def _env(prob: float, max_offset: float = 1.0) -> RearrangeEnv:
    cfg = dict(load_skill_config("pick"), start_arm={"prob": prob, "max_offset": max_offset, "max_ee_shift": 0.3})
    return RearrangeEnv(make_skill_task(cfg), EPISODES, episode_order="cycle")


def _arm_offset(env: RearrangeEnv) -> np.ndarray:
    sim = env.unwrapped.sim
    return np.asarray(sim.arm_qpos) - np.asarray(sim.REST_ARM_QPOS)


def test_default_pick_starts_at_rest_and_start_arm_turns_the_joints_within_bounds():
    assert ArmStartNoise.from_node(load_skill_config("pick").get("start_arm")).prob == 0.0
    plain, varied = _env(0.0), _env(1.0)
    try:
        offsets = []
        for seed in range(8):
            plain.reset(seed=seed)
            assert np.max(np.abs(_arm_offset(plain))) < 0.02
            obs, _ = varied.reset(seed=seed)
            sim = varied.unwrapped.sim
            off = _arm_offset(varied)
            offsets.append(float(np.max(np.abs(off))))
            assert np.all(np.abs(off) <= 1.0 + 1e-9)
            assert np.linalg.norm(np.asarray(sim.resting_pos_base) - np.asarray(sim.ee_pos_base)) <= 0.3 + 0.03
            assert sim.robot_penetration() <= 0.002
            assert np.allclose(obs["joint"][:7], sim.arm_qpos, atol=1e-6)  # the policy sees the turned arm
        assert np.median(offsets) > 0.1  # most starts are visibly off rest
    finally:
        plain.close()
        varied.close()


def test_start_arm_is_reproducible_from_the_seed():
    first, second = _env(1.0), _env(1.0)
    try:
        first.reset(seed=5)
        second.reset(seed=5)
        assert np.array_equal(_arm_offset(first), _arm_offset(second))
        second.reset(seed=6)
        assert not np.array_equal(_arm_offset(first), _arm_offset(second))
    finally:
        first.close()
        second.close()


def test_eval_skill_starts_pick_at_rest_whatever_the_policy_trained_with():
    from eval.skill_eval import PolicyAgent, _make_env
    from skills.policy import SkillPolicy

    policy = SkillPolicy.from_checkpoint("checkpoints/pick.pt", deterministic=True)
    policy.config["skill"]["start_arm"] = {"prob": 1.0, "max_offset": 1.0, "max_ee_shift": 0.3}
    env = _make_env(PolicyAgent(policy), "pick", EPISODES, "checkpoints/pick.pt")
    try:
        for seed in range(3):
            env.reset(seed=seed)
            assert np.max(np.abs(_arm_offset(env))) < 0.02
    finally:
        env.close()


def test_eval_skill_max_arm_offset_starts_pick_off_rest_and_place_keys_are_refused(capsys):
    from eval.skill_eval import OracleAgent, _make_env
    from eval.skill_eval import main as eval_skill_main

    env = _make_env(OracleAgent("pick"), "pick", EPISODES, None, {"max_arm_offset": 1.0})
    try:
        offsets = []
        for seed in range(4):
            env.reset(seed=seed)
            offsets.append(float(np.max(np.abs(_arm_offset(env)))))
        assert max(offsets) > 0.1
    finally:
        env.close()
    line = one_line_exit_2(capsys, eval_skill_main, ["--skill", "pick", "--episodes", "1",
                                                     "eval.start_grasp.max_tilt=0.5"])
    assert "max_arm_offset" in line and "place only" in line
