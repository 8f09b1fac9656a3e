"""NavMap: inflation, geodesic distances around walls, paths through doorways, layout reachability."""

import numpy as np
import pytest

from rearrange.apartment import ApartmentLayout, Box
from rearrange.layout import generate_layout, layout_seeds
from rearrange.navmap import NavMap


def _doorway_layout() -> ApartmentLayout:
    """A 6 x 4 m room split by a wall at x = 3 with a 1 m doorway at y in [1.5, 2.5]."""
    walls = [Box("wall_a", (3.0, 0.75, 1.0), (0.05, 0.75, 1.0)), Box("wall_b", (3.0, 3.25, 1.0), (0.05, 0.75, 1.0))]
    return ApartmentLayout(seed=0, bounds=((0.0, 0.0), (6.0, 4.0)), rooms=[], walls=walls, furniture=[],
                           receptacles={}, articulated={}, footprints=[Box("crate", (1.0, 3.0, 0.3), (0.2, 0.2, 0.3))])


@pytest.fixture(scope="module")
def door_map() -> NavMap:
    return NavMap(_doorway_layout(), resolution=0.05, robot_radius=0.3)


def test_inflated_obstacle_cells_not_navigable(door_map):
    assert not door_map.is_navigable((3.0, 0.5))  # inside the wall
    assert not door_map.is_navigable((2.8, 0.5))  # 0.15 m from the wall face < radius
    assert door_map.is_navigable((2.6, 0.5))  # 0.35 m from the wall face
    assert not door_map.is_navigable((1.0, 3.0))  # crate
    assert not door_map.is_navigable((1.0, 2.55))  # 0.25 m from the crate face
    assert door_map.is_navigable((1.0, 2.4))
    assert not door_map.is_navigable((0.1, 2.0))  # too close to the outer bounds
    assert not door_map.is_navigable((-1.0, 2.0))
    assert door_map.is_navigable((3.0, 2.0))  # the middle of the doorway


def test_geodesic_longer_than_euclidean_and_symmetric(door_map):
    a, b = (1.0, 0.5), (5.0, 0.5)
    d = door_map.geodesic_distance(a, b)
    assert d > np.linalg.norm(np.subtract(a, b)) + 1.0  # must detour through the doorway
    assert abs(d - door_map.geodesic_distance(b, a)) < 1e-6
    # same room: close to euclidean (8-connected grid overestimates by at most ~8%)
    e = door_map.geodesic_distance((1.0, 0.5), (2.0, 1.5))
    assert np.hypot(1.0, 1.0) - 1e-6 <= e <= 1.09 * np.hypot(1.0, 1.0)


def test_path_goes_through_door(door_map):
    a, b = (1.0, 0.5), (5.0, 0.5)
    p = door_map.path(a, b)
    assert p.shape[1] == 2 and len(p) >= 3
    assert np.allclose(p[0], a) and np.allclose(p[-1], b)
    # the crossing of x = 3 happens in the doorway
    for q0, q1 in zip(p[:-1], p[1:], strict=True):
        assert door_map.segment_clear(q0, q1)
        if (q0[0] - 3.0) * (q1[0] - 3.0) < 0:
            y = q0[1] + (q1[1] - q0[1]) * (3.0 - q0[0]) / (q1[0] - q0[0])
            assert 1.5 + 0.3 - 1e-6 <= y <= 2.5 - 0.3 + 1e-6
    length = float(np.sum(np.linalg.norm(np.diff(p, axis=0), axis=1)))
    assert length <= door_map.geodesic_distance(a, b) + 1e-6  # shortcutting never lengthens


def test_snapping_and_sampling(door_map):
    # a goal inside the crate snaps to the nearest navigable cell within 1 m
    assert np.isfinite(door_map.geodesic_distance((1.0, 1.0), (1.0, 3.0)))
    assert door_map.reachable((1.0, 1.0), (5.0, 3.5))
    assert not np.isfinite(door_map.geodesic_distance((1.0, 1.0), (20.0, 20.0)))
    assert len(door_map.path((1.0, 1.0), (20.0, 20.0))) == 0
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = door_map.sample_navigable(rng, near=(4.5, 2.0), radius=0.5)
        assert door_map.is_navigable(p) and np.linalg.norm(p - (4.5, 2.0)) <= 0.5 + 1e-9
    assert door_map.sample_navigable(rng, near=(3.0, 0.5), radius=0.05) is None


def test_sealed_room_is_not_part_of_the_largest_component():
    layout = _doorway_layout()
    layout.walls.append(Box("plug", (3.0, 2.0, 1.0), (0.05, 0.6, 1.0)))  # close the doorway
    m = NavMap(layout)
    left, right = m.is_navigable((1.0, 1.0)), m.is_navigable((5.0, 1.0))
    assert left != right  # exactly one side survives
    assert not m.reachable((1.0, 1.0), (5.0, 1.0))


@pytest.mark.parametrize("split", ["train", "val"])
def test_every_layout_is_fully_reachable(split):
    """All receptacles (within 0.8 m) and articulated fronts lie on the one navigable component."""
    for seed in layout_seeds(split):
        layout = generate_layout(seed)
        m = NavMap(layout)
        points = [a.front_center for a in layout.articulated.values()]
        for r in layout.receptacles.values():
            near = m.nearest_navigable(r.center, 0.8)
            assert near is not None, f"layout {seed}: receptacle {r.name} out of reach"
            points.append(tuple(near))
        for a in layout.articulated.values():
            assert m.is_navigable(a.front_center), f"layout {seed}: {a.name} front not navigable"
        field = m.distance_field(points[0])
        for p in points:
            assert np.isfinite(field[m.world_to_cell(p)]), f"layout {seed}: {p} unreachable"


