"""eval-hab's nav unstick (`agent.nav_unstick_steps`): a nav that pins its base against furniture is driven
out of the wedge inside the same call, its steps counted towards nav's timeout, then goes on as a retry; the
skills watched are `agent.unstick_skills` (nav by default; pick and place on request)."""

from __future__ import annotations

import numpy as np
import pytest
from agent_doubles import FirstCallReplaced, Idle, hab_env

from eval.agent import HabAgent, WedgeWatch
from eval.agent_config import AgentSettings, check_agent_config, make_agent

NAV_TIMEOUT = 400  # configs/skill/nav.yaml hab.timeout


class _Reverser(Idle):
    """A nav that commands full reverse on every step and never stops (the shipped nav's habit, blind to
    what is behind it); records each start's retry flag and base position."""

    def __init__(self, skill):
        super().__init__(skill)
        self.starts: list[tuple[bool, np.ndarray]] = []
        self.wedged_at: list[np.ndarray] = []  # where the base stood at its last own step before each restart

    def start(self, sim, target, retry=False):
        if not self.starts:
            self.heading = np.array([np.cos(sim.base_yaw), np.sin(sim.base_yaw)])
        else:
            self.wedged_at.append(self.last_xy)
        self.starts.append((retry, np.asarray(sim.base_xy, dtype=np.float64).copy()))

    def act(self, sim, obs):
        self.last_xy = np.asarray(sim.base_xy, dtype=np.float64).copy()
        action = np.zeros(11)
        action[8] = -1.0  # base linear: full reverse
        return action


def _run_replaced(skill: str, double: type, unstick_steps: int, max_steps: int,
                  unstick_skills: tuple[str, ...] = ("nav",)) -> tuple[object, _Reverser]:
    """A Tidy House episode whose first `skill` call is played by `double`; (that call's record, the double)."""
    env = hab_env("tidy_house", max_steps)
    doubles: list[_Reverser] = []

    def replace(oracle):
        doubles.append(double(oracle.skill))
        return doubles[-1]

    try:
        agent = HabAgent("oracle", FirstCallReplaced(skill, replace),
                         AgentSettings(max_replans=0, nav_unstick_steps=unstick_steps,
                                       unstick_skills=unstick_skills))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    return next(r for r in out.skill_runs if r.skill == skill), doubles[0]


def _run_first_nav(unstick_steps: int) -> tuple[object, _Reverser]:
    return _run_replaced("nav", _Reverser, unstick_steps, 600)


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


class _Pusher(_Reverser):
    """A pick that drives its base forward on every step (into the receptacle nav stopped facing)."""

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
    watched = to_plain(compose("eval_hab", ["agent.unstick_skills=[nav,pick,place]"]))
    assert make_agent("oracle", watched["agent"]).settings.unstick_skills == ("nav", "pick", "place")
    with pytest.raises(ConfigError, match="unknown agent.unstick_skills entry 'fly'; valid choices: pick, place"):
        check_agent_config({**cfg, "unstick_skills": ["fly"]})
