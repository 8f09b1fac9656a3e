"""Reward pieces shared by the skill tasks (habitat-lab's RearrangeReward mechanics).

- `DistanceDelta`: coef x (previous distance - current distance), 0 on the first reading after a
  reset (habitat's `cur_dist = -1` "stale" convention), so a policy is paid for progress only.
- `ForceMonitor`: contact-force penalty and force-based termination (habitat `RobotForce`,
  `ForceTerminate` and `RearrangeReward._get_coll_reward`).
- `KnockWatch`: which of the other objects a skill moved from where its episode put them (knocked
  over, shoved along, pushed off the furniture).
- `PushWatch`: how far one object (pick's target before its grasp) has been pushed from where it stood.
- `slack`, success bonus and the other event bonuses are plain config numbers added by the tasks.

Every coefficient comes from `configs/skill/<name>.yaml`; nothing here has a default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rearrange.sensors import wrap_angle

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


class DistanceDelta:
    """Dense progress reward `coef * (previous - current)` on a distance that should shrink."""

    def __init__(self, coef: float) -> None:
        self.coef = float(coef)
        self.prev: float | None = None

    def reset(self, distance: float | None = None) -> None:
        """Forget the previous distance (None: the next reading gives 0) or start from `distance`."""
        self.prev = None if distance is None or not math.isfinite(distance) else float(distance)

    def __call__(self, distance: float) -> float:
        """Reward for moving from the previous reading to `distance`; remembers `distance`.

        A non-finite distance (e.g. unreachable on the nav map) gives 0 and keeps the previous one.
        """
        if not math.isfinite(distance):
            return 0.0
        reward = 0.0 if self.prev is None else self.coef * (self.prev - float(distance))
        self.prev = float(distance)
        return reward


@dataclass
class ForceStep:
    """What the force monitor measured and charged this step."""

    force: float  # this step's robot-scene contact force (N)
    added: float  # force counted this step: the rise over the last counted level, if > min_force
    accumulated: float  # counted force summed over the episode
    penalty: float  # >= 0, to subtract from the reward (includes end_penalty when terminating)
    terminate: bool  # accumulated or instant force over its limit


class ForceMonitor:
    """Contact-force penalty and termination, as habitat's RobotForce + RearrangeReward + ForceTerminate.

    Only a *rise* in contact force counts, as in habitat-lab's `RobotForce.update_metric`: with
    `level` the force last counted (or last fallen to), a step whose force exceeds `level` by more
    than `min_force` adds that rise to the episode's accumulated force and raises `level` to it; a
    step with less force lowers `level`; anything between adds nothing. A steady push is counted
    once, a new impact each time. The counted rise costs `min(force_pen * added, max_force_pen)`.
    The episode ends (with `force_end_pen`) when the accumulated force exceeds `max_accum_force` or
    one step's force exceeds `max_instant_force` (a limit <= 0 disables it).

    Until 2026-11-23 every step's whole force counted while above `min_force`. A learning Pick
    policy resting its gripper on a table (100-250 N, 14% of its steps) then reached 10 kN in
    about 100 steps and force-terminated in 22-58% of episodes, which habitat's limits were never
    meant to do (their accumulation counts the rise only); see configs/skill/pick.yaml.
    """

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.force_pen = float(cfg["force_pen"])
        self.max_force_pen = float(cfg["max_force_pen"])
        self.min_force = float(cfg["min_force"])
        self.max_accum_force = float(cfg["max_accum_force"])
        self.max_instant_force = float(cfg["max_instant_force"])
        self.force_end_pen = float(cfg["force_end_pen"])
        self.accumulated = 0.0
        self.level = 0.0  # habitat's _prev_force: the episode starts free of contact

    def reset(self) -> None:
        self.accumulated = 0.0
        self.level = 0.0

    def __call__(self, force: float) -> ForceStep:
        force = float(force)
        rise = force - self.level
        added = 0.0
        if rise > self.min_force:
            added = rise
            self.accumulated += rise
            self.level = force
        elif rise < 0.0:
            self.level = force
        penalty = max(0.0, min(self.force_pen * added, self.max_force_pen))
        terminate = (self.max_accum_force > 0 and self.accumulated > self.max_accum_force) or (
            self.max_instant_force > 0 and force > self.max_instant_force)
        if terminate:
            penalty += self.force_end_pen
        return ForceStep(force=force, added=added, accumulated=self.accumulated, penalty=penalty,
                         terminate=bool(terminate))


class KnockWatch:
    """Counts the objects, other than the skill's own, moved more than `dist` (m) from their reset position.

    `reset(sim, names)` records where `names` stand; each call then returns how many of them moved past
    `dist` for the first time this step (each object counts once per episode) and `count` holds the total.
    """

    def __init__(self, dist: float) -> None:
        self.dist = float(dist)
        self.names: tuple[str, ...] = ()
        self.start = np.zeros((0, 3))
        self.moved = np.zeros(0, dtype=bool)

    def reset(self, sim: RearrangeSim, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.start = np.array([sim.object_pos(n) for n in self.names]).reshape(-1, 3)
        self.moved = np.zeros(len(self.names), dtype=bool)

    @property
    def count(self) -> int:
        return int(self.moved.sum())

    def __call__(self, sim: RearrangeSim) -> int:
        if not self.names:
            return 0
        pos = np.array([sim.object_pos(n) for n in self.names])
        now = np.linalg.norm(pos - self.start, axis=1) > self.dist
        new = now & ~self.moved
        self.moved |= now
        return int(new.sum())


class PushWatch:
    """The largest distance (m, capped at `cap`) one object has moved from its position at `reset`.

    Each call returns how much that capped maximum rose this step (>= 0), so a cost of `pen` per metre paid on the
    rises sums to `pen * min(furthest displacement, cap)` over an episode: a nudge of 2 cm costs a fifteenth of a fall
    with cap 0.3. After `stop()` calls return 0 until the next `reset`.
    """

    def __init__(self, cap: float) -> None:
        self.cap = float(cap)
        self.start: np.ndarray | None = None
        self.furthest = 0.0

    def reset(self, start: Any) -> None:
        self.start = np.asarray(start, dtype=np.float64).copy()
        self.furthest = 0.0

    def stop(self) -> None:
        self.start = None

    @property
    def at_cap(self) -> bool:
        return self.furthest >= self.cap

    def __call__(self, pos: Any) -> float:
        if self.start is None:
            return 0.0
        now = min(norm(np.asarray(pos, dtype=np.float64) - self.start), self.cap)
        rise = max(0.0, now - self.furthest)
        self.furthest += rise
        return rise


class CommandChange:
    """How much a command moved since the step before: the L1 distance between this step's entries and the last
    step's (0 on the first step after `reset`, when there is no last one); `mean` is that change averaged over the
    steps since `reset` that had a step before."""

    def __init__(self) -> None:
        self.last: np.ndarray | None = None
        self.total = 0.0
        self.steps = 0

    def reset(self) -> None:
        self.last = None
        self.total = 0.0
        self.steps = 0

    @property
    def mean(self) -> float:
        return self.total / self.steps if self.steps else 0.0

    def __call__(self, command: Any) -> float:
        now = np.array(command, dtype=np.float64)
        change = 0.0
        if self.last is not None:
            change = float(np.abs(now - self.last).sum())
            self.total += change
            self.steps += 1
        self.last = now
        return change


def norm(v: Any) -> float:
    """Euclidean length of a vector as a Python float."""
    return float(np.linalg.norm(np.asarray(v, dtype=np.float64)))


def heading_error(base_xy: Any, base_yaw: float, goal_xy: Any) -> float:
    """Absolute angle (rad, in [0, pi]) between the base's forward direction and the goal direction."""
    d = np.asarray(goal_xy, dtype=np.float64)[:2] - np.asarray(base_xy, dtype=np.float64)[:2]
    if float(np.hypot(d[0], d[1])) < 1e-9:
        return 0.0
    return abs(wrap_angle(math.atan2(d[1], d[0]) - float(base_yaw)))
