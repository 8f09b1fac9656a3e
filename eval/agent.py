"""The hierarchical HAB agent (TP-SRL): a task planner chooses skills, skills act until they end.

Per episode: build the episode's PDDL problem (the HAB task does it on reset), plan with the
breadth-first planner, and for each plan step ground it to a skill call (`planner.grounding`),
point the sensors at its target, and run the skill until its termination predicate or timeout
(`skills.definitions.SkillMonitor`). Then check the step's PDDL effects against the symbolic state
read off the simulator. If they do not hold (the skill failed), RE-PLAN from the observed state, up
to `agent.max_replans` times (habitat-lab and ManiSkill-HAB only follow fixed plans); with
`agent.renavigate_after_failure` the re-plan forgets where the robot is (no `robot_at`), so the
retry starts with a fresh navigation instead of repeating the failed skill from the same spot; with
`agent.reset_arm` (habitat-lab's reset_arm skill) the arm is first driven back to its resting joints,
before retries only (`retries`) or before every skill but the first (`between`, habitat's add_arm_rest;
fixed mode reads `agent.fixed_reset_arm`), ending early when furniture blocks it (`reset_arm_stall_steps`), or,
before a nav with `agent.rest_arm_during_nav`, replaced by bringing the arm to rest while the nav drives (ours),
and with `agent.retry_backoff` a retry backs the base away first (ours); with `agent.release_guard` a
place may not let go of its object far from the goal (ours: a dropped object often lands where no pick
reaches it), with `agent.release_settle_steps` not while the object still swings, and with
`agent.pick_push_guard` a pick that pushes its target along ends before the target goes over an edge
(ours, eval/call_guards.py), with `agent.place_shut_guard` a place that pushes its goal's drawer (or the
fridge door) towards shut ends before the object is let go where the drawer was, `agent.pick_base_scale`
scales a pick's base command and `agent.pick_base_smoothing` averages it with the last one (ours, both off);
with `agent.nav_unstick_steps` a nav that pins its base against furniture is driven out of the wedge inside
the same call, and with `agent.nav_unstick_turn` then turned in place to face its path compass; with
`agent.nav_face_path` a nav whose path leads off behind it turns to face it first (ours; these scripted motions
are eval/agent_motions.py). When the
plan is exhausted, the agent first stands still for `agent.settle_steps` steps (habitat's fixed policy
appends wait(30); a placed fruit may still be rolling), then calls stop if the
goal holds (habitat: the high-level policy ends the episode); if the goal does not hold it re-plans too.

Modes (`AGENT_MODES`, config `agent.mode`): the above is `replan`, the default. `fixed` is
habitat-lab's TP-SRL with its fixed high-level policy, for numbers comparable with the VER paper:
the initial plan runs step by step, each skill until its termination predicate or timeout, then the
next step whatever the simulator shows; no re-planning, and the goal is not checked before the stop
(after the `settle_steps` wait). After each step named in `agent.fixed_renavigate_after` (default
open_cab) a nav to the next pick's object or place's goal is inserted (VER paper appendix B, Set
Table; `planner.fixed_plan`). Each step's effects are still checked, for reporting only: the failed
skill is the first call whose effects did not hold (or the active one if the episode ended first).
In both modes a plan step is grounded when it starts (a nav to an object goes to where it is now).

Agent types (`AGENT_TYPES`):
- `oracle`: planner + scripted oracle controllers (`skills.oracles`), the TP-SPA-style baseline;
- `tp-srl`: planner + learned skill policies, navigation included;
- `tp-srl-nonav`: no navigation skill: nav steps are dropped and pick/place/open/close move the
  base themselves (the VER paper's emergent-navigation experiment).

Effects checked: every atom the step adds, except `in` (which container region an object lies in
is bookkeeping the goal never asks for). Skills never end the episode: their stop output only
ends the skill; the agent sends the env's stop once, at the end.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from eval.agent_config import AGENT_TYPES, AgentSettings
from eval.agent_motions import StepFn, WedgeWatch, arm_toward_rest, drive_straight, turn_toward
from eval.call_guards import PushGuard, ReleaseGate, ShutGuard
from eval.episode_outcome import EpisodeOutcome, EpisodeRun, SkillRun
from eval.floor_watch import FloorWatch
from eval.oracle_controllers import SkillController
from eval.skill_library import CheckpointMissing
from planner.fixed_plan import fixed_steps, renavigate_after, without_robot_at
from planner.grounding import SkillCall, SkillTarget, ground_action
from planner.predicates import SymbolicInputs, load_planner_cfg
from planner.problem import build_planner
from planner.search import GroundAction, PlanningError, replan
from rearrange.actions import ACTION_DIM, ACTION_SLICES, subset_entries
from rearrange.arm_rest import RESET_ARM_TOLERANCE, arm_rest_command, arm_rest_error
from rearrange.robot import ARM_JOINTS
from rearrange.sensors import SensorTarget, goal_path_compass, observe
from rearrange.tasks.skill_tasks import load_skill_config
from skills.definitions import SkillDef, SkillMonitor

STOP = ACTION_SLICES["stop"].start
BASE = ACTION_SLICES["base"]
ARM = ACTION_SLICES["arm"]
# what the termination predicates read (skills.definitions); computed every step for every agent
MONITOR_KEYS = ("is_holding", "relative_resting_position")
UNCHECKED_EFFECTS = ("in",)


def sensor_target(target: SkillTarget) -> SensorTarget:
    """The env's sensor target for a grounded skill target (same field names)."""
    return SensorTarget(
        object=target.object,
        goal_pos=None if target.goal_pos is None else np.asarray(target.goal_pos, dtype=np.float64),
        handle=target.handle,
        nav_goal=None if target.nav_goal is None else np.asarray(target.nav_goal, dtype=np.float64),
    )


