"""YCB-like household objects built from MuJoCo primitives, with real dimensions (m) and masses (kg).

Each kind is a list of primitive geoms in the object's own frame (origin at the centre of its bounding
box, z up when standing). `rest_height` is the distance from the bottom to the origin, so an object
resting on a surface at height z has its origin at z + rest_height.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Primitive:
    """One geom: MuJoCo type ("box" | "cylinder" | "sphere" | "capsule"), MJCF size, local position."""

    type: str
    size: tuple[float, ...]
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    euler: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class ObjectKind:
    """An object kind: geometry, mass, colour and the categories scenario generators select by."""

    name: str
    geoms: tuple[Primitive, ...]
    mass: float
    rgba: tuple[float, float, float, float]
    rest_height: float  # origin height above the supporting surface
    radius: float  # radius of the footprint's bounding circle (for placement)
    is_fruit: bool = False
    is_bowl: bool = False


def _box(
    name: str, dx: float, dy: float, dz: float, mass: float, rgba: tuple[float, float, float, float]
) -> ObjectKind:
    return ObjectKind(
        name, (Primitive("box", (dx / 2, dy / 2, dz / 2)),), mass, rgba, dz / 2, 0.5 * (dx**2 + dy**2) ** 0.5
    )


def _cyl(
    name: str, diameter: float, height: float, mass: float, rgba: tuple[float, float, float, float]
) -> ObjectKind:
    return ObjectKind(
        name, (Primitive("cylinder", (diameter / 2, height / 2)),), mass, rgba, height / 2, diameter / 2
    )


def _fruit(name: str, diameter: float, mass: float, rgba: tuple[float, float, float, float]) -> ObjectKind:
    return ObjectKind(
        name, (Primitive("sphere", (diameter / 2,)),), mass, rgba, diameter / 2, diameter / 2, is_fruit=True
    )


def _bowl() -> ObjectKind:
    """YCB 024_bowl: 159 mm wide, 53 mm tall, 147 g; a flat bottom disc and four rim boxes."""
    r, h, t = 0.0795, 0.053, 0.008
    geoms = [Primitive("cylinder", (0.05, t / 2), (0.0, 0.0, -h / 2 + t / 2))]
    for k, (x, y, yaw) in enumerate(
        [(r - t, 0.0, 0.0), (-(r - t), 0.0, 0.0), (0.0, r - t, 1.5708), (0.0, -(r - t), 1.5708)]
    ):
        del k
        geoms.append(Primitive("box", (t / 2, r * 0.72, h / 2 - t / 2), (x, y, t / 2), (0.0, 0.0, yaw)))
    return ObjectKind("bowl", tuple(geoms), 0.147, (0.85, 0.25, 0.2, 1.0), h / 2, r, is_bowl=True)


def _mug() -> ObjectKind:
    """YCB 025_mug: about 80 mm diameter, 82 mm tall, 118 g; body cylinder plus a handle box."""
    body = Primitive("cylinder", (0.04, 0.041))
    handle = Primitive("box", (0.012, 0.006, 0.025), (0.052, 0.0, 0.0))
    return ObjectKind("mug", (body, handle), 0.118, (0.9, 0.9, 0.3, 1.0), 0.041, 0.065)


def _banana() -> ObjectKind:
    """YCB 011_banana: about 190 mm long, 36 mm thick, 66 g; a capsule lying along x."""
    return ObjectKind(
        "banana",
        (Primitive("capsule", (0.018, 0.077), euler=(0.0, 1.5708, 0.0)),),
        0.066,
        (0.95, 0.85, 0.2, 1.0),
        0.018,
        0.095,
        is_fruit=True,
    )


OBJECT_KINDS: dict[str, ObjectKind] = {
    k.name: k
    for k in (
        _box("cracker_box", 0.060, 0.158, 0.210, 0.411, (0.8, 0.15, 0.1, 1.0)),
        _box("sugar_box", 0.038, 0.089, 0.175, 0.514, (0.95, 0.9, 0.5, 1.0)),
        _cyl("tomato_soup_can", 0.066, 0.101, 0.349, (0.75, 0.1, 0.1, 1.0)),
        _box("mustard_bottle", 0.058, 0.095, 0.190, 0.603, (0.95, 0.8, 0.05, 1.0)),
        _bowl(),
        _mug(),
        _fruit("apple", 0.075, 0.068, (0.75, 0.05, 0.05, 1.0)),
        _banana(),
        _fruit("orange", 0.073, 0.140, (1.0, 0.55, 0.0, 1.0)),
        _fruit("lemon", 0.054, 0.029, (0.95, 0.95, 0.2, 1.0)),
        _cyl("master_chef_can", 0.102, 0.139, 0.414, (0.2, 0.35, 0.75, 1.0)),
        _box("gelatin_box", 0.089, 0.073, 0.028, 0.097, (0.85, 0.3, 0.5, 1.0)),
        _box("potted_meat_can", 0.101, 0.051, 0.083, 0.370, (0.3, 0.45, 0.8, 1.0)),
        _box("bleach_cleanser", 0.067, 0.098, 0.250, 1.131, (0.9, 0.9, 0.95, 1.0)),
    )
}

FRUIT_KINDS: tuple[str, ...] = tuple(k for k, v in OBJECT_KINDS.items() if v.is_fruit)
BOWL_KINDS: tuple[str, ...] = tuple(k for k, v in OBJECT_KINDS.items() if v.is_bowl)


def object_kind(name: str) -> ObjectKind:
    """The kind called `name`; ValueError naming the valid kinds otherwise."""
    if name not in OBJECT_KINDS:
        raise ValueError(f"unknown object kind {name!r}; valid kinds: {', '.join(OBJECT_KINDS)}")
    return OBJECT_KINDS[name]