def test_path_heading_points_at_the_doorway_not_through_the_wall(door_map):
    start, goal = np.array([2.0, 0.6]), np.array([4.0, 0.6])  # the straight line crosses wall_a
    distance, direction = door_map.path_heading(start, goal)
    assert distance == pytest.approx(door_map.geodesic_distance(start, goal))
    assert np.linalg.norm(direction) == pytest.approx(1.0)
    assert direction[1] > 0.5  # towards the doorway (y 1.5-2.5), not along +x into the wall
    # in open floor with nothing between, it points straight at the goal
    _, direction = door_map.path_heading(np.array([1.0, 1.0]), np.array([2.0, 1.0]))
    np.testing.assert_allclose(direction, [1.0, 0.0], atol=0.05)  # to a cell centre


@pytest.mark.parametrize("seed", [0, 904])
def test_walking_along_path_heading_reaches_the_goal(seed):
    """Small steps along the heading lead to the goal through generated apartments, never much longer
    than the geodesic distance and never onto blocked floor."""
    nav = NavMap(generate_layout(seed))
    rng = np.random.default_rng(seed)
    walks = 0
    while walks < 8:
        a, goal = nav.sample_navigable(rng), nav.sample_navigable(rng)
        total = nav.geodesic_distance(a, goal)
        if not np.isfinite(total) or total < 2.0:
            continue
        walks += 1
        p, walked = np.asarray(a, dtype=np.float64), 0.0
        for _ in range(int(2 * total / 0.05)):
            distance, direction = nav.path_heading(p, goal)
            if distance < 0.2:
                break
            p, walked = p + 0.05 * direction, walked + 0.05
            assert nav.snap_cell(p, max_dist=0.1) is not None, (seed, a, goal, p)
        assert distance < 0.2 and walked <= 1.05 * total, (seed, a, goal, walked, total)


@pytest.mark.parametrize("split", ["train", "val"])
def test_every_navigable_cell_has_a_path_to_every_other(split):
    """The navigable component is the path graph's: a pocket of free cells that touches the rest only at
    a cell corner (which a diagonal step may not cut, `NavMap.path`) is not navigable, so no goal snaps
    into it with an infinite geodesic distance (Tidy House's nav drove into walls towards such goals)."""
    for seed in layout_seeds(split):
        m = NavMap(generate_layout(seed))
        field = m.distance_field(m.cell_to_world(m._cells[0]))
        assert np.isfinite(field[m.largest_component_mask]).all(), f"layout {seed}: navigable cells cut off"


def test_corner_joined_pocket_is_not_navigable():
    """Two free squares meeting only at one corner: the smaller is not navigable, and a point in it snaps
    to the larger with a finite distance."""
    walls = [Box("a", (1.5, 3.5, 1.0), (1.5, 0.5, 1.0)), Box("b", (3.5, 1.5, 1.0), (0.5, 1.5, 1.0))]
    layout = ApartmentLayout(seed=0, bounds=((0.0, 0.0), (4.0, 4.0)), rooms=[], walls=walls, furniture=[],
                             receptacles={}, articulated={}, footprints=[])
    m = NavMap(layout, resolution=0.1, robot_radius=0.0)
    big, pocket = (1.5, 1.5), (3.5, 3.5)  # 3 x 3 m below-left, 1 x 1 m above-right, joined at (3, 3)
    assert m.is_navigable(big) and not m.is_navigable(pocket)
    assert np.isfinite(m.geodesic_distance(big, pocket))  # the pocket's point snaps onto the big square


def test_a_goal_on_a_shelf_against_a_wall_is_reached_from_the_shelf_side_never_through_the_wall():
    """Stop 90: a shelf (0.38 m deep) stands against the doorway wall's east face. A point at its back is 0.53 m
    from the floor behind the wall and 0.55 m from the shelf's front: the plain snap takes the wrong room."""
    layout = _doorway_layout()
    shelf = Box("shelf", (3.24, 0.75, 0.5), (0.19, 0.4, 0.5))  # x in [3.05, 3.43], against wall_a
    layout = ApartmentLayout(seed=0, bounds=layout.bounds, rooms=[], walls=layout.walls, furniture=[],
                             receptacles={}, articulated={}, footprints=[shelf])
    nav = NavMap(layout, resolution=0.05, robot_radius=0.3)
    goal = np.array([3.19, 0.75])
    assert nav.cell_to_world(nav.snap_cell(goal))[0] < 3.0  # the nearest navigable cell: behind the wall
    stand = nav.reach_point(goal)
    assert stand[0] > 3.43 and np.linalg.norm(stand - goal) < 0.8  # in front of the shelf, within reach
    # nav's compass: from the west room the path leads through the doorway, not to the wall's back
    field = nav.distance_field(goal)
    assert field[nav.world_to_cell((2.6, 0.75))] > 2.0
    assert nav.field_at(field, stand) == pytest.approx(0.0)
    path = nav.path((1.0, 0.75), goal)
    assert np.allclose(path[-1], stand)
    # a pick's reach region keeps only the shelf side's cells
    region = nav.region_distance_field(goal, 0.8)
    assert region[nav.world_to_cell((2.6, 0.75))] > 1.5 and nav.field_at(region, stand) == pytest.approx(0.0)
    # a point in open floor, or one with no wall near, snaps as before
    assert nav.reach_cell((1.0, 2.55)) == nav.snap_cell((1.0, 2.55))
