"""The symbolic state of a HAB problem read off the simulator state (habitat's PDDL predicates).

`SymbolicInputs` is the small read-only view of the world the predicates need (base position,
grasp, object positions, joint values, receptacles of the layout, handle positions); build it from
a `RearrangeSim` with `SymbolicInputs.from_sim(sim)` or from plain values in tests.
`evaluate_state(inputs, problem, thresholds)` returns the ground atoms that hold, for the entities
of one `ScenarioProblem`, with the thresholds of `configs/planner.yaml`:

- holding(o): the gripper holds o; hand_empty: it holds no object (a grasped fridge or drawer
  handle does not count: every skill controls the suction itself and can let go of a handle)
- object_at(o, g): o not held and its centre within `object_at_dist` of its goal position (3-D)
- robot_at(e): base (x, y) within `robot_at_dist` of e (an object, a goal position, or the
  floor point in front of a container where the robot stands to open it)
- in(o, c): o's centre inside the region of a receptacle that lies in container c; drawer regions
  are shifted by the drawer's joint value towards the front of the drawer
- opened_/closed_ fridge and cab: joint value against the open state and closed tolerance
- static facts of the problem (goal_of, in(goal, container)) are included, so the state is complete
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    from planner.problem import ScenarioProblem

Atom = tuple[str, ...]


def load_planner_cfg() -> DictConfig:
    """`configs/planner.yaml` (predicate thresholds and search limit)."""
    text = resources.files("configs").joinpath("planner.yaml").read_text()
    cfg = OmegaConf.create(text)
    assert isinstance(cfg, DictConfig)
    return cfg


@dataclass(frozen=True)
class PredicateThresholds:
    """Thresholds of the symbolic predicates; see configs/planner.yaml `predicates`."""

    robot_at_dist: float
    object_at_dist: float
    fridge_open_state: float
    fridge_open_margin: float
    fridge_closed_tol: float
    cab_open_state: float
    cab_open_margin: float
    cab_closed_tol: float
    in_xy_margin: float
    in_z_below: float
    in_z_above: float

    @classmethod
    def from_cfg(cls, cfg: Mapping[str, Any]) -> PredicateThresholds:
        """Build from the `predicates` section of the planner config; ValueError on missing/extra keys."""
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in cfg]
        extra = [k for k in cfg if k not in names]
        if missing or extra:
            raise ValueError(
                f"planner predicate config: missing keys {missing}, unknown keys {extra}; expected: {', '.join(names)}"
            )
        return cls(**{n: float(cfg[n]) for n in names})


def container_state_atoms(name: str, pddl_type: str, q: float, th: PredicateThresholds) -> set[Atom]:
    """opened_/closed_ atoms of one container (`pddl_type` "fridge" or "cab") at joint value q."""
    if pddl_type == "fridge":
        opened = q > th.fridge_open_state - th.fridge_open_margin
        closed = abs(q) < th.fridge_closed_tol
    elif pddl_type == "cab":
        opened = q > th.cab_open_state - th.cab_open_margin
        closed = abs(q) < th.cab_closed_tol
    else:
        raise ValueError(f"unknown container type '{pddl_type}'; valid choices: fridge, cab")
    atoms: set[Atom] = set()
    if opened:
        atoms.add((f"opened_{pddl_type}", name))
    if closed:
        atoms.add((f"closed_{pddl_type}", name))
    return atoms


@dataclass(frozen=True)
class SymbolicInputs:
    """Read-only view of the simulator state that the predicates and the grounding need.

    `receptacles` maps receptacle names to objects with the contract fields of
    `rearrange.layout.Receptacle` (center, half_extent, yaw, container).
    """

    base_xy: np.ndarray
    grasped: str | None
    object_pos: Mapping[str, np.ndarray]
    art_q: Mapping[str, float]
    receptacles: Mapping[str, Any]
    handle_pos: Mapping[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_sim(cls, sim: Any) -> SymbolicInputs:
        """Snapshot of a `RearrangeSim` (contract attributes only)."""
        layout = sim.layout
        return cls(
            base_xy=np.array(sim.base_xy, dtype=np.float64),
            grasped=sim.grasped,
            object_pos={n: np.array(sim.object_pos(n), dtype=np.float64) for n in sim.object_names},
            art_q={n: float(sim.art_q(n)) for n in sim.art_names},
            receptacles=dict(layout.receptacles),
            handle_pos={a.handle: np.array(sim.handle_pos(a.handle), dtype=np.float64) for a in layout.articulated.values()},
        )


def in_receptacle(
    pos: np.ndarray, receptacle: Any, th: PredicateThresholds, shift_xy: np.ndarray | None = None
) -> bool:
    """Whether a point lies in the bounding region above a receptacle's surface (shifted by shift_xy)."""
    cx, cy, cz = (float(v) for v in receptacle.center)
    if shift_xy is not None:
        cx, cy = cx + float(shift_xy[0]), cy + float(shift_xy[1])
    dx, dy = float(pos[0]) - cx, float(pos[1]) - cy
    c, s = np.cos(receptacle.yaw), np.sin(receptacle.yaw)
    lx, ly = c * dx + s * dy, -s * dx + c * dy  # into the receptacle frame
    hx, hy = (float(v) for v in receptacle.half_extent)
    return (
        abs(lx) <= hx + th.in_xy_margin
        and abs(ly) <= hy + th.in_xy_margin
        and cz - th.in_z_below <= float(pos[2]) <= cz + th.in_z_above
    )


