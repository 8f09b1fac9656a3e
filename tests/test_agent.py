"""The hierarchical agent: plans per scenario, re-planning after a failed skill, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
from agent_doubles import FirstCallReplaced, Idle, hab_env

from eval.agent import HabAgent
from eval.agent_config import AGENT_TYPES, AgentSettings, check_agent_config, make_agent, skills_in_plans
from eval.episode_outcome import EpisodeRun, SkillRun
from eval.hab_eval import initial_plans
from eval.oracle_controllers import OracleSkills
from eval.skill_library import CheckpointMissing, resolve_checkpoints
from planner.grounding import SKILL_OF_ACTION
from rearrange.generate import generate_episodes

EXPECTED_SKILLS = {
    "tidy_house": ["nav", "pick", "nav", "place"] * 5,
    "prepare_groceries": ["nav", "pick", "nav", "place"] * 3,
    # habitat set_table solution: nav_to_receptacle, open_cab, pick, nav, place, nav_to_receptacle,
    # open_fridge, (nav,) pick, nav, place -- our nav_to_receptacle already stands at the fruit
    "set_table": ["nav", "open_cab", "pick", "nav", "place", "nav", "open_fridge", "pick", "nav", "place"],
}


@pytest.mark.parametrize("scenario", sorted(EXPECTED_SKILLS))
def test_plan_has_expected_skill_sequence(scenario):
    episodes = generate_episodes(scenario, "val", 2, 0)
    for plan in initial_plans(scenario, episodes):
        assert [SKILL_OF_ACTION[a.name] for a in plan] == EXPECTED_SKILLS[scenario]
    plans = initial_plans(scenario, episodes)
    assert "nav" in skills_in_plans(plans, "tp-srl")
    assert "nav" not in skills_in_plans(plans, "tp-srl-nonav")
    if scenario == "set_table":
        assert plans[0][0].name == "nav_to_receptacle"
        assert set(skills_in_plans(plans, "tp-srl")) == {"nav", "pick", "place", "open_cab", "open_fridge"}



@pytest.mark.parametrize("renavigate", [False, True])
def test_replans_after_injected_pick_failure_and_picks_again(renavigate):
    env = hab_env("tidy_house", 800)
    try:
        stall_first_pick = FirstCallReplaced("pick", lambda oracle: Idle(oracle.skill))
        agent = HabAgent("oracle", stall_first_pick, AgentSettings(max_replans=2, renavigate=renavigate))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    runs = out.skill_runs
    assert [r.label for r in runs[:2]] == ["nav(obj_0)", "pick(obj_0)"]
    assert runs[0].effects_hold
    assert runs[1].outcome == "timeout" and not runs[1].effects_hold  # the stalled pick
    assert out.num_replans >= 1
    # the re-plan starts from the observed state: the robot is still at obj_0, so it picks again;
    # with renavigate the re-plan forgets robot_at and approaches obj_0 again first
    retry = runs[3] if renavigate else runs[2]
    if renavigate:
        assert runs[2].label == "nav(obj_0)"
    assert retry.label == "pick(obj_0)" and retry.effects_hold
    assert out.stages["pick_0"]


class _RecordingStarts:
    """Skill factory: `inner`'s controllers, recording (skill, retry) each call starts with."""

    def __init__(self, inner):
        self.inner = inner
        self.starts = []

    def __call__(self, name):
        controller, starts = self.inner(name), self.starts

        class _Recorded:
            skill = controller.skill

            def start(self, sim, target, retry=False):
                starts.append((name, retry))
                controller.start(sim, target, retry=retry)

            def act(self, sim, obs):
                return controller.act(sim, obs)

        return _Recorded()


def test_a_call_the_episode_ran_before_starts_as_a_retry():
    env = hab_env("tidy_house", 1200)
    try:
        skills = _RecordingStarts(FirstCallReplaced("pick", lambda oracle: Idle(oracle.skill)))
        agent = HabAgent("oracle", skills, AgentSettings(max_replans=2, renavigate=True))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    assert [r.label for r in out.skill_runs[:5]] == ["nav(obj_0)", "pick(obj_0)", "nav(obj_0)", "pick(obj_0)",
                                                     "nav(goal_obj_0)"]
    assert skills.starts[:5] == [("nav", False), ("pick", False), ("nav", True), ("pick", True), ("nav", False)]


