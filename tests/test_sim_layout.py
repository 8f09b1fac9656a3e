"""Procedural apartments: determinism, splits, required furniture, free space, and that every layout compiles."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from rearrange.layout import (
    TRAIN_LAYOUT_SEEDS,
    VAL_LAYOUT_SEEDS,
    generate_layout,
    layout_seeds,
)
from rearrange.objects import BOWL_KINDS, FRUIT_KINDS, OBJECT_KINDS
from rearrange.scene import build_scene_xml
from rearrange.sim import RearrangeSim, load_sim_config

ALL_SEEDS = TRAIN_LAYOUT_SEEDS + VAL_LAYOUT_SEEDS


def test_generate_layout_is_deterministic():
    a, b = generate_layout(7), generate_layout(7)
    assert a == b
    assert generate_layout(8) != a
    generate_layout(-3)  # any integer is a valid seed
    generate_layout(2**70)


def test_splits():
    assert len(TRAIN_LAYOUT_SEEDS) >= 20 and len(VAL_LAYOUT_SEEDS) >= 5
    assert not set(TRAIN_LAYOUT_SEEDS) & set(VAL_LAYOUT_SEEDS)
    assert layout_seeds("train") == TRAIN_LAYOUT_SEEDS
    assert layout_seeds("val") == VAL_LAYOUT_SEEDS
    with pytest.raises(ValueError, match="train.*val"):
        layout_seeds("test")


def test_layouts_differ_in_size_and_clutter():
    layouts = [generate_layout(s) for s in ALL_SEEDS]
    areas = {round(lay.bounds[1][0] * lay.bounds[1][1], 1) for lay in layouts}
    pieces = {len(lay.footprints) for lay in layouts}
    assert len(areas) > 10 and len(pieces) >= 4


def test_objects_catalogue():
    assert len(OBJECT_KINDS) >= 10
    assert "bowl" in BOWL_KINDS and {"apple", "banana", "orange"} <= set(FRUIT_KINDS)
    for kind in OBJECT_KINDS.values():
        assert 0.01 < kind.mass < 2.0 and 0.005 < kind.rest_height < 0.2


@pytest.mark.parametrize("seed", ALL_SEEDS)
def test_layout_content_and_compiles(seed):
    lay = generate_layout(seed)
    kinds = {r.kind for r in lay.receptacles.values()}
    assert {"table", "coffee_table", "counter", "fridge", "drawer", "sofa", "tv_stand", "shelf"} <= kinds
    assert {"fridge", "drawer_0", "drawer_1"} <= set(lay.articulated)
    assert lay.receptacles["drawer_0"].container == "drawer_0"
    assert {"fridge_shelf_0", "fridge_shelf_1"} <= set(lay.receptacles)
    assert all(lay.receptacles[f"fridge_shelf_{i}"].container == "fridge" for i in range(2))
    assert {r.kind for r in lay.rooms} >= {"kitchen", "dining", "living"}
    cfg = load_sim_config()
    sim = RearrangeSim(lay, ["apple", "bowl"], cfg)
    # the robot can stand in front of every container and at the start spot
    for art in lay.articulated.values():
        assert sim.base_is_free(art.front_center), (seed, art.name)
    # no two furniture footprints overlap
    rects = [
        (
            b.center[0] - b.half_size[0],
            b.center[1] - b.half_size[1],
            b.center[0] + b.half_size[0],
            b.center[1] + b.half_size[1],
        )
        for b in lay.footprints
    ]
    for i, a in enumerate(rects):
        for b in rects[i + 1 :]:
            overlap = a[0] < b[2] - 1e-9 and b[0] < a[2] - 1e-9 and a[1] < b[3] - 1e-9 and b[1] < a[3] - 1e-9
            assert not overlap, (seed, a, b)
    xml, _ = build_scene_xml(lay, list(OBJECT_KINDS), cfg)
    mujoco.MjModel.from_xml_string(xml)


def test_doorways_connect_rooms():
    """Every interior wall has a gap at least 1.0 m wide, away from furniture."""
    for seed in ALL_SEEDS[:8]:
        lay = generate_layout(seed)
        sim = RearrangeSim(lay, [])
        xs = sorted(
            {w.center[0] for w in lay.walls if w.name.startswith("wall_") and w.name.split("_")[1].isdigit()}
        )
        for x in xs:
            ys = np.arange(0.4, lay.bounds[1][1] - 0.4, 0.02)
            free = [sim.base_is_free((x, y)) for y in ys]
            assert any(free), (seed, x)


def _free_grid(lay, radius: float, res: float = 0.05):
    """Boolean grid of base positions that do not touch any obstacle (vectorised circle-vs-box test)."""
    (x0, y0), (x1, y1) = lay.bounds
    xs, ys = np.arange(x0, x1, res), np.arange(y0, y1, res)
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    free = np.ones(gx.shape, dtype=bool)
    for b in lay.obstacles_2d():
        c, s = np.cos(b.yaw), np.sin(b.yaw)
        dx, dy = gx - b.center[0], gy - b.center[1]
        lx, ly = c * dx + s * dy, -s * dx + c * dy
        ex = lx - np.clip(lx, -b.half_size[0], b.half_size[0])
        ey = ly - np.clip(ly, -b.half_size[1], b.half_size[1])
        free &= ex * ex + ey * ey >= radius * radius
    return free, xs, ys


@pytest.mark.parametrize("seed", ALL_SEEDS)
def test_every_room_and_container_front_is_reachable(seed):
    from scipy import ndimage

    lay = generate_layout(seed)
    free, xs, ys = _free_grid(lay, load_sim_config()["base"]["radius"])
    labels, _ = ndimage.label(free)

    def label_at(xy):
        return labels[int(np.argmin(np.abs(xs - xy[0]))), int(np.argmin(np.abs(ys - xy[1])))]

    start = label_at(lay.articulated["fridge"].front_center)
    assert start > 0
    for art in lay.articulated.values():
        assert label_at(art.front_center) == start, (seed, art.name)
    for room in lay.rooms:
        (rx0, ry0), (rx1, ry1) = room.bounds
        in_room = labels[
            (xs >= rx0)[:, None] & (xs <= rx1)[:, None] & (ys >= ry0)[None, :] & (ys <= ry1)[None, :]
        ]
        assert (in_room == start).any(), (seed, room.name)
    # every receptacle's surface is within arm's reach (0.8 m) of a reachable standing spot
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    reach_x, reach_y = gx[labels == start], gy[labels == start]
    for rec in lay.receptacles.values():
        ex = np.abs(reach_x - rec.center[0]) - rec.half_extent[0]
        ey = np.abs(reach_y - rec.center[1]) - rec.half_extent[1]
        dist = np.hypot(np.maximum(ex, 0), np.maximum(ey, 0))
        assert dist.min() < 0.8, (seed, rec.name, dist.min())
