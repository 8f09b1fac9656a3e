"""Episode generator for the seven skills and the three HAB scenarios (deterministic per seed).

For each episode: a layout seed of the split, objects (targets plus distractors) sampled on
receptacle surfaces, settled with a short physics run and rejected if any moves more than
`settle.max_displacement` (fell or slid); goals on other receptacle surfaces; every target start
and goal reachable (a navigable base point within `reach.max_horizontal`, height within
`reach.min_height..max_height`; inside a container, straight out of its opening); a robot start that
follows habitat-lab's spawn rules and touches nothing. All thresholds live in `configs/episodes.yaml`.

Pick, place and nav draw the receptacle their target sits on or goes to from open surfaces, fridge
shelves and drawers (`skill_targets.shares`, like habitat's rearrange_easy, where the fridge and
drawers are open receptacles); the container holding it is open, the others shut. Nav starts anywhere
>= `nav.min_start_distance` from its goal, or (`nav.start_at_receptacle_prob`) beside a receptacle,
facing it, where a pick or place leaves the robot in a HAB task; and (`nav.to_shut_container_prob`) a nav
whose target lies in a container may drive to that container's handle with the container shut, as HAB's
navigation before opening the fridge or a drawer does, past drawers left open (`nav.open_drawer_prob`).

Object kinds are drawn once per (dataset seed, kind, layout), so all episodes of one layout use the
same `RearrangeSim` model (cheap resets in the env, one sim build per layout here).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from configs.ranges import check_range
from rearrange.apartment import ApartmentLayout, Receptacle
from rearrange.episodes import (
    EPISODE_KINDS,
    SCENARIO_KINDS,
    SKILL_KINDS,
    SPLITS,
    Episode,
    ObjectSpec,
    TargetSpec,
)
from rearrange.generate_context import (
    LayoutContext,
    closed_states,
    door_frame,
    fits,
    open_state,
    yaw_quat,
)
from rearrange.layout import generate_layout, layout_seeds
from rearrange.objects import BOWL_KINDS, FRUIT_KINDS, OBJECT_KINDS

__all__ = ["MOVE_SKILLS", "RECEPTACLE_KINDS", "GenerationError", "check_generator_config", "door_frame",
           "generate_episodes", "load_generator_config", "receptacle_kind"]

MOVE_SKILLS = ("pick", "place", "nav")  # skills whose target receptacle kind is drawn by `skill_targets`
RECEPTACLE_KINDS = ("surface", "fridge", "drawer")  # open surfaces, fridge shelves, drawers


class GenerationError(RuntimeError):
    """No valid episode could be built (the message names the kind and layout)."""


def load_generator_config(path: str | Path | None = None) -> dict[str, Any]:
    """The generator thresholds (`configs/episodes.yaml`) as a plain dict."""
    from configs.compose import load_config_file

    return load_config_file(Path(path).resolve() if path else "episodes.yaml")


def receptacle_kind(rec: Receptacle) -> str:
    """The kind of `rec` in `skill_targets.shares`: "fridge" (a fridge shelf), "drawer" or "surface"."""
    return rec.kind if rec.kind in ("fridge", "drawer") else "surface"


def episode_receptacle_kind(episode: Episode, layout: ApartmentLayout) -> str | None:
    """Where `episode`'s skill acts, as `receptacle_kind` names it ('surface', 'fridge', 'drawer'): pick,
    and nav to an object, its receptacle; place, and nav carrying the object, the goal's; nav to a shut
    container (`info.nav_to_container`), that container's shelves. None for episodes without targets or
    a receptacle the layout lacks."""
    receptacles = layout.receptacles
    container = episode.info.get("nav_to_container") if episode.kind == "nav" else None
    if container is not None:
        rec = next((r for r in receptacles.values() if r.container == container), None)
        return None if rec is None else receptacle_kind(rec)
    if not episode.targets:
        return None
    target = episode.targets[0]
    to_goal = episode.kind == "place" or (episode.kind == "nav" and episode.info.get("start_holding") == target.object)
    name = target.goal_receptacle if to_goal else episode.object_spec(target.object).receptacle
    rec = receptacles.get(name)
    return None if rec is None else receptacle_kind(rec)


def _shares(cfg: Mapping[str, Any], kind: str) -> np.ndarray:
    """`skill_targets.shares.<kind>` as probabilities in RECEPTACLE_KINDS order (ValueError if bad)."""
    shares = dict(cfg["skill_targets"]["shares"][kind])
    unknown = sorted(set(shares) - set(RECEPTACLE_KINDS))
    if unknown:
        raise ValueError(f"skill_targets.shares.{kind}: unknown receptacle kind '{unknown[0]}'; "
                         f"valid choices: {', '.join(RECEPTACLE_KINDS)}")
    p = np.array([float(shares.get(k, 0.0)) for k in RECEPTACLE_KINDS])
    if np.any(p < 0) or p.sum() <= 0:
        raise ValueError(f"skill_targets.shares.{kind} must be >= 0 with a positive sum, got {shares}")
    return p / p.sum()


@dataclass
class _Draw:
    """What one move-skill episode is about, fixed before its attempts (so that failed attempts do not
    skew the shares): the receptacle kind its target is on or goes to, and for nav whether the robot
    starts holding the object (then the goal is a place goal)."""

    where: str | None = None
    holding: bool = False
    at_receptacle: bool = False  # nav: start beside a receptacle, facing it (where a pick or place ends)
    to_handle: bool = False  # nav: drive to the handle of the target's container, which stays shut


_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0


def _draw(kind: str, cfg: Mapping[str, Any], seed: int, index: int, rng: np.random.Generator) -> _Draw:
    """The receptacle kind comes from a golden-ratio (low-discrepancy) sequence over seed + index rather
    than from `rng`: any run of consecutive episodes matches the shares to about one episode (a
    100-episode eval has 40/35/25 pick episodes, not a binomial spread), each index still on its own."""
    if kind not in MOVE_SKILLS:
        return _Draw()
    u = float(((seed + index) * _GOLDEN) % 1.0)
    cum = np.cumsum(_shares(cfg, kind))
    where = RECEPTACLE_KINDS[min(int(np.searchsorted(cum, u, side="right")), len(cum) - 1)]
    holding = kind == "nav" and bool(rng.random() < cfg["nav"]["object_in_hand_prob"])
    # drawn only when on, so that datasets made with it off keep their episodes
    p_rec = _nav_prob(cfg, "start_at_receptacle_prob") if kind == "nav" else 0.0
    at_receptacle = p_rec > 0 and bool(rng.random() < p_rec)
    p_shut = _nav_prob(cfg, "to_shut_container_prob") if kind == "nav" else 0.0
    to_handle = p_shut > 0 and bool(rng.random() < p_shut) and where != "surface" and not holding
    return _Draw(where, holding, at_receptacle, to_handle)


def check_generator_config(kind: str, cfg: Mapping[str, Any]) -> None:
    """ValueError (one line naming the key) for a bad share or probability that `kind` would use."""
    if kind in MOVE_SKILLS:
        _shares(cfg, kind)
        _nav_prob(cfg, "start_at_receptacle_prob")
        _nav_prob(cfg, "to_shut_container_prob")
        _nav_prob(cfg, "open_drawer_prob")


def _nav_prob(cfg: Mapping[str, Any], key: str) -> float:
    """The probability `nav.<key>` (0 when absent; ValueError outside [0, 1])."""
    return check_range(f"nav.{key}", cfg["nav"].get(key, 0.0), 0.0, 1.0)


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
        fitting = [k for k in all_kinds if fits(fridge, k, cfg)]
        head = [str(k) for k in rng.choice(fitting, cfg["scenarios"]["prepare_groceries_targets"])]
    elif kind in ("open_cab", "close_cab", "open_fridge", "close_fridge"):  # the target waits inside
        inside = next(r for r in layout.receptacles.values() if r.kind == ("drawer" if "cab" in kind else "fridge"))
        head = [str(rng.choice([k for k in all_kinds if fits(inside, k, cfg)]))]
    else:
        head = [str(rng.choice(all_kinds))]
    kinds = head + [str(k) for k in rng.choice(all_kinds, n_distractors)]
    if kind in MOVE_SKILLS:  # some object must fit a fridge shelf and a drawer (any may be the target)
        recs = [next(r for r in layout.receptacles.values() if r.kind == k) for k in ("fridge", "drawer")]
        fitting = [k for k in all_kinds if all(fits(r, k, cfg) for r in recs)]
        if not any(k in fitting for k in kinds):
            kinds[0] = str(rng.choice(fitting))
    return kinds


def _surfaces(layout: ApartmentLayout, containers: bool | None = False) -> list[Receptacle]:
    """Receptacles sorted by name; containers=False: open surfaces only, None: all, True: only inside."""
    recs = [layout.receptacles[k] for k in sorted(layout.receptacles)]
    if containers is None:
        return recs
    return [r for r in recs if (r.container is not None) == containers]


@dataclass
class _Slot:
    name: str  # "obj_i"
    kind: str
    receptacle: str


@dataclass
class _Plan:
    """Which object goes where: start receptacle per object, target objects and goal receptacles."""

    slots: list[_Slot]
    targets: list[tuple[str, str]]  # (object name, goal receptacle name), plan order
    art_states: dict[str, float]
    info: dict[str, Any] = field(default_factory=dict)


def _plan(kind: str, ctx: LayoutContext, rng: np.random.Generator, draw: _Draw) -> _Plan | None:
    """Start receptacles, targets and joint states for one episode attempt."""
    layout, cfg = ctx.layout, ctx.cfg
    art = closed_states(layout)
    info: dict[str, Any] = {}
    open_surfaces = _surfaces(layout, containers=False)
    everywhere = _surfaces(layout, containers=None)
    fridge_shelves = [r for r in everywhere if r.kind == "fridge"]
    drawers = [r for r in everywhere if r.kind == "drawer"]

    def pick(options: Sequence[Receptacle], kind_name: str, exclude: str | None = None) -> str | None:
        ok = [r.name for r in options if fits(r, kind_name, cfg) and r.name != exclude]
        return None if not ok else str(ok[int(rng.integers(len(ok)))])

    n = len(ctx.kinds)
    starts: list[str | None] = [None] * n
    targets: list[tuple[str, str | None]] = []
    if kind in MOVE_SKILLS:
        # the drawn receptacle is where the skill works: pick's start, place's goal, nav's destination
        # (the object, or its place goal when the robot starts holding it); the other end is open
        options = {"surface": open_surfaces, "fridge": fridge_shelves, "drawer": drawers}[str(draw.where)]
        eligible = [i for i in range(n) if any(fits(r, ctx.kinds[i], cfg) for r in options)]
        t = eligible[int(rng.integers(len(eligible)))]
        inside = pick(options, ctx.kinds[t])
        if inside is None:
            return None
        other = pick(open_surfaces, ctx.kinds[t], exclude=inside)
        at_goal = kind == "place" or draw.holding
        starts[t], goal = (other, inside) if at_goal else (inside, other)
        targets.append((f"obj_{t}", goal))
        container = layout.receptacles[inside].container
        if container is not None and draw.to_handle:  # shut: nav drives to its handle (HAB's nav before open)
            info["nav_to_container"] = container
        elif container is not None:  # opened, like rearrange_easy's containers; the others stay shut
            art[container] = open_state(layout, container, cfg)
        info["receptacle_kind"] = draw.where
        p_open = _nav_prob(cfg, "open_drawer_prob") if kind == "nav" else 0.0
        if p_open > 0:  # drawers a HAB task left open (no draw when off: older datasets stay as they were)
            for name in sorted(layout.articulated):
                if layout.articulated[name].joint_type == "slide" and name != container and rng.random() < p_open:
                    art[name] = open_state(layout, name, cfg)
    elif kind in SKILL_KINDS:
        t = int(rng.integers(n))
        if kind in ("open_cab", "close_cab"):
            eligible = [i for i in range(n) if fits(drawers[0], ctx.kinds[i], cfg)]
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
            eligible = [i for i in range(n) if any(fits(r, ctx.kinds[i], cfg) for r in fridge_shelves)]
            t = eligible[int(rng.integers(len(eligible)))]
            starts[t] = pick(fridge_shelves, ctx.kinds[t])
            a = layout.articulated["fridge"]
            info.update(articulated="fridge", handle=a.handle)
            if kind == "close_fridge":
                art["fridge"] = float(np.clip(rng.uniform(*cfg["articulated"]["close_fridge_start"]),
                                              *a.joint_range))
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
        art.update({name: open_state(layout, name, cfg) for name in layout.articulated
                    if name == "fridge" or name in used})
    elif kind == "prepare_groceries":
        art["fridge"] = open_state(layout, "fridge", cfg)
        counter = [r for r in everywhere if r.kind == "counter"]
        for t in range(cfg["scenarios"]["prepare_groceries_targets"]):
            to_fridge = t % 2 == 0 if t < 2 else bool(rng.random() < 0.5)
            src, dst = (counter, fridge_shelves) if to_fridge else (fridge_shelves, counter)
            starts[t] = pick(src, ctx.kinds[t])
            targets.append((f"obj_{t}", pick(dst, ctx.kinds[t])))
    elif kind == "set_table":
        table = _dining_table(layout)
        drawer = drawers[int(rng.integers(len(drawers)))]
        starts[0] = drawer.name if fits(drawer, ctx.kinds[0], cfg) else None
        starts[1] = pick(fridge_shelves, ctx.kinds[1])
        targets = [("obj_0", table.name), ("obj_1", table.name)]
        info.update(drawer=drawer.container or drawer.name,
                    drawer_handle=layout.articulated[drawer.container or drawer.name].handle,
                    fridge_handle=layout.articulated["fridge"].handle)
    # distractors: anywhere (inside shut containers too) for the scenarios and the move skills, clutter
    # as in rearrange_easy; open surfaces and drawers for the open/close skills
    clutter = everywhere if kind in SCENARIO_KINDS or kind in MOVE_SKILLS else open_surfaces + drawers
    for i in range(n):
        if starts[i] is None and all(name != f"obj_{i}" for name, _ in targets):
            starts[i] = pick(clutter, ctx.kinds[i])
    if any(s is None for s in starts) or any(g is None for _, g in targets):
        return None
    slots = [_Slot(f"obj_{i}", ctx.kinds[i], str(starts[i])) for i in range(n)]
    return _Plan(slots, [(o, str(g)) for o, g in targets], art, info)


def _dining_table(layout: ApartmentLayout) -> Receptacle:
    """The largest table (the dining table)."""
    tables = [r for r in layout.receptacles.values() if r.kind == "table"]
    if not tables:
        raise GenerationError(f"layout {layout.seed} has no table for set_table")
    return max(tables, key=lambda r: (r.half_extent[0] * r.half_extent[1], r.name))


def _attempt(kind: str, ctx: LayoutContext, rng: np.random.Generator, draw: _Draw) -> tuple | None:
    """One try at an episode: plan, place, settle, goals, spawn. None if any step fails."""
    cfg, layout = ctx.cfg, ctx.layout
    plan = _plan(kind, ctx, rng, draw)
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
        if slot.name in target_names and not ctx.reachable(ctx.reach_pos(rec, pos, plan.art_states),
                                                           plan.art_states, rec):
            return None
        pos[2] += cfg["settle"]["drop_clearance"]
        occupied[rec.name].append((pos, OBJECT_KINDS[slot.kind].radius))
        poses[slot.name] = (pos, yaw_quat(float(rng.uniform(-np.pi, np.pi))))
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
            if far and ctx.reachable(ctx.reach_pos(rec, pos, plan.art_states), plan.art_states, rec):
                goals.append(TargetSpec(obj, [float(v) for v in pos], rec.name))
                break
        else:
            return None
    info = dict(plan.info)
    start = _spawn(kind, ctx, rng, settled, plan, goals, info, draw)
    if start is None:
        return None
    return plan, settled, goals, start, info


def _spawn(kind: str, ctx: LayoutContext, rng: np.random.Generator,
           settled: dict[str, tuple[np.ndarray, np.ndarray]], plan: _Plan, goals: list[TargetSpec],
           info: dict[str, Any], draw: _Draw) -> dict[str, Any] | None:
    """The robot start of an episode (and kind-specific info), habitat-lab's rules per kind."""
    art = plan.art_states
    target = goals[0].object if goals else None
    if kind in ("pick", "place"):
        pos = np.asarray(goals[0].goal_pos) if kind == "place" else settled[target][0]
        rec = ctx.layout.receptacles[goals[0].goal_receptacle if kind == "place" else plan.slots[
            int(target.split("_")[1])].receptacle]
        sees = None
        if rec.container is not None and ctx.cfg["spawn"]["see_opening"]:
            sees = ctx.opening_stand(pos, art, rec)
        if kind == "place":
            info["start_holding"] = target
        return ctx.spawn_near(rng, pos[:2], settled, art, grasped=target if kind == "place" else None, sees=sees)
    if kind == "nav":
        goal = np.asarray(goals[0].goal_pos) if draw.holding else settled[target][0]
        if "nav_to_container" in info:  # the handle of the shut container (HAB grounds nav to it so)
            goal = np.asarray(ctx.layout.articulated[info["nav_to_container"]].handle_box.center, dtype=np.float64)
        info["nav_goal"] = [float(v) for v in goal]
        if draw.holding:
            info["start_holding"] = target
        if draw.at_receptacle:
            return _spawn_at_receptacle(ctx, rng, settled, art, target if draw.holding else None, goal)
        return ctx.spawn_anywhere(rng, settled, art, grasped=target if draw.holding else None, far_from=goal,
                                  min_geodesic=ctx.cfg["nav"]["min_start_distance"])
    if kind == "close_fridge":
        return ctx.spawn_outside_door(rng, info["articulated"], settled, art)
    if kind in ("open_fridge", "open_cab", "close_cab"):
        return ctx.spawn_in_front(rng, info["articulated"], settled, art, skill=kind)
    return ctx.spawn_anywhere(rng, settled, art)


