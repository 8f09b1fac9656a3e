"""The fixed-plan mode (`agent.mode=fixed`, habitat-lab's TP-SRL): the initial plan is followed as
planned, never re-planned; Set Table navigates again after opening the drawer; a bad mode is a
one-line config error; eval-hab in fixed mode writes videos others can read."""

from __future__ import annotations

import dataclasses
import json
import os
import stat

import pytest
from agent_doubles import FirstCallReplaced

from configs.compose import ConfigError
from eval.agent import HabAgent
from eval.agent_config import AGENT_MODES, AgentSettings, check_agent_config, make_agent
from eval.hab_eval import initial_plans, main
from eval.oracle_controllers import OracleSkills
from planner.fixed_plan import fixed_steps, renavigate_after
from planner.grounding import SKILL_OF_ACTION
from planner.predicates import PredicateThresholds, load_planner_cfg
from planner.problem import build_planner, load_scenario_cfg, problem_from_episode
from planner.search import GroundAction
from rearrange.env import RearrangeEnv
from rearrange.generate import generate_episodes
from rearrange.layout import generate_layout
from rearrange.tasks.hab import HabTask, load_hab_config


class _Hurried:
    """A real oracle controller whose skill times out after `timeout` steps: a failed skill call."""

    def __init__(self, inner, timeout: int):
        self.inner = inner
        self.skill = dataclasses.replace(inner.skill, timeout=timeout)

    def start(self, sim, target, retry=False):
        self.inner.start(sim, target, retry=retry)

    def act(self, sim, obs):
        return self.inner.act(sim, obs)


def _run(scenario: str, mode: str, max_steps: int, skills=None):
    cfg = load_hab_config([f"hab_task.max_steps={max_steps}", f"agent.mode={mode}"])
    env = RearrangeEnv(HabTask(scenario, cfg, obs_keys=()), generate_episodes(scenario, "val", 1, 0),
                       episode_order="cycle")
    a = cfg["agent"]
    keys = ("max_replans", "renavigate_after_failure", "settle_steps", "mode", "fixed_renavigate_after")
    agent = HabAgent("oracle", skills or OracleSkills(), AgentSettings.from_config({k: a[k] for k in keys}))
    try:
        return agent.run_episode(env, 0)
    finally:
        env.close()


def test_fixed_mode_never_replans_after_a_failed_skill():
    out = _run("tidy_house", "fixed", 420, FirstCallReplaced("pick", lambda oracle: _Hurried(oracle, timeout=5)))
    labels = [r.label for r in out.skill_runs]
    # the pick timed out without holding obj_0; the plan goes on to the goal regardless
    assert labels[:3] == ["nav(obj_0)", "pick(obj_0)", "nav(goal_obj_0)"]
    assert out.skill_runs[1].outcome == "timeout" and not out.skill_runs[1].effects_hold
    assert labels.count("pick(obj_0)") == 1
    assert out.num_replans == 0
    assert not out.stages["pick_0"]
    # failed_skill is the first call whose effects did not hold, though the episode ran on and was truncated
    assert out.failed_skill == "pick" and out.failed_call == "pick(obj_0)"
    assert out.end_reason == "truncated" and out.steps == 420
    assert out.to_record().measures["num_replans"] == 0.0


def test_replan_mode_replans_in_the_same_situation():
    out = _run("tidy_house", "replan", 420, FirstCallReplaced("pick", lambda oracle: _Hurried(oracle, timeout=5)))
    labels = [r.label for r in out.skill_runs]
    assert labels[:2] == ["nav(obj_0)", "pick(obj_0)"] and not out.skill_runs[1].effects_hold
    assert out.num_replans >= 1
    # renavigate_after_failure (the default): approach obj_0 again, then pick it this time
    assert labels[2:4] == ["nav(obj_0)", "pick(obj_0)"] and out.skill_runs[3].effects_hold
    assert out.stages["pick_0"]


