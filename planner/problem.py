"""PDDL problems of the HAB scenarios, generated from an `Episode` of a scenario dataset.

`problem_from_episode(episode, layout, scenario_cfg, thresholds)` collects the entities of one
episode: its target objects (in target order), one goal entity per target (`goal_obj_3` is where
`obj_3` has to go), and the containers (fridge, drawers) that hold a target object or a goal. The
initial state has `in` for each object and goal inside a container, the containers' opened/closed
state from the episode's joint values, `goal_of` and `hand_empty`; the robot is at none of them
(the agent navigates first, as in habitat's fixed solutions). The goal is every target object at
its goal with the hand empty; with `close_containers: true` in the scenario config it also asks
to close every container that started closed.

The problem also defines the stages reported by the evaluation (VER paper Fig. 6, ManiSkill-HAB's
progressive completion): `open_k` before the first pick that needs container k, then `pick_i`,
`place_i` per target, and with `close_containers` a `close_k` after the last place that used k.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from planner.pddl_io import load_domain, parse_problem_text
from planner.predicates import Atom, PredicateThresholds, container_state_atoms
from planner.search import Planner

SCENARIOS = ("tidy_house", "prepare_groceries", "set_table")
_PDDL_TYPE_OF_JOINT = {"hinge": "fridge", "slide": "cab"}


def load_scenario_cfg(name: str) -> DictConfig:
    """`configs/scenario/<name>.yaml`; ValueError naming the valid scenarios for an unknown name."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario '{name}'; valid choices: {', '.join(SCENARIOS)}")
    text = resources.files("configs").joinpath("scenario", f"{name}.yaml").read_text()
    cfg = OmegaConf.create(text)
    assert isinstance(cfg, DictConfig)
    return cfg


def goal_entity(obj: str) -> str:
    """Name of the goal entity of a target object."""
    return f"goal_{obj}"


@dataclass(frozen=True)
class ContainerInfo:
    """An articulated container in a problem: PDDL type, handle, and where the robot stands to open it."""

    name: str
    pddl_type: str  # "fridge" | "cab"
    handle: str
    front_xy: tuple[float, float]
    facing_yaw: float


@dataclass(frozen=True)
class Stage:
    """An evaluation stage: reached when all `atoms` hold and the `requires` stages were reached."""

    name: str
    atoms: frozenset[Atom]
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScenarioProblem:
    """The symbolic problem of one scenario episode (entities, init, goal, stages)."""

    name: str
    scenario: str
    episode_id: str
    objects: tuple[str, ...]  # target objects, in target order
    goals: tuple[str, ...]  # goal entity of each target object, same order
    start_pos: Mapping[str, tuple[float, float, float]]  # object -> start position
    goal_pos: Mapping[str, tuple[float, float, float]]  # goal entity -> goal position
    containers: tuple[ContainerInfo, ...]  # in order of first use
    init: frozenset[Atom]
    goal: frozenset[Atom]  # conjunction of positive atoms
    stages: tuple[Stage, ...]

    def container(self, name: str) -> ContainerInfo:
        for c in self.containers:
            if c.name == name:
                return c
        raise KeyError(f"problem {self.name} has no container '{name}'")

    def object_of_goal(self, goal: str) -> str:
        return self.objects[self.goals.index(goal)]

    def entity_kind(self, entity: str) -> str:
        """"object", "goal" or "container"."""
        if entity in self.objects:
            return "object"
        if entity in self.goals:
            return "goal"
        if any(c.name == entity for c in self.containers):
            return "container"
        raise KeyError(f"problem {self.name} has no entity '{entity}'")

    def containers_of(self, entity: str) -> list[str]:
        """The containers `entity` lies in at the start (a goal's never change: `static_facts`), sorted."""
        return sorted(a[2] for a in self.init if a[0] == "in" and a[1] == entity)

    def entity_rank(self) -> dict[str, int]:
        """Tie-break rank for the planner: target index; a container ranks with its first target."""
        rank = {o: i for i, o in enumerate(self.objects)}
        rank.update({g: i for i, g in enumerate(self.goals)})
        for c in self.containers:
            users = [rank[a[1]] for a in self.init if a[0] == "in" and a[2] == c.name]
            rank[c.name] = min(users, default=len(self.objects))
        return rank

    def static_facts(self) -> frozenset[Atom]:
        """Facts no action changes: goal_of, and which goals lie inside which container."""
        return frozenset(a for a in self.init if a[0] == "goal_of" or (a[0] == "in" and a[1] in self.goals))

    def to_pddl(self, init: frozenset[Atom] | None = None) -> str:
        """The PDDL problem text (with another initial state if `init` is given)."""
        init = self.init if init is None else init
        lines = [f"(define (problem {self.name})", "  (:domain hab_rearrange)", "  (:objects"]
        lines.append(f"    {' '.join(self.objects)} - movable")
        lines.append(f"    {' '.join(self.goals)} - goal")
        for kind in ("fridge", "cab"):
            names = [c.name for c in self.containers if c.pddl_type == kind]
            if names:
                lines.append(f"    {' '.join(names)} - {kind}")
        lines.append("  )")
        lines.append("  (:init")
        lines.extend(f"    {_atom_text(a)}" for a in sorted(init))
        lines.append("  )")
        lines.append("  (:goal (and")
        lines.extend(f"    {_atom_text(a)}" for a in sorted(self.goal))
        lines.append("  ))")
        lines.append(")")
        return "\n".join(lines) + "\n"


