"""Nav with the arm swinging back to rest while it drives (configs/skill/nav.yaml `arm_to_rest`, `start_arm`;
rearrange/arm_rest.py): the env drives an arm off rest back to it whatever the nav commands, only when asked,
and eval-skill measures a nav on such starts only when eval.start_grasp.max_arm_offset asks."""

from __future__ import annotations

import numpy as np
from cli_errors import one_line_exit_2

from rearrange.arm_rest import RESET_ARM_TOLERANCE, arm_rest_error
from rearrange.env import RearrangeEnv
from rearrange.generate import generate_episodes
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

EPISODES = generate_episodes("nav", "train", 3, 7)


def _env(arm_to_rest: bool, prob: float = 1.0) -> RearrangeEnv:
    cfg = dict(load_skill_config("nav"), arm_to_rest=arm_to_rest,
               start_arm={"prob": prob, "max_offset": 1.0, "max_ee_shift": 0.3})
    return RearrangeEnv(make_skill_task(cfg), EPISODES, episode_order="cycle")


def test_nav_defaults_leave_the_arm_alone():
    cfg = load_skill_config("nav")
    assert cfg["arm_to_rest"] is False and cfg["start_arm"]["prob"] == 0.0  # habitat's nav
    env = RearrangeEnv(make_skill_task(cfg), EPISODES, episode_order="cycle")
    try:
        env.reset(seed=0)
        assert arm_rest_error(env.unwrapped.sim) < 0.02
    finally:
        env.close()


def test_arm_to_rest_brings_an_arm_off_rest_back_while_the_base_drives():
    drive = np.array([1.0, 0.0, -1.0])  # full speed ahead, no turn, no stop (nav's base + stop action)
    swinging, still = _env(True), _env(False)
    try:
        swinging.reset(seed=3)
        still.reset(seed=3)
        start = arm_rest_error(swinging.unwrapped.sim)
        assert start > 0.2  # off rest at the start (the same seed: the same offsets in both envs)
        assert arm_rest_error(still.unwrapped.sim) == start
        base0 = np.asarray(swinging.unwrapped.sim.base_xy).copy()
        errors = []
        for _ in range(150):
            swinging.step(drive)
            still.step(drive)
            errors.append(arm_rest_error(swinging.unwrapped.sim))
        assert errors[0] < start  # the first step already turns the arm toward rest
        assert min(errors) < RESET_ARM_TOLERANCE  # ... and it gets there, at reset_arm's speed
        assert np.linalg.norm(np.asarray(swinging.unwrapped.sim.base_xy) - base0) > 0.05  # the base drove meanwhile
        assert arm_rest_error(still.unwrapped.sim) > start - 0.05  # without arm_to_rest the arm holds its pose
    finally:
        swinging.close()
        still.close()


def test_eval_skill_starts_nav_at_rest_unless_max_arm_offset_asks(capsys):
    from eval.skill_eval import OracleAgent, _make_env
    from eval.skill_eval import main as eval_skill_main

    rested = _make_env(OracleAgent("nav"), "nav", EPISODES)
    turned = _make_env(OracleAgent("nav"), "nav", EPISODES, start_grasp={"max_arm_offset": 1.0})
    try:
        rested.reset(seed=1)
        turned.reset(seed=1)
        assert arm_rest_error(rested.unwrapped.sim) < 0.02
        assert arm_rest_error(turned.unwrapped.sim) > 0.1
        assert turned.unwrapped.task.arm_to_rest and not rested.unwrapped.task.arm_to_rest
    finally:
        rested.close()
        turned.close()
    line = one_line_exit_2(capsys, eval_skill_main, ["--skill", "nav", "--episodes", "1",
                                                     "eval.start_grasp.max_tilt=0.5"])
    assert "for nav only max_arm_offset applies" in line
