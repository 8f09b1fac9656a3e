"""The order in which a plan handles a scenario's targets: index order (habitat), or clutter-aware.

The planner breaks ties between equally short plans by target index (`ScenarioProblem.entity_rank`), so
an episode's `targets` list is the order its objects are moved. Clutter-aware order (ours, the
re-planning agent's default): target j is handled before target i when i's goal lies within `radius` of
j's start, so no object is put down beside one that is still to be picked. Otherwise the later pick
reaches past the placed object and often knocks it to the floor, where no pick can reach it, and the place
itself sets its object down in a crowded spot.

`clutter_order(starts, goals, radius)` is a stable topological order: at each step the lowest-index target
with no such constraint left among the remaining ones. Targets that wait for each other (a cycle) keep
their index order among themselves. `ordered_episode(episode, radius)` returns the episode with its targets in that order (radius 0:
the episode itself). Stage names follow the order (pick_0 is the first target the plan picks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np


def clutter_order(starts: Sequence[Sequence[float]], goals: Sequence[Sequence[float]], radius: float) -> list[int]:
    """Target indices in handling order: j before i where |goal_i - start_j| < radius (positions in metres)."""
    if len(starts) != len(goals):
        raise ValueError(f"clutter_order: {len(starts)} starts but {len(goals)} goals")
    n = len(starts)
    start = np.asarray(starts, dtype=float).reshape(n, -1)
    goal = np.asarray(goals, dtype=float).reshape(n, -1)
    first = [{j for j in range(n) if j != i and np.linalg.norm(goal[i] - start[j]) < radius} for i in range(n)]
    reach = [set(f) for f in first]  # reach[i]: every target i must wait for, directly or through others
    for _ in range(n):
        for i in range(n):
            reach[i] |= set().union(*(reach[j] for j in reach[i]))
    first = [{j for j in f if i not in reach[j]} for i, f in enumerate(first)]  # a cycle's constraints are dropped
    left, order = list(range(n)), []
    while left:
        nxt = next(i for i in left if not first[i].intersection(left))
        order.append(nxt)
        left.remove(nxt)
    return order


def ordered_episode(episode: Any, radius: float) -> Any:
    """`episode` (a `rearrange.episodes.Episode`) with its targets in clutter-aware order; itself when
    `radius` is 0 or the order is already the index order."""
    if radius <= 0.0 or len(episode.targets) < 2:
        return episode
    starts = [episode.object_spec(t.object).pos for t in episode.targets]
    order = clutter_order(starts, [t.goal_pos for t in episode.targets], radius)
    if order == sorted(order):
        return episode
    return dataclasses.replace(episode, targets=[episode.targets[k] for k in order])