def _atom_text(atom: Atom) -> str:
    return f"({' '.join(atom)})"


def _pddl_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", text)
    return name if name[:1].isalpha() else f"p_{name}"


def problem_from_episode(
    episode: Any, layout: Any, scenario_cfg: Mapping[str, Any], thresholds: PredicateThresholds
) -> ScenarioProblem:
    """The PDDL problem of a scenario episode (`rearrange.episodes.Episode`).

    `layout` is the episode's `ApartmentLayout` (its `receptacles` and `articulated`); ValueError
    with a one-line message if the episode does not match the scenario or the layout.
    """
    scenario = str(scenario_cfg["name"])
    where = f"episode '{episode.episode_id}'"
    if episode.kind != scenario:
        raise ValueError(f"{where} is a '{episode.kind}' episode, not '{scenario}'")
    if not episode.targets:
        raise ValueError(f"{where} has no targets")
    specs = {o.name: o for o in episode.objects}

    def container_of(receptacle: str) -> str | None:
        if receptacle not in layout.receptacles:
            raise ValueError(f"{where} names receptacle '{receptacle}', which layout {layout.seed} does not have")
        return layout.receptacles[receptacle].container

    objects, goals, init = [], [], {("hand_empty",)}
    start_pos, goal_pos = {}, {}
    used: list[str] = []  # containers in order of first use
    uses: dict[str, list[tuple[int, str]]] = {}  # container -> [(target index, "object"|"goal")]
    for i, t in enumerate(episode.targets):
        if t.object not in specs:
            raise ValueError(f"{where} target {i} names object '{t.object}', which the episode does not have")
        if t.object in objects:
            raise ValueError(f"{where} lists object '{t.object}' as a target twice")
        g = goal_entity(t.object)
        objects.append(t.object)
        goals.append(g)
        start_pos[t.object] = tuple(float(v) for v in specs[t.object].pos)
        goal_pos[g] = tuple(float(v) for v in t.goal_pos)
        init.add(("goal_of", g, t.object))
        for entity, receptacle, role in ((t.object, specs[t.object].receptacle, "object"), (g, t.goal_receptacle, "goal")):
            c = container_of(receptacle)
            if c is None:
                continue
            init.add(("in", entity, c))
            if c not in used:
                used.append(c)
            uses.setdefault(c, []).append((i, role))

    containers = []
    for c in used:
        if c not in layout.articulated:
            raise ValueError(f"receptacle container '{c}' is not an articulated object of layout {layout.seed}")
        art = layout.articulated[c]
        if art.joint_type not in _PDDL_TYPE_OF_JOINT:
            raise ValueError(f"container '{c}' has joint type '{art.joint_type}'; valid choices: hinge, slide")
        if c not in episode.art_states:
            raise ValueError(f"{where} has no joint state for container '{c}'")
        info = ContainerInfo(
            name=c,
            pddl_type=_PDDL_TYPE_OF_JOINT[art.joint_type],
            handle=art.handle,
            front_xy=(float(art.front_center[0]), float(art.front_center[1])),
            facing_yaw=float(art.facing_yaw),
        )
        containers.append(info)
        init |= container_state_atoms(c, info.pddl_type, float(episode.art_states[c]), thresholds)

    goal = {("hand_empty",)} | {("object_at", o, g) for o, g in zip(objects, goals, strict=True)}
    close = bool(scenario_cfg["close_containers"])
    started_closed = [c for c in containers if (f"closed_{c.pddl_type}", c.name) in init]
    if close:
        goal |= {(f"closed_{c.pddl_type}", c.name) for c in started_closed}

    stages = _stages(objects, goals, containers, uses, started_closed, close)
    return ScenarioProblem(
        name=_pddl_name(
            str(episode.episode_id) if str(episode.episode_id).startswith(scenario) else f"{scenario}_{episode.episode_id}"
        ),
        scenario=scenario,
        episode_id=str(episode.episode_id),
        objects=tuple(objects),
        goals=tuple(goals),
        start_pos=start_pos,
        goal_pos=goal_pos,
        containers=tuple(containers),
        init=frozenset(init),
        goal=frozenset(goal),
        stages=stages,
    )


