"""Skill definitions: the seven skills, their action subsets with and without base movement, and the
termination predicates on constructed observation dicts."""

import numpy as np
import pytest

from rearrange.actions import ACTION_SLICES
from rearrange.tasks.skill_tasks import (
    SKILL_ENV_IDS,
    SKILL_NAMES,
    SKILL_TASKS,
    load_skill_config,
    make_skill_task,
)
from skills.definitions import SkillMonitor, get_skill, skill_for_pddl_action

AT_REST = np.zeros(3, dtype=np.float32)
AWAY = np.array([0.3, 0.0, 0.2], dtype=np.float32)


def obs(holding: float, rel_rest: np.ndarray) -> dict:
    return {"is_holding": np.array([holding], dtype=np.float32), "relative_resting_position": rel_rest}


def test_seven_skills_everywhere():
    assert SKILL_NAMES == ("pick", "place", "nav", "open_fridge", "close_fridge", "open_cab", "close_cab")
    assert set(SKILL_TASKS) == set(SKILL_NAMES) == set(SKILL_ENV_IDS)
    for name in SKILL_NAMES:
        assert get_skill(name).name == name


def test_unknown_skill_one_line_error_lists_the_seven():
    with pytest.raises(ValueError) as err:
        get_skill("jump")
    msg = str(err.value)
    assert "\n" not in msg and "'jump'" in msg
    for name in SKILL_NAMES:
        assert name in msg


@pytest.mark.parametrize("name,subsets,dim", [
    ("pick", ("arm", "grip", "base"), 10), ("place", ("arm", "grip", "base"), 10), ("nav", ("base", "stop"), 3),
    ("open_fridge", ("arm", "grip", "base", "stop"), 11), ("close_cab", ("arm", "grip", "base", "stop"), 11)])
def test_action_subsets_with_base(name, subsets, dim):
    skill = get_skill(name)
    assert skill.action_subsets == subsets and skill.action_dim == dim


@pytest.mark.parametrize("name", ["pick", "place", "open_fridge", "close_fridge", "open_cab", "close_cab"])
def test_no_base_variant_has_no_base_dims(name):
    skill = get_skill(name, base_movement=False)
    assert "base" not in skill.action_subsets
    assert skill.action_dim == get_skill(name).action_dim - 2
    cfg = load_skill_config(name)
    cfg["base_movement"] = False
    task = make_skill_task(cfg)
    assert "base" not in task.action_subsets and task.action_subsets == skill.action_subsets


def test_nav_without_base_is_an_error():
    with pytest.raises(ValueError, match="base movement"):
        get_skill("nav", base_movement=False)


def test_definition_matches_training_task():
    for name in SKILL_NAMES:
        skill, task = get_skill(name), make_skill_task(load_skill_config(name))
        assert skill.obs_keys == task.obs_keys and skill.action_subsets == task.action_subsets
        assert skill.train_max_steps == task.max_steps
    assert [get_skill(n).train_max_steps for n in SKILL_NAMES] == [300, 300, 400, 300, 200, 200, 200]
    # HAB timeouts: each skill's training episode length (habitat: nav 300, pick, place and open_fridge 200)
    assert get_skill("nav").timeout == 400 and get_skill("pick").timeout == get_skill("place").timeout == 300
    assert get_skill("open_fridge").timeout == 300


def test_learned_skills_run_with_the_current_hab_settings():
    """A checkpoint's skill keeps its observations and actions, but the HAB agent's timeout and
    termination come from the current config (the shipped nav was trained when nav's timeout was 300)."""
    import dataclasses

    from eval.skill_library import with_current_hab_settings

    trained = dataclasses.replace(get_skill("nav"), timeout=300, obs_keys=("head_depth",))
    served = with_current_hab_settings(trained)
    assert served.timeout == 400 and served.obs_keys == ("head_depth",)
    assert served.termination == get_skill("nav").termination


def test_pick_predicate():
    pick = get_skill("pick")
    assert pick.should_terminate(obs(1.0, AT_REST))
    assert not pick.should_terminate(obs(0.0, AT_REST))  # at rest but empty-handed
    assert not pick.should_terminate(obs(1.0, AWAY))  # holding but arm still out
    assert not pick.should_terminate(obs(1.0, np.array([0.16, 0.0, 0.0])))
    assert pick.should_terminate(obs(1.0, np.array([0.14, 0.0, 0.0])))


def test_place_predicate():
    place = get_skill("place")
    assert place.should_terminate(obs(0.0, AT_REST))
    assert not place.should_terminate(obs(1.0, AT_REST))
    assert not place.should_terminate(obs(0.0, AWAY))


def test_nav_predicate_is_its_stop_output():
    nav = get_skill("nav")
    assert nav.should_terminate({"stop": 0.3})
    assert not nav.should_terminate({"stop": -0.3})
    assert nav.stop_value(np.array([0.5, 0.1, 0.7])) == pytest.approx(0.7)


def test_art_predicate_needs_start_zone_or_stop():
    art = get_skill("open_fridge")
    assert not art.should_terminate({**obs(0.0, AT_REST), "left_start_zone": False, "stop": -1.0})
    assert art.should_terminate({**obs(0.0, AT_REST), "left_start_zone": True, "stop": -1.0})
    assert not art.should_terminate({**obs(1.0, AT_REST), "left_start_zone": True, "stop": -1.0})
    assert art.should_terminate({**obs(1.0, AWAY), "left_start_zone": False, "stop": 1.0})


def test_monitor_tracks_start_zone_and_timeout():
    art = get_skill("open_cab")
    mon = SkillMonitor(art)
    no_stop = np.zeros(art.action_dim)
    no_stop[art.subset_slices()["stop"]] = -1.0
    mon.reset(obs(0.0, AT_REST))
    assert mon.step(obs(0.0, AT_REST), no_stop) == (False, False)  # never left the start zone
    assert mon.step(obs(0.0, np.array([0.4, 0.0, 0.0])), no_stop) == (False, False)  # out, not at rest
    assert mon.step(obs(0.0, AT_REST), no_stop) == (True, False)  # came back to rest after leaving
    nav = SkillMonitor(get_skill("nav"))
    nav.reset({})
    results = [nav.step({}, np.array([1.0, 0.0, -1.0])) for _ in range(get_skill("nav").timeout)]
    assert results[-1] == (True, True) and all(r == (False, False) for r in results[:-1])


def test_pddl_action_lookup():
    assert skill_for_pddl_action("nav_to_receptacle").name == "nav"
    assert skill_for_pddl_action("open_cab").name == "open_cab"
    with pytest.raises(ValueError, match="valid choices"):
        skill_for_pddl_action("teleport")


def test_stop_slice_position():
    # the stop entry is the last dim of every skill that has it
    for name in ("nav", "open_fridge"):
        skill = get_skill(name)
        assert skill.subset_slices()["stop"].stop == skill.action_dim
    assert ACTION_SLICES["stop"].start == 10


def test_skill_env_ids_registered_with_gymnasium():
    import gymnasium

    from rearrange.tasks.skill_tasks import register_skill_envs

    register_skill_envs()
    for env_id in SKILL_ENV_IDS.values():
        assert env_id in gymnasium.registry
    env = gymnasium.make("rearrange/Pick-v0", episode_count=1, config_overrides=["skill.base_movement=false"],
                         sim_cfg={"camera": {"head": {"width": 32, "height": 32}}})
    assert env.action_space.shape == (8,)
    obs, info = env.reset(seed=0)
    assert set(obs) == set(get_skill("pick").obs_keys) and obs["head_depth"].shape == (32, 32, 1)
    env.close()
