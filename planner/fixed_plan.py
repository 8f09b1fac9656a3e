"""The fixed high-level policy's plan: the initial plan, followed step by step whatever happens.

habitat-lab's TP-SRL (`FixedHighLevelPolicy`) runs the problem's solution in order, each skill until
its termination predicate or timeout, and never looks at the symbolic state. Two helpers for an
agent doing the same with our planner's initial plan:

- `renavigate_after(plan, actions)`: a `nav` to the next step's target inserted after every step
  whose action is in `actions`. The VER paper (appendix B) adds one on Set Table after open_cab,
  "as the open cabinet skill with base movement tends to move away from the cabinet": after
  `(open_cab drawer_0)` comes `(nav obj_0)`, then `(pick obj_0)`.
- `fixed_steps(planner, plan)`: each step with the atoms it is expected to add, from the state the
  planner believes along the plan. The agent checks them after the skill for reporting only (the
  first call whose effects did not hold is the failed skill); they decide nothing.

A `nav` expects `robot_at` its target even where the planner believed the robot was there already
(the inserted nav follows `nav_to_receptacle`, which put the robot "at" the object in the drawer):
its expected effects are taken from the believed state without `robot_at`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from planner.search import Atom, GroundAction, Planner, State

NAV_ACTIONS = ("nav", "nav_to_receptacle")


def step_entity(action: GroundAction) -> str | None:
    """The entity a pick or place acts at (the object picked, the goal placed at); None otherwise."""
    if action.name == "pick":
        return action.args[0]
    if action.name == "place":
        return action.args[1]
    return None


def renavigate_after(plan: Sequence[GroundAction], actions: Collection[str]) -> list[GroundAction]:
    """`plan` with `(nav X)` inserted after each step named in `actions` that is followed by a pick
    or place at X (nothing is inserted before a step that is already a nav, or at the end)."""
    out: list[GroundAction] = []
    for i, action in enumerate(plan):
        out.append(action)
        if action.name not in actions or i + 1 >= len(plan):
            continue
        entity = step_entity(plan[i + 1])
        if entity is not None:
            out.append(GroundAction("nav", (entity,)))
    return out


@dataclass(frozen=True)
class FixedStep:
    """One step of a fixed plan and the atoms it is expected to add (checked for reporting only)."""

    action: GroundAction
    expected: frozenset[Atom]


def without_robot_at(state: State) -> State:
    """`state` with the robot at nothing (a navigation is needed before acting at any entity)."""
    return frozenset(a for a in state if a[0] != "robot_at")


def fixed_steps(planner: Planner, plan: Iterable[GroundAction], state: Iterable[Atom] | None = None,
                unchecked: Collection[str] = ()) -> list[FixedStep]:
    """Each step of `plan` with its expected effects, applied in order from `state` (default: the
    problem's init); atoms of the predicates in `unchecked` are left out of the expectations.
    ValueError if a step (other than a nav) is not applicable in the state believed before it."""
    believed = planner.init if state is None else planner.check_state(state) | planner.static_facts
    out: list[FixedStep] = []
    for action in plan:
        before = without_robot_at(believed) if action.name in NAV_ACTIONS else believed
        after = planner.apply(before, action)
        out.append(FixedStep(action, frozenset(a for a in after - before if a[0] not in unchecked)))
        believed = after
    return out
