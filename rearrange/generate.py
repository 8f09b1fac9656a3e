"""Episode generator for the seven skills and the three HAB scenarios (deterministic per seed).

For each episode: a layout seed of the split, objects (targets plus distractors) sampled on
receptacle surfaces, settled with a short physics run and rejected if any moves more than
`settle.max_displacement` (fell or slid); goals on other receptacle surfaces; every target start
and goal reachable (a navigable base point within `reach.max_horizontal`, height within
`reach.min_height..max_height`); a robot start that follows habitat-lab's spawn rules and touches
nothing. All thresholds live in `configs/episodes.yaml`.

Object kinds are drawn once per (dataset seed, kind, layout), so all episodes of one layout use the
same `RearrangeSim` model (cheap resets in the env, one sim build per layout here).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rearrange.episodes import (
    EPISODE_KINDS,
    SCENARIO_KINDS,
    SKILL_KINDS,
    SPLITS,
    Episode,
    ObjectSpec,
    TargetSpec,
)
from rearrange.layout import ApartmentLayout, Articulated, Receptacle, generate_layout, layout_seeds
from rearrange.navmap import NavMap, navmap_with_obstacles
from rearrange.objects import BOWL_KINDS, FRUIT_KINDS, OBJECT_KINDS

CONFIG_PATH = Path(__file__).resolve().parent.parent / "configs" / "episodes.yaml"


class GenerationError(RuntimeError):
    """No valid episode could be built (the message names the kind and layout)."""


def load_generator_config(path: str | Path | None = None) -> dict[str, Any]:
    """The generator thresholds (`configs/episodes.yaml`) as a plain dict."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(Path(path) if path else CONFIG_PATH), resolve=True)
    assert isinstance(cfg, dict)
    return cfg


# ----------------------------------------------------------------------------- geometry helpers


def _height(kind: str) -> float:
    return 2.0 * OBJECT_KINDS[kind].rest_height


def _yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def _container_offset(layout: ApartmentLayout, rec: Receptacle, art_states: Mapping[str, float],
                      fully_open: bool = False) -> np.ndarray:
    """Displacement of a receptacle surface by its container's joint (drawers slide; shelves don't)."""
    if rec.container is None or rec.container not in layout.articulated:
        return np.zeros(3)
    art = layout.articulated[rec.container]
    if art.joint_type != "slide":
        return np.zeros(3)
    q = art.joint_range[1] if fully_open else art_states.get(art.name, art.joint_range[0])
    return np.asarray(art.joint_axis, dtype=np.float64) * float(q)


def _fits(rec: Receptacle, kind: str, cfg: Mapping[str, Any]) -> bool:
    limit = cfg["placement"]["max_object_height"].get(rec.kind)
    radius = OBJECT_KINDS[kind].radius + cfg["placement"]["margin"]
    if min(rec.half_extent) <= radius:
        return False
    return limit is None or _height(kind) <= float(limit)


def _dining_table(layout: ApartmentLayout) -> Receptacle:
    """The largest table (the dining table)."""
    tables = [r for r in layout.receptacles.values() if r.kind == "table"]
    if not tables:
        raise GenerationError(f"layout {layout.seed} has no table for set_table")
    return max(tables, key=lambda r: (r.half_extent[0] * r.half_extent[1], r.name))


def _open_state(layout: ApartmentLayout, name: str, cfg: Mapping[str, Any]) -> float:
    """The "already open" joint value of an articulated object (scenarios)."""
    art = layout.articulated[name]
    lo, hi = art.joint_range
    if art.joint_type == "hinge":
        return float(np.clip(cfg["articulated"]["open_fridge_state"], lo, hi))
    return float(lo + cfg["articulated"]["open_drawer_fraction"] * (hi - lo))


