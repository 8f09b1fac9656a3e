"""The agent's call guards (eval/call_guards.py: release settle, pick push guard, place shut guard), its pick
base scale and smoothing, the arm rested during a nav, and eval-hab's floor drops (eval/floor_watch.py)."""

from __future__ import annotations

import numpy as np
import pytest
from agent_doubles import FirstCallReplaced, Idle, hab_env

from eval.agent import HabAgent
from eval.agent_config import AgentSettings, check_agent_config


class _SwingAndRelease(Idle):
    """A place that swings the arm (two joints at full speed) while holding, and from its 6th step on
    commands a release while still swinging. Records the held object's position and the grasp before
    every step."""

    def __init__(self, skill, log):
        super().__init__(skill)
        self.log = log

    def act(self, sim, obs):
        held = sim.grasped
        self.log.append((held, None if held is None else np.asarray(sim.object_pos(held), dtype=np.float64).copy()))
        action = np.zeros(11)
        action[0:2] = 1.0  # shoulder pan and lift at full speed
        action[7] = -1.0 if len(self.log) > 5 else 1.0
        return action


def _release_speed(settle_steps: int) -> tuple[int, int, float]:
    """(settle steps taken, steps from the first release command to the release, the object's speed over
    the step before it was let go, m/s)."""
    env = hab_env("tidy_house", 1400)
    log: list = []
    try:
        agent = HabAgent("oracle", FirstCallReplaced("place", lambda oracle: _SwingAndRelease(oracle.skill, log)),
                         AgentSettings(max_replans=0, release_settle_steps=settle_steps,
                                       release_settle_speed=0.1))
        out = agent.run_episode(env, 0)
        dt = env.sim.step_seconds
    finally:
        env.close()
    place = next(r for r in out.skill_runs if r.skill == "place")
    # the first act after the release step (the call may end on that step: released, arm near rest)
    released = next((i for i, (held, _) in enumerate(log) if held is None), len(log))
    speed = float(np.linalg.norm(log[released - 1][1] - log[released - 2][1])) / dt
    return place.settles, released - 6, speed


@pytest.mark.slow
def test_a_release_while_the_object_swings_waits_until_it_is_still():
    settles, delay, speed = _release_speed(0)
    assert settles == 0 and delay == 0 and speed > 0.1  # let go at once, mid-swing
    settles, delay, speed = _release_speed(8)
    assert 1 <= settles <= 8 and delay == settles  # held on, arm and base still, then let go
    assert speed <= 0.1 or settles == 8


def test_guard_settings_are_validated():
    from configs.compose import ConfigError

    cfg = {"max_replans": 0, "settle_steps": 0, "deterministic": True}
    with pytest.raises(ConfigError, match="agent.release_settle_steps must be an integer >= 0"):
        check_agent_config({**cfg, "release_settle_steps": -1})
    with pytest.raises(ConfigError, match=r"agent.release_settle_speed must be a speed in m/s in \(0, 10\]"):
        check_agent_config({**cfg, "release_settle_speed": 0})
    with pytest.raises(ConfigError, match=r"agent.pick_push_guard must be a number of metres in \[0, 2\] \(0: off\)"):
        check_agent_config({**cfg, "pick_push_guard": 5})
    with pytest.raises(ConfigError, match=r"agent.place_shut_guard must be a share of the joint's range in \[0, 1\]"):
        check_agent_config({**cfg, "place_shut_guard": 1.5})
    check_agent_config({**cfg, "release_settle_steps": 8, "release_settle_speed": 0.05, "pick_push_guard": 0.05,
                        "place_shut_guard": 0.1})
    # habitat's fixed plan lets go as the policy commands
    assert not HabAgent("oracle", lambda name: None,
                        AgentSettings(max_replans=0, mode="fixed", release_settle_steps=8)).release_gate.active


