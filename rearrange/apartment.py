"""The apartment data model: walls, furniture boxes, receptacles, articulated containers and rooms.

Pure data (no MuJoCo), shared by the layout generator (`rearrange.layout`), the scene builder, the
navigation map, the episode generator and the tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]


def box_frame(center: Sequence[float], yaw: float, points_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World xy points (N, 2) in the frame of a footprint with this centre and yaw: (x, y) arrays."""
    pts = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    c, s = np.cos(yaw), np.sin(yaw)
    d = pts - np.asarray(center[:2], dtype=np.float64)
    return c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]


def boxes_frame(boxes: Sequence[Box], points_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`box_frame` for many boxes at once: (x, y, half sizes) with x and y of shape (boxes, points) and the
    footprints' half sizes (boxes, 2); the same arithmetic per box, so the same numbers."""
    pts = np.asarray(points_xy, dtype=np.float64).reshape(-1, 2)
    centre = np.array([b.center[:2] for b in boxes], dtype=np.float64).reshape(-1, 2)
    half = np.array([b.half_size[:2] for b in boxes], dtype=np.float64).reshape(-1, 2)
    yaw = np.array([b.yaw for b in boxes], dtype=np.float64)
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    dx, dy = pts[None, :, 0] - centre[:, 0:1], pts[None, :, 1] - centre[:, 1:2]
    return c * dx + s * dy, -s * dx + c * dy, half


def in_footprint(center: Sequence[float], half: Sequence[float], yaw: float, points_xy: np.ndarray,
                 pad: float = 0.0) -> np.ndarray:
    """For each of (N, 2) points: inside the footprint (half sizes `half`) grown by `pad` on each side?"""
    lx, ly = box_frame(center, yaw, points_xy)
    return (np.abs(lx) <= float(half[0]) + pad) & (np.abs(ly) <= float(half[1]) + pad)


@dataclass(frozen=True)
class Box:
    """A solid box: centre, half sizes in its own frame, rotated by `yaw` about z."""

    name: str
    center: Vec3
    half_size: Vec3
    yaw: float = 0.0

    def corners_2d(self) -> np.ndarray:
        """The four floor-plan corners (counter-clockwise), shape (4, 2)."""
        hx, hy = self.half_size[0], self.half_size[1]
        local = np.array([[-hx, -hy], [hx, -hy], [hx, hy], [-hx, hy]])
        c, s = np.cos(self.yaw), np.sin(self.yaw)
        rot = np.array([[c, -s], [s, c]])
        return local @ rot.T + np.array(self.center[:2])


@dataclass(frozen=True)
class Receptacle:
    """A support surface objects can be put on (z of `center` is the surface height)."""

    name: str
    kind: str
    center: Vec3
    half_extent: Vec2
    yaw: float = 0.0
    container: str | None = None

    def surface_xy(self, u: float, v: float) -> np.ndarray:
        """The floor-plan point (2,) at (u, v) metres from the centre in the surface's own frame."""
        c, s = np.cos(self.yaw), np.sin(self.yaw)
        return np.array([self.center[0] + c * u - s * v, self.center[1] + s * u + c * v])

    def holds(self, point: np.ndarray, pad: float = 0.05, height: float = 0.45) -> bool:
        """Whether the 3-D `point` lies over this surface (its footprint grown by `pad` on each side)
        and at most `height` above it (`pad` below it)."""
        p = np.asarray(point, dtype=np.float64)
        return bool(in_footprint(self.center, self.half_extent, self.yaw, p[:2], pad)[0]
                    and self.center[2] - pad <= p[2] <= self.center[2] + height)


@dataclass(frozen=True)
class Articulated:
    """A container with one joint (fridge door hinge or drawer slide).

    Besides the contract fields it carries its geometry for the scene builder: the joint anchor and
    axis in the world, the moving boxes (`parts`, world poses at q = 0) and the handle box.
    """

    name: str
    joint_type: str  # "hinge" | "slide"
    joint_range: Vec2
    handle: str
    front_center: Vec2
    facing_yaw: float
    joint_pos: Vec3 = (0.0, 0.0, 0.0)
    joint_axis: Vec3 = (0.0, 0.0, 1.0)
    parts: tuple[Box, ...] = ()
    handle_box: Box | None = None

    def opening_outward(self) -> np.ndarray:
        """(2,) unit vector out of the container's opening (the robot faces a container along
        `facing_yaw`, so its opening points the other way)."""
        return -np.array([np.cos(self.facing_yaw), np.sin(self.facing_yaw)])


@dataclass(frozen=True)
class Room:
    """A rectangular room: `bounds` = ((xmin, ymin), (xmax, ymax)) of its floor."""

    name: str
    kind: str
    bounds: tuple[Vec2, Vec2]


@dataclass
class ApartmentLayout:
    """Everything needed to build a scene: walls, static furniture, receptacles, articulated containers."""

    seed: int
    bounds: tuple[Vec2, Vec2]
    rooms: list[Room]
    walls: list[Box]
    furniture: list[Box]
    receptacles: dict[str, Receptacle]
    articulated: dict[str, Articulated]
    footprints: list[Box] = field(default_factory=list)  # one full-height box per furniture piece

    def obstacles_2d(self) -> list[Box]:
        """Every box the robot base collides with: walls plus furniture footprints."""
        return list(self.walls) + list(self.footprints)

    def container_receptacle_at(self, point: np.ndarray) -> Receptacle | None:
        """The container receptacle (a fridge shelf, a drawer's box) whose inside holds the 3-D `point`
        (within 5 cm of its footprint, at most 0.45 m above it), or None when the point is in no container."""
        if np.asarray(point).shape[0] < 3:
            return None
        return next((rec for rec in self.receptacles.values() if rec.container is not None and rec.holds(point)), None)
