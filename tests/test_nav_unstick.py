"""eval-hab's nav unstick (`agent.nav_unstick_steps`): a nav that pins its base against furniture is driven
out of the wedge inside the same call, its steps counted towards nav's timeout, then goes on as a retry; the
skills watched are `agent.unstick_skills` (nav by default; pick and place on request); with
`agent.nav_unstick_turn` the freed nav first turns in place to face its path compass, and with
`agent.nav_face_path` a nav whose path lies behind it turns to face it before its first step."""

from __future__ import annotations

import numpy as np
import pytest
from agent_doubles import FirstCallReplaced, Idle, hab_env

from eval.agent import HabAgent, WedgeWatch, path_bearing
from eval.agent_config import AgentSettings, check_agent_config, make_agent
from eval.agent_motions import TURN_TOLERANCE, turn_toward
from rearrange.sensors import SensorTarget

NAV_TIMEOUT = 400  # configs/skill/nav.yaml hab.timeout


class _Reverser(Idle):
    """A nav that commands full reverse on every step and never stops (the shipped nav's habit, blind to
    what is behind it); records each start's retry flag and base position."""

    def __init__(self, skill):
        super().__init__(skill)
        self.starts: list[tuple[bool, np.ndarray]] = []
        self.wedged_at: list[np.ndarray] = []  # where the base stood at its last own step before each restart
        self.bearings: list[float] = []  # the path compass's bearing at each start
        self.yaws: list[float] = []  # the base's yaw at the wedge, then at the restart, for each unstick

    def start(self, sim, target, retry=False):
        if not self.starts:
            self.heading = np.array([np.cos(sim.base_yaw), np.sin(sim.base_yaw)])
        else:
            self.wedged_at.append(self.last_xy)
            self.yaws.append(self.last_yaw)
        self.starts.append((retry, np.asarray(sim.base_xy, dtype=np.float64).copy()))
        self.bearings.append(path_bearing(sim, target))
        if len(self.starts) > 1:
            self.yaws.append(float(sim.base_yaw))

    def act(self, sim, obs):
        self.last_xy = np.asarray(sim.base_xy, dtype=np.float64).copy()
        self.last_yaw = float(sim.base_yaw)
        action = np.zeros(11)
        action[8] = -1.0  # base linear: full reverse
        return action


def _run_replaced(skill: str, double: type, unstick_steps: int, max_steps: int,
                  unstick_skills: tuple[str, ...] = ("nav",), turn: bool = False) -> tuple[object, _Reverser]:
    """A Tidy House episode whose first `skill` call is played by `double`; (that call's record, the double)."""
    env = hab_env("tidy_house", max_steps)
    doubles: list[_Reverser] = []

    def replace(oracle):
        doubles.append(double(oracle.skill))
        return doubles[-1]

    try:
        agent = HabAgent("oracle", FirstCallReplaced(skill, replace),
                         AgentSettings(max_replans=0, nav_unstick_steps=unstick_steps,
                                       unstick_skills=unstick_skills, nav_unstick_turn=turn))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    return next(r for r in out.skill_runs if r.skill == skill), doubles[0]


def _run_first_nav(unstick_steps: int, turn: bool = False) -> tuple[object, _Reverser]:
    return _run_replaced("nav", _Reverser, unstick_steps, 600, turn=turn)


@pytest.mark.parametrize("unstick_steps", [0, 10])
def test_a_nav_wedged_in_reverse_is_driven_out_within_its_timeout(unstick_steps):
    nav, reverser = _run_first_nav(unstick_steps)
    heading = reverser.heading
    assert nav.label == "nav(obj_0)" and nav.outcome == "timeout" and not nav.effects_hold
    assert nav.steps == NAV_TIMEOUT  # the unstick drives count towards the call's 400 steps
    if unstick_steps == 0:
        assert nav.unsticks == 0 and len(reverser.starts) == 1
        return
    assert nav.unsticks >= 1
    # every drive out is followed by the nav going on as on a retry, but one that used the call's last steps
    restarts = len(reverser.starts) - 1
    assert restarts in (nav.unsticks, nav.unsticks - 1)
    assert [retry for retry, _ in reverser.starts] == [False] + [True] * restarts
    # the first drive went forward, against the reversing nav, sliding along what blocked it
    wedged, after = reverser.wedged_at[0], reverser.starts[1][1]
    assert float(np.linalg.norm(after - wedged)) > 0.15 and float(np.dot(after - wedged, heading)) > 0.05