class _FakePolicy:
    def __init__(self, deterministic):
        from skills.definitions import get_skill

        self.skill = get_skill("pick")
        self.deterministic = deterministic

    def reset(self):
        pass


@pytest.mark.parametrize("sample_retries", [False, True])
def test_policy_controller_samples_only_on_retries_when_asked(sample_retries):
    from eval.skill_library import PolicyController
    from rearrange.sensors import SensorTarget

    policy = _FakePolicy(deterministic=True)
    controller = PolicyController(policy, sample_retries=sample_retries)
    seen = []
    for retry in (False, True, False):
        controller.start(None, SensorTarget(), retry=retry)
        seen.append(policy.deterministic)
    assert seen == ([True, False, True] if sample_retries else [True, True, True])
    sampled = _FakePolicy(deterministic=False)  # agent.deterministic=false: every call samples
    controller = PolicyController(sampled, sample_retries=sample_retries)
    controller.start(None, SensorTarget(), retry=False)
    assert sampled.deterministic is False


def test_sampled_skills_sample_while_the_others_act_with_the_mean():
    """agent.sampled_skills: those learned skills sample their actions, every other one stays deterministic."""
    from configs.compose import ConfigError
    from eval.agent_config import check_agent_config
    from eval.skill_library import SHIPPED_CHECKPOINTS, LearnedSkills

    paths = {s: SHIPPED_CHECKPOINTS / f"{s}.pt" for s in ("pick", "close_cab")}
    skills = LearnedSkills(paths, deterministic=True, sampled_skills=("close_cab",))
    assert skills("close_cab").policy.deterministic is False
    assert skills("pick").policy.deterministic is True
    everything_sampled = LearnedSkills(paths, deterministic=False, sampled_skills=("close_cab",))
    assert everything_sampled("pick").policy.deterministic is False
    cfg = {"max_replans": 0, "settle_steps": 0, "deterministic": True, "sampled_skills": ["fly"]}
    with pytest.raises(ConfigError, match="agent.sampled_skills entry.*'fly'"):
        check_agent_config(cfg)


class _Flail(Idle):
    """An injected failure that first swings two arm joints off rest (0.25 rad), then stalls."""

    def start(self, sim, target, retry=False):
        self.steps = 0

    def act(self, sim, obs):
        a = super().act(sim, obs)
        self.steps += 1
        if self.steps <= 20:
            a[2:4] = 1.0
        return a


class _ArmAtStarts(_RecordingStarts):
    """Records (skill, largest joint distance from rest) at each skill start."""

    def __call__(self, name):
        controller, starts = self.inner(name), self.starts

        class _Recorded:
            skill = controller.skill

            def start(self, sim, target, retry=False):
                starts.append((name, float(np.max(np.abs(sim.arm_qpos - sim.REST_ARM_QPOS)))))
                controller.start(sim, target, retry=retry)

            def act(self, sim, obs):
                return controller.act(sim, obs)

        return _Recorded()