def test_the_shipped_config_puts_a_swinging_release_off_in_replan_mode_only():
    from configs.compose import compose, to_plain
    from eval.agent_config import make_agent

    plain = to_plain(compose("eval_hab", []))["agent"]
    gate = make_agent("oracle", plain).release_gate
    assert (gate.settle_steps, gate.settle_speed) == (8, 0.1)  # stop 89: Tidy House 97 against 89 of 200
    assert not make_agent("oracle", {**plain, "mode": "fixed"}).release_gate.active
    off = to_plain(compose("eval_hab", ["agent.release_settle_steps=0"]))["agent"]
    assert make_agent("oracle", off).release_gate.settle_steps == 0


class _BackAwayAndRelease(Idle):
    """A place that reverses the base for 15 steps, away from the furniture, then lets go over bare floor."""

    def start(self, sim, target, retry=False):
        self.steps = 0

    def act(self, sim, obs):
        self.steps += 1
        action = np.zeros(11)
        action[7] = 1.0 if self.steps <= 15 else -1.0
        action[8] = -1.0 if self.steps <= 15 else 0.0
        return action


@pytest.mark.parametrize("guard", [0.0, 0.25])
def test_a_target_dropped_on_the_floor_is_put_down_to_the_call_that_let_go(guard):
    """eval-hab's floor_drops (eval/floor_watch.py): the object falls while the next call (a pick) already runs,
    and the fall is put down to the place that let go; the release guard keeps it in the gripper."""
    from eval.hab_eval import floor_drop_summary

    env = hab_env("tidy_house", 1400)
    try:
        agent = HabAgent("oracle", FirstCallReplaced("place", lambda oracle: _BackAwayAndRelease(oracle.skill)),
                         AgentSettings(max_replans=1, release_guard=guard))
        out = agent.run_episode(env, 0)
        z = float(env.sim.object_pos("obj_0")[2])
    finally:
        env.close()
    if guard:
        assert out.floor_drops == [] and z > 0.2
        return
    assert z < 0.12 and out.floor_drops == ["obj_0:place(obj_0, goal_obj_0)"]
    assert out.to_dict()["floor_drops"] == out.floor_drops
    summary = floor_drop_summary([out, out])
    assert summary == {"objects": 2, "episodes": 2, "failed_episodes": 2, "by_skill": {"place": 2}}


class _Nudge(Idle):
    """A pick that misses its grasp and shoves the target 1 cm further along the furniture each step."""

    def __init__(self, skill, obj):
        super().__init__(skill)
        self.obj = obj

    def act(self, sim, obs):
        pos = np.asarray(sim.object_pos(self.obj), dtype=np.float64)
        sim.set_object_pose(self.obj, pos + np.array([0.01, 0.0, 0.0]), sim.object_quat(self.obj))
        return super().act(sim, obs)


def _first_call(scenario: str, max_steps: int, skill: str, replace, settings: AgentSettings):
    """The record of the first `skill` call of the scenario's first val episode, that call run by
    `replace(oracle controller)` and the rest by the oracles."""
    env = hab_env(scenario, max_steps)
    try:
        out = HabAgent("oracle", FirstCallReplaced(skill, replace), settings).run_episode(env, 0)
    finally:
        env.close()
    return next(r for r in out.skill_runs if r.skill == skill)


@pytest.mark.parametrize("guard", [0.0, 0.05])
def test_a_pick_pushing_its_target_along_ends_when_the_push_guard_says(guard):
    pick = _first_call("tidy_house", 700, "pick", lambda oracle: _Nudge(oracle.skill, "obj_0"),
                       AgentSettings(max_replans=0, pick_push_guard=guard))
    if guard:
        assert pick.outcome == "pushed" and 5 <= pick.steps <= 7 and not pick.effects_hold
    else:
        assert pick.outcome != "pushed" and pick.steps > 7
    # habitat's fixed plan runs the policy as it is
    assert not HabAgent("oracle", lambda name: None,
                        AgentSettings(max_replans=0, mode="fixed", pick_push_guard=0.05)).push_guard.active