@pytest.mark.parametrize("turn", [False, True])
def test_a_freed_nav_turns_to_face_its_path_only_with_nav_unstick_turn(turn):
    nav, charger = _run_replaced("nav", _Pusher, 10, 600, turn=turn)  # drives straight ahead, off its path
    assert nav.unsticks >= 1 and nav.steps == NAV_TIMEOUT  # the turns count towards the 400 steps too
    wedged_yaw, restart_yaw = charger.yaws[0], charger.yaws[1]
    assert abs(charger.bearings[0]) > 2 * TURN_TOLERANCE  # the path leads off to the side at the start
    if turn:
        assert abs(charger.bearings[1]) < TURN_TOLERANCE
    else:  # the straight drive out keeps the heading
        assert restart_yaw == pytest.approx(wedged_yaw)
        assert abs(charger.bearings[1]) > TURN_TOLERANCE


class _FirstLook(Idle):
    """A nav that records the path compass's bearing when it first acts, then stands still."""

    def __init__(self, skill):
        super().__init__(skill)
        self.first_bearing: float | None = None

    def start(self, sim, target, retry=False):
        self.target = target

    def act(self, sim, obs):
        if self.first_bearing is None:
            self.first_bearing = path_bearing(sim, self.target)
        return np.zeros(11)


@pytest.mark.parametrize("face", [False, True])
def test_a_nav_whose_path_lies_behind_turns_to_face_it_first_only_with_nav_face_path(face):
    env = hab_env("tidy_house", 500)
    doubles: list[_FirstLook] = []

    def replace(oracle):
        doubles.append(_FirstLook(oracle.skill))
        return doubles[-1]

    turned: list[bool] = []

    def turn_away(env, call, retry):  # the path straight behind the base when the first nav starts
        if call.skill == "nav" and not turned:
            turned.append(True)
            sim = env.sim
            target = SensorTarget(nav_goal=np.asarray(call.target.nav_goal, dtype=np.float64))
            sim.set_base_pose(sim.base_xy, sim.base_yaw + path_bearing(sim, target) + np.pi)

    try:
        agent = HabAgent("oracle", FirstCallReplaced("nav", replace),
                         AgentSettings(max_replans=0, nav_face_path=face))
        agent.on_skill_start = turn_away
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    nav = next(r for r in out.skill_runs if r.skill == "nav")
    assert nav.outcome == "timeout" and nav.steps == NAV_TIMEOUT  # the turn's steps count towards the 400
    if face:
        assert abs(doubles[0].first_bearing) < TURN_TOLERANCE
    else:
        assert abs(doubles[0].first_bearing) > np.pi - 0.05
    fixed = HabAgent("oracle", FirstCallReplaced("nav", replace), AgentSettings(mode="fixed", nav_face_path=True))
    assert not fixed.nav_face_path  # habitat's fixed plan runs nav as it is


class _TurningSim:
    """Just what `turn_toward` reads: the base's yaw turned by each step's angular command."""

    def __init__(self, yaw: float, stall_after: int = 1000):
        self.cfg = {"base": {"max_ang_per_step": 0.1}}
        self.base_yaw = yaw
        self.steps = 0
        self.stall_after = stall_after  # steps after which furniture stops the turn

    def step(self, action: np.ndarray) -> bool:
        assert action[8] == 0.0 and not np.any(action[:8])  # in place, arm and grip still
        if self.steps < self.stall_after:
            self.base_yaw += 0.1 * float(np.clip(action[9], -1.0, 1.0))
        self.steps += 1
        return False


@pytest.mark.parametrize("goal", [2.05, -1.05, 0.1])
def test_turn_toward_turns_the_short_way_and_stops_within_tolerance(goal):
    sim = _TurningSim(0.0)
    assert not turn_toward(sim, sim.step, lambda: goal - sim.base_yaw, step_limit=100)
    assert abs(goal - sim.base_yaw) < TURN_TOLERANCE
    assert sim.steps == (0 if abs(goal) < TURN_TOLERANCE else int((abs(goal) - TURN_TOLERANCE) / 0.1) + 1)
    limited = _TurningSim(0.0)
    turn_toward(limited, limited.step, lambda: 2.0 - limited.base_yaw, step_limit=5)
    assert limited.steps == 5  # the call's steps left bound the turn


