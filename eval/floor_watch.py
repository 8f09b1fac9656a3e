"""Which call of a HAB episode let a target object fall to the floor (eval-hab's `floor_drops`).

An object on the floor is all but lost to the episode: the Fetch arm barely reaches it (the pick oracle got
0 of 40 such starts, eval/skill_starts.py; the learned pick 1 of 32 in Tidy House, 2026-11-28), so the
later picks of it time out and the re-plans run out.
The watch follows every target after each env step; when one that stood higher than `RAISED` (on
furniture, or held) comes down below `ON_FLOOR`, the fall is put down to the call (or scripted
motion) that was running on the last step it was raised and at rest (held, or moved less than
`STILL` that step), where its way down began: a pick that pushed it over a table's edge, a place
whose release let it roll off (the fall itself may end during the next call), an arm reset that swept
it off. Reading only; it changes nothing in the episode.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

RAISED = 0.2  # m, object centre: above this it stands on furniture or hangs in the gripper
ON_FLOOR = 0.12  # m, object centre: below this it lies on the floor (objects rest 0.02-0.07 m up there)
STILL = 0.002  # m per step (0.06 m/s): an object moving less than this is at rest


class FloorWatch:
    """Per episode: `step(sim, label)` after every env step; `drops` lists "object:call label" per fall."""

    def __init__(self, objects: Iterable[str]) -> None:
        self.objects = tuple(dict.fromkeys(objects))
        self._rested_in: dict[str, str] = {}  # object -> label of the last step it was raised and at rest
        self._last: dict[str, np.ndarray] = {}
        self.drops: list[str] = []

    def step(self, sim: RearrangeSim, label: str) -> None:
        for obj in self.objects:
            pos = sim.object_pos(obj)  # a copy (RearrangeSim.object_pos)
            last = self._last.get(obj, pos)
            self._last[obj] = pos
            if pos[2] > RAISED and (sim.grasped == obj or float(np.linalg.norm(pos - last)) < STILL):
                self._rested_in[obj] = label
            elif pos[2] < ON_FLOOR and obj in self._rested_in:
                self.drops.append(f"{obj}:{self._rested_in.pop(obj)}")


def drop_skill(drop: str) -> str:
    """The skill (or scripted motion) of a `FloorWatch.drops` entry: "obj_1:pick(obj_1)" -> "pick"."""
    return drop.split(":", 1)[1].split("(", 1)[0]
