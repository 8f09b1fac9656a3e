"""Building blocks of the layout generator: the box accumulator with its occupancy and keep-clear
bookkeeping, walls with doorways, and the generator's dimensions (`rearrange.layout` furnishes rooms
with them).
"""

from __future__ import annotations

from rearrange.apartment import Articulated, Box, Receptacle, Vec2

WALL_THICKNESS = 0.1
WALL_HEIGHT = 2.5
DOOR_WIDTH = 1.2
FRONT_CLEARANCE = 0.9  # free floor kept in front of containers, tables and receptacle furniture


def rect_overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Axis-aligned rectangles (xmin, ymin, xmax, ymax) overlap with positive area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class Builder:
    """Accumulates boxes; keeps a list of occupied rectangles and keep-clear zones for placement."""

    def __init__(self) -> None:
        self.walls: list[Box] = []
        self.furniture: list[Box] = []
        self.footprints: list[Box] = []
        self.receptacles: dict[str, Receptacle] = {}
        self.articulated: dict[str, Articulated] = {}
        self.occupied: list[tuple[float, float, float, float]] = []
        self.keep_clear: list[tuple[float, float, float, float]] = []
        self.counts: dict[str, int] = {}

    def next_name(self, kind: str) -> str:
        i = self.counts.get(kind, 0)
        self.counts[kind] = i + 1
        return f"{kind}_{i}"

    def solid(self, name: str, x0: float, y0: float, z0: float, x1: float, y1: float, z1: float) -> None:
        self.furniture.append(
            Box(
                name,
                ((x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2),
                ((x1 - x0) / 2, (y1 - y0) / 2, (z1 - z0) / 2),
            )
        )

    def footprint(self, name: str, rect: tuple[float, float, float, float], height: float) -> None:
        x0, y0, x1, y1 = rect
        self.footprints.append(
            Box(name, ((x0 + x1) / 2, (y0 + y1) / 2, height / 2), ((x1 - x0) / 2, (y1 - y0) / 2, height / 2))
        )
        self.occupied.append(rect)

    def is_free(self, rect: tuple[float, float, float, float], margin: float = 0.05) -> bool:
        """No furniture and no keep-clear zone within `margin` of `rect`."""
        grown = (rect[0] - margin, rect[1] - margin, rect[2] + margin, rect[3] + margin)
        return not any(rect_overlap(grown, r) for r in self.occupied + self.keep_clear)

    def floor_free(self, rect: tuple[float, float, float, float]) -> bool:
        """No furniture on `rect` (keep-clear zones may overlap it)."""
        return not any(rect_overlap(rect, r) for r in self.occupied)


def front_zone(
    rect: tuple[float, float, float, float], side: str, depth: float
) -> tuple[float, float, float, float]:
    """The rectangle of floor of `depth` in front of `rect` on `side` (n/s/e/w)."""
    x0, y0, x1, y1 = rect
    return {
        "s": (x0, y0 - depth, x1, y0),
        "n": (x0, y1, x1, y1 + depth),
        "w": (x0 - depth, y0, x0, y1),
        "e": (x1, y0, x1 + depth, y1),
    }[side]


def add_wall(b: Builder, name: str, p0: Vec2, p1: Vec2, doors: list[tuple[float, float]]) -> None:
    """A straight wall from p0 to p1 (axis aligned) with door gaps given as (start, end) along it."""
    horizontal = abs(p1[1] - p0[1]) < 1e-9
    a0, a1 = (p0[0], p1[0]) if horizontal else (p0[1], p1[1])
    fixed = p0[1] if horizontal else p0[0]
    cuts = [a0]
    for d0, d1 in sorted(doors):
        cuts += [d0, d1]
    cuts.append(a1)
    t = WALL_THICKNESS / 2
    for k in range(0, len(cuts), 2):
        s0, s1 = cuts[k], cuts[k + 1]
        if s1 - s0 < 1e-6:
            continue
        mid, half = (s0 + s1) / 2, (s1 - s0) / 2
        if horizontal:
            box = Box(f"{name}_{k // 2}", (mid, fixed, WALL_HEIGHT / 2), (half + t, t, WALL_HEIGHT / 2))
        else:
            box = Box(f"{name}_{k // 2}", (fixed, mid, WALL_HEIGHT / 2), (t, half + t, WALL_HEIGHT / 2))
        b.walls.append(box)
