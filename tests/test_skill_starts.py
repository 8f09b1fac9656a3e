"""Skill starts saved from inside a HAB task replay that state as the skill's own episodes."""

from __future__ import annotations

import numpy as np
import pytest
from agent_doubles import FirstCallReplaced, Idle, hab_env

from eval.agent import HabAgent
from eval.agent_config import AgentSettings
from eval.skill_starts import MOVED, StartRecorder, main, start_id_prefix
from rearrange.env import RearrangeEnv, make_registered_env
from rearrange.generate import generate_episodes
from rearrange.tasks.hab import HabTask, load_hab_config


@pytest.fixture(scope="module")
def recorded():
    """Tidy House val 0 with the oracles, the first pick stalled: starts of pick, place and nav calls (and
    whether the robot held an object at each nav call's start)."""
    env = hab_env("tidy_house", 1400)
    picks = StartRecorder("pick", "train", "p", max_object_shift=0.1)
    places = StartRecorder("place", "train", "q", max_object_shift=0.1)
    navs = StartRecorder("nav", "train", "n", max_object_shift=0.1)
    held_at_nav: list[str | None] = []

    def record(e, call, retry):
        picks(e, call, retry), places(e, call, retry), navs(e, call, retry)
        if call.skill == "nav":
            held_at_nav.append(e.sim.grasped)

    agent = HabAgent("oracle", FirstCallReplaced("pick", lambda oracle: Idle(oracle.skill)),
                     AgentSettings(max_replans=2))
    agent.on_skill_start = record
    try:
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    return out, picks, places, navs, held_at_nav


def test_every_pick_and_place_call_start_is_recorded_with_its_retry_flag(recorded):
    out, picks, places, _, _ = recorded
    pick_calls = [r for r in out.skill_runs if r.skill == "pick"]
    assert len(picks.episodes) == len(pick_calls) >= 2
    assert [e.info["retry"] for e in picks.episodes[:2]] == [False, True]  # the stalled call, then its retry
    assert len(places.episodes) == sum(r.skill == "place" for r in out.skill_runs) >= 1
    assert all(e.kind == "pick" and e.split == "train" for e in picks.episodes)
    assert [e.episode_id for e in picks.episodes[:2]] == ["p_0", "p_1"]


def test_start_ids_name_the_seed_so_files_of_two_seeds_mix():
    ids = [start_id_prefix("pick", "tidy_house", "train", seed) for seed in (10, 11)]
    assert ids == ["pick_from_tidy_house_train_seed10", "pick_from_tidy_house_train_seed11"]


def test_a_pick_start_replays_the_recorded_state(recorded):
    _, picks, _, _, _ = recorded
    episode = picks.episodes[1]  # the retry: the robot stands where the stalled call left it
    env = make_registered_env("rearrange/Pick-v0", episodes=[episode])
    try:
        env.reset(seed=0, options={"episode_index": 0})
        sim = env.sim
        for o in episode.objects:
            np.testing.assert_allclose(sim.object_pos(o.name), o.pos, atol=1e-6)
        np.testing.assert_allclose(sim.base_xy, episode.robot_start["xy"], atol=1e-6)
        assert sim.base_yaw == pytest.approx(episode.robot_start["yaw"], abs=1e-6)
        for name, q in episode.art_states.items():
            assert sim.art_q(name) == pytest.approx(q, abs=1e-6)
        assert sim.grasped is None and env.task.target == episode.targets[0].object
    finally:
        env.close()


def test_a_place_start_holds_its_target(recorded):
    _, _, places, _, _ = recorded
    episode = places.episodes[0]
    assert episode.info["start_holding"] == episode.targets[0].object
    env = make_registered_env("rearrange/Place-v0", episodes=[episode])
    try:
        env.reset(seed=0, options={"episode_index": 0})
        assert env.sim.grasped == episode.targets[0].object
    finally:
        env.close()


def test_every_nav_call_start_is_a_nav_episode_to_the_calls_goal_carrying_what_the_robot_held(recorded):
    out, _, _, navs, held_at_nav = recorded
    assert len(navs.episodes) == sum(r.skill == "nav" for r in out.skill_runs) >= 3
    assert all(e.kind == "nav" and "nav_goal" in e.info for e in navs.episodes)
    assert [e.info.get("start_holding") for e in navs.episodes] == held_at_nav
    assert None in held_at_nav and any(h is not None for h in held_at_nav)  # to a pick, and to a place
    carrying = next(e for e in navs.episodes if "start_holding" in e.info)
    env = make_registered_env("rearrange/Nav-v0", episodes=[carrying])
    try:
        env.reset(seed=0, options={"episode_index": 0})
        assert env.sim.grasped == carrying.info["start_holding"]
        np.testing.assert_allclose(env.sim.base_xy, carrying.robot_start["xy"], atol=1e-6)
        np.testing.assert_allclose(env.task.goal_xy, carrying.info["nav_goal"][:2])
    finally:
        env.close()


def test_a_moved_pick_target_loses_its_receptacle_and_one_on_the_floor_is_left_out():
    from planner.grounding import SkillCall, SkillTarget

    cfg = load_hab_config()
    hab = generate_episodes("tidy_house", "val", 1, 0)[0]
    env = RearrangeEnv(HabTask("tidy_house", cfg, obs_keys=()), [hab], episode_order="cycle")
    try:
        env.reset(seed=0)
        target = hab.targets[0].object
        call = SkillCall("pick", (target,), SkillTarget(entity=target, kind="object", object=target))
        kept, skipped = StartRecorder("pick", "train", "p", 0.1), StartRecorder("pick", "train", "p", 0.1, True)
        kept(env, call, False)
        assert kept.episodes[0].object_spec(target).receptacle == hab.object_spec(target).receptacle
        sim = env.sim
        moved = {n: (sim.object_pos(n) + (np.array([0.3, 0.0, 0.0]) if n == target else 0.0), sim.object_quat(n))
                 for n in sim.object_names}
        sim.reset_state(moved, {n: sim.art_q(n) for n in sim.art_names}, sim.base_xy, sim.base_yaw)
        kept(env, call, True)
        skipped(env, call, True)
        assert kept.episodes[1].object_spec(target).receptacle == MOVED and kept.moved == 1
        assert not skipped.episodes and skipped.skipped["moved"] == 1
        on_floor = dict(moved)
        on_floor[target] = (np.array([*sim.object_pos(target)[:2], 0.05]), sim.object_quat(target))
        sim.reset_state(on_floor, {n: sim.art_q(n) for n in sim.art_names}, sim.base_xy, sim.base_yaw)
        low = StartRecorder("pick", "train", "p", 0.1, min_height=0.2)
        low(env, call, True)
        assert not low.episodes and low.skipped["low"] == 1
    finally:
        env.close()


@pytest.mark.parametrize("args, message", [
    (["--skill", "open_fridge"], "unknown skill 'open_fridge'"),
    (["--episodes", "0"], "--episodes must be >= 1"),
    (["--out", "starts.txt"], "--out must end with .json or .json.gz"),
    (["agent.reset_arm=always"], "agent.reset_arm"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    argv = ["--scenario", "tidy_house", "--out", str(tmp_path / "s.json.gz"), *args]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "s.json.gz").exists()