def _stages(
    objects: list[str],
    goals: list[str],
    containers: list[ContainerInfo],
    uses: Mapping[str, list[tuple[int, str]]],
    started_closed: list[ContainerInfo],
    close: bool,
) -> tuple[Stage, ...]:
    """open_k / pick_i / place_i / close_k stages in the order a plan reaches them."""
    closed_names = {c.name for c in started_closed}
    open_stage: dict[str, str] = {}
    stages: list[Stage] = []
    for i, (o, g) in enumerate(zip(objects, goals, strict=True)):
        mine = [c for c in containers if any(j == i for j, _ in uses.get(c.name, []))]
        for c in mine:
            if c.name in closed_names and c.name not in open_stage:
                open_stage[c.name] = f"open_{len(open_stage)}"
                stages.append(Stage(open_stage[c.name], frozenset({(f"opened_{c.pddl_type}", c.name)})))
        stages.append(Stage(f"pick_{i}", frozenset({("holding", o)})))
        stages.append(Stage(f"place_{i}", frozenset({("object_at", o, g)}), (f"pick_{i}",)))
        if close:
            for c in mine:
                last_user = max(j for j, _ in uses[c.name])
                if c.name in closed_names and last_user == i:
                    k = open_stage[c.name].split("_")[1]
                    stages.append(Stage(f"close_{k}", frozenset({(f"closed_{c.pddl_type}", c.name)}), (open_stage[c.name],)))
    return tuple(stages)


def build_planner(problem: ScenarioProblem, planner_cfg: Mapping[str, Any]) -> Planner:
    """Parse the problem's PDDL text with the `pddl` library and ground it into a `Planner`; the same
    problem again (eval-hab plans every episode up front, then its agent plans it once more) gets the
    same `Planner`, with the plans it already found (a Planner's answers never change)."""
    rank = tuple(sorted(problem.entity_rank().items()))
    return _planner(problem.to_pddl(), rank, int(planner_cfg["search"]["max_expansions"]))


@functools.lru_cache(maxsize=64)  # a 50-episode evaluation's problems, per process
def _planner(text: str, rank: tuple[tuple[str, int], ...], max_expansions: int) -> Planner:
    domain = load_domain()
    return Planner(domain, parse_problem_text(text, domain), dict(rank), max_expansions)