@pytest.mark.parametrize("reset_arm", ["never", "retries", "between"])
def test_reset_arm_returns_the_arm_to_rest_before_retries_or_every_skill(reset_arm):
    """habitat's reset_arm: with `retries` the retried nav starts with the arm back at rest after a
    failed pick left it 0.25 rad off; with `between` it also runs before every other skill but the
    first; with `never` the retry starts where the failure left the arm."""
    env = hab_env("tidy_house", 900)
    try:
        skills = _ArmAtStarts(FirstCallReplaced("pick", lambda oracle: _Flail(oracle.skill)))
        agent = HabAgent("oracle", skills, AgentSettings(max_replans=1, renavigate=True, reset_arm=reset_arm))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    labels = [r.label for r in out.skill_runs]
    resets = [r for r in out.skill_runs if r.skill == "reset_arm"]
    retry_nav = labels.index("nav(obj_0)", 1)
    if reset_arm == "never":
        assert not resets and labels[:4] == ["nav(obj_0)", "pick(obj_0)", "nav(obj_0)", "pick(obj_0)"]
        assert skills.starts[2][1] > 0.2  # the retried nav starts with the arm still swung out
        return
    assert labels[retry_nav - 1] == "reset_arm"
    assert skills.starts[2][1] < 0.05  # the retried nav starts at rest
    assert all(r.outcome == "done" and 0 < r.steps <= 50 for r in resets)  # none recorded when at rest
    assert labels[:4] == ["nav(obj_0)", "pick(obj_0)", "reset_arm", "nav(obj_0)"]
    first_call_done = [SkillRun(label="nav(obj_0)", skill="nav", steps=9, outcome="done", effects_hold=True)]
    wants = agent._wants_arm_reset(EpisodeRun("e", skill_runs=first_call_done), retry=False)
    assert wants == (reset_arm == "between")  # `between` also before a first call of a skill
    assert not agent._wants_arm_reset(EpisodeRun("e"), retry=False)  # never before the episode's first


@pytest.mark.parametrize("backoff", [0.0, 0.5])
def test_retry_backoff_drives_back_before_the_retried_nav_only(backoff):
    """With agent.retry_backoff the retried nav starts `backoff` metres behind where the failed pick
    stood (before the re-plan's nav, not between that nav and the retried pick); 0 leaves it off."""
    env = hab_env("tidy_house", 1200)
    try:
        skills = _RecordingStarts(FirstCallReplaced("pick", lambda oracle: Idle(oracle.skill)))
        agent = HabAgent("oracle", skills, AgentSettings(max_replans=1, renavigate=True, retry_backoff=backoff))
        poses = []
        original = agent._run_skill

        def run_skill(env_, call, run, observer):
            poses.append(np.asarray(env_.sim.base_xy, dtype=np.float64).copy())
            return original(env_, call, run, observer)

        agent._run_skill = run_skill
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    labels = [r.label for r in out.skill_runs]
    if backoff == 0.0:
        assert "back_off" not in labels
        return
    assert labels[:5] == ["nav(obj_0)", "pick(obj_0)", "back_off", "nav(obj_0)", "pick(obj_0)"]
    record = out.skill_runs[2]
    moved = float(np.linalg.norm(poses[2] - poses[1]))  # stall: the failed pick did not move the base
    assert 0 < record.steps <= 9
    assert moved > 0.3 or record.steps < 8  # drove back, unless the base was blocked


def _reset_from(offset: list[float], jammed: bool = False, **agent_kwargs) -> tuple[SkillRun, float, list]:
    """One reset_arm of the oracle agent from rest + `offset` (Tidy House val episode 0's start); with
    `jammed` the arm servos hold no torque (the joints stay put, as an arm pressed against a shelf).
    (its record, the largest joint distance from rest after it, the arm joints after every step)."""
    env = hab_env("tidy_house", 900)
    try:
        env.reset()
        sim = env.sim
        sim.set_arm_qpos(sim.REST_ARM_QPOS + np.asarray(offset))
        if jammed:
            sim.model.actuator_gainprm[:, 0] = 0.0
            sim.model.actuator_biasprm[:, :3] = 0.0
        agent = HabAgent("oracle", OracleSkills({}),
                         AgentSettings(max_replans=0, reset_arm="retries", **agent_kwargs))
        run, arms = EpisodeRun("e"), []
        assert not agent._reset_arm_to_rest(env, run, lambda env_, info, label: arms.append(env_.sim.arm_qpos.copy()))
        error = float(np.max(np.abs(sim.arm_qpos - sim.REST_ARM_QPOS)))
    finally:
        env.close()
    (record,) = run.skill_runs
    return record, error, arms


