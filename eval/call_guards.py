"""The HAB agent's guards inside a skill call (replan mode; eval/agent.py). Ours, each off at 0.

`ReleaseGate`, two checks on every step of a place call whose object is held and whose action releases
it (grip < 0):

- the guard (`agent.release_guard`, m): a release with the object further than this from its goal is
  turned into a hold, so the object is not dropped where no pick reaches it (the call goes on, or times
  out and is retried, still holding);
- the settle (`agent.release_settle_steps`, `agent.release_settle_speed`): a release while the held
  object moves faster than the speed (m/s, measured over the last step) is put off: that step holds the
  object and keeps the arm and base still, so the object comes to rest in the gripper; the policy then
  acts again and lets go if it still wants to. At most `release_settle_steps` such steps per call, then
  releases go through as commanded. A ball let go while the arm swings rolls on, off the goal and
  often off the furniture.

`PushGuard` (`agent.pick_push_guard`, m): a pick call whose target, not held, has been pushed further than
this (horizontally) from where it stood when the call began ends there as failed ("pushed"), so the
re-plan's retry approaches again before the arm shoves it over the furniture's edge: a learned pick that
misses its grasp pushes a ball or a can along a table, and from the floor a pick seldom gets it back
(eval/floor_watch.py).

`ShutGuard` (`agent.place_shut_guard`, a share of the joint's range): a place call whose goal lies in a
drawer or the fridge ends there as failed ("shut") once that container has been pushed this far towards
closed since the call began. The goal is a fixed point in the room: a drawer shoved shut by the arm or the
held object takes the goal's support away, and the release then drops the object to the floor in front
of the cabinet. Ended while the container is still open, the call is retried after a back-off.

Fixed mode (habitat-lab's TP-SRL) runs none of them: the agent builds them off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rearrange.actions import ACTION_SLICES

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

GRIP = ACTION_SLICES["grip"].start
STILL = (ACTION_SLICES["arm"], ACTION_SLICES["base"])  # zeroed on a settle step


class ReleaseGate:
    """Per place call: `start(sim, obj, goal)`, then `check(sim, action)` before every step."""

    def __init__(self, guard: float = 0.0, settle_steps: int = 0, settle_speed: float = 0.1) -> None:
        self.guard = float(guard)
        self.settle_steps = int(settle_steps)
        self.settle_speed = float(settle_speed)
        self._obj: str | None = None
        self._goal: np.ndarray | None = None
        self._last_pos: np.ndarray | None = None  # the object's position a step ago (settle only)
        self._step_seconds = 0.0
        self._settled = 0

    @property
    def active(self) -> bool:
        return self.guard > 0.0 or self.settle_steps > 0

    def start(self, sim: RearrangeSim, obj: str | None, goal: object | None) -> None:
        """A new place call for object `obj` and its goal (None: nothing to check)."""
        self._obj = obj
        self._goal = None if goal is None else np.asarray(goal, dtype=np.float64)
        self._last_pos = None if obj is None or self.settle_steps == 0 else sim.object_pos(obj)
        self._step_seconds = sim.step_seconds
        self._settled = 0

    def check(self, sim: RearrangeSim, action: np.ndarray) -> str | None:
        """Before a step of the call: "held" (guard: the release became a hold), "settled" (the release put
        off, the arm and base held still), or None (the action goes as it is). Edits `action` in place."""
        obj = self._obj
        if obj is None or self._goal is None:
            return None
        pos = sim.object_pos(obj)
        speed = 0.0
        if self.settle_steps > 0:  # the speed over the last step: followed on every step, releasing or not
            if self._last_pos is not None:
                speed = float(np.linalg.norm(pos - self._last_pos)) / self._step_seconds
            self._last_pos = pos
        if action[GRIP] >= 0.0 or sim.grasped != obj:
            return None
        if self.guard > 0.0 and float(np.linalg.norm(pos - self._goal)) > self.guard:
            action[GRIP] = 1.0
            return "held"
        if self._settled < self.settle_steps and speed > self.settle_speed:
            self._settled += 1
            action[GRIP] = 1.0
            for part in STILL:
                action[part] = 0.0
            return "settled"
        return None


class PushGuard:
    """Per pick call: `start(sim, obj)`, then `pushed(sim)` after every step."""

    def __init__(self, distance: float = 0.0) -> None:
        self.distance = float(distance)
        self._obj: str | None = None
        self._start = np.zeros(2)

    @property
    def active(self) -> bool:
        return self.distance > 0.0

    def start(self, sim: RearrangeSim, obj: str | None) -> None:
        self._obj = obj
        if obj is not None:
            self._start = sim.object_pos(obj)[:2]

    def pushed(self, sim: RearrangeSim) -> bool:
        """Whether the target, not held, now lies further than `distance` from its start (horizontally)."""
        obj = self._obj
        if obj is None or sim.grasped == obj:
            return False
        moved = sim.object_pos(obj)[:2] - self._start
        return float(np.linalg.norm(moved)) > self.distance


class ShutGuard:
    """Per place call: `start(sim, containers)` (the articulated parts holding the goal), then `shut(sim)`
    after every step."""

    def __init__(self, share: float = 0.0) -> None:
        self.share = float(share)
        self._limits: dict[str, float] = {}  # container -> the opening (rad or m) below which it counts as shut

    @property
    def active(self) -> bool:
        return self.share > 0.0

    def start(self, sim: RearrangeSim, containers: list[str]) -> None:
        """A new call; `containers` may be empty (a goal on an open surface: nothing to watch)."""
        self._limits = {}
        for name in containers:
            lo, hi = sim.art_range(name)
            self._limits[name] = sim.art_opening(name) - self.share * (hi - lo)

    def shut(self, sim: RearrangeSim) -> bool:
        """Whether a watched container has closed by more than `share` of its range since the call began."""
        return any(sim.art_opening(name) < limit for name, limit in self._limits.items())