def test_turn_toward_ends_when_the_turn_stalls_or_after_a_half_turn():
    blocked = _TurningSim(0.0, stall_after=3)
    turn_toward(blocked, blocked.step, lambda: 2.0 - blocked.base_yaw, step_limit=300)
    assert blocked.steps == 4  # the first step that did not turn the base ends it
    lost = _TurningSim(0.0)
    turn_toward(lost, lost.step, lambda: 2.0, step_limit=300)  # a bearing the turn never closes
    assert lost.steps == int(np.ceil(np.pi / 0.1)) + 2


class _Pusher(_Reverser):
    """A skill that drives its base forward on every step (a pick into the receptacle nav stopped facing)."""

    def act(self, sim, obs):
        action = super().act(sim, obs)
        action[8] = 1.0
        return action


@pytest.mark.parametrize("skills", [("nav",), ("nav", "pick")])
def test_a_pick_pushing_into_furniture_is_driven_out_only_when_watched(skills):
    pick, pusher = _run_replaced("pick", _Pusher, 10, 700, unstick_skills=skills)
    assert pick.outcome == "timeout" and not pick.effects_hold
    if "pick" not in skills:
        assert pick.unsticks == 0 and len(pusher.starts) == 1
        return
    assert pick.unsticks >= 1 and [retry for retry, _ in pusher.starts][:2] == [False, True]


class _Sim:
    def __init__(self):
        self.base_xy = np.zeros(2)
        self.base_collided = False


def test_wedge_watch_fires_only_blocked_and_still_and_drives_against_the_command():
    sim, watch = _Sim(), WedgeWatch(5)
    forward = np.zeros(11)
    forward[8] = 0.8
    for _ in range(5):
        assert watch.step(sim, forward) == 0.0  # not yet 5 steps of history
    assert watch.step(sim, forward) == 0.0  # still, but not blocked
    sim.base_collided = True
    assert watch.step(sim, forward) == -1.0  # pinned while driving forward: back out
    watch.clear()
    backward = -forward
    for i in range(6):
        sim.base_xy = np.array([0.01 * i, 0.0])  # 5 cm over the window: moving, not wedged
        assert watch.step(sim, backward) == 0.0
    for _ in range(6):
        result = watch.step(sim, backward)
    assert result == 1.0  # pinned while reversing: drive forward


def test_nav_unstick_settings_are_validated_and_reach_the_agent():
    from configs.compose import ConfigError, compose, to_plain

    cfg = {"max_replans": 0, "settle_steps": 0, "deterministic": True}
    with pytest.raises(ConfigError, match="agent.nav_unstick_steps must be an integer >= 0"):
        check_agent_config({**cfg, "nav_unstick_steps": -1})
    with pytest.raises(ConfigError, match=r"agent.nav_unstick_distance must be a number of metres in \(0, 2\]"):
        check_agent_config({**cfg, "nav_unstick_distance": 0})
    plain = to_plain(compose("eval_hab", ["agent.nav_unstick_steps=15", "agent.nav_unstick_distance=0.3"]))
    agent = make_agent("oracle", plain["agent"])
    assert (agent.nav_unstick_steps, agent.settings.nav_unstick_distance) == (15, 0.3)
    fixed = make_agent("oracle", {**plain["agent"], "mode": "fixed"})
    assert fixed.nav_unstick_steps == 0  # habitat's fixed plan runs nav as it is
    assert agent.settings.unstick_skills == ("nav",)  # the default
    turning = to_plain(compose("eval_hab", ["agent.nav_unstick_turn=true"]))
    assert make_agent("oracle", turning["agent"]).settings.nav_unstick_turn is True
    with pytest.raises(ConfigError, match="agent.nav_unstick_turn must be true or false; got 'yes'"):
        check_agent_config({**cfg, "nav_unstick_turn": "yes"})
    facing = to_plain(compose("eval_hab", ["agent.nav_face_path=true"]))
    assert make_agent("oracle", facing["agent"]).nav_face_path is True
    with pytest.raises(ConfigError, match="agent.nav_face_path must be true or false; got 1"):
        check_agent_config({**cfg, "nav_face_path": 1})
    watched = to_plain(compose("eval_hab", ["agent.unstick_skills=[nav,pick,place]"]))
    assert make_agent("oracle", watched["agent"]).settings.unstick_skills == ("nav", "pick", "place")
    with pytest.raises(ConfigError, match="unknown agent.unstick_skills entry 'fly'; valid choices: pick, place"):
        check_agent_config({**cfg, "unstick_skills": ["fly"]})