ROLL_OFF = [0.0, 0.0, 0.6, 0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("stall_steps", [0, 10])
def test_reset_arm_ends_early_when_the_arm_is_stuck(stall_steps):
    """With agent.reset_arm_stall_steps a reset whose arm does not come closer to rest ends after that many
    steps as `stalled`, so it does not spend its whole `reset_arm_max_steps`; 0 keeps habitat's reset,
    which times out."""
    record, _, _ = _reset_from(ROLL_OFF, jammed=True, reset_arm_max_steps=60, reset_arm_stall_steps=stall_steps)
    assert (record.outcome, record.steps) == (("timeout", 60) if stall_steps == 0 else ("stalled", stall_steps))


@pytest.mark.parametrize("stall_steps", [0, 10])
def test_reset_arm_with_stall_detection_still_reaches_rest(stall_steps):
    """A free arm 0.6 rad off rest comes back within the tolerance whether or not stalls are detected:
    the check never cuts a reset that is making progress."""
    record, error, _ = _reset_from(ROLL_OFF, reset_arm_max_steps=100, reset_arm_stall_steps=stall_steps)
    assert record.outcome == "done" and 40 <= record.steps <= 60 and error < 0.05


@pytest.mark.parametrize("lift_first", [False, True])
def test_reset_arm_lift_first_raises_a_lowered_shoulder_before_the_other_joints(lift_first):
    """With agent.reset_arm_lift_first a lowered shoulder comes up alone first (the other joints still),
    then every joint; without it every joint moves from the first step. Both end at rest."""
    record, error, arms = _reset_from([0.0, 0.4, 0.3, 0.0, 0.0, 0.0, 0.0], reset_arm_max_steps=200,
                                      reset_arm_lift_first=lift_first)
    assert record.outcome == "done" and error < 0.05
    roll_moved = abs(arms[20][2] - arms[0][2])  # of 0.3 rad; held still it drifts a few hundredths (servo lag)
    assert (roll_moved < 0.06) if lift_first else (roll_moved > 0.12)
    assert arms[9][1] < arms[0][1] - 0.05  # the shoulder rises either way
    assert record.steps > 45 if lift_first else record.steps <= 40  # one joint after the other takes longer


def test_retry_resets_the_arm_again_after_the_back_off():
    """reset_arm, then back_off, then a second reset from the backed-off base (a reset the furniture
    blocked gets another go); an arm already at rest records no second reset."""
    env = hab_env("tidy_house", 1200)
    try:
        skills = FirstCallReplaced("pick", lambda oracle: _Flail(oracle.skill))
        agent = HabAgent("oracle", skills,
                         AgentSettings(max_replans=1, renavigate=True, reset_arm="retries",
                                       retry_backoff=0.5, reset_arm_stall_steps=10))
        calls = []
        original = agent._reset_arm_to_rest

        def reset(env_, run, observer):
            calls.append([r.label for r in run.skill_runs][-1])
            return original(env_, run, observer)

        agent._reset_arm_to_rest = reset
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    labels = [r.label for r in out.skill_runs]
    assert labels[:5] == ["nav(obj_0)", "pick(obj_0)", "reset_arm", "back_off", "nav(obj_0)"]
    assert calls[:2] == ["pick(obj_0)", "back_off"]  # the second call came after the back-off, found the arm at rest


@pytest.mark.parametrize("forward", [False, True])
def test_backoff_wedged_from_behind_drives_forward_when_asked(forward):
    """The base with its back against the apartment's west wall: the back-off is blocked at once; with
    agent.retry_backoff_forward it drives forward its 0.5 m instead, without it stays (as before)."""
    env = hab_env("tidy_house", 900)
    try:
        env.reset()
        sim = env.sim
        motion, boxes = sim._base_motion, sim._obstacle_arrays()
        (x0, y0), (_, y1) = sim.layout.bounds
        x, y = next((xs[0], y) for y in np.arange(y0 + 0.5, y1 - 0.5, 0.25)
                    if (xs := [x for x in np.arange(x0, x0 + 1.5, 0.002) if motion.penetration(np.array([x, y]), boxes) == 0.0])
                    and motion.penetration(np.array([xs[0] + 0.7, y]), boxes) == 0.0)
        sim.reset_state({}, {}, np.array([x, y]), 0.0)  # facing +x, the wall right behind
        agent = HabAgent("oracle", OracleSkills({}),
                         AgentSettings(max_replans=0, retry_backoff=0.5, retry_backoff_forward=forward))
        assert not agent._back_off(env, EpisodeRun("e"), None)
        moved = float(sim.base_xy[0] - x)
    finally:
        env.close()
    assert (0.45 <= moved <= 0.7) if forward else abs(moved) < 0.01


def test_reset_arm_setting_is_validated():
    from configs.compose import ConfigError

    cfg = {"max_replans": 0, "settle_steps": 0, "deterministic": True, "reset_arm": "always"}
    with pytest.raises(ConfigError, match="agent.reset_arm.*never, retries, between"):
        check_agent_config(cfg)
    with pytest.raises(ConfigError, match="agent.reset_arm_max_steps must be an integer >= 0"):
        check_agent_config({**cfg, "reset_arm": "retries", "reset_arm_max_steps": -1})
    with pytest.raises(ConfigError, match="agent.reset_arm_stall_steps must be an integer >= 0"):
        check_agent_config({**cfg, "reset_arm": "retries", "reset_arm_stall_steps": 2.5})
    with pytest.raises(ConfigError, match=r"agent.retry_backoff must be a number of metres in \[0, 2\]"):
        check_agent_config({**cfg, "reset_arm": "retries", "retry_backoff": 3})
    with pytest.raises(ConfigError, match=r"agent.release_guard must be a number of metres in \[0, 2\]"):
        check_agent_config({**cfg, "reset_arm": "retries", "release_guard": -0.1})
    with pytest.raises(ConfigError, match="agent.fixed_reset_arm.*never, retries, between"):
        check_agent_config({**cfg, "reset_arm": "retries", "fixed_reset_arm": "sometimes"})
    with pytest.raises(ConfigError, match="agent.reset_arm_lift_first must be true or false"):
        check_agent_config({**cfg, "reset_arm": "retries", "reset_arm_lift_first": "yes"})


def test_each_mode_takes_its_own_reset_arm_setting():
    """The shipped config resets the arm between skills when re-planning, and runs habitat's fixed plan
    without resets (its add_arm_rest off) unless agent.fixed_reset_arm says otherwise."""
    from configs.compose import compose, to_plain

    for mode, overrides, expected in (("replan", [], "between"), ("fixed", [], "never"),
                                      ("fixed", ["agent.fixed_reset_arm=between"], "between"),
                                      ("replan", ["agent.reset_arm=retries"], "retries")):
        cfg = to_plain(compose("eval_hab", [f"agent.mode={mode}", *overrides]))
        assert make_agent("oracle", cfg["agent"]).settings.reset_arm == expected


def test_agent_settings_take_every_key_of_the_config_node():
    """make_agent runs the agent with every setting of configs/eval_hab.yaml's node (the two keys named
    otherwise included); absent keys keep the plain agent's values."""
    from dataclasses import fields

    from configs.compose import compose, to_plain

    node = to_plain(compose("eval_hab", ["agent.unstick_skills=[nav,pick]", "agent.retry_backoff=0.3"]))["agent"]
    settings = make_agent("oracle", node).settings
    for f in fields(AgentSettings):
        key = {"renavigate": "renavigate_after_failure"}.get(f.name, f.name)
        value = getattr(settings, f.name)
        assert value == (tuple(node[key]) if isinstance(value, tuple) else node[key]), f.name
    assert settings.unstick_skills == ("nav", "pick") and settings.retry_backoff == 0.3
    assert AgentSettings.from_config({}) == AgentSettings()
    assert AgentSettings.from_config({"mode": "fixed", "fixed_reset_arm": "between"}).reset_arm == "between"
    with pytest.raises(ValueError, match="unknown agent.reset_arm 'always'; valid choices: never, retries, between"):
        AgentSettings(reset_arm="always")



@pytest.mark.parametrize("guard", [0.0, 0.25])
def test_release_guard_turns_a_release_far_from_the_goal_into_a_hold(guard):
    """A place that releases at once, away from the goal, drops the object; with agent.release_guard the
    agent keeps the object held instead, every step of the call."""
    env = hab_env("tidy_house", 1400)
    try:
        agent = HabAgent("oracle", FirstCallReplaced("place", lambda oracle: Idle(oracle.skill)),
                         AgentSettings(max_replans=0, release_guard=guard))
        out = agent.run_episode(env, 0)
        held = env.sim.grasped
    finally:
        env.close()
    place = next(r for r in out.skill_runs if r.skill == "place")
    assert not place.effects_hold and out.end_reason == "replans_exhausted"
    if guard == 0.0:
        assert place.blocked_releases == 0 and place.outcome == "done" and held is None
    else:
        assert place.blocked_releases == place.steps and place.outcome == "timeout" and held == "obj_0"
        assert f":held{place.steps}" in out.to_dict()["skill_calls"][3]
    # habitat's fixed plan is never guarded
    assert HabAgent("oracle", OracleSkills(),
                    AgentSettings(max_replans=0, mode="fixed", release_guard=0.25)).release_gate.guard == 0.0


def test_failure_is_recorded_when_replans_are_exhausted():
    env = hab_env("tidy_house", 700)
    try:
        agent = HabAgent("oracle", FirstCallReplaced("pick", lambda oracle: Idle(oracle.skill)),
                         AgentSettings(max_replans=0))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    assert not out.success
    assert out.failed_skill == "pick" and out.failed_call == "pick(obj_0)"
    assert out.end_reason == "replans_exhausted"
    assert out.num_replans == 0
    assert not out.stages["pick_0"]
    record = out.to_record()
    assert record.failed_skill == "pick" and record.measures["num_replans"] == 0.0
    assert out.steps == sum(r.steps for r in out.skill_runs) + 1  # + the stop step


def test_nonav_agent_drops_nav_steps():
    env = hab_env("prepare_groceries", 300)
    try:
        agent = HabAgent("tp-srl-nonav", OracleSkills(), AgentSettings(max_replans=0))
        out = agent.run_episode(env, 0)
    finally:
        env.close()
    assert out.skill_runs and out.skill_runs[0].label == "pick(obj_0)"
    assert all(r.skill != "nav" for r in out.skill_runs)


def test_checkpoint_resolution(tmp_path):
    (tmp_path / "pick.pt").write_bytes(b"x")
    assert resolve_checkpoints(["pick"], {"pick": None}, tmp_path) == {"pick": tmp_path / "pick.pt"}
    other = tmp_path / "elsewhere.pt"
    other.write_bytes(b"x")
    assert resolve_checkpoints(["pick"], {"pick": str(other)}, tmp_path)["pick"] == other  # config wins
    with pytest.raises(CheckpointMissing, match=r"skill 'place' not found: .*place\.pt"):
        resolve_checkpoints(["pick", "place"], {}, tmp_path)
    with pytest.raises(CheckpointMissing, match="--checkpoint-dir"):
        resolve_checkpoints(["nav"], {"nav": None}, None, shipped_dir=tmp_path / "none_shipped")


def test_unknown_agent_type():
    with pytest.raises(ValueError, match="valid choices: " + ", ".join(AGENT_TYPES)):
        make_agent("random", {"max_replans": 1, "deterministic": True})


def test_a_call_of_a_learned_skill_without_checkpoint_ends_the_episode_not_the_run():
    """A re-plan may call a skill the first plans did not (a drawer the base pushed shut): with no
    checkpoint for it the episode ends with end reason `no_checkpoint`, naming the skill, instead of a
    traceback ending the whole evaluation."""
    from eval.skill_library import LearnedSkills

    env = hab_env("set_table", 2000)
    try:
        oracle = OracleSkills()
        skills = LearnedSkills({}, scripted=dict.fromkeys(["nav", "pick", "place", "open_fridge"], oracle))
        out = HabAgent("tp-srl", skills, AgentSettings(max_replans=1)).run_episode(env, 0)
    finally:
        env.close()
    assert not out.success and out.end_reason == "no_checkpoint"
    assert out.failed_skill == "open_cab" and [r.skill for r in out.skill_runs] == ["nav"]


def test_every_skill_a_replan_may_call():
    assert skills_in_plans([], "tp-srl", every_skill=True) == ["pick", "place", "nav", "open_fridge",
                                                                "close_fridge", "open_cab", "close_cab"]
    assert "nav" not in skills_in_plans([], "tp-srl-nonav", every_skill=True)
