"""The order in which a plan handles a scenario's targets: index order (habitat), clutter-aware, or the
shortest trip among the clutter-aware orders.

The planner breaks ties between equally short plans by target index (`ScenarioProblem.entity_rank`), so
an episode's `targets` list is the order its objects are moved. Clutter-aware order (ours, the
re-planning agent's default): target j is handled before target i when i's goal lies within `radius` of
j's start, so no object is put down beside one that is still to be picked. Otherwise the later pick
reaches past the placed object and often knocks it to the floor, where no pick can reach it, and the place
itself sets its object down in a crowded spot.

`clutter_order(starts, goals, radius)` is a stable topological order: at each step the lowest-index target
with no such constraint left among the remaining ones. Targets that wait for each other (a cycle) keep
their index order among themselves. `shortest_order(...)` is, among every order that keeps those
constraints, the one whose trip (from the robot's start to each object, then to its goal) is shortest
under a given distance (eval-hab passes the layout's geodesic distance). `ordered_episode(episode, radius,
distance)` returns the episode with its targets in that order (radius 0 and no distance: the episode
itself). Stage names follow the order (pick_0 is the first target the plan picks).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Distance = Callable[[Sequence[float], Sequence[float]], float]
MAX_SEARCHED_TARGETS = 7  # 5,040 orders; more targets keep the clutter-aware order


def clutter_constraints(starts: Sequence[Sequence[float]], goals: Sequence[Sequence[float]],
                        radius: float) -> list[set[int]]:
    """For every target i, the targets to handle before it: those whose start lies within `radius` of i's
    goal, minus any that (directly or through others) wait for i themselves."""
    if len(starts) != len(goals):
        raise ValueError(f"target order: {len(starts)} starts but {len(goals)} goals")
    n = len(starts)
    start = np.asarray(starts, dtype=float).reshape(n, -1)
    goal = np.asarray(goals, dtype=float).reshape(n, -1)
    first = [{j for j in range(n) if j != i and np.linalg.norm(goal[i] - start[j]) < radius} for i in range(n)]
    reach = [set(f) for f in first]  # reach[i]: every target i must wait for, directly or through others
    for _ in range(n):
        for i in range(n):
            reach[i] |= set().union(*(reach[j] for j in reach[i]))
    return [{j for j in f if i not in reach[j]} for i, f in enumerate(first)]  # a cycle's constraints are dropped


def clutter_order(starts: Sequence[Sequence[float]], goals: Sequence[Sequence[float]], radius: float) -> list[int]:
    """Target indices in handling order: j before i where |goal_i - start_j| < radius (positions in metres)."""
    return _lowest_index_first(clutter_constraints(starts, goals, radius))


def _lowest_index_first(first: Sequence[set[int]]) -> list[int]:
    """The stable topological order of `clutter_constraints`' output (which holds no cycle)."""
    left, order = list(range(len(first))), []
    while left:
        nxt = next(i for i in left if not first[i].intersection(left))
        order.append(nxt)
        left.remove(nxt)
    return order


def shortest_order(robot_xy: Sequence[float] | None, starts: Sequence[Sequence[float]],
                   goals: Sequence[Sequence[float]], radius: float, distance: Distance) -> list[int]:
    """The order keeping the clutter constraints whose trip robot -> start_a -> goal_a -> start_b -> ... is
    shortest under `distance` (xy in, metres out; inf for an unreachable pair counts as the straight line);
    ties and more than `MAX_SEARCHED_TARGETS` targets keep the clutter-aware order."""
    first = clutter_constraints(starts, goals, radius)
    base = _lowest_index_first(first)
    n = len(base)
    if n > MAX_SEARCHED_TARGETS:
        return base

    def leg(a: Sequence[float], b: Sequence[float]) -> float:
        d = distance(a[:2], b[:2])
        return d if np.isfinite(d) else float(np.linalg.norm(np.subtract(a[:2], b[:2])))

    # The object -> goal legs are the same in every order, so only the legs between targets are compared.
    to_start = [[leg(goals[i], starts[k]) for k in range(n)] for i in range(n)]
    from_robot = [0.0 if robot_xy is None else leg(robot_xy, starts[k]) for k in range(n)]

    def trip(order: Sequence[int]) -> float:
        return from_robot[order[0]] + sum(to_start[a][b] for a, b in zip(order, order[1:], strict=False))

    best, best_trip = base, trip(base)
    for order in itertools.permutations(range(n)):
        if all(first[k] <= set(order[:pos]) for pos, k in enumerate(order)):
            t = trip(order)
            if t < best_trip - 1e-9:
                best, best_trip = list(order), t
    return best


def ordered_episode(episode: Any, radius: float, distance: Distance | None = None) -> Any:
    """`episode` (a `rearrange.episodes.Episode`) with its targets in clutter-aware order, or with `distance`
    the shortest trip among those orders; itself when nothing asks for an order or it is the index order."""
    if (radius <= 0.0 and distance is None) or len(episode.targets) < 2:
        return episode
    starts = [episode.object_spec(t.object).pos for t in episode.targets]
    goals = [t.goal_pos for t in episode.targets]
    if distance is None:
        order = clutter_order(starts, goals, radius)
    else:
        robot = None if episode.robot_start is None else episode.robot_start["xy"]
        order = shortest_order(robot, starts, goals, radius, distance)
    if order == sorted(order):
        return episode
    return dataclasses.replace(episode, targets=[episode.targets[k] for k in order])