class _ShutTheDoor(Idle):
    """A place that holds on while its goal's container (the fridge door) swings 0.05 rad towards shut each
    step."""

    def act(self, sim, obs):
        sim.set_art_q("fridge", sim.art_q("fridge") - 0.05)
        action = np.zeros(11)
        action[7] = 1.0  # keep the object
        return action


@pytest.mark.parametrize("share", [0.0, 0.1])
def test_a_place_pushing_its_goals_container_shut_ends_when_the_shut_guard_says(share):
    """Prepare Groceries' first val episode places obj_0 in the fridge: with the guard, the call ends
    ("shut") once the door has closed by 10% of its 2.36 rad range (0.236 rad: the 5th step), still holding."""
    place = _first_call("prepare_groceries", 1400, "place", lambda oracle: _ShutTheDoor(oracle.skill),
                        AgentSettings(max_replans=0, place_shut_guard=share))
    if share:
        assert place.outcome == "shut" and place.steps == 5 and not place.effects_hold
    else:
        assert place.outcome != "shut" and place.steps > 5
    assert not HabAgent("oracle", lambda name: None,
                        AgentSettings(max_replans=0, mode="fixed", place_shut_guard=0.1)).shut_guard.active


def test_the_shut_guard_watches_only_the_containers_it_is_given():
    from eval.call_guards import ShutGuard

    env = hab_env("set_table", 100)
    try:
        env.reset(seed=0)
        sim = env.sim
        sim.set_art_q("drawer_0", 0.45)
        sim.set_art_q("drawer_1", 0.45)
        guard = ShutGuard(0.1)  # 4.5 cm of a drawer's 0.45 m
        guard.start(sim, ["drawer_0"])
        sim.set_art_q("drawer_1", 0.0)  # not watched
        sim.set_art_q("drawer_0", 0.42)
        assert not guard.shut(sim)
        sim.set_art_q("drawer_0", 0.40)
        assert guard.shut(sim)
        guard.start(sim, [])  # a goal on an open surface
        assert not guard.shut(sim)
    finally:
        env.close()


class _Reverse(Idle):
    """A pick that reverses the base at full command (with `flip`, forward on every other step) and records
    where the base stood before every step."""

    def __init__(self, skill, log, flip=False):
        super().__init__(skill)
        self.log = log
        self.flip = flip

    def act(self, sim, obs):
        self.log.append(np.asarray(sim.base_xy, dtype=np.float64).copy())
        action = np.zeros(11)
        action[7] = -1.0
        action[8] = 1.0 if self.flip and len(self.log) % 2 == 0 else -1.0  # base linear: full reverse (or forward)
        return action


def _pick_reverse_per_step(scale: float, mode: str = "replan") -> float:
    """Mean distance (m) the base covers per step over a pick call's first 6 steps."""
    env = hab_env("tidy_house", 700)
    log: list = []
    try:
        agent = HabAgent("oracle", FirstCallReplaced("pick", lambda oracle: _Reverse(oracle.skill, log)),
                         AgentSettings(max_replans=0, mode=mode, pick_base_scale=scale))
        agent.run_episode(env, 0)
    finally:
        env.close()
    return float(np.linalg.norm(log[6] - log[0])) / 6


def test_pick_base_scale_slows_a_picks_base_in_replan_mode_only():
    full, quarter = _pick_reverse_per_step(1.0), _pick_reverse_per_step(0.25)
    # a quarter command moves the kinematic base a quarter of its full step (10 m/s x 1/120 s); the full command
    # goes further, though furniture behind this start stalls some of its steps
    assert quarter == pytest.approx(0.25 * 10.0 / 120.0, rel=0.05) and full > 1.5 * quarter
    # habitat's fixed plan runs the policy as it is
    assert _pick_reverse_per_step(0.25, mode="fixed") == pytest.approx(full, rel=0.05)