def _spawn_at_receptacle(ctx: LayoutContext, rng: np.random.Generator,
                         settled: dict[str, tuple[np.ndarray, np.ndarray]], art: Mapping[str, float],
                         grasped: str | None, goal: np.ndarray) -> dict[str, Any] | None:
    """A nav start where a pick or place leaves the robot in a HAB task: beside a random receptacle
    (a random point of its surface), within `nav.receptacle_start_max_dist`, facing it (+ spawn noise),
    still `nav.min_start_distance` (geodesic) from the goal."""
    nav = ctx.cfg["nav"]
    recs = sorted(ctx.layout.receptacles.values(), key=lambda r: r.name)
    for _ in range(int(nav["receptacle_start_tries"])):
        rec = recs[int(rng.integers(len(recs)))]
        u = rng.uniform(-1.0, 1.0, 2) * np.asarray(rec.half_extent, dtype=np.float64)
        start = ctx.spawn_near(rng, rec.surface_xy(u[0], u[1]), settled, art, grasped=grasped,
                               radius=float(nav["receptacle_start_max_dist"]), far_from=goal,
                               min_geodesic=float(nav["min_start_distance"]))
        if start is not None:
            return start
    return None


def _make_episode(kind: str, split: str, seed: int, index: int, ctx: LayoutContext) -> Episode:
    rng = np.random.default_rng([seed, EPISODE_KINDS.index(kind), index])
    draw = _draw(kind, ctx.cfg, seed, index, rng)
    for _ in range(int(ctx.cfg["max_attempts"])):
        result = _attempt(kind, ctx, rng, draw)
        if result is None:
            continue
        plan, settled, goals, start, info = result
        objects = [ObjectSpec(s.name, s.kind, [float(v) for v in settled[s.name][0]],
                              [float(v) for v in settled[s.name][1] / np.linalg.norm(settled[s.name][1])],
                              s.receptacle) for s in plan.slots]
        return Episode(episode_id=f"{kind}_{split}_{seed}_{index}", kind=kind, split=split,
                       layout_seed=ctx.layout.seed, objects=objects, targets=goals,
                       art_states=dict(plan.art_states), robot_start=start, info=info)
    where = f" (target receptacle: {draw.where})" if draw.where else ""
    raise GenerationError(f"could not generate a '{kind}' episode{where} on layout {ctx.layout.seed} "
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
    check_generator_config(kind, cfg)  # before any sim is built
    seeds = layout_seeds(split)
    kind_id = EPISODE_KINDS.index(kind)
    order_rng = np.random.default_rng([seed, kind_id, zlib.crc32(split.encode())])
    layout_of = [int(seeds[int(order_rng.integers(len(seeds)))]) for _ in range(count)]
    episodes: list[Episode | None] = [None] * count
    for layout_seed in sorted(set(layout_of)):
        layout = generate_layout(layout_seed)
        kinds = _kinds_for_layout(kind, np.random.default_rng([seed, kind_id, layout_seed]), cfg, layout)
        ctx = LayoutContext(layout, kinds, cfg, sim_cfg)
        try:
            for i in (i for i in range(count) if layout_of[i] == layout_seed):
                episodes[i] = _make_episode(kind, split, seed, i, ctx)
                if progress is not None:
                    progress(1)
        finally:
            ctx.close()
    return [e for e in episodes if e is not None]
