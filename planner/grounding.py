"""Plan step -> skill call: which skill the agent runs next and what its sensors point at.

`ground_action(action, problem, inputs)` turns a `GroundAction` of a plan into a `SkillCall`:
the skill name (one of `rearrange.episodes.SKILL_KINDS`), the PDDL arguments, and a `SkillTarget`
whose fields carry the same names as `rearrange.sensors.SensorTarget` (object, goal_pos, handle,
nav_goal), resolved against the current state (`SymbolicInputs`): an object moves, so a nav to it
goes to where it is now; a nav to a container goes to its handle, which moves as it opens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.predicates import SymbolicInputs
from planner.problem import ScenarioProblem
from planner.search import GroundAction

# PDDL action -> skill; mirrors `hab.pddl_actions` of configs/skill/*.yaml (a test keeps them equal).
SKILL_OF_ACTION = {
    "nav": "nav",
    "nav_to_receptacle": "nav",
    "pick": "pick",
    "place": "place",
    "open_fridge": "open_fridge",
    "close_fridge": "close_fridge",
    "open_cab": "open_cab",
    "close_cab": "close_cab",
}

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class SkillTarget:
    """What a skill acts on; field names follow `rearrange.sensors.SensorTarget`.

    entity: the PDDL entity the step is about ("obj_2", "goal_obj_2", "fridge");
    kind: "object" | "goal" | "container"; object: the sim object a pick/place handles (and the
    object a nav goes to or places); goal_pos: that object's goal; handle: the handle marker of
    an open/close (or of a nav to a container); nav_goal: the world point a nav drives to.
    """

    entity: str
    kind: str
    object: str | None = None
    goal_pos: Vec3 | None = None
    handle: str | None = None
    nav_goal: Vec3 | None = None


@dataclass(frozen=True)
class SkillCall:
    """One step for the agent: run `skill` (until its termination or timeout) on `target`."""

    skill: str
    args: tuple[str, ...]
    target: SkillTarget


def _vec3(v) -> Vec3:
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    return (float(a[0]), float(a[1]), float(a[2]) if a.size > 2 else 0.0)


def _object_target(problem: ScenarioProblem, inputs: SymbolicInputs, obj: str, with_nav: bool) -> SkillTarget:
    if obj not in inputs.object_pos:
        raise KeyError(f"object '{obj}' is not in the simulator state")
    goal = problem.goals[problem.objects.index(obj)]
    return SkillTarget(
        entity=obj,
        kind="object",
        object=obj,
        goal_pos=_vec3(problem.goal_pos[goal]),
        nav_goal=_vec3(inputs.object_pos[obj]) if with_nav else None,
    )


def _goal_target(problem: ScenarioProblem, goal: str, with_nav: bool) -> SkillTarget:
    pos = _vec3(problem.goal_pos[goal])
    return SkillTarget(entity=goal, kind="goal", object=problem.object_of_goal(goal), goal_pos=pos,
                       nav_goal=pos if with_nav else None)


def _container_target(problem: ScenarioProblem, inputs: SymbolicInputs, name: str, with_nav: bool) -> SkillTarget:
    info = problem.container(name)
    nav_goal = None
    if with_nav:
        if info.handle not in inputs.handle_pos:
            raise KeyError(f"handle '{info.handle}' of '{name}' is not in the simulator state")
        nav_goal = _vec3(inputs.handle_pos[info.handle])
    return SkillTarget(entity=name, kind="container", handle=info.handle, nav_goal=nav_goal)


def _entity_target(problem: ScenarioProblem, inputs: SymbolicInputs, entity: str, with_nav: bool) -> SkillTarget:
    kind = problem.entity_kind(entity)
    if kind == "object":
        return _object_target(problem, inputs, entity, with_nav)
    if kind == "goal":
        return _goal_target(problem, entity, with_nav)
    return _container_target(problem, inputs, entity, with_nav)


def ground_action(action: GroundAction, problem: ScenarioProblem, inputs: SymbolicInputs) -> SkillCall:
    """The skill call of one plan step, resolved against the current state."""
    if action.name not in SKILL_OF_ACTION:
        raise ValueError(f"unknown plan action '{action.name}'; valid choices: {', '.join(SKILL_OF_ACTION)}")
    skill = SKILL_OF_ACTION[action.name]
    args = tuple(action.args)
    if action.name == "nav":
        target = _entity_target(problem, inputs, args[0], with_nav=True)
    elif action.name == "nav_to_receptacle":
        target = _container_target(problem, inputs, args[0], with_nav=True)
    elif action.name == "pick":
        target = _object_target(problem, inputs, args[0], with_nav=False)
    elif action.name == "place":
        target = _goal_target(problem, args[1], with_nav=False)
    else:  # open/close a container
        target = _container_target(problem, inputs, args[0], with_nav=False)
    return SkillCall(skill=skill, args=args, target=target)