def test_set_table_fixed_plan_navigates_again_after_opening_the_drawer():
    assert list(load_hab_config()["agent"]["fixed_renavigate_after"]) == ["open_cab"]
    episodes = generate_episodes("set_table", "val", 2, 0)
    for plan in initial_plans("set_table", episodes):
        fixed = renavigate_after(plan, ("open_cab",))
        i = next(k for k, a in enumerate(fixed) if a.name == "open_cab")
        obj = fixed[i + 2].args[0]
        assert fixed[i + 1] == GroundAction("nav", (obj,)) and fixed[i + 2] == GroundAction("pick", (obj,))
        assert [SKILL_OF_ACTION[a.name] for a in fixed] == [
            "nav", "open_cab", "nav", "pick", "nav", "place", "nav", "open_fridge", "pick", "nav", "place"]
        assert fixed[:i + 1] + fixed[i + 2:] == plan  # only the one nav is added
    # the inserted nav is expected to put the robot at the object (nav_to_receptacle already "had")
    planner_cfg = load_planner_cfg()
    ep = episodes[0]
    problem = problem_from_episode(ep, generate_layout(ep.layout_seed), load_scenario_cfg("set_table"),
                                   PredicateThresholds.from_cfg(planner_cfg["predicates"]))
    planner = build_planner(problem, planner_cfg)
    steps = fixed_steps(planner, renavigate_after(planner.plan(), ("open_cab",)), unchecked=("in",))
    assert steps[2].action.name == "nav" and steps[2].expected == {("robot_at", steps[2].action.args[0])}
    assert steps[3].expected == {("holding", steps[2].action.args[0])}
    # other scenarios open no drawer: their plans are unchanged
    for scenario in ("tidy_house", "prepare_groceries"):
        for plan in initial_plans(scenario, generate_episodes(scenario, "val", 1, 0)):
            assert renavigate_after(plan, ("open_cab",)) == plan


def test_set_table_fixed_episode_runs_the_extra_nav_and_picks():
    out = _run("set_table", "fixed", 700)
    labels = [r.label for r in out.skill_runs]
    assert [lbl.split("(")[0] for lbl in labels[:4]] == ["nav", "open_cab", "nav", "pick"]
    assert labels[2] == "nav(obj_0)" and labels[3] == "pick(obj_0)"
    assert all(r.effects_hold for r in out.skill_runs[:4])
    assert out.stages["open_0"] and out.stages["pick_0"]
    assert out.num_replans == 0


def test_bad_mode_is_a_one_line_config_error():
    assert AGENT_MODES == ("replan", "fixed")
    good = dict(load_hab_config()["agent"])
    assert good["mode"] == "replan"
    check_agent_config(good)
    check_agent_config(dict(load_hab_config(["agent.mode=fixed"])["agent"]))
    bad = load_hab_config(["agent.mode=planless"])["agent"]
    with pytest.raises(ConfigError, match=r"^unknown agent.mode 'planless'; valid choices: replan, fixed$"):
        make_agent("oracle", bad)
    with pytest.raises(ConfigError, match="agent.fixed_renavigate_after.*open_cab"):
        check_agent_config({**good, "fixed_renavigate_after": ["open_drawer"]})
    with pytest.raises(ConfigError, match="agent.settle_steps must be an integer >= 0"):
        check_agent_config({**good, "settle_steps": -1})
    with pytest.raises(ValueError, match="valid choices: replan, fixed"):
        HabAgent("oracle", OracleSkills(), AgentSettings(max_replans=0, mode="sometimes"))
    assert make_agent("oracle", {**good, "mode": "fixed"}).settings.mode == "fixed"


def test_eval_hab_fixed_mode_video_is_readable_by_others(tmp_path, capsys):
    out, videos = tmp_path / "out", tmp_path / "videos"
    old = os.umask(0o022)
    try:
        assert main(["--scenario", "set_table", "--episodes", "1", "--out", str(out), "--video", str(videos),
                     "--no-progress", "agent.mode=fixed", "hab_task.max_steps=8", "video.width=64",
                     "video.height=64"]) == 0
    finally:
        os.umask(old)
    result = json.loads((out / "results.json").read_text())
    assert result["config"]["agent"]["mode"] == "fixed"
    assert result["episodes"][0]["measures"]["num_replans"] == 0
    # 8 steps end the episode in its first call, which the fixed mode's failed-skill line names as such
    assert "failed skills (the first failed call, or the step running when the episode ended)" in capsys.readouterr().out
    (video,) = videos.glob("*.mp4")
    assert stat.S_IMODE(video.stat().st_mode) == 0o644
    assert [p.name for p in videos.iterdir()] == [video.name]  # no temporary file left
