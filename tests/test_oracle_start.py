"""The oracle-start curriculum (skills/oracle_start.py): episodes that begin part-way through the oracle's
solution, reproducibly, counted apart from ordinary starts, and only where the config asks for them."""

from __future__ import annotations

import numpy as np
import pytest
from cli_errors import one_line_exit_2
from test_oracle_pick_place import PLACE_ON_COUNTER

from rearrange.env import RearrangeEnv
from rearrange.episodes import episode_from_dict, save_episodes
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task
from skills.oracle_start import OracleStartConfig, OracleStartEnv
from skills.oracles.factory import oracle_config
from skills.train_cli import main as train_skill_main
from skills.train_cli import make_skill_env


def _place_env(prob: float, phases=("lower",), extra_steps: int = 0, max_prefix_steps: int = 0) -> OracleStartEnv:
    cfg = load_skill_config("place")
    env = RearrangeEnv(make_skill_task(cfg), [episode_from_dict(PLACE_ON_COUNTER)])
    start = OracleStartConfig(prob=prob, phases=tuple(phases), extra_steps=extra_steps,
                              max_prefix_steps=max_prefix_steps)
    return OracleStartEnv(env, "place", start, oracle_config())


def test_oracle_start_hands_over_at_the_phase_with_the_object_still_held():
    env = _place_env(prob=1.0, phases=("lower",))
    try:
        obs, info = env.reset(seed=0)
        start_xy = np.asarray(PLACE_ON_COUNTER["robot_start"]["xy"])
        assert info["oracle_start"] == 1.0 and env.oracle.phase == "lower"
        assert info["num_steps"] > 10  # the oracle's steps count against the episode's 300
        assert obs["is_holding"][0] == 1.0
        assert np.linalg.norm(np.asarray(env.unwrapped.sim.base_xy) - start_xy) > 0.2  # it drove up to the goal
        goal = np.asarray(PLACE_ON_COUNTER["targets"][0]["goal_pos"])
        assert np.linalg.norm(np.asarray(env.unwrapped.sim.object_pos("obj_1")) - goal) < 0.5
        # the policy plays on from there; the episode still ends at the task's step limit
        steps = info["num_steps"]
        zero = np.zeros(env.action_space.shape, dtype=np.float32)
        zero[7] = 1.0  # keep holding
        truncated = terminated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(zero)
            steps += 1
        assert truncated and steps == env.unwrapped.task.max_steps
        assert info["oracle_start"] == 1.0 and info["start_success"] == 0.0
    finally:
        env.close()


def test_the_oracles_first_phase_counts_as_an_entry_at_step_zero():
    """A hand-over in the phase the oracle starts in (place's approach, nav's drive) happens within
    extra_steps of the episode's start; before the fix such a start never came and always fell back."""
    at_start, spread = _place_env(1.0, ("approach",), 0), _place_env(1.0, ("approach",), 40)
    try:
        _, info = at_start.reset(seed=0)
        assert info["oracle_start"] == 1.0 and info["num_steps"] == 0
        steps = []
        for seed in range(6):
            _, info = spread.reset(seed=seed)
            assert info["oracle_start"] == 1.0
            steps.append(info["num_steps"])
        assert max(steps) <= 40 and len(set(steps)) > 1
    finally:
        at_start.close()
        spread.close()


def test_a_prefix_past_max_prefix_steps_falls_back_to_an_ordinary_start():
    """The hand-over in `lower` comes after more than 10 oracle steps (the first test), so a cap of 10
    gives up and the episode starts at its start; without the cap the same reset hands over."""
    capped, free = _place_env(1.0, ("lower",), max_prefix_steps=10), _place_env(1.0, ("lower",))
    try:
        _, info = capped.reset(seed=0)
        assert info["oracle_start"] == 0.0 and info["num_steps"] == 0
        _, info = free.reset(seed=0)
        assert info["oracle_start"] == 1.0 and info["num_steps"] > 10
    finally:
        capped.close()
        free.close()


def test_oracle_start_is_reproducible_and_prob_zero_starts_at_the_episode_start():
    first, second = _place_env(1.0, ("raise", "above", "lower"), 5), _place_env(1.0, ("raise", "above", "lower"), 5)
    try:
        a = [first.reset(seed=3)[1]["num_steps"], first.reset()[1]["num_steps"]]
        b = [second.reset(seed=3)[1]["num_steps"], second.reset()[1]["num_steps"]]
        assert a == b and min(a) > 0
    finally:
        first.close()
        second.close()
    plain = _place_env(prob=0.0)
    try:
        _, info = plain.reset(seed=0)
        assert info["oracle_start"] == 0.0 and info["num_steps"] == 0.0
    finally:
        plain.close()


def test_make_skill_env_wraps_only_when_asked(tmp_path):
    path = tmp_path / "eps.json.gz"
    save_episodes(path, [episode_from_dict(PLACE_ON_COUNTER)], kind="place", split="val", seed=0)
    cfg = load_skill_config("place")
    off = dict(cfg, oracle_start={"prob": 0.0, "phases": [], "extra_steps": 0})
    on = dict(cfg, oracle_start={"prob": 0.5, "phases": ["lower"], "extra_steps": 0})
    assert isinstance(make_skill_env(0, skill_cfg=off, sim_cfg=None, episodes_path=str(path)), RearrangeEnv)
    assert isinstance(make_skill_env(0, skill_cfg=on, sim_cfg=None, episodes_path=str(path)), OracleStartEnv)


@pytest.mark.parametrize("node, key", [({"prob": 1.5, "phases": ["lower"]}, "prob"),
                                       ({"prob": "often", "phases": ["lower"]}, "prob"),
                                       ({"prob": 0.5, "phases": ["lower"], "extra_steps": float("nan")}, "extra_steps"),
                                       ({"prob": 0.5, "phases": []}, "phases"),
                                       ({"prob": 0.5, "phases": ["lower"], "extra_steps": -1}, "extra_steps"),
                                       ({"prob": 0.5, "phases": ["lower"], "max_prefix_steps": -1},
                                        "max_prefix_steps"),
                                       ({"prob": 0.5, "phases": ["descend"]}, "phases")])
def test_bad_oracle_start_values_are_named(node, key):
    with pytest.raises(ValueError, match=f"skill.oracle_start.{key}"):
        OracleStartConfig.from_node(node, "place")


def test_train_skill_rejects_a_bad_oracle_start_before_any_work(capsys, tmp_path):
    line = one_line_exit_2(capsys, train_skill_main, ["--skill", "place", "--out", str(tmp_path / "run"),
                                                      "skill.oracle_start.prob=2"])
    assert "skill.oracle_start.prob" in line
    assert not (tmp_path / "run" / "episodes").exists()


def test_the_prefix_reads_no_sensors_but_the_hand_over_observation_is_current():
    """The oracle's prefix steps skip the sensors (`step_full(observe=False)`); the observation handed to the
    policy is the one its state gives, and a plain step still observes."""
    env = _place_env(1.0, ("raise", "above", "lower"), 5)
    try:
        calls = []
        base = env.unwrapped
        original = base._obs
        base._obs = lambda: calls.append(1) or original()
        obs, info = env.reset(seed=3)
        assert info["oracle_start"] == 1.0 and info["num_steps"] > 5
        assert len(calls) == 2  # the reset's and the hand-over's, none for the prefix's steps
        now = base.observation()
        assert all(np.array_equal(obs[k], now[k]) for k in now)
        assert base.step_full(np.zeros(11), observe=False)[0] is None
        assert set(env.step(np.zeros(env.action_space.shape, dtype=np.float32))[0]) == set(now)
    finally:
        env.close()