def call_label(call: SkillCall) -> str:
    """`skill(arg, ...)`, e.g. `pick(obj_3)`, for logs, videos and failure records."""
    return f"{call.skill}({', '.join(call.args)})"


# ----------------------------------------------------------------------------- skill controllers


def grip_disabled(skill: SkillDef) -> bool:
    """The env ignores the grip entry (keeps the grasp state) for skills without a grip output and
    for the close skills (habitat `disable_grip`)."""
    if "grip" not in skill.action_subsets:
        return True
    art = load_skill_config(skill.name).get("articulated") or {}
    return bool(art.get("disable_grip", False))


# what an observer sees after every env step (videos): the env, its info, the active call label
StepObserver = Callable[[Any, Mapping[str, float], str], None]


# ----------------------------------------------------------------------------- the agent


class HabAgent:
    """Planner + skills. `skills(name)` gives the controller of a skill (oracle or learned); `settings` how
    the plan is run (default: the plain agent, no re-plans; `make_agent` reads configs/eval_hab.yaml's)."""

    def __init__(self, agent_type: str, skills: Callable[[str], SkillController],
                 settings: AgentSettings | None = None, planner_cfg: Mapping[str, Any] | None = None) -> None:
        s = AgentSettings() if settings is None else settings
        if agent_type not in AGENT_TYPES:
            raise ValueError(f"unknown agent '{agent_type}'; valid choices: {', '.join(AGENT_TYPES)}")
        self.agent_type = agent_type
        self.skills = skills
        self.settings = s
        self.planner_cfg = load_planner_cfg() if planner_cfg is None else planner_cfg
        self.use_nav = agent_type != "tp-srl-nonav"
        replan_mode = s.mode == "replan"  # fixed mode: habitat's skills as they are, no guard or scripted motion
        self.nav_unstick_steps = s.nav_unstick_steps if replan_mode else 0
        self.nav_face_path = s.nav_face_path and replan_mode
        self.release_gate = ReleaseGate(s.release_guard, s.release_settle_steps, s.release_settle_speed) \
            if replan_mode else ReleaseGate()
        self.push_guard = PushGuard(s.pick_push_guard if replan_mode else 0.0)
        self.shut_guard = ShutGuard(s.place_shut_guard if replan_mode else 0.0)
        self.pick_base_scale = s.pick_base_scale if replan_mode else 1.0
        self.pick_base_smoothing = s.pick_base_smoothing if replan_mode else 0.0
        self.rest_arm_during_nav = s.rest_arm_during_nav and replan_mode
        # called as `on_skill_start(env, call, retry)` just before a skill call's first step (after its
        # arm reset and back-off), e.g. to save the states a skill starts from (eval/skill_starts.py)
        self.on_skill_start: Callable[[Any, SkillCall, bool], None] | None = None

    def executes(self, call_skill: str) -> bool:
        """Whether this agent runs a skill (nonav drops nav steps)."""
        return self.use_nav or call_skill != "nav"

    def run_episode(self, env: Any, episode_index: int, observer: StepObserver | None = None) -> EpisodeOutcome:
        """Run one episode of `env` (a `RearrangeEnv` over a `HabTask`) to its end."""
        env.reset(options={"episode_index": int(episode_index)})
        task, episode = env.task, env.current_episode
        problem = task.problem
        run = EpisodeRun(episode_id=str(episode.episode_id), floor=FloorWatch(t.object for t in episode.targets))
        try:
            planner = build_planner(problem, self.planner_cfg)
            plan = planner.plan()
        except PlanningError:
            run.end_reason, run.failed = "planner", ("planner", "planner")
            return self._finish(env, run, observer, call_stop=True)
        if self.settings.mode == "fixed":
            return self._run_fixed(env, run, planner, plan, observer)
        believed = planner.init
        queue: deque[GroundAction] = deque(plan)
        while True:
            if not queue:
                if self.settings.settle_steps > 0 and self._wait(env, run, observer, self.settings.settle_steps):
                    return self._finish(env, run, observer, call_stop=False)
                observed = task.symbolic_state(env.sim)
                if problem.goal <= observed:
                    break
                if not self._replan(run, planner, observed, queue, ("plan", "plan")):
                    break
                believed = self._replanned_state(planner, observed)
                continue
            action = queue.popleft()
            call = ground_action(action, problem, SymbolicInputs.from_sim(env.sim))
            after = planner.apply(believed, action)
            expected = {a for a in after - believed if a[0] not in UNCHECKED_EFFECTS}
            believed = after
            if not self.executes(call.skill):
                continue
            ended = self._run_skill(env, call, run, observer)
            if ended:
                return self._finish(env, run, observer, call_stop=False)
            observed = task.symbolic_state(env.sim)
            holds = expected <= observed
            run.skill_runs[-1].effects_hold = holds
            if not holds:
                if not self._replan(run, planner, observed, queue, (call.skill, call_label(call))):
                    break
                believed = self._replanned_state(planner, observed)
        return self._finish(env, run, observer, call_stop=True)

    def _run_fixed(self, env: Any, run: EpisodeRun, planner: Any, plan: Sequence[GroundAction],
                   observer: StepObserver | None) -> EpisodeOutcome:
        """Fixed mode: every step of the initial plan in order, then the wait and the stop; effects
        are checked for the record only (the module docstring)."""
        task = env.task
        steps = fixed_steps(planner, renavigate_after(plan, self.settings.fixed_renavigate_after),
                            unchecked=UNCHECKED_EFFECTS)
        for step in steps:
            call = ground_action(step.action, task.problem, SymbolicInputs.from_sim(env.sim))
            if not self.executes(call.skill):
                continue
            if self._run_skill(env, call, run, observer):
                return self._finish(env, run, observer, call_stop=False)
            holds = step.expected <= task.symbolic_state(env.sim)
            run.skill_runs[-1].effects_hold = holds
            if not holds and run.first_failure is None:
                run.first_failure = (call.skill, call_label(call))
        if self.settings.settle_steps > 0 and self._wait(env, run, observer, self.settings.settle_steps):
            return self._finish(env, run, observer, call_stop=False)
        return self._finish(env, run, observer, call_stop=True)

    # ------------------------------------------------------------------ pieces

    def _replan(self, run: EpisodeRun, planner: Any, observed: frozenset, queue: deque,
                failed: tuple[str, str]) -> bool:
        """Re-plan from `observed` into `queue`; False when the budget is spent or no plan exists."""
        run.failed = failed
        if run.replans >= self.settings.max_replans:
            run.end_reason = "replans_exhausted"
            return False
        run.replans += 1
        if self.settings.renavigate:  # approach again before retrying: the robot is "at" nothing
            observed = without_robot_at(observed)
        try:
            new_plan = replan(planner, observed)
        except PlanningError:
            run.end_reason = "planner"
            return False
        queue.clear()
        queue.extend(new_plan)
        return True

    def _replanned_state(self, planner: Any, observed: frozenset) -> frozenset:
        """The state a re-plan started from (what the agent believes after re-planning)."""
        if self.settings.renavigate:
            observed = without_robot_at(observed)
        return planner.check_state(observed) | planner.static_facts

    def _run_skill(self, env: Any, call: SkillCall, run: EpisodeRun, observer: StepObserver | None) -> bool:
        """Run one skill call; True if the episode ended during it (truncation, force limit, or a
        re-plan calling a learned skill that has no checkpoint: end reason `no_checkpoint`)."""
        label = call_label(call)
        try:
            controller = self.skills(call.skill)
        except CheckpointMissing:
            run.end_reason, run.failed = "no_checkpoint", (call.skill, label)
            return True
        retry = any(r.label == label for r in run.skill_runs)  # this call ran before in the episode
        # `agent.rest_arm_during_nav`: a nav (which never moves the arm) rests the arm while it drives
        rest_while_driving = call.skill == "nav" and self.rest_arm_during_nav
        reset_first = self._wants_arm_reset(run, retry) and not rest_while_driving
        if reset_first and self._reset_arm_to_rest(env, run, observer):
            return True
        if self._wants_backoff(run, retry):
            if self._back_off(env, run, observer):
                return True
            # a reset the furniture blocked (arm jammed in a shelf) gets a second go from the backed-off base
            if reset_first and self._reset_arm_to_rest(env, run, observer):
                return True
        skill = controller.skill
        target = sensor_target(call.target)
        env.task.point_sensors(target, grip_disabled=grip_disabled(skill))
        sim = env.sim
        if self.on_skill_start is not None:
            self.on_skill_start(env, call, retry)
        run.active = (call.skill, label)
        controller.start(sim, target, retry=retry)
        keys = tuple(dict.fromkeys((*MONITOR_KEYS, *env.task.obs_keys)))
        obs = observe(sim, target, keys)
        monitor = SkillMonitor(skill)
        monitor.reset(obs)
        record = SkillRun(label=label, skill=call.skill, steps=0, outcome="timeout", effects_hold=False)
        run.skill_runs.append(record)
        if self.nav_face_path and target.nav_goal is not None and \
                abs(path_bearing(sim, target)) > FACE_PATH_BEHIND:
            # `agent.nav_face_path`: a nav whose path leads off behind it first turns to face it (the steps count
            # towards the call's timeout), so it does not reverse blind along it
            if turn_toward(sim, self._stepper(env, run, record, observer), lambda: path_bearing(sim, target),
                           monitor.steps_left):
                return True
            if monitor.spend(record.steps):
                return False
            obs = observe(sim, target, keys)
        watch = WedgeWatch(self.nav_unstick_steps) \
            if call.skill in self.settings.unstick_skills and self.nav_unstick_steps > 0 else None
        gate = self.release_gate if call.skill == "place" and self.release_gate.active else None
        if gate is not None:
            gate.start(sim, call.target.object, call.target.goal_pos)
        push = self.push_guard if call.skill == "pick" and self.push_guard.active else None
        if push is not None:
            push.start(sim, call.target.object)
        shut = self.shut_guard if call.skill == "place" and self.shut_guard.active else None
        if shut is not None:  # the containers the goal lies in
            shut.start(sim, env.task.problem.containers_of(call.target.entity))
        base_before: np.ndarray | None = None  # the pick's last base command (`agent.pick_base_smoothing`)
        while True:
            full = controller.act(sim, obs)
            skill_action = full.copy()
            full[STOP] = 0.0  # a skill's stop ends the skill, never the episode
            if call.skill == "pick":
                full[BASE] *= self.pick_base_scale  # `agent.pick_base_scale`: the whole call's base slowed
                if self.pick_base_smoothing > 0.0:  # `agent.pick_base_smoothing`: a step-to-step flip averaged out
                    if base_before is not None:
                        full[BASE] = self.pick_base_smoothing * base_before + (1.0 - self.pick_base_smoothing) * full[BASE]
                    base_before = full[BASE].copy()
            if rest_while_driving:
                full[ARM] = arm_rest_command(sim)
            if gate is not None and (verdict := gate.check(sim, full)) is not None:
                record.blocked_releases += verdict == "held"
                record.settles += verdict == "settled"
            env_obs, ended = self._step_env(env, full, run, record, observer, label)
            if ended:
                return True
            obs = dict(env_obs)
            obs.update(observe(sim, target, MONITOR_KEYS))
            done, timed_out = monitor.step(obs, _subset(skill, skill_action))
            if done:
                record.outcome = "timeout" if timed_out else "done"
                return False
            if push is not None and push.pushed(sim):
                record.outcome = "pushed"  # `agent.pick_push_guard`: ended before the target goes over an edge
                return False
            if shut is not None and shut.shut(sim):
                record.outcome = "shut"  # `agent.place_shut_guard`: ended before a release where the drawer was
                return False
            if watch is not None and (away := watch.step(sim, full)) != 0.0:
                # `agent.nav_unstick_steps`: drive out of the wedge (its steps count towards the call's
                # timeout, which also cuts the drive short), then the policy goes on as on a retry (sampled
                # with `sample_retries`)
                before = record.steps
                stepper = self._stepper(env, run, record, observer)
                if drive_straight(sim, stepper, away, self.settings.nav_unstick_distance, slide=True,
                                  step_limit=monitor.steps_left):
                    return True
                # `agent.nav_unstick_turn`: face the way the nav's own path compass points, so the policy
                # drives on forward instead of reversing back into the wedge
                if self.settings.nav_unstick_turn and target.nav_goal is not None and \
                        turn_toward(sim, stepper, lambda: path_bearing(sim, target),
                                    monitor.steps_left - (record.steps - before)):
                    return True
                record.unsticks += 1
                if monitor.spend(record.steps - before):
                    return False  # the drive used the call's last steps: a timeout (the record's outcome)
                controller.start(sim, target, retry=True)
                obs = dict(observe(sim, target, keys))
                watch.clear()

    def _wants_arm_reset(self, run: EpisodeRun, retry: bool) -> bool:
        """`agent.reset_arm`: before every skill but the episode's first (`between`, habitat's
        add_arm_rest), before a retried call (`retries`), or `never`."""
        if self.settings.reset_arm == "between":
            return any(r.skill != "reset_arm" for r in run.skill_runs)
        return self.settings.reset_arm == "retries" and retry

    def _reset_arm_to_rest(self, env: Any, run: EpisodeRun, observer: StepObserver | None) -> bool:
        """habitat-lab's reset_arm skill: joint-space P control of the arm toward its resting joints
        (base still, grasp kept) until every joint is within RESET_ARM_TOLERANCE or
        `reset_arm_max_steps` steps; True if the episode ended meanwhile. Ours, both off by default:
        `reset_arm_stall_steps` > 0 ends it when the arm came less than RESET_ARM_STALL_PROGRESS closer to
        rest over that many steps (outcome "stalled": the arm pushes against furniture or the floor, and
        waiting spends the episode's steps); `reset_arm_lift_first` first raises a lowered shoulder alone
        (a straight line in joint space can drive a low gripper into the floor or a shelf on its way)."""
        sim = env.sim
        if arm_rest_error(sim) < RESET_ARM_TOLERANCE:
            return False  # already at rest: nothing to run or record
        record = self._begin_primitive(env, run, "reset_arm", "reset_arm")
        joint = np.arange(len(ARM_JOINTS))
        phases = [joint >= 0]  # every joint
        lift = ARM_JOINTS.index("shoulder_lift_joint")
        lowered = sim.arm_qpos[lift] - sim.REST_ARM_QPOS[lift] > RESET_ARM_TOLERANCE
        if self.settings.reset_arm_lift_first and lowered:
            phases.insert(0, joint == lift)  # the shoulder alone first (positive shoulder_lift lowers the arm)
        steps_left = self.settings.reset_arm_max_steps
        step = self._stepper(env, run, record, observer)
        for joints in phases:
            ended, outcome, steps_left = arm_toward_rest(sim, step, joints, steps_left,
                                                         self.settings.reset_arm_stall_steps)
            if ended:
                return True
        record.outcome = outcome
        return False

    def _wants_backoff(self, run: EpisodeRun, retry: bool) -> bool:
        """`agent.retry_backoff` > 0: before a retried call, unless it follows a nav that arrived
        (the approach for this retry; an arm reset in between does not count). A nav that failed
        does not count either: its retry backs off too."""
        if not retry or self.settings.retry_backoff <= 0:
            return False
        before = [r for r in run.skill_runs if r.skill != "reset_arm"]
        return not before or not (before[-1].skill == "nav" and before[-1].effects_hold)

    def _back_off(self, env: Any, run: EpisodeRun, observer: StepObserver | None) -> bool:
        """Before a retry (not right after a nav): drive straight back `retry_backoff` metres (full
        reverse command, arm still, grasp kept; stops early when the base is blocked, or turns forward
        with `retry_backoff_forward`), so the retry does not start from the pose the failed call got stuck
        in. True if the episode ended."""
        record = self._begin_primitive(env, run, "back_off", "back_off")
        return drive_straight(env.sim, self._stepper(env, run, record, observer), -1.0, self.settings.retry_backoff,
                              turn_when_wedged=self.settings.retry_backoff_forward)

    def _wait(self, env: Any, run: EpisodeRun, observer: StepObserver | None, steps: int) -> bool:
        """Stand still (arm, base, grasp unchanged) for `steps` steps so that placed objects come to
        rest before the goal is checked (habitat's fixed policy appends wait(30)); True if the
        episode ended meanwhile."""
        record = self._begin_primitive(env, run, "wait", f"wait({steps})")
        for _ in range(steps):
            _, ended = self._step_env(env, np.zeros(ACTION_DIM), run, record, observer, record.label)
            if ended:
                return True
        return False

    @staticmethod
    def _begin_primitive(env: Any, run: EpisodeRun, skill: str, label: str) -> SkillRun:
        """Start a scripted step of the agent (wait, reset_arm, back_off): the active call, the grasp
        kept as it is, and its record (outcome "done" until it says otherwise)."""
        run.active = (skill, label)
        env.keep_grasp()
        record = SkillRun(label=label, skill=skill, steps=0, outcome="done", effects_hold=True)
        run.skill_runs.append(record)
        return record

    @staticmethod
    def _step_env(env: Any, action: np.ndarray, run: EpisodeRun, record: SkillRun,
                  observer: StepObserver | None, label: str) -> tuple[dict, bool]:
        """One env step with the episode's and the skill run's bookkeeping; (obs, episode ended)."""
        obs, reward, terminated, truncated, info = env.step(action)
        run.steps += 1
        run.reward += float(reward)
        run.info = info
        record.steps += 1
        if run.floor is not None:
            run.floor.step(env.sim, label)
        if observer is not None:
            observer(env, info, label)
        if terminated or truncated:
            record.outcome = "episode_end"
            run.end_reason = "force" if info.get("force_terminate", 0.0) > 0 else "truncated"
            run.failed = run.active
            return obs, True
        return obs, False

    def _stepper(self, env: Any, run: EpisodeRun, record: SkillRun,
                 observer: StepObserver | None) -> StepFn:
        """`step(action) -> episode ended` for a scripted motion (eval/agent_motions.py), recorded as `record`."""
        return lambda action: self._step_env(env, action, run, record, observer, record.label)[1]

    def _finish(self, env: Any, run: EpisodeRun, observer: StepObserver | None, call_stop: bool) -> EpisodeOutcome:
        success = False
        if call_stop:
            stop = np.zeros(ACTION_DIM)
            stop[STOP] = 1.0
            env.keep_grasp()  # on the stop step
            _, reward, terminated, truncated, info = env.step(stop)
            run.steps += 1
            run.reward += float(reward)
            run.info = info
            success = bool(info.get("success", 0.0) > 0)
            if observer is not None:
                observer(env, info, "stop")
            if run.end_reason == "":
                run.end_reason = "stop"
            if not success and run.failed is None:
                run.failed = ("stop", "stop")
        else:
            success = bool(run.info.get("success", 0.0) > 0)
        stages = {name: bool(run.info.get(f"stage/{name}", 0.0) > 0) for name in env.task.stage_names}
        failed = None if success else run.first_failure or run.failed
        return EpisodeOutcome(
            episode_id=run.episode_id, success=success, stages=stages,
            failed_skill=None if failed is None else failed[0], failed_call=None if failed is None else failed[1],
            num_replans=run.replans, steps=run.steps, reward=run.reward,
            end_reason="stop" if success else run.end_reason or "stop", skill_runs=run.skill_runs,
            floor_drops=[] if run.floor is None else list(run.floor.drops))


FACE_PATH_BEHIND = np.pi / 2  # rad: `agent.nav_face_path` turns a nav whose path bearing is beyond this first


def path_bearing(sim: Any, target: SensorTarget) -> float:
    """The bearing (rad, base frame, > 0: left) of the shortest path to `target`'s nav goal, as the nav's
    `goal_path_compass` reads it."""
    _, cos, sin = goal_path_compass(sim, target)
    return float(np.arctan2(sin, cos))


def _subset(skill: SkillDef, full: np.ndarray) -> np.ndarray:
    """The skill's own action entries of a full action (what its stop value is read from)."""
    return subset_entries(skill.action_subsets, full)