def _pick_base_path(smoothing: float, flip: bool) -> tuple[float, float]:
    """(mean path length per step, mean displacement per step), m, over a pick call's first 8 steps."""
    env = hab_env("tidy_house", 700)
    log: list = []
    try:
        agent = HabAgent("oracle", FirstCallReplaced("pick", lambda oracle: _Reverse(oracle.skill, log, flip)),
                         AgentSettings(max_replans=0, pick_base_smoothing=smoothing))
        agent.run_episode(env, 0)
    finally:
        env.close()
    steps = np.diff(np.asarray(log[:9]), axis=0)
    return float(np.mean(np.linalg.norm(steps, axis=1))), float(np.linalg.norm(log[8] - log[0])) / 8


def test_pick_base_smoothing_damps_a_flipping_command_and_keeps_a_steady_one():
    shaking, _ = _pick_base_path(0.0, flip=True)
    damped, _ = _pick_base_path(0.6, flip=True)
    assert shaking > 0.05 and damped < 0.5 * shaking  # full steps back and forth, then small ones
    _, steady = _pick_base_path(0.0, flip=False)
    _, steady_smoothed = _pick_base_path(0.6, flip=False)
    assert steady_smoothed == pytest.approx(steady, rel=0.05)  # a steady reverse goes as far


def test_pick_base_smoothing_is_validated():
    from configs.compose import ConfigError

    cfg = {"max_replans": 0, "settle_steps": 0, "deterministic": True}
    for bad in (-0.1, 1.0, True):
        with pytest.raises(ConfigError, match=r"agent.pick_base_smoothing must be a weight in \[0, 1\) \(0: off\)"):
            check_agent_config({**cfg, "pick_base_smoothing": bad})
    check_agent_config({**cfg, "pick_base_smoothing": 0.5})


def test_pick_base_scale_is_validated():
    from configs.compose import ConfigError

    cfg = {"max_replans": 0, "settle_steps": 0, "deterministic": True}
    for bad in (0, 1.5, True):
        with pytest.raises(ConfigError, match=r"agent.pick_base_scale must be a number in \(0, 1\] \(1: off\)"):
            check_agent_config({**cfg, "pick_base_scale": bad})
    check_agent_config({**cfg, "pick_base_scale": 0.5})


class _StandWithArmOut(Idle):
    """A nav that finds the arm 0.3 rad off rest in every joint, stands still and calls stop on its 40th step."""

    def start(self, sim, target, retry=False):
        sim.set_arm_qpos(np.asarray(sim.REST_ARM_QPOS) + 0.3)
        self.steps = 0

    def act(self, sim, obs):
        self.steps += 1
        action = np.zeros(11)
        action[10] = 1.0 if self.steps >= 40 else -1.0  # stop
        return action


@pytest.mark.parametrize("rest", [False, True])
def test_a_nav_rests_the_arm_while_it_drives_when_asked(rest):
    """`agent.rest_arm_during_nav`: the arm comes back to rest during the nav's own steps (0.3 rad at 0.0125 rad a
    step: 24 of its 40), so the call after it (the nav again: the first one stopped short) starts at rest with no
    reset_arm at all."""
    from rearrange.arm_rest import RESET_ARM_TOLERANCE, arm_rest_error

    env = hab_env("tidy_house", 200)
    errors = []
    try:
        agent = HabAgent("oracle", FirstCallReplaced("nav", lambda oracle: _StandWithArmOut(oracle.skill)),
                         AgentSettings(max_replans=1, reset_arm="never", rest_arm_during_nav=rest))
        agent.on_skill_start = lambda env, call, retry: errors.append((call.skill, arm_rest_error(env.sim)))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    assert [r.skill for r in out.skill_runs][:2] == ["nav", "nav"] and errors[1][0] == "nav"
    if rest:
        assert errors[1][1] < RESET_ARM_TOLERANCE
    else:
        assert errors[1][1] > 0.25
