"""Navigation map: an occupancy grid of the floor, inflated by the robot base radius.

Cells are free when the robot base (a disc of `robot_radius`) centred there overlaps no obstacle
box of `layout.obstacles_2d()` and stays inside `layout.bounds`. Only the largest 4-connected free
component is navigable, so every navigable point can reach every other one. Geodesic distances are
shortest paths on the 8-connected grid (scipy.sparse.csgraph.dijkstra; diagonal moves only where
both side cells are free), one distance field per goal cell, cached; `region_distance_field` gives
the distance to the nearest of many cells (a reach region) from one multi-source dijkstra.
A goal off the map (an object on furniture) is reached from the nearest navigable cell on its side of
any wall (`reach_cell`). The per-process map caches (`layout_navmap`, `planning_map`: the map with the
sim's open doors and drawers added) are `rearrange.nav_maps`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from scipy import ndimage, sparse
from scipy.sparse import csgraph

_SQRT2 = float(np.sqrt(2.0))
_PURSUIT_CANDIDATES = 48  # cells nearest the goal whose straight segments path_heading checks
_MAX_PURSUIT_POINTS = 4096  # cached pursuit points (field, cell) of path_heading / field_heading
_REACH_CHUNK = 256  # cells per batch of `reach_cell`'s wall checks, nearest first


def remember(store: OrderedDict, limit: int, key: Hashable, build: Callable[[], Any], pin: Any = None) -> Any:
    """`store[key]`'s value (most recently used last), or `build()` stored there, oldest first out. `pin`: the
    object a key names by its id (a layout, a distance field), kept in the entry so that the id is not reused
    while cached, and checked on a hit."""
    hit = store.get(key)
    if hit is not None and hit[0] is pin:
        store.move_to_end(key)
        return hit[1]
    value = build()
    store[key] = (pin, value)
    if len(store) > limit:
        store.popitem(last=False)
    return value


def _unit(v: np.ndarray) -> np.ndarray:
    """`v` scaled to length 1 (the +x axis for a zero vector)."""
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 1e-9 else np.array([1.0, 0.0])


def rasterize_inflated_boxes(boxes: Sequence[Any], origin: np.ndarray, resolution: float,
                             shape: tuple[int, int], radius: float) -> np.ndarray:
    """Boolean (nx, ny) grid: True where a cell centre is within `radius` of an oriented box footprint.

    A box has `center` (x, y, ...), `half_size` (hx, hy, ...) and `yaw`. The test is exact (Minkowski
    sum of the rectangle with a disc), evaluated at cell centres.
    """
    nx, ny = shape
    blocked = np.zeros(shape, dtype=bool)
    for box in boxes:
        cx, cy = float(box.center[0]), float(box.center[1])
        hx, hy = float(box.half_size[0]), float(box.half_size[1])
        yaw = float(getattr(box, "yaw", 0.0))
        c, s = np.cos(yaw), np.sin(yaw)
        ext_x = abs(c) * hx + abs(s) * hy + radius
        ext_y = abs(s) * hx + abs(c) * hy + radius
        i0 = max(int(np.floor((cx - ext_x - origin[0]) / resolution)), 0)
        i1 = min(int(np.ceil((cx + ext_x - origin[0]) / resolution)) + 1, nx)
        j0 = max(int(np.floor((cy - ext_y - origin[1]) / resolution)), 0)
        j1 = min(int(np.ceil((cy + ext_y - origin[1]) / resolution)) + 1, ny)
        if i0 >= i1 or j0 >= j1:
            continue
        xs = origin[0] + (np.arange(i0, i1) + 0.5) * resolution - cx
        ys = origin[1] + (np.arange(j0, j1) + 0.5) * resolution - cy
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        lx = c * gx + s * gy  # world offset -> box frame
        ly = -s * gx + c * gy
        dx = np.maximum(np.abs(lx) - hx, 0.0)
        dy = np.maximum(np.abs(ly) - hy, 0.0)
        blocked[i0:i1, j0:j1] |= dx * dx + dy * dy <= radius * radius
    return blocked


class NavMap:
    """Occupancy grid, largest navigable component, geodesic distances and paths for one layout."""

    def __init__(self, layout: Any, resolution: float = 0.05, robot_radius: float = 0.3,
                 snap: float = 1.0, cache_size: int = 64) -> None:
        (xmin, ymin), (xmax, ymax) = layout.bounds
        self.resolution = float(resolution)
        self.robot_radius = float(robot_radius)
        self.snap = float(snap)
        self.origin = np.array([xmin, ymin], dtype=np.float64)
        nx = int(np.ceil((xmax - xmin) / resolution))
        ny = int(np.ceil((ymax - ymin) / resolution))
        self.shape = (nx, ny)
        centers_x = xmin + (np.arange(nx) + 0.5) * resolution
        centers_y = ymin + (np.arange(ny) + 0.5) * resolution
        inside = ((centers_x[:, None] - xmin >= robot_radius) & (xmax - centers_x[:, None] >= robot_radius)
                  & (centers_y[None, :] - ymin >= robot_radius) & (ymax - centers_y[None, :] >= robot_radius))
        blocked = rasterize_inflated_boxes(layout.obstacles_2d(), self.origin, self.resolution,
                                           self.shape, self.robot_radius)
        self.free_mask = inside & ~blocked
        # 4-connected components: the path graph (`_build_graph`, `path`) takes a diagonal step only when
        # both cells beside it are free, so two cells that touch only at a corner are not connected. An
        # 8-connected label counted such corner-joined pockets as navigable: points snapped into them had
        # no path (inf geodesic, goal_path_compass fell back to the straight line through walls)
        labels, count = ndimage.label(self.free_mask)
        if count == 0:
            raise ValueError(f"layout {getattr(layout, 'seed', '?')} has no free floor for a robot "
                             f"of radius {robot_radius} m")
        sizes = np.bincount(labels.ravel())[1:]
        self.largest_component_mask = labels == (int(np.argmax(sizes)) + 1)
        self._build_graph()
        # nearest navigable cell for every cell, for snapping off-map points
        dist, idx = ndimage.distance_transform_edt(~self.largest_component_mask, return_indices=True)
        self._snap_dist = dist * self.resolution
        self._snap_idx = idx
        # the walls themselves (not inflated): a goal on furniture against a wall is reached from the
        # furniture's front, never from the floor behind the wall (`reach_cell`)
        walls = list(getattr(layout, "walls", ()))
        self.wall_mask = rasterize_inflated_boxes(walls, self.origin, self.resolution, self.shape, 0.0) \
            if walls else None
        # caches (`remember`): distance fields per goal node, region fields per cell, pursuit points
        self._fields: OrderedDict = OrderedDict()
        self._region_fields: OrderedDict = OrderedDict()
        self._pursuit_points: OrderedDict = OrderedDict()
        self._reach_cells: OrderedDict = OrderedDict()
        self._cache_size = int(cache_size)

    # ------------------------------------------------------------------ grid helpers

    def _build_graph(self) -> None:
        mask = self.largest_component_mask
        nx, ny = self.shape
        node_of = -np.ones(self.shape, dtype=np.int64)
        cells = np.argwhere(mask)
        node_of[cells[:, 0], cells[:, 1]] = np.arange(len(cells))
        self._node_of = node_of
        self._cells = cells
        rows, cols, weights = [], [], []

        def free(i: np.ndarray, j: np.ndarray) -> np.ndarray:
            ok = (i >= 0) & (i < nx) & (j >= 0) & (j < ny)
            ok[ok] = mask[i[ok], j[ok]]
            return ok

        def add(di: int, dj: int, w: float, need_sides: bool) -> None:
            i, j = cells[:, 0], cells[:, 1]
            ok = free(i + di, j + dj)
            if need_sides:
                ok &= free(i + di, j) & free(i, j + dj)
            rows.append(node_of[i[ok], j[ok]])
            cols.append(node_of[i[ok] + di, j[ok] + dj])
            weights.append(np.full(int(ok.sum()), w))

        r = self.resolution
        add(1, 0, r, False)
        add(0, 1, r, False)
        add(1, 1, r * _SQRT2, True)
        add(1, -1, r * _SQRT2, True)
        n = len(cells)
        self._graph = sparse.csr_matrix(
            (np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))

    def world_to_cell(self, xy: Sequence[float]) -> tuple[int, int]:
        """Grid indices of the cell containing `xy` (may be outside the grid)."""
        return (int(np.floor((float(xy[0]) - self.origin[0]) / self.resolution)),
                int(np.floor((float(xy[1]) - self.origin[1]) / self.resolution)))

    def cell_to_world(self, cell: Sequence[int]) -> np.ndarray:
        """World xy of a cell centre."""
        return self.origin + (np.asarray(cell, dtype=np.float64) + 0.5) * self.resolution

    def _in_grid(self, cell: tuple[int, int]) -> bool:
        return 0 <= cell[0] < self.shape[0] and 0 <= cell[1] < self.shape[1]

    def is_navigable(self, xy: Sequence[float]) -> bool:
        """True if the robot base centred at `xy` is on the largest free component."""
        cell = self.world_to_cell(xy)
        return self._in_grid(cell) and bool(self.largest_component_mask[cell])

    def snap_cell(self, xy: Sequence[float], max_dist: float | None = None) -> tuple[int, int] | None:
        """The navigable cell nearest to `xy` (its own if navigable), None if none within `max_dist`."""
        max_dist = self.snap if max_dist is None else float(max_dist)
        cell = self.world_to_cell(xy)
        if self._in_grid(cell) and self.largest_component_mask[cell]:
            return cell
        ci = min(max(cell[0], 0), self.shape[0] - 1)
        cj = min(max(cell[1], 0), self.shape[1] - 1)
        target = (int(self._snap_idx[0, ci, cj]), int(self._snap_idx[1, ci, cj]))
        if np.linalg.norm(self.cell_to_world(target) - np.asarray(xy[:2], dtype=np.float64)) > max_dist:
            return None
        return target

    def nearest_navigable(self, xy: Sequence[float], max_dist: float | None = None) -> np.ndarray | None:
        """World xy of the navigable point nearest to `xy` (itself if navigable), None if too far."""
        if self.is_navigable(xy):
            return np.asarray(xy[:2], dtype=np.float64).copy()
        cell = self.snap_cell(xy, max_dist)
        return None if cell is None else self.cell_to_world(cell)

    def reach_cell(self, xy: Sequence[float], max_dist: float | None = None) -> tuple[int, int] | None:
        """The navigable cell nearest to `xy` whose straight line to `xy` crosses no wall: where a base
        stands to reach a point on furniture. `snap_cell` alone takes the nearest cell through a wall
        too: an object at the back of a shelf against a wall is often nearer the floor behind the wall
        (stop 90: 40 of the 2,000 Tidy House val targets and goals, seeds 0-3, snapped there, and the
        nav drove to the wrong room). `snap_cell`'s cell when no cell within `max_dist` is wall-free.
        Cached per point (a goal is asked for every step)."""
        max_dist = self.snap if max_dist is None else float(max_dist)
        point = np.asarray(xy[:2], dtype=np.float64)
        key = (round(float(point[0]), 4), round(float(point[1]), 4), max_dist)
        return remember(self._reach_cells, self._cache_size, key, lambda: self._find_reach_cell(point, max_dist))

    def reach_point(self, xy: Sequence[float], max_dist: float | None = None) -> np.ndarray | None:
        """World xy where a base stands to reach `xy`: itself if navigable, else `reach_cell`'s centre
        (None if too far)."""
        if self.is_navigable(xy):
            return np.asarray(xy[:2], dtype=np.float64).copy()
        cell = self.reach_cell(xy, max_dist)
        return None if cell is None else self.cell_to_world(cell)

    def _find_reach_cell(self, point: np.ndarray, max_dist: float) -> tuple[int, int] | None:
        """`reach_cell` computed: the nearest cell if its line is wall-free, else the nearest wall-free one."""
        cell = self.snap_cell(point, max_dist)
        if cell is None or self.wall_mask is None or self._wall_free(self.cell_to_world(cell)[None, :], point)[0]:
            return cell
        res = self.resolution
        span = max_dist if np.isfinite(max_dist) else res * max(self.shape)
        lo = np.maximum(np.floor((point - span - self.origin) / res).astype(int), 0)
        hi = np.minimum(np.ceil((point + span - self.origin) / res).astype(int) + 1, self.shape)
        ii, jj = np.nonzero(self.largest_component_mask[lo[0]:hi[0], lo[1]:hi[1]])
        cells = np.stack([ii + lo[0], jj + lo[1]], axis=1)
        centres = self.origin + (cells + 0.5) * res
        dist = np.linalg.norm(centres - point, axis=1)
        order = np.argsort(dist, kind="stable")
        order = order[dist[order] <= max_dist]
        # nearest first, a chunk at a time: the wall-free cell is usually among the first few hundred, and a
        # search over the whole map (`max_dist` inf) would otherwise sample every cell's segment at once
        for start in range(0, len(order), _REACH_CHUNK):
            chunk = order[start:start + _REACH_CHUNK]
            clear = self._wall_free(centres[chunk], point)
            if clear.any():
                best = cells[chunk[int(np.argmax(clear))]]
                return int(best[0]), int(best[1])
        return cell

    def _wall_free(self, starts: np.ndarray, end: np.ndarray) -> np.ndarray:
        """For each row of `starts`, whether the straight segment to `end` crosses no wall (res/2 samples)."""
        if self.wall_mask is None or len(starts) == 0:
            return np.ones(len(starts), dtype=bool)
        idx, inside = self._segment_cells(end, starts)
        return ~(inside & self.wall_mask[idx[..., 0], idx[..., 1]]).any(axis=1)

    def _segment_cells(self, a: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Grid cells of points every res/2 along the segments from `a` to each row of `ends`: indices
        (N, K, 2), 0 where a point is off the grid, and whether it is on the grid (N, K)."""
        length = float(np.max(np.linalg.norm(ends - a, axis=1), initial=0.0))
        n = max(int(np.ceil(length / (0.5 * self.resolution))), 1)
        t = np.arange(n + 1)[None, :, None] / n
        pts = a[None, None, :] + (ends[:, None, :] - a[None, None, :]) * t
        idx = np.floor((pts - self.origin) / self.resolution).astype(np.int64)
        inside = ((idx >= 0) & (idx < np.asarray(self.shape))).all(axis=2)
        return np.where(inside[..., None], idx, 0), inside

    # ------------------------------------------------------------------ distances

    def distance_field(self, goal_xy: Sequence[float]) -> np.ndarray | None:
        """Geodesic distance (metres) from every cell to the goal's cell (`reach_cell`: off the map, the
        nearest cell on the goal's side of any wall); inf elsewhere."""
        cell = self.reach_cell(goal_xy)
        if cell is None:
            return None
        return self._field_for_cell(cell)

    def _field_for_cell(self, cell: tuple[int, int]) -> np.ndarray:
        node = int(self._node_of[cell])

        def build() -> np.ndarray:
            d = csgraph.dijkstra(self._graph, directed=False, indices=node)
            field = np.full(self.shape, np.inf)
            field[self._cells[:, 0], self._cells[:, 1]] = d
            return field

        return remember(self._fields, self._cache_size, node, build)

    def geodesic_distance(self, a_xy: Sequence[float], b_xy: Sequence[float]) -> float:
        """Shortest-path length from a to b on the grid; inf if unreachable.

        Either end may be off the navigable area: it is snapped to the nearest navigable cell within
        `snap` metres (the distance is measured to/from that cell).
        """
        a_cell = self.snap_cell(a_xy)
        b_cell = self.snap_cell(b_xy)
        if a_cell is None or b_cell is None:
            return float("inf")
        return float(self._field_for_cell(b_cell)[a_cell])

    def region_distance_field(self, xy: Sequence[float], radius: float,
                              opening: tuple[np.ndarray, float] | None = None) -> np.ndarray:
        """Geodesic distance (metres) from every cell to the nearest navigable cell whose centre lies
        within `radius` (horizontal) of `xy`; inf off the navigable area.

        `opening` = (outward unit vector (2,), half width): only the cells in front of `xy` along the
        vector and within the half width of that line count (a point inside a container is reached
        through its opening, not through its side walls); when none does, the plain radius applies.
        One multi-source dijkstra (`min_only`) over all those cells; when none lies within `radius`,
        the single navigable cell nearest to `xy` is the source. Not cached (a target point is rarely
        asked for twice); read it with `field_at`.
        """
        c = np.asarray(xy[:2], dtype=np.float64)
        r, res = float(radius), self.resolution
        lo = np.maximum(np.floor((c - r - self.origin) / res).astype(int), 0)
        hi = np.minimum(np.ceil((c + r - self.origin) / res).astype(int) + 1, self.shape)
        ii, jj = np.nonzero(self.largest_component_mask[lo[0]:hi[0], lo[1]:hi[1]])
        ii, jj = ii + lo[0], jj + lo[1]
        offsets = self.origin + (np.stack([ii, jj], axis=1) + 0.5) * res - c
        keep = np.linalg.norm(offsets, axis=1) <= r
        if self.wall_mask is not None and keep.any():  # a point is never reached through a wall
            keep[keep] = self._wall_free(offsets[keep] + c, c)
        if opening is not None:
            out, half_width = np.asarray(opening[0], dtype=np.float64), float(opening[1])
            along = offsets @ out
            across = np.abs(offsets[:, 0] * out[1] - offsets[:, 1] * out[0])
            in_front = keep & (along >= 0.0) & (across <= half_width)
            keep = in_front if in_front.any() else keep
        nodes = self._node_of[ii[keep], jj[keep]]
        if len(nodes) == 0:
            cell = self.reach_cell(c, max_dist=float("inf"))
            assert cell is not None  # the largest component is never empty
            nodes = np.array([self._node_of[cell]])
        d = csgraph.dijkstra(self._graph, directed=False, indices=nodes, min_only=True)
        field = np.full(self.shape, np.inf)
        field[self._cells[:, 0], self._cells[:, 1]] = d
        return field

    def cached_region_field(self, xy: Sequence[float], radius: float,
                            opening: tuple[np.ndarray, float] | None = None) -> np.ndarray:
        """`region_distance_field` of the cell holding `xy`, cached like `distance_field` (for a target
        asked for every step, such as an object waiting to be picked)."""
        cell = tuple(np.floor((np.asarray(xy[:2], dtype=np.float64) - self.origin) / self.resolution).astype(int))
        key = (cell, float(radius), None if opening is None else
               (tuple(np.round(np.asarray(opening[0], dtype=np.float64), 3)), float(opening[1])))
        centre = self.origin + (np.asarray(cell) + 0.5) * self.resolution
        return remember(self._region_fields, self._cache_size, key,
                         lambda: self.region_distance_field(centre, radius, opening))

    def path_heading(self, a_xy: Sequence[float], goal_xy: Sequence[float],
                     lookahead: float = 1.0) -> tuple[float, np.ndarray] | None:
        """(geodesic distance a -> goal, world unit vector along the shortest path from a), or None when
        no path exists. The vector points at the furthest-along point of the path within `lookahead`
        metres that a straight, navigable segment reaches (pure pursuit on the distance field): among
        the cells within `lookahead`, those whose distance to the goal is not below what walking straight
        there could save (grid paths are up to 8.3% longer than straight lines; this keeps out cells
        behind a wall), the one nearest the goal with a clear segment from a's cell. Within one cell of
        the goal, or when no segment is clear: the goal direction or the next cell downhill."""
        field = self.distance_field(goal_xy)
        return None if field is None else self.field_heading(field, a_xy, goal_xy, lookahead)

    def field_heading(self, field: np.ndarray, a_xy: Sequence[float], goal_xy: Sequence[float],
                      lookahead: float = 1.0) -> tuple[float, np.ndarray] | None:
        """`path_heading` on a given distance field (e.g. a `region_distance_field`); `goal_xy` is the
        direction used within one cell of the goal (the field's zero). None when a's cell is unreachable."""
        cell = self.snap_cell(a_xy, max_dist=float("inf"))
        if cell is None or not np.isfinite(field[cell]):
            return None
        here = float(field[cell])
        a = np.asarray(a_xy[:2], dtype=np.float64)
        point = None if here <= self.resolution else self._pursuit_point(field, cell, here, lookahead)
        return here, _unit((np.asarray(goal_xy[:2], dtype=np.float64) if point is None else point) - a)

    def _pursuit_point(self, field: np.ndarray, cell: tuple[int, int], here: float,
                       lookahead: float) -> np.ndarray | None:
        """The world point `field_heading` steers a base in `cell` at (None: straight at the goal). It
        depends on the field and the cell only, so it is cached: a policy standing still (arm work) or
        crossing a cell over several steps pays for the segment checks once."""
        return remember(self._pursuit_points, _MAX_PURSUIT_POINTS, (id(field), cell, float(lookahead)),
                         lambda: self._find_pursuit_point(field, cell, here, lookahead), pin=field)

    def _find_pursuit_point(self, field: np.ndarray, cell: tuple[int, int], here: float,
                            lookahead: float) -> np.ndarray | None:
        """`_pursuit_point` computed: the segment checks over the cells within `lookahead`."""
        k = int(np.ceil(lookahead / self.resolution))
        lo = np.maximum(np.asarray(cell) - k, 0)
        hi = np.minimum(np.asarray(cell) + k + 1, self.shape)
        window = field[lo[0]:hi[0], lo[1]:hi[1]]
        ii, jj = np.nonzero(window < here)
        cells = np.stack([ii + lo[0], jj + lo[1]], axis=1)
        start = self.cell_to_world(cell)
        centers = self.origin + (cells + 0.5) * self.resolution
        straight = np.linalg.norm(centers - start, axis=1)
        values = window[ii, jj]
        keep = (straight <= lookahead) & (values >= here - 1.09 * straight - self.resolution)
        if not keep.any():
            return None
        centers, values = centers[keep], values[keep]
        order = np.argsort(values, kind="stable")[:_PURSUIT_CANDIDATES]
        for chunk in (order[:8], order[8:]):  # the first few are clear almost always
            clear = self._segments_clear(start, centers[chunk])  # an empty chunk gives an empty mask
            if clear.any():
                return centers[chunk[int(np.argmax(clear))]]
        return self._downhill_neighbour(cell, field)

    def _downhill_neighbour(self, cell: tuple[int, int], field: np.ndarray) -> np.ndarray:
        """World centre of the 8-neighbour of `cell` nearest the goal on `field` (the grid path's next cell)."""
        i, j = cell
        lo_i, lo_j = max(i - 1, 0), max(j - 1, 0)
        block = field[lo_i:i + 2, lo_j:j + 2]
        bi, bj = np.unravel_index(int(np.argmin(block)), block.shape)
        return self.cell_to_world((lo_i + bi, lo_j + bj))

    def _segments_clear(self, a: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """For each row of `ends`, whether the straight segment from `a` stays navigable (res/2 samples)."""
        idx, inside = self._segment_cells(a, ends)
        return (inside & self.largest_component_mask[idx[..., 0], idx[..., 1]]).all(axis=1)

    def field_at(self, field: np.ndarray, xy: Sequence[float]) -> float:
        """`field`'s value at the cell of `xy`, or at the navigable cell nearest to it (O(1))."""
        cell = self.snap_cell(xy, max_dist=float("inf"))
        return float("inf") if cell is None else float(field[cell])

    def reachable(self, a_xy: Sequence[float], b_xy: Sequence[float]) -> bool:
        """True if a path exists between a and b (after snapping within `snap`)."""
        return bool(np.isfinite(self.geodesic_distance(a_xy, b_xy)))

    # ------------------------------------------------------------------ paths and sampling

    def segment_clear(self, a_xy: Sequence[float], b_xy: Sequence[float]) -> bool:
        """True if every point of the straight segment a-b is navigable (sampled at res/2)."""
        a = np.asarray(a_xy[:2], dtype=np.float64)
        b = np.asarray(b_xy[:2], dtype=np.float64)
        return bool(self._segments_clear(a, b[None, :])[0])

    def path(self, a_xy: Sequence[float], b_xy: Sequence[float]) -> np.ndarray:
        """Waypoints (K, 2) from a to b, shortcut by line of sight; empty (0, 2) if unreachable.

        The first waypoint is `a` (its snapped cell centre if `a` is not navigable), the last is `b`
        if navigable, else the navigable cell nearest to it on its side of any wall (`reach_cell`).
        """
        a_cell = self.snap_cell(a_xy)
        b_cell = self.reach_cell(b_xy)
        if a_cell is None or b_cell is None:
            return np.zeros((0, 2))
        field = self._field_for_cell(b_cell)
        if not np.isfinite(field[a_cell]):
            return np.zeros((0, 2))
        cells = [a_cell]
        cur = a_cell
        nx, ny = self.shape
        while cur != b_cell:
            best, best_d = cur, field[cur]
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    n = (cur[0] + di, cur[1] + dj)
                    if (di or dj) and 0 <= n[0] < nx and 0 <= n[1] < ny and field[n] < best_d - 1e-12:
                        if di and dj and not (self.largest_component_mask[cur[0] + di, cur[1]]
                                              and self.largest_component_mask[cur[0], cur[1] + dj]):
                            continue
                        best, best_d = n, field[n]
            if best == cur:  # cannot happen on a consistent field; guard against loops
                break
            cells.append(best)
            cur = best
        pts = [self.cell_to_world(c) for c in cells]
        pts[0] = np.asarray(a_xy[:2], dtype=np.float64) if self.is_navigable(a_xy) else pts[0]
        if self.is_navigable(b_xy):
            pts[-1] = np.asarray(b_xy[:2], dtype=np.float64)
        return self._shortcut(np.array(pts))

    def _shortcut(self, pts: np.ndarray) -> np.ndarray:
        if len(pts) <= 2:
            return pts
        out = [pts[0]]
        i = 0
        while i < len(pts) - 1:
            j = len(pts) - 1
            while j > i + 1 and not self.segment_clear(pts[i], pts[j]):
                j -= 1
            out.append(pts[j])
            i = j
        return np.array(out)

    def sample_navigable(self, rng: np.random.Generator, near: Sequence[float] | None = None,
                         radius: float | None = None) -> np.ndarray | None:
        """A random navigable point (uniform over cells; within `radius` of `near` if given)."""
        cells = self._cells
        if near is not None:
            r = self.snap if radius is None else float(radius)
            centres = self.origin + (cells + 0.5) * self.resolution
            d = np.linalg.norm(centres - np.asarray(near[:2], dtype=np.float64), axis=1)
            cells = cells[d <= r]
        if len(cells) == 0:
            return None
        return self.cell_to_world(cells[int(rng.integers(len(cells)))])

    @property
    def navigable_area(self) -> float:
        """Area of the largest component in m^2."""
        return float(self.largest_component_mask.sum()) * self.resolution ** 2
