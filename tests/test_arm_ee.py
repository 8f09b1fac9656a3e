"""The `arm_ee` action subset (habitat's ArmEEAction): end-effector displacement commands in the base
frame, turned into joint deltas by the simulator's arm IK (rearrange/arm_ik.py)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_oracle_pick_place import PLACE_ON_COUNTER

from rearrange.actions import (
    ACTION_DIM,
    ACTION_SLICES,
    check_subsets,
    expand_action,
    restrict_full,
    subset_entries,
)
from rearrange.env import RearrangeEnv
from rearrange.episodes import episode_from_dict
from rearrange.layout import generate_layout, layout_seeds
from rearrange.sim import RearrangeSim
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task
from skills.definitions import SkillDef
from skills.oracle_start import OracleStartConfig, OracleStartEnv
from skills.oracles.base import select_subset
from skills.oracles.factory import oracle_config

EE_SUBSETS = ("arm_ee", "grip", "base")


@pytest.fixture(scope="module")
def sim():
    s = RearrangeSim(generate_layout(layout_seeds("val")[0]), ["apple"])
    yield s
    s.close()


def _open_floor_start(sim) -> None:
    rng = np.random.default_rng(0)
    from skills.oracles.base_follow import furniture_clearance

    pts = np.array([sim.navmap.sample_navigable(rng) for _ in range(200)])
    sim.reset_state({}, {}, pts[int(np.argmax(furniture_clearance(sim, pts, 0.0)))], 0.7)


def test_arm_and_arm_ee_are_exclusive_and_named_in_errors():
    assert check_subsets(["base", "arm_ee"]) == ("arm_ee", "base")
    with pytest.raises(ValueError, match="choose one"):
        check_subsets(["arm", "arm_ee"])
    with pytest.raises(ValueError, match="arm_ee"):
        check_subsets(["hand"])
    with pytest.raises(ValueError, match="needs the simulator"):
        expand_action(EE_SUBSETS, np.zeros(6))


@pytest.mark.parametrize("axis, sign", [(0, 1.0), (1, -1.0), (2, 1.0), (2, -1.0)])
def test_an_ee_command_moves_the_ee_along_that_base_axis(sim, axis, sign):
    _open_floor_start(sim)
    lim = float(sim.cfg["arm"]["ee_control"]["ctrl_lim"])
    start = sim.ee_pos_base
    command = np.zeros(6)
    command[axis] = sign
    steps = 12
    for _ in range(steps):
        full = expand_action(EE_SUBSETS, command, sim=sim)
        assert np.all(np.abs(full) <= 1.0) and full[ACTION_SLICES["grip"]][0] == 0.0
        sim.step(full[ACTION_SLICES["arm"]], None, np.zeros(2))
    moved = sim.ee_pos_base - start
    # most of the commanded 12 x 1.5 cm, along the axis asked for, little across it
    assert sign * moved[axis] > 0.5 * steps * lim
    assert np.linalg.norm(np.delete(moved, axis)) < 0.35 * abs(moved[axis])


def test_a_zero_command_holds_the_ee(sim):
    _open_floor_start(sim)
    start = sim.ee_pos.copy()
    for _ in range(10):
        sim.step(expand_action(EE_SUBSETS, np.zeros(6), sim=sim)[ACTION_SLICES["arm"]], None, np.zeros(2))
    assert np.linalg.norm(sim.ee_pos - start) < 0.02


def test_restrict_full_equals_expand_of_the_selected_entries_without_arm_ee():
    rng = np.random.default_rng(0)
    for subsets in (("arm", "grip", "base"), ("base", "stop"), ("arm", "grip", "base", "stop")):
        full = rng.uniform(-1.2, 1.2, ACTION_DIM)
        want = expand_action(subsets, select_subset(subsets, full), reverse_speed=0.5)
        assert np.array_equal(restrict_full(subsets, full, reverse_speed=0.5), want)
    full = rng.uniform(-1, 1, ACTION_DIM)
    out = restrict_full(EE_SUBSETS, full)
    assert np.array_equal(out[ACTION_SLICES["arm"]], full[ACTION_SLICES["arm"]]) and out[ACTION_SLICES["stop"]][0] == 0
    assert np.array_equal(subset_entries(EE_SUBSETS, full)[:3], np.zeros(3))
    with pytest.raises(ValueError, match="joint space"):
        select_subset(EE_SUBSETS, full)


def test_skill_def_slices_an_arm_ee_action():
    skill = SkillDef(name="place", obs_keys=(), action_subsets=EE_SUBSETS, termination=lambda m: False, timeout=300,
                     pddl_actions=("place",), train_max_steps=300, base_movement=True)
    assert skill.action_dim == 6
    assert skill.subset_slices() == {"arm_ee": slice(0, 3), "grip": slice(3, 4), "base": slice(4, 6)}


def _ee_place_env() -> RearrangeEnv:
    cfg = copy.deepcopy(load_skill_config("place"))
    cfg["action_subsets"] = list(EE_SUBSETS)
    return RearrangeEnv(make_skill_task(cfg), [episode_from_dict(PLACE_ON_COUNTER)])


def test_bad_ee_control_settings_fail_when_the_env_is_built():
    cfg = copy.deepcopy(load_skill_config("place"))
    cfg["action_subsets"] = list(EE_SUBSETS)
    with pytest.raises(ValueError, match="ctrl_lim > 0"):
        RearrangeEnv(make_skill_task(cfg), [episode_from_dict(PLACE_ON_COUNTER)],
                     sim_cfg={"arm": {"ee_control": {"ctrl_lim": 0.0}}})


def test_train_skill_rejects_bad_ee_control_before_any_work(capsys, tmp_path):
    from cli_errors import one_line_exit_2

    from skills.train_cli import main

    out = tmp_path / "run"
    err = one_line_exit_2(capsys, main, ["--skill", "place", "--out", str(out), "skill.action_subsets=[arm_ee,grip,base]",
                                         "sim.arm.ee_control.damping=-1"])
    assert "arm.ee_control" in err and "damping > 0" in err and not out.exists()


def test_an_arm_ee_place_env_steps_and_takes_oracle_starts():
    env = _ee_place_env()
    try:
        assert env.action_space.shape == (6,)
        env.reset(seed=0)
        before = env.sim.ee_pos_base
        up = np.zeros(6, dtype=np.float32)
        up[2], up[3] = 1.0, 1.0  # ee up, keep holding
        for _ in range(8):
            obs, _, terminated, truncated, _ = env.step(up)
        assert env.sim.ee_pos_base[2] > before[2] + 0.025 and obs["is_holding"][0] == 1.0
    finally:
        env.close()
    start = OracleStartConfig(prob=1.0, phases=("lower",), extra_steps=0, max_prefix_steps=0)
    wrapped = OracleStartEnv(_ee_place_env(), "place", start, oracle_config())
    try:
        obs, info = wrapped.reset(seed=0)
        assert info["oracle_start"] == 1.0 and wrapped.oracle.phase == "lower" and obs["is_holding"][0] == 1.0
    finally:
        wrapped.close()


@pytest.mark.slow
def test_an_arm_ee_skill_trains_and_drives_the_arm_from_its_checkpoint(tmp_path):
    """train-skill with `skill.action_subsets=[arm_ee,grip,base]` -> a checkpoint whose policy has 6 action
    dims, and the HAB agent's controller turns them into joint-space arm entries at the sim's state."""
    from eval.skill_library import PolicyController
    from skills.policy import SkillPolicy
    from skills.train_cli import main
    from trainer.checkpoint import latest_checkpoint

    out = tmp_path / "run"
    main(["--skill", "place", "--out", str(out), "skill.action_subsets=[arm_ee,grip,base]", "skill.oracle_start.prob=0",
          "trainer.num_envs=2", "trainer.num_steps=32", "trainer.total_steps=128", "trainer.progress_bar=false",
          "dataset.count=2", "policy=mlp", "sim.camera.head.width=32", "sim.camera.head.height=32"])
    policy = SkillPolicy.from_checkpoint(latest_checkpoint(out / "checkpoints"))
    assert policy.skill.action_subsets == EE_SUBSETS and policy.skill.action_dim == 6
    env = RearrangeEnv(make_skill_task(policy.config["skill"]), next((out / "episodes").iterdir()),
                       sim_cfg=policy.config["sim"])
    try:
        obs, _ = env.reset(seed=0)
        controller = PolicyController(policy)
        controller.start(env.sim, env.task.sensor_target)
        full = controller.act(env.sim, obs)
        assert full.shape == (ACTION_DIM,) and np.any(full[ACTION_SLICES["arm"]] != 0.0)
        policy.reset()  # deterministic: the same first action again
        want = expand_action(EE_SUBSETS, policy.act(obs), sim=env.sim)
        assert np.allclose(full[ACTION_SLICES["arm"]], want[ACTION_SLICES["arm"]])
    finally:
        env.close()