def door_frame(art: Articulated, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(2,) unit vectors of a hinged door at joint value q: along the door from the hinge, and out of its
    outer (handle) face."""
    hinge = np.asarray(art.joint_pos[:2], dtype=np.float64)
    door = max(art.parts, key=lambda b: b.half_size[0] * b.half_size[1])
    centre = np.asarray(door.center[:2], dtype=np.float64) - hinge
    handle = np.asarray(art.handle_box.center[:2], dtype=np.float64) - hinge
    along0 = centre / np.linalg.norm(centre)
    out0 = handle - (handle @ along0) * along0
    out0 /= np.linalg.norm(out0)
    a = float(np.sign(art.joint_axis[2])) * q  # rotation about +z
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    return rot @ along0, rot @ out0


def _closed_states(layout: ApartmentLayout) -> dict[str, float]:
    return {name: float(a.joint_range[0]) for name, a in sorted(layout.articulated.items())}


# ----------------------------------------------------------------------------- per-layout context


@dataclass
class _Slot:
    name: str  # "obj_i"
    kind: str
    receptacle: str


class _LayoutContext:
    """One layout, its sim (built once, with the layout's object kinds) and the generator config."""

    def __init__(self, layout: ApartmentLayout, kinds: Sequence[str], cfg: Mapping[str, Any],
                 sim_cfg: Mapping[str, Any] | None) -> None:
        from rearrange.sim import RearrangeSim

        self.layout = layout
        self.kinds = list(kinds)
        self.cfg = cfg
        self.sim = RearrangeSim(layout, self.kinds, sim_cfg)
        self.navmap = self.sim.navmap
        self._maps: dict[tuple, NavMap] = {}
        self.names = [f"obj_{i}" for i in range(len(self.kinds))]

    # --------------------------------------------------------------- checks

    def reachable(self, pos: np.ndarray, art_states: Mapping[str, float]) -> bool:
        """A base point within reach of `pos`, with the open doors and drawers of `art_states` in the way
        (a counter top above an open drawer is out of reach)."""
        r = self.cfg["reach"]
        if not (r["min_height"] <= pos[2] <= r["max_height"]):
            return False
        return self.navmap_with(art_states).nearest_navigable(pos[:2], r["max_horizontal"]) is not None

    def navmap_with(self, art_states: Mapping[str, float]) -> NavMap:
        """The navigation map with the articulated parts at `art_states` as obstacles (cached)."""
        key = tuple(sorted((k, round(float(v), 3)) for k, v in art_states.items()))
        if key not in self._maps:
            self.sim.reset_state({}, dict(art_states), self.sim.base_xy, 0.0)
            extra = self.sim.moving_part_boxes()
            self._maps[key] = self.navmap if not extra else navmap_with_obstacles(
                self.layout, extra, self.navmap.resolution, self.navmap.robot_radius)
        return self._maps[key]

    def surface_pose(self, rec: Receptacle, kind: str, art_states: Mapping[str, float],
                     rng: np.random.Generator, occupied: list[tuple[np.ndarray, float]]) -> np.ndarray | None:
        """A free position (3,) for `kind` resting on `rec`, None after a few tries."""
        margin = self.cfg["placement"]["margin"]
        radius = OBJECT_KINDS[kind].radius
        ux, uy = rec.half_extent[0] - radius - margin, rec.half_extent[1] - radius - margin
        if ux <= 0 or uy <= 0:
            return None
        c, s = np.cos(rec.yaw), np.sin(rec.yaw)
        offset = _container_offset(self.layout, rec, art_states)
        for _ in range(20):
            u, v = rng.uniform(-ux, ux), rng.uniform(-uy, uy)
            pos = np.array([rec.center[0] + c * u - s * v, rec.center[1] + s * u + c * v,
                            rec.center[2] + OBJECT_KINDS[kind].rest_height]) + offset
            if all(np.linalg.norm(pos[:2] - p[:2]) >= radius + r + margin for p, r in occupied):
                return pos
        return None

    def reach_pos(self, rec: Receptacle, pos: np.ndarray, art_states: Mapping[str, float]) -> np.ndarray:
        """Where `pos` (on `rec`) is once its container is fully open (drawers slide out)."""
        return pos - _container_offset(self.layout, rec, art_states) + _container_offset(
            self.layout, rec, art_states, fully_open=True)

    # --------------------------------------------------------------- physics

    def park_point(self, rng: np.random.Generator, points: Sequence[np.ndarray]) -> np.ndarray:
        """A navigable point far from all `points` (where the robot waits while objects settle)."""
        best, best_d = None, -1.0
        for _ in range(30):
            p = self.navmap.sample_navigable(rng)
            d = min((np.linalg.norm(p - q[:2]) for q in points), default=np.inf)
            if d > best_d:
                best, best_d = p, d
        assert best is not None
        return best

    def settle(self, poses: Mapping[str, tuple[np.ndarray, np.ndarray]], art_states: Mapping[str, float],
               park_xy: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
        """Simulate `settle.steps`; the settled poses, or None if an object moved too far."""
        s = self.cfg["settle"]
        self.sim.reset_state(dict(poses), dict(art_states), park_xy, 0.0)
        zero7, zero2 = np.zeros(7), np.zeros(2)
        for _ in range(int(s["steps"])):
            self.sim.step(zero7, None, zero2)
        out = {}
        for name, (pos, _quat) in poses.items():
            now = np.asarray(self.sim.object_pos(name), dtype=np.float64)
            if not np.all(np.isfinite(now)) or np.linalg.norm(now - pos) > s["max_displacement"]:
                return None
            out[name] = (now.copy(), np.asarray(self.sim.object_quat(name), dtype=np.float64).copy())
        return out

    def robot_free(self, poses: Mapping[str, tuple[np.ndarray, np.ndarray]], art_states: Mapping[str, float],
                   xy: np.ndarray, yaw: float, grasped: str | None = None) -> bool:
        """The robot at (xy, yaw) touches nothing for `spawn.check_steps` and disturbs no object."""
        sp = self.cfg["spawn"]
        if not self.navmap.is_navigable(xy):
            return False
        self.sim.reset_state(dict(poses), dict(art_states), np.asarray(xy, dtype=np.float64), float(yaw),
                             grasped=grasped)
        zero7, zero2 = np.zeros(7), np.zeros(2)
        for _ in range(int(sp["check_steps"])):
            self.sim.step(zero7, None, zero2)
            if self.sim.robot_contact_force > sp["max_contact_force"] or self.sim.base_collided:
                return False
        if grasped is not None and self.sim.grasped != grasped:
            return False
        tol = self.cfg["settle"]["max_displacement"]
        for name, (pos, _q) in poses.items():
            if name != grasped and np.linalg.norm(np.asarray(self.sim.object_pos(name)) - pos) > tol:
                return False
        return True

    # --------------------------------------------------------------- spawns

    def spawn_near(self, rng: np.random.Generator, target_xy: np.ndarray,
                   poses: Mapping[str, tuple[np.ndarray, np.ndarray]], art_states: Mapping[str, float],
                   grasped: str | None = None) -> dict[str, Any] | None:
        """habitat _get_robot_spawns: navigable point within max_dist of the target, facing it + noise.

        habitat grows its search radius on retries but still rejects points farther than max_dist,
        so we sample within max_dist only.
        """
        sp = self.cfg["spawn"]
        for _ in range(int(sp["attempts"])):
            xy = self.navmap.sample_navigable(rng, near=target_xy, radius=sp["max_dist"])
            if xy is None:
                continue
            d = target_xy - xy
            yaw = float(np.arctan2(d[1], d[0]) + rng.normal(0.0, sp["yaw_noise_std"]))
            yaw = float((yaw + np.pi) % (2 * np.pi) - np.pi)
            if self.robot_free(poses, art_states, xy, yaw, grasped):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return None

    def spawn_in_front(self, rng: np.random.Generator, art_name: str,
                       poses: Mapping[str, tuple[np.ndarray, np.ndarray]],
                       art_states: Mapping[str, float]) -> dict[str, Any] | None:
        """In front of an articulated object (front_center +- noise), facing it + noise."""
        sp = self.cfg["spawn"]
        art = self.layout.articulated[art_name]
        for _ in range(int(sp["attempts"])):
            xy = np.asarray(art.front_center, dtype=np.float64) + rng.uniform(-1, 1, 2) * sp["art_pos_noise"]
            yaw = float(art.facing_yaw + rng.normal(0.0, sp["art_yaw_noise_std"]))
            if self.robot_free(poses, art_states, xy, yaw):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return None

    def spawn_outside_door(self, rng: np.random.Generator, art_name: str,
                           poses: Mapping[str, tuple[np.ndarray, np.ndarray]],
                           art_states: Mapping[str, float]) -> dict[str, Any] | None:
        """close_fridge: on the open door's outer (handle) side, facing it, so the robot starts outside
        the area the door sweeps while it closes; falls back to `spawn_in_front` for a nearly closed door.
        """
        sp = self.cfg["spawn"]
        art = self.layout.articulated[art_name]
        q = float(art_states.get(art_name, art.joint_range[0]))
        along_dir, outward = door_frame(art, q)
        hinge = np.asarray(art.joint_pos[:2], dtype=np.float64)
        width = max(float(np.linalg.norm(c - hinge)) for p in art.parts for c in p.corners_2d())
        for _ in range(int(sp["attempts"])):
            along = rng.uniform(*sp["door_along"]) * width
            dist = rng.uniform(*sp["door_dist"])
            xy = hinge + along * along_dir + dist * outward
            yaw = float(np.arctan2(-outward[1], -outward[0]) + rng.normal(0.0, sp["art_yaw_noise_std"]))
            if self.robot_free(poses, art_states, xy, yaw):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return self.spawn_in_front(rng, art_name, poses, art_states)

    def spawn_anywhere(self, rng: np.random.Generator, poses: Mapping[str, tuple[np.ndarray, np.ndarray]],
                       art_states: Mapping[str, float], grasped: str | None = None,
                       far_from: np.ndarray | None = None, min_geodesic: float = 0.0) -> dict[str, Any] | None:
        """A random navigable, collision-free start (optionally >= min_geodesic from `far_from`)."""
        attempts = int(self.cfg["nav"]["attempts"])
        for _ in range(attempts):
            xy = self.navmap.sample_navigable(rng)
            if xy is None:
                return None
            if far_from is not None and not self.navmap.geodesic_distance(xy, far_from[:2]) >= min_geodesic:
                continue
            yaw = float(rng.uniform(-np.pi, np.pi))
            if self.robot_free(poses, art_states, xy, yaw, grasped):
                return {"xy": [float(xy[0]), float(xy[1])], "yaw": yaw}
        return None


# ----------------------------------------------------------------------------- episode plans


def _kinds_for_layout(kind: str, rng: np.random.Generator, cfg: Mapping[str, Any],
                      layout: ApartmentLayout) -> list[str]:
    """Object kinds (targets first) shared by every episode of this (dataset, kind, layout)."""
    all_kinds = sorted(OBJECT_KINDS)
    lo, hi = cfg["objects"]["scenario_distractors" if kind in SCENARIO_KINDS else "skill_distractors"]
    n_distractors = int(rng.integers(lo, hi + 1))
    if kind == "set_table":
        head = [str(rng.choice(sorted(BOWL_KINDS))), str(rng.choice(sorted(FRUIT_KINDS)))]
    elif kind == "tidy_house":
        head = [str(k) for k in rng.choice(all_kinds, cfg["scenarios"]["tidy_house_targets"])]
    elif kind == "prepare_groceries":  # groceries go in or come out of the fridge: kinds that fit it
        fridge = next(r for r in layout.receptacles.values() if r.kind == "fridge")
        fitting = [k for k in all_kinds if _fits(fridge, k, cfg)]
        head = [str(k) for k in rng.choice(fitting, cfg["scenarios"]["prepare_groceries_targets"])]
    elif kind in ("open_cab", "close_cab", "open_fridge", "close_fridge"):  # the target waits inside
        inside = next(r for r in layout.receptacles.values() if r.kind == ("drawer" if "cab" in kind else "fridge"))
        head = [str(rng.choice([k for k in all_kinds if _fits(inside, k, cfg)]))]
    else:
        head = [str(rng.choice(all_kinds))]
    return head + [str(k) for k in rng.choice(all_kinds, n_distractors)]


def _surfaces(layout: ApartmentLayout, containers: bool | None = False) -> list[Receptacle]:
    """Receptacles sorted by name; containers=False: open surfaces only, None: all, True: only inside."""
    recs = [layout.receptacles[k] for k in sorted(layout.receptacles)]
    if containers is None:
        return recs
    return [r for r in recs if (r.container is not None) == containers]


@dataclass
class _Plan:
    """Which object goes where: start receptacle per object, target objects and goal receptacles."""

    slots: list[_Slot]
    targets: list[tuple[str, str]]  # (object name, goal receptacle name), plan order
    art_states: dict[str, float]
    info: dict[str, Any]


def _plan(kind: str, ctx: _LayoutContext, rng: np.random.Generator) -> _Plan | None:
    """Start receptacles, targets and joint states for one episode attempt."""
    layout, cfg = ctx.layout, ctx.cfg
    art = _closed_states(layout)
    info: dict[str, Any] = {}
    open_surfaces = _surfaces(layout, containers=False)
    everywhere = _surfaces(layout, containers=None)
    fridge_shelves = [r for r in everywhere if r.kind == "fridge"]
    drawers = [r for r in everywhere if r.kind == "drawer"]

    def pick(options: Sequence[Receptacle], kind_name: str, exclude: str | None = None) -> str | None:
        ok = [r.name for r in options if _fits(r, kind_name, cfg) and r.name != exclude]
        return None if not ok else str(ok[int(rng.integers(len(ok)))])

    n = len(ctx.kinds)
    starts: list[str | None] = [None] * n
    targets: list[tuple[str, str | None]] = []
    if kind in SKILL_KINDS:
        t = int(rng.integers(n))
        if kind in ("open_cab", "close_cab"):
            eligible = [i for i in range(n) if _fits(drawers[0], ctx.kinds[i], cfg)]
            t = eligible[int(rng.integers(len(eligible)))]
            drawer = drawers[int(rng.integers(len(drawers)))]
            starts[t] = drawer.name
            dname = drawer.container or drawer.name
            a = layout.articulated[dname]
            info.update(articulated=dname, handle=a.handle)
            if kind == "close_cab":
                lo, hi = a.joint_range
                f = rng.uniform(*cfg["articulated"]["close_drawer_start"])
                art[dname] = float(np.clip(lo + f * (hi - lo), lo, hi))
        elif kind in ("open_fridge", "close_fridge"):
            eligible = [i for i in range(n) if any(_fits(r, ctx.kinds[i], cfg) for r in fridge_shelves)]
            t = eligible[int(rng.integers(len(eligible)))]
            starts[t] = pick(fridge_shelves, ctx.kinds[t])
            a = layout.articulated["fridge"]
            info.update(articulated="fridge", handle=a.handle)
            if kind == "close_fridge":
                art["fridge"] = float(np.clip(rng.uniform(*cfg["articulated"]["close_fridge_start"]),
                                              *a.joint_range))
        else:
            starts[t] = pick(open_surfaces, ctx.kinds[t])
        if starts[t] is None:
            return None
        targets.append((f"obj_{t}", pick(open_surfaces, ctx.kinds[t], exclude=starts[t])))
    elif kind == "tidy_house":
        for t in range(cfg["scenarios"]["tidy_house_targets"]):
            starts[t] = pick(everywhere, ctx.kinds[t])
            targets.append((f"obj_{t}", pick(everywhere, ctx.kinds[t], exclude=starts[t])))
        # the fridge and the drawers the targets come from or go to start open; the other drawers stay
        # shut (open ones stick out 0.45 m and keep the robot from reaching the counter top above them)
        used = {layout.receptacles[r].container for r in [*starts, *(g for _, g in targets)] if r is not None}
        art.update({name: _open_state(layout, name, cfg) for name in layout.articulated
                    if name == "fridge" or name in used})
    elif kind == "prepare_groceries":
        art["fridge"] = _open_state(layout, "fridge", cfg)
        counter = [r for r in everywhere if r.kind == "counter"]
        for t in range(cfg["scenarios"]["prepare_groceries_targets"]):
            to_fridge = t % 2 == 0 if t < 2 else bool(rng.random() < 0.5)
            src, dst = (counter, fridge_shelves) if to_fridge else (fridge_shelves, counter)
            starts[t] = pick(src, ctx.kinds[t])
            targets.append((f"obj_{t}", pick(dst, ctx.kinds[t])))
    elif kind == "set_table":
        table = _dining_table(layout)
        drawer = drawers[int(rng.integers(len(drawers)))]
        starts[0] = drawer.name if _fits(drawer, ctx.kinds[0], cfg) else None
        starts[1] = pick(fridge_shelves, ctx.kinds[1])
        targets = [("obj_0", table.name), ("obj_1", table.name)]
        info.update(drawer=drawer.container or drawer.name,
                    drawer_handle=layout.articulated[drawer.container or drawer.name].handle,
                    fridge_handle=layout.articulated["fridge"].handle)
    for i in range(n):
        if starts[i] is None and all(name != f"obj_{i}" for name, _ in targets):
            starts[i] = pick(everywhere if kind in SCENARIO_KINDS else open_surfaces + drawers, ctx.kinds[i])
    if any(s is None for s in starts) or any(g is None for _, g in targets):
        return None
    slots = [_Slot(f"obj_{i}", ctx.kinds[i], str(starts[i])) for i in range(n)]
    return _Plan(slots, [(o, str(g)) for o, g in targets], art, info)


def _attempt(kind: str, ctx: _LayoutContext, rng: np.random.Generator) -> tuple | None:
    """One try at an episode: plan, place, settle, goals, spawn. None if any step fails."""
    cfg, layout = ctx.cfg, ctx.layout
    plan = _plan(kind, ctx, rng)
    if plan is None:
        return None
    target_names = {o for o, _ in plan.targets}
    # place objects (targets first so they get room), check target starts are reachable
    occupied: dict[str, list[tuple[np.ndarray, float]]] = {}
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for slot in plan.slots:
        rec = layout.receptacles[slot.receptacle]
        pos = ctx.surface_pose(rec, slot.kind, plan.art_states, rng, occupied.setdefault(rec.name, []))
        if pos is None:
            return None
        if slot.name in target_names and not ctx.reachable(ctx.reach_pos(rec, pos, plan.art_states), plan.art_states):
            return None
        pos[2] += cfg["settle"]["drop_clearance"]
        occupied[rec.name].append((pos, OBJECT_KINDS[slot.kind].radius))
        poses[slot.name] = (pos, _yaw_quat(float(rng.uniform(-np.pi, np.pi))))
    park = ctx.park_point(rng, [p for p, _ in poses.values()])
    settled = ctx.settle(poses, plan.art_states, park)
    if settled is None:
        return None
    # goals
    goals: list[TargetSpec] = []
    for obj, goal_rec_name in plan.targets:
        rec = layout.receptacles[goal_rec_name]
        kind_name = plan.slots[int(obj.split("_")[1])].kind
        occ = list(occupied.get(rec.name, []))
        occ += [(np.asarray(g.goal_pos), OBJECT_KINDS[plan.slots[int(g.object.split('_')[1])].kind].radius)
                for g in goals if g.goal_receptacle == rec.name]
        for _ in range(10):
            pos = ctx.surface_pose(rec, kind_name, plan.art_states, rng, occ)
            if pos is None:
                return None
            far = np.linalg.norm(pos - settled[obj][0]) >= cfg["placement"]["goal_min_distance"]
            if far and ctx.reachable(ctx.reach_pos(rec, pos, plan.art_states), plan.art_states):
                goals.append(TargetSpec(obj, [float(v) for v in pos], rec.name))
                break
        else:
            return None
    info = dict(plan.info)
    start = _spawn(kind, ctx, rng, settled, plan, goals, info)
    if start is None:
        return None
    return plan, settled, goals, start, info


def _spawn(kind: str, ctx: _LayoutContext, rng: np.random.Generator,
           settled: dict[str, tuple[np.ndarray, np.ndarray]], plan: _Plan, goals: list[TargetSpec],
           info: dict[str, Any]) -> dict[str, Any] | None:
    """The robot start of an episode (and kind-specific info), habitat-lab's rules per kind."""
    art = plan.art_states
    target = goals[0].object if goals else None
    if kind == "pick":
        return ctx.spawn_near(rng, settled[target][0][:2], settled, art)
    if kind == "place":
        info["start_holding"] = target
        return ctx.spawn_near(rng, np.asarray(goals[0].goal_pos[:2]), settled, art, grasped=target)
    if kind == "nav":
        holding = bool(rng.random() < ctx.cfg["nav"]["object_in_hand_prob"])
        goal = np.asarray(goals[0].goal_pos) if holding else settled[target][0]
        info["nav_goal"] = [float(v) for v in goal]
        if holding:
            info["start_holding"] = target
        return ctx.spawn_anywhere(rng, settled, art, grasped=target if holding else None, far_from=goal,
                                  min_geodesic=ctx.cfg["nav"]["min_start_distance"])
    if kind == "close_fridge":
        return ctx.spawn_outside_door(rng, info["articulated"], settled, art)
    if kind in ("open_fridge", "open_cab", "close_cab"):
        return ctx.spawn_in_front(rng, info["articulated"], settled, art)
    return ctx.spawn_anywhere(rng, settled, art)


def _make_episode(kind: str, split: str, seed: int, index: int, ctx: _LayoutContext) -> Episode:
    rng = np.random.default_rng([seed, EPISODE_KINDS.index(kind), index])
    for _ in range(int(ctx.cfg["max_attempts"])):
        result = _attempt(kind, ctx, rng)
        if result is None:
            continue
        plan, settled, goals, start, info = result
        objects = [ObjectSpec(s.name, s.kind, [float(v) for v in settled[s.name][0]],
                              [float(v) for v in settled[s.name][1] / np.linalg.norm(settled[s.name][1])],
                              s.receptacle) for s in plan.slots]
        return Episode(episode_id=f"{kind}_{split}_{seed}_{index}", kind=kind, split=split,
                       layout_seed=ctx.layout.seed, objects=objects, targets=goals,
                       art_states=dict(plan.art_states), robot_start=start, info=info)
    raise GenerationError(f"could not generate a '{kind}' episode on layout {ctx.layout.seed} "
                          f"in {ctx.cfg['max_attempts']} attempts")


def generate_episodes(kind: str, split: str, count: int, seed: int, *,
                      cfg: Mapping[str, Any] | None = None, sim_cfg: Mapping[str, Any] | None = None,
                      progress: Callable[[int], None] | None = None) -> list[Episode]:
    """`count` episodes of `kind` on the `split` layouts; the same arguments give the same episodes."""
    if kind not in EPISODE_KINDS:
        raise ValueError(f"unknown episode kind '{kind}'; valid choices: {', '.join(EPISODE_KINDS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split '{split}'; valid choices: {', '.join(SPLITS)}")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    cfg = load_generator_config() if cfg is None else cfg
    seeds = layout_seeds(split)
    kind_id = EPISODE_KINDS.index(kind)
    order_rng = np.random.default_rng([seed, kind_id, zlib.crc32(split.encode())])
    layout_of = [int(seeds[int(order_rng.integers(len(seeds)))]) for _ in range(count)]
    episodes: list[Episode | None] = [None] * count
    for layout_seed in sorted(set(layout_of)):
        layout = generate_layout(layout_seed)
        kinds = _kinds_for_layout(kind, np.random.default_rng([seed, kind_id, layout_seed]), cfg, layout)
        ctx = _LayoutContext(layout, kinds, cfg, sim_cfg)
        try:
            for i in (i for i in range(count) if layout_of[i] == layout_seed):
                episodes[i] = _make_episode(kind, split, seed, i, ctx)
                if progress is not None:
                    progress(1)
        finally:
            if hasattr(ctx.sim, "close"):
                ctx.sim.close()
    return [e for e in episodes if e is not None]
