"""Procedural apartments: rooms, walls, furniture, receptacles and articulated containers from a seed.

Pure data (no MuJoCo). `generate_layout(seed)` is deterministic for any integer seed (`cached_layout(seed)`:
the same, one shared object per seed in a process). The apartment is a
row of rooms along x (kitchen, dining area, living room, optionally a bedroom) separated by interior
walls with doorways; room sizes and the amount of extra furniture ("clutter") vary with the seed, so
scenes differ in size and in simulation cost. All furniture is made of axis-aligned or yawed boxes
(the data model: `rearrange.apartment`).
"""

from __future__ import annotations

import functools

import numpy as np

from rearrange.apartment import (
    ApartmentLayout,
    Articulated,
    Box,
    Receptacle,
    Room,
    Vec2,
)
from rearrange.layout_builder import (
    DOOR_WIDTH,
    FRONT_CLEARANCE,
    WALL_THICKNESS,
    Builder,
    add_wall,
    front_zone,
)

TRAIN_LAYOUT_SEEDS: tuple[int, ...] = tuple(range(100, 124))
VAL_LAYOUT_SEEDS: tuple[int, ...] = tuple(range(900, 908))
_SPLITS = {"train": TRAIN_LAYOUT_SEEDS, "val": VAL_LAYOUT_SEEDS}


def layout_seeds(split: str) -> tuple[int, ...]:
    """Layout seeds of a split ("train" or "val")."""
    if split not in _SPLITS:
        raise ValueError(f"unknown layout split {split!r}; valid splits: {', '.join(_SPLITS)}")
    return _SPLITS[split]


# --------------------------------------------------------------------------------------------------
# furniture pieces


