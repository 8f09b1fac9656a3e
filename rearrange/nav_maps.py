"""The process-wide caches of nav maps: a layout's own map (`layout_navmap`) and the map with the sim's
open doors and drawers where they are now (`planning_map`: the oracles plan on it, the approach reward and
the path compasses measure on it), both least recently used first out."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rearrange.apartment import Box
from rearrange.navmap import NavMap, remember

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim


class LayoutWithObstacles:
    """A layout as `NavMap` sees it (bounds, walls, obstacle boxes), plus extra obstacle boxes (open doors and
    drawers where they are)."""

    def __init__(self, layout: Any, extra: Sequence[Any]) -> None:
        self.bounds = layout.bounds
        self.seed = getattr(layout, "seed", None)
        self.walls = list(getattr(layout, "walls", ()))
        self._obstacles = list(layout.obstacles_2d()) + list(extra)

    def obstacles_2d(self) -> list:
        return self._obstacles


def navmap_with_obstacles(layout: Any, extra: Sequence[Any], resolution: float, robot_radius: float) -> NavMap:
    """A `NavMap` of `layout` with `extra` obstacle boxes added (open doors and drawers where they are
    now), inflated by `robot_radius`."""
    return NavMap(LayoutWithObstacles(layout, extra) if extra else layout, resolution=resolution,
                  robot_radius=robot_radius)


# Maps are cached per process (every env of a worker process shares them), keyed by the layout object's
# id; the entry keeps its layout alive so that the id is not reused meanwhile. A map costs ~2.5 MB plus its
# cached distance fields (~0.3 MB each) and 10-25 ms to build: before these caches a skill env built one
# or two at every reset into another layout (cProfile of 20 pick resets: 27 of 44 ms).
_PLANNING_MAPS: OrderedDict[tuple, tuple[Any, NavMap]] = OrderedDict()  # key -> (layout kept alive, map)
_MAX_PLANNING_MAPS = 32  # a training set's layouts (24 for 200 pick episodes) in their articulated states
_LAYOUT_MAPS: OrderedDict[tuple, tuple[Any, NavMap]] = OrderedDict()
_MAX_LAYOUT_MAPS = 32


def layout_navmap(layout: Any, robot_radius: float) -> NavMap:
    """The `NavMap` of `layout` alone (doors and drawers closed), cached per layout object."""
    return remember(_LAYOUT_MAPS, _MAX_LAYOUT_MAPS, (id(layout), float(robot_radius)),
                     lambda: NavMap(layout, robot_radius=robot_radius), pin=layout)


def moving_obstacles(sim: RearrangeSim, extra: Sequence[Any] = ()) -> tuple[Box, ...]:
    """Boxes the sim's static map does not know: `extra` plus the open doors and drawers where they
    are now. Poses are rounded (1 cm, ~0.6 degree) so that maps built from them can be cached."""
    boxes = list(extra) + list(sim.moving_part_boxes())
    return tuple(Box(b.name, tuple(round(float(v), 2) for v in b.center),
                     tuple(round(float(v), 3) for v in b.half_size), round(float(b.yaw), 2)) for b in boxes)


def planning_map(sim: RearrangeSim, radius: float | None = None, extra: Sequence[Any] | None = None) -> NavMap:
    """The sim's layout plus `extra` boxes (default: `moving_obstacles(sim)`) inflated by `radius`
    (default: the base radius), cached (least recently used first out); the sim's own map when
    nothing is added."""
    radius = sim.navmap.robot_radius if radius is None else float(radius)
    extra = moving_obstacles(sim) if extra is None else tuple(extra)
    if not extra and radius == sim.navmap.robot_radius:
        return sim.navmap
    resolution = sim.navmap.resolution
    return remember(_PLANNING_MAPS, _MAX_PLANNING_MAPS, (id(sim.layout), resolution, radius, extra),
                     lambda: navmap_with_obstacles(sim.layout, extra, resolution, radius), pin=sim.layout)