def _drawer_shift(receptacle: Any, front_xy: tuple[float, float], q: float) -> np.ndarray:
    """How far a drawer's contents moved at joint value q: q metres towards the drawer's front."""
    d = np.asarray(front_xy, dtype=np.float64) - np.asarray(receptacle.center[:2], dtype=np.float64)
    n = float(np.linalg.norm(d))
    return np.zeros(2) if n < 1e-9 else d / n * q


def containers_of(pos: np.ndarray, inputs: SymbolicInputs, problem: ScenarioProblem, th: PredicateThresholds) -> list[str]:
    """Containers of the problem whose receptacle regions contain `pos`."""
    found = []
    for info in problem.containers:
        q = float(inputs.art_q.get(info.name, 0.0))
        for rec in inputs.receptacles.values():
            if rec.container != info.name:
                continue
            shift = _drawer_shift(rec, info.front_xy, q) if info.pddl_type == "cab" else None
            if in_receptacle(pos, rec, th, shift):
                found.append(info.name)
                break
    return found


def evaluate_state(inputs: SymbolicInputs, problem: ScenarioProblem, th: PredicateThresholds) -> frozenset[Atom]:
    """Every ground atom over the problem's entities that holds in `inputs`."""
    atoms: set[Atom] = set(problem.static_facts())
    base = np.asarray(inputs.base_xy, dtype=np.float64)[:2]

    def near(xy) -> bool:
        return float(np.linalg.norm(np.asarray(xy, dtype=np.float64)[:2] - base)) < th.robot_at_dist

    if inputs.grasped is None or inputs.grasped not in inputs.object_pos:
        atoms.add(("hand_empty",))
    for obj, goal in zip(problem.objects, problem.goals, strict=True):
        if obj not in inputs.object_pos:
            raise KeyError(f"object '{obj}' of problem {problem.name} is not in the simulator state")
        pos = np.asarray(inputs.object_pos[obj], dtype=np.float64)
        held = inputs.grasped == obj
        if held:
            atoms.add(("holding", obj))
        else:
            goal_pos = np.asarray(problem.goal_pos[goal], dtype=np.float64)
            if float(np.linalg.norm(pos - goal_pos)) < th.object_at_dist:
                atoms.add(("object_at", obj, goal))
            atoms.update(("in", obj, c) for c in containers_of(pos, inputs, problem, th))
        if near(pos):
            atoms.add(("robot_at", obj))
        if near(problem.goal_pos[goal]):
            atoms.add(("robot_at", goal))
    for info in problem.containers:
        if info.name not in inputs.art_q:
            raise KeyError(f"container '{info.name}' of problem {problem.name} is not in the simulator state")
        atoms.update(container_state_atoms(info.name, info.pddl_type, float(inputs.art_q[info.name]), th))
        if near(info.front_xy):
            atoms.add(("robot_at", info.name))
    return frozenset(atoms)