def _kitchen(b: Builder, rng: np.random.Generator, x0: float, x1: float, depth: float) -> None:
    """Fridge in the north-west, counter with sliding drawers along the north wall."""
    yn = depth - WALL_THICKNESS / 2  # inner face of the north wall
    # fridge: a shell (static) with a hinged door (hinge on the west edge, opening towards -y)
    fw, fd, fh = 0.8, 0.7, 1.8
    # Hinge-side clearance: room for the door to swing to 135 degrees, and for the robot to stand on the
    # door's outer side and push it shut from up to 120 degrees open (close_fridge; with 0.75 m no base
    # pose could reach the outer face beyond ~90 degrees).
    fx0 = x0 + WALL_THICKNESS / 2 + 1.3
    fy1 = yn - 0.02
    fy0 = fy1 - fd  # front face of the shell
    t = 0.03
    b.solid("fridge_back", fx0, fy1 - t, 0.0, fx0 + fw, fy1, fh)
    b.solid("fridge_left", fx0, fy0, 0.0, fx0 + t, fy1, fh)
    b.solid("fridge_right", fx0 + fw - t, fy0, 0.0, fx0 + fw, fy1, fh)
    b.solid("fridge_top", fx0, fy0, fh - t, fx0 + fw, fy1, fh)
    shelf_z = (0.35, 1.02)
    b.solid("fridge_bottom", fx0, fy0, 0.0, fx0 + fw, fy1, shelf_z[0])
    for i, z in enumerate(shelf_z[1:]):
        b.solid(f"fridge_board_{i}", fx0 + t, fy0 + 0.02, z - 0.02, fx0 + fw - t, fy1 - t, z)
    # Two compartments (0.65 m and 0.75 m high) with room above an object for a suction grasp from
    # above: the wrist joints sit 0.36 m above a downward cup (configs/episodes.yaml caps fridge
    # objects at 0.15 m), and the upper shelf is low enough for the arm to reach over it. With the
    # board at 0.95 instead of 1.02, the oracle agent placed 0.4 instead of 0.6 of prepare_groceries.
    # Objects go on the front 0.3 m of a shelf, where the arm reaching in through the door keeps its
    # elbow outside.
    shelf_depth = 0.3
    inner_cx, front_cy = fx0 + fw / 2, fy0 + 0.06 + shelf_depth / 2
    for i, z in enumerate(shelf_z):
        b.receptacles[f"fridge_shelf_{i}"] = Receptacle(
            f"fridge_shelf_{i}",
            "fridge",
            (inner_cx, front_cy, z),
            (fw / 2 - t - 0.06, shelf_depth / 2),
            0.0,
            "fridge",
        )
    door_t = 0.04
    door = Box(
        "fridge_door", (fx0 + fw / 2, fy0 - door_t / 2, fh / 2 + 0.01), (fw / 2, door_t / 2, fh / 2 - 0.01)
    )
    handle = Box("fridge_handle", (fx0 + fw - 0.08, fy0 - door_t - 0.025, 1.0), (0.015, 0.025, 0.12))
    b.articulated["fridge"] = Articulated(
        name="fridge",
        joint_type="hinge",
        joint_range=(0.0, 2.36),
        handle="fridge_handle",
        front_center=(fx0 + 0.65 * fw, fy0 - door_t - 0.9),
        facing_yaw=float(np.pi / 2),
        joint_pos=(fx0, fy0 - door_t, fh / 2),
        joint_axis=(0.0, 0.0, -1.0),
        parts=(door,),
        handle_box=handle,
    )
    frect = (fx0, fy0 - door_t, fx0 + fw, fy1)
    b.footprint("fridge", frect, fh)
    # door swing and standing areas, the hinge side included
    b.keep_clear.append((x0, fy0 - 1.5, fx0 + fw + 0.4, fy0))
    b.keep_clear.append((x0, fy0 - 0.2, fx0, yn))

    # counter with drawers
    cx0 = fx0 + fw + 0.05
    avail = x1 - WALL_THICKNESS / 2 - 0.3 - cx0
    length = float(min(avail, rng.uniform(1.7, 2.6)))
    cx1 = cx0 + length
    cd, ch = 0.6, 0.9
    cy1 = yn
    cy0 = cy1 - cd  # counter front
    band0, band1 = 0.56, 0.86
    b.solid("counter_base", cx0, cy0, 0.0, cx1, cy1, band0)
    b.solid("counter_top", cx0 - 0.01, cy0 - 0.02, band1, cx1, cy1, ch)
    b.solid("counter_back", cx0, cy1 - 0.02, band0, cx1, cy1, band1)
    bay = 0.55
    n_drawers = int(min(int(rng.integers(2, 4)), int((length - 0.1) // bay)))
    n_drawers = max(n_drawers, 2)
    div = 0.03
    xcur = cx0
    for i in range(n_drawers):
        b.solid(f"counter_divider_{i}", xcur, cy0, band0, xcur + div, cy1 - 0.02, band1)
        bx0, bx1 = xcur + div, xcur + bay
        bxc = (bx0 + bx1) / 2
        w = bx1 - bx0 - 0.01
        depth_d = 0.5
        front_y = cy0
        bottom = band0 + 0.01
        parts = (
            Box(
                f"drawer_{i}_front",
                (bxc, front_y + 0.01, (band0 + band1) / 2),
                (w / 2, 0.01, (band1 - band0) / 2 - 0.005),
            ),
            Box(
                f"drawer_{i}_bottom",
                (bxc, front_y + 0.02 + depth_d / 2, bottom + 0.0075),
                (w / 2, depth_d / 2, 0.0075),
            ),
            Box(
                f"drawer_{i}_back",
                (bxc, front_y + 0.02 + depth_d - 0.0075, bottom + 0.11),
                (w / 2, 0.0075, 0.11),
            ),
            Box(
                f"drawer_{i}_lside",
                (bx0 + 0.005 + 0.0075, front_y + 0.02 + depth_d / 2, bottom + 0.11),
                (0.0075, depth_d / 2, 0.11),
            ),
            Box(
                f"drawer_{i}_rside",
                (bx1 - 0.005 - 0.0075, front_y + 0.02 + depth_d / 2, bottom + 0.11),
                (0.0075, depth_d / 2, 0.11),
            ),
        )
        handle = Box(f"drawer_{i}_handle", (bxc, front_y - 0.02, 0.76), (0.08, 0.02, 0.012))
        name = f"drawer_{i}"
        b.articulated[name] = Articulated(
            name=name,
            joint_type="slide",
            joint_range=(0.0, 0.45),
            handle=f"{name}_handle",
            front_center=(bxc, cy0 - 0.8),
            facing_yaw=float(np.pi / 2),
            joint_pos=(bxc, front_y, bottom),
            joint_axis=(0.0, -1.0, 0.0),
            parts=parts,
            handle_box=handle,
        )
        # objects go in the front half: once the drawer is open (0.45 m) they lie clear of the counter
        # top, so a top-down grasp or place does not hit its edge
        in_depth = 0.25
        b.receptacles[name] = Receptacle(
            name,
            "drawer",
            (bxc, front_y + 0.02 + 0.06 + in_depth / 2, bottom + 0.015),
            (w / 2 - 0.05, in_depth / 2),
            0.0,
            name,
        )
        xcur = bx1
    b.solid(f"counter_divider_{n_drawers}", xcur, cy0, band0, xcur + div, cy1 - 0.02, band1)
    if cx1 - (xcur + div) > 0.01:
        b.solid("counter_block", xcur + div, cy0, band0, cx1, cy1 - 0.02, band1)
    b.receptacles["counter_0"] = Receptacle(
        "counter_0",
        "counter",
        ((cx0 + cx1) / 2, (cy0 + cy1) / 2, ch),
        (length / 2 - 0.06, cd / 2 - 0.08),
        0.0,
        None,
    )
    crect = (cx0 - 0.01, cy0 - 0.02, cx1, cy1)
    b.footprint("counter_0", crect, ch)
    b.keep_clear.append(front_zone(crect, "s", 1.3))


def _dining(b: Builder, rng: np.random.Generator, x0: float, x1: float, depth: float) -> None:
    """Dining table in the north half with chairs on its north side; south side free."""
    tw, td, th = float(rng.uniform(1.2, 1.6)), float(rng.uniform(0.8, 0.9)), 0.75
    cx = (x0 + x1) / 2 + float(rng.uniform(-0.2, 0.2))
    cy = depth - WALL_THICKNESS / 2 - 0.75 - td / 2
    tx0, tx1, ty0, ty1 = cx - tw / 2, cx + tw / 2, cy - td / 2, cy + td / 2
    name = b.next_name("table")
    b.solid(f"{name}_top", tx0, ty0, th - 0.04, tx1, ty1, th)
    for k, (lx, ly) in enumerate(
        [
            (tx0 + 0.05, ty0 + 0.05),
            (tx1 - 0.05, ty0 + 0.05),
            (tx0 + 0.05, ty1 - 0.05),
            (tx1 - 0.05, ty1 - 0.05),
        ]
    ):
        b.solid(f"{name}_leg_{k}", lx - 0.03, ly - 0.03, 0.0, lx + 0.03, ly + 0.03, th - 0.04)
    b.receptacles[name] = Receptacle(name, "table", (cx, cy, th), (tw / 2 - 0.08, td / 2 - 0.08), 0.0, None)
    trect = (tx0, ty0, tx1, ty1)
    b.footprint(name, trect, th)
    b.keep_clear.append(front_zone(trect, "s", 1.2))
    n_chairs = min(int(rng.integers(2, 4)), int((tw + 0.05) // 0.5))
    xs = cx + (np.arange(n_chairs) - (n_chairs - 1) / 2) * 0.5
    for xc in xs:
        _chair(b, float(xc), ty1 + 0.1 + 0.22, np.pi)


def _chair(b: Builder, xc: float, yc: float, facing: float) -> None:
    """A chair (seat + backrest) whose sitter faces `facing` (only 0 or pi used: +x... along y)."""
    name = b.next_name("chair")
    s = 0.22
    b.solid(f"{name}_seat", xc - s, yc - s, 0.0, xc + s, yc + s, 0.46)
    back_y = yc + s - 0.04 if abs(facing - np.pi) < 1e-6 else yc - s
    b.solid(f"{name}_back", xc - s, back_y, 0.46, xc + s, back_y + 0.04, 0.95)
    b.footprint(name, (xc - s, yc - s, xc + s, yc + s), 0.95)


def _living(b: Builder, rng: np.random.Generator, x0: float, x1: float, depth: float) -> None:
    """Sofa against the south wall, coffee table, TV stand on the north wall, shelves on the west wall."""
    ys = WALL_THICKNESS / 2
    yn = depth - WALL_THICKNESS / 2
    xe = x1 - WALL_THICKNESS / 2
    sw, sd = float(rng.uniform(1.8, 2.2)), 0.9
    sx1 = xe - 0.3
    sx0 = sx1 - sw
    b.solid("sofa_0_base", sx0, ys, 0.0, sx1, ys + sd, 0.45)
    b.solid("sofa_0_back", sx0, ys, 0.45, sx1, ys + 0.2, 0.85)
    b.receptacles["sofa_0"] = Receptacle(
        "sofa_0",
        "sofa",
        ((sx0 + sx1) / 2, ys + 0.2 + (sd - 0.2) / 2, 0.45),
        (sw / 2 - 0.15, (sd - 0.2) / 2 - 0.1),
        0.0,
        None,
    )
    srect = (sx0, ys, sx1, ys + sd)
    b.footprint("sofa_0", srect, 0.85)
    b.keep_clear.append(front_zone(srect, "n", 0.9))
    # coffee table 0.9 m in front of the sofa
    cw, cd, ch = 1.0, 0.55, 0.42
    ccx = (sx0 + sx1) / 2
    cy0 = ys + sd + 0.9
    b.solid("coffee_table_0_top", ccx - cw / 2, cy0, ch - 0.04, ccx + cw / 2, cy0 + cd, ch)
    b.solid(
        "coffee_table_0_base",
        ccx - cw / 2 + 0.1,
        cy0 + 0.1,
        0.0,
        ccx + cw / 2 - 0.1,
        cy0 + cd - 0.1,
        ch - 0.04,
    )
    b.receptacles["coffee_table_0"] = Receptacle(
        "coffee_table_0", "coffee_table", (ccx, cy0 + cd / 2, ch), (cw / 2 - 0.06, cd / 2 - 0.06), 0.0, None
    )
    crect = (ccx - cw / 2, cy0, ccx + cw / 2, cy0 + cd)
    b.footprint("coffee_table_0", crect, ch)
    b.keep_clear.append(front_zone(crect, "n", 0.9))
    # TV stand on the north wall, facing the sofa
    tw, td, th = 1.4, 0.45, 0.55
    tcx = ccx
    b.solid("tv_stand_0_body", tcx - tw / 2, yn - td, 0.0, tcx + tw / 2, yn, th)
    b.solid("tv_0", tcx - 0.5, yn - 0.1, th, tcx + 0.5, yn - 0.04, th + 0.6)
    b.receptacles["tv_stand_0"] = Receptacle(
        "tv_stand_0", "tv_stand", (tcx, yn - td / 2 - 0.06, th), (tw / 2 - 0.08, td / 2 - 0.12), 0.0, None
    )
    trect = (tcx - tw / 2, yn - td, tcx + tw / 2, yn)
    b.footprint("tv_stand_0", trect, th + 0.6)
    b.keep_clear.append(front_zone(trect, "s", 0.9))
    # shelves on the west wall, north half
    _shelves(b, rng, x0 + WALL_THICKNESS / 2, yn - 1.2, "w")


def _shelves(b: Builder, rng: np.random.Generator, wall_coord: float, along: float, side: str) -> bool:
    """A low open shelf unit against the wall on `side` of a room; its top is a receptacle."""
    w, d, h = float(rng.uniform(0.8, 1.0)), 0.38, float(rng.uniform(0.8, 1.0))
    rect = _against_wall_rect(wall_coord, along, side, w, d)
    front = front_zone(rect, _opposite(side), FRONT_CLEARANCE)
    if not b.is_free(rect) or not b.floor_free(front):
        return False
    name = b.next_name("shelves")
    x0, y0, x1, y1 = rect
    b.solid(f"{name}_body", x0, y0, 0.0, x1, y1, h)
    b.receptacles[name] = Receptacle(
        name,
        "shelf",
        ((x0 + x1) / 2, (y0 + y1) / 2, h),
        ((x1 - x0) / 2 - 0.06, (y1 - y0) / 2 - 0.06),
        0.0,
        None,
    )
    b.footprint(name, rect, h)
    b.keep_clear.append(front)
    return True


def _opposite(side: str) -> str:
    return {"n": "s", "s": "n", "e": "w", "w": "e"}[side]


def _against_wall_rect(
    wall_coord: float, along: float, side: str, w: float, d: float
) -> tuple[float, float, float, float]:
    """Footprint of a piece of width `w` (along the wall) and depth `d` touching the wall on `side`."""
    if side == "w":
        return (wall_coord, along - w / 2, wall_coord + d, along + w / 2)
    if side == "e":
        return (wall_coord - d, along - w / 2, wall_coord, along + w / 2)
    if side == "s":
        return (along - w / 2, wall_coord, along + w / 2, wall_coord + d)
    return (along - w / 2, wall_coord - d, along + w / 2, wall_coord)


def _bedroom(b: Builder, rng: np.random.Generator, x0: float, x1: float, depth: float) -> None:
    """Bed against the east wall and a night table (a small table receptacle)."""
    xe = x1 - WALL_THICKNESS / 2
    bw, bl = 1.6, 2.0
    by0 = WALL_THICKNESS / 2 + 0.4
    b.solid("bed_0", xe - bl, by0, 0.0, xe, by0 + bw, 0.5)
    b.solid("bed_0_head", xe - 0.08, by0, 0.5, xe, by0 + bw, 1.0)
    b.footprint("bed_0", (xe - bl, by0, xe, by0 + bw), 1.0)
    _side_table(b, rng, (xe - 0.25, by0 + bw + 0.35))


def _side_table(b: Builder, rng: np.random.Generator, center: Vec2) -> bool:
    s, h = 0.25, float(rng.uniform(0.5, 0.65))
    rect = (center[0] - s, center[1] - s, center[0] + s, center[1] + s)
    if not b.is_free(rect):
        return False
    name = b.next_name("table")
    b.solid(f"{name}_body", *rect[:2], 0.0, *rect[2:], h)
    b.receptacles[name] = Receptacle(
        name, "table", (center[0], center[1], h), (s - 0.05, s - 0.05), 0.0, None
    )
    b.footprint(name, rect, h)
    return True


def _clutter(b: Builder, rng: np.random.Generator, rooms: list[Room], count: int) -> None:
    """Extra pieces against walls (plants, bookcases, cabinets, side tables, shelves), never in keep-clear zones."""
    kinds = ("plant", "bookcase", "cabinet", "side_table", "shelves", "armchair")
    placed = 0
    for _ in range(count * 25):
        if placed >= count:
            break
        room = rooms[int(rng.integers(len(rooms)))]
        kind = kinds[int(rng.integers(len(kinds)))]
        side = "nsew"[int(rng.integers(4))]
        (rx0, ry0), (rx1, ry1) = room.bounds
        wall = {"n": ry1, "s": ry0, "w": rx0, "e": rx1}[side]
        lo, hi = (rx0, rx1) if side in "ns" else (ry0, ry1)
        along = float(rng.uniform(lo + 0.6, hi - 0.6))
        if kind == "shelves":
            placed += _shelves(b, rng, wall, along, side)
            continue
        w, d, h = {
            "plant": (0.4, 0.4, 1.1),
            "bookcase": (0.8, 0.32, 1.8),
            "cabinet": (0.9, 0.45, 0.8),
            "side_table": (0.5, 0.5, 0.55),
            "armchair": (0.8, 0.8, 0.8),
        }[kind]
        rect = _against_wall_rect(wall, along, side, w, d)
        if not b.is_free(rect):
            continue
        if kind == "side_table":
            front = front_zone(rect, _opposite(side), FRONT_CLEARANCE)
            if not b.floor_free(front):
                continue
            cx, cy = (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2
            if _side_table(b, rng, (cx, cy)):
                b.keep_clear.append(front)
                placed += 1
            continue
        name = b.next_name(kind)
        b.solid(f"{name}_body", rect[0], rect[1], 0.0, rect[2], rect[3], h)
        b.footprint(name, rect, h)
        placed += 1


@functools.lru_cache(maxsize=64)
def cached_layout(seed: int) -> ApartmentLayout:
    """`generate_layout(seed)`, one object per seed in a process (never modified by its users), so that
    maps cached per layout (`rearrange.nav_maps.layout_navmap`, `planning_map`) serve every sim built on it."""
    return generate_layout(seed)


def generate_layout(seed: int) -> ApartmentLayout:
    """A procedural apartment; deterministic for any integer seed."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed) % (2**64)))
    depth = float(rng.uniform(6.0, 7.5))
    widths = [float(rng.uniform(3.8, 4.6)), float(rng.uniform(3.4, 4.2)), float(rng.uniform(4.4, 5.4))]
    kinds = ["kitchen", "dining", "living"]
    if rng.random() < 0.5:
        widths.append(float(rng.uniform(3.4, 4.2)))
        kinds.append("bedroom")
    xs = np.concatenate([[0.0], np.cumsum(widths)])
    total = float(xs[-1])
    b = Builder()
    h = WALL_THICKNESS / 2
    rooms = [
        Room(f"{k}_0", k, ((float(xs[i]) + h, h), (float(xs[i + 1]) - h, depth - h)))
        for i, k in enumerate(kinds)
    ]

    add_wall(b, "wall_south", (0.0, 0.0), (total, 0.0), [])
    add_wall(b, "wall_north", (0.0, depth), (total, depth), [])
    add_wall(b, "wall_west", (0.0, 0.0), (0.0, depth), [])
    add_wall(b, "wall_east", (total, 0.0), (total, depth), [])
    for i in range(1, len(kinds)):
        if kinds[i] == "bedroom":
            door_y = float(rng.uniform(depth / 2 + 0.2, depth - 1.3 - DOOR_WIDTH / 2))
        else:
            door_y = float(rng.uniform(1.0, depth / 2 - 0.2))
        add_wall(
            b,
            f"wall_{i}",
            (float(xs[i]), 0.0),
            (float(xs[i]), depth),
            [(door_y - DOOR_WIDTH / 2, door_y + DOOR_WIDTH / 2)],
        )
        b.keep_clear.append(
            (
                float(xs[i]) - 1.4,
                door_y - DOOR_WIDTH / 2 - 0.1,
                float(xs[i]) + 1.4,
                door_y + DOOR_WIDTH / 2 + 0.1,
            )
        )

    builders = {"kitchen": _kitchen, "dining": _dining, "living": _living, "bedroom": _bedroom}
    for i, k in enumerate(kinds):
        builders[k](b, rng, float(xs[i]), float(xs[i + 1]), depth)
    _clutter(b, rng, rooms, int(rng.integers(0, 8)))

    return ApartmentLayout(
        seed=int(seed),
        bounds=((0.0, 0.0), (total, depth)),
        rooms=rooms,
        walls=b.walls,
        furniture=b.furniture,
        receptacles=b.receptacles,
        articulated=b.articulated,
        footprints=b.footprints,
    )
