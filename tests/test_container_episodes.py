"""Pick / place / nav episodes in containers (fridge shelves, open drawers), like habitat's
rearrange_easy: the container holding the target is open, the target settles inside on its receptacle,
a base point straight out of the opening reaches it (and pick/place start in view of it), the
receptacle kinds follow the configured shares, generation is deterministic, and the oracles solve a
fridge-shelf pick and an open-drawer place."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from oracle_runs import run_oracle_episode

from rearrange.apartment import ApartmentLayout, Receptacle
from rearrange.env import apply_episode
from rearrange.episodes import Episode
from rearrange.generate import RECEPTACLE_KINDS, generate_episodes, load_generator_config, receptacle_kind
from rearrange.generate_context import open_state
from rearrange.layout import generate_layout
from rearrange.nav_maps import navmap_with_obstacles
from rearrange.objects import OBJECT_KINDS
from rearrange.sim import RearrangeSim


@pytest.fixture(scope="module")
def cfg():
    return load_generator_config()


@pytest.fixture(scope="module")
def container_episodes():
    """Val pick, place and nav episodes whose target receptacle is a fridge shelf or a drawer."""
    out = []
    for kind, count in (("pick", 12), ("place", 12), ("nav", 12)):
        out += [e for e in generate_episodes(kind, "val", count, seed=1) if e.info["receptacle_kind"] != "surface"]
    return out


def _worked_at(ep: Episode) -> tuple[np.ndarray, str, bool]:
    """(position, receptacle name, settled object?) where the skill works: pick and nav to the object: its
    start; place and nav holding it: its goal."""
    t = ep.targets[0]
    if ep.kind == "place" or "start_holding" in ep.info:
        return np.asarray(t.goal_pos), t.goal_receptacle, False
    obj = ep.object_spec(t.object)
    return np.asarray(obj.pos), obj.receptacle, True


def _on_receptacle(layout: ApartmentLayout, rec: Receptacle, q: float, pos: np.ndarray, kind: str) -> bool:
    """`pos` (an object's centre of `kind`) rests on `rec`, its container's joint at `q` (drawers slide)."""
    centre = np.asarray(rec.center, dtype=np.float64)
    art = layout.articulated[rec.container]
    if art.joint_type == "slide":
        centre = centre + np.asarray(art.joint_axis) * q
    local = np.abs(pos[:2] - centre[:2])
    inside = np.all(local <= np.asarray(rec.half_extent) + 1e-6)
    return bool(inside and abs(pos[2] - centre[2] - OBJECT_KINDS[kind].rest_height) < 0.02)


def test_container_episodes_are_open_stable_and_reachable(container_episodes, cfg):
    kinds = {(e.kind, e.info["receptacle_kind"]) for e in container_episodes}
    assert {("pick", "fridge"), ("pick", "drawer"), ("place", "fridge"), ("place", "drawer")} <= kinds
    for ep in container_episodes:
        layout = generate_layout(ep.layout_seed)
        pos, rec_name, settled_obj = _worked_at(ep)
        rec = layout.receptacles[rec_name]
        assert receptacle_kind(rec) == ep.info["receptacle_kind"], ep.episode_id
        # the container holding the target is open, every other one shut
        for name, q in ep.art_states.items():
            want = open_state(layout, name, cfg) if name == rec.container else layout.articulated[name].joint_range[0]
            assert q == pytest.approx(want), (ep.episode_id, name)
        target_kind = ep.object_spec(ep.targets[0].object).kind
        assert _on_receptacle(layout, rec, ep.art_states[rec.container], pos, target_kind), ep.episode_id
        sim = RearrangeSim(layout, ep.object_kinds())
        try:
            apply_episode(sim, ep, np.random.default_rng(0))
            held = ep.info.get("start_holding")
            start = {o.name: np.asarray(sim.object_pos(o.name)) for o in ep.objects if o.name != held}
            for _ in range(60):  # 2 s of physics with the robot at its start
                sim.step(np.zeros(7), None, np.zeros(2))
            for name, p in start.items():  # stable: nothing slid or fell
                assert np.linalg.norm(sim.object_pos(name) - p) < 0.01, (ep.episode_id, name)
            if settled_obj:  # the target still rests inside, on its receptacle
                now = np.asarray(sim.object_pos(ep.targets[0].object))
                assert _on_receptacle(layout, rec, sim.art_q(rec.container), now, target_kind), ep.episode_id
            # reachable through the opening: a navigable base point straight out of it, open parts in the way
            navmap = navmap_with_obstacles(layout, sim.moving_part_boxes(), sim.navmap.resolution,
                                           sim.navmap.robot_radius)
            yaw = layout.articulated[rec.container].facing_yaw
            out = -np.array([np.cos(yaw), np.sin(yaw)])
            dists = np.arange(0.0, cfg["reach"]["max_horizontal"] + 1e-9, 0.01)
            stands = [pos[:2] + d * out for d in dists if navmap.is_navigable(pos[:2] + d * out)]
            assert stands, ep.episode_id
            if ep.kind != "nav":  # pick/place start in front of the opening (spawn.see_opening)
                assert navmap.segment_clear(ep.robot_start["xy"], stands[0]), ep.episode_id
            assert cfg["reach"]["min_height"] <= pos[2] <= cfg["reach"]["max_height"]
        finally:
            sim.close()


def test_receptacle_kind_shares_follow_the_config(cfg):
    """Over 60 episodes the receptacle kinds match `skill_targets.shares` to within 5%, and the recorded
    kind is the kind of the receptacle the skill works at."""
    for kind in ("pick", "place"):
        episodes = generate_episodes(kind, "train", 60, seed=3)
        assert len(episodes) == 60
        counts = dict.fromkeys(RECEPTACLE_KINDS, 0)
        for ep in episodes:
            _, rec_name, _ = _worked_at(ep)
            where = receptacle_kind(generate_layout(ep.layout_seed).receptacles[rec_name])
            assert where == ep.info["receptacle_kind"], ep.episode_id
            counts[where] += 1
        shares = cfg["skill_targets"]["shares"][kind]
        for where, n in counts.items():
            assert abs(n / 60 - shares.get(where, 0.0)) <= 0.05, (kind, counts)


def test_move_skill_generation_is_deterministic():
    for kind in ("place", "nav"):
        a = [e.to_dict() for e in generate_episodes(kind, "val", 4, seed=7)]
        assert a == [e.to_dict() for e in generate_episodes(kind, "val", 4, seed=7)]
        assert a != [e.to_dict() for e in generate_episodes(kind, "val", 4, seed=8)]


def test_shares_config_is_checked(cfg):
    bad = copy.deepcopy(cfg)
    bad["skill_targets"]["shares"]["pick"] = {"surface": 0.5, "oven": 0.5}
    with pytest.raises(ValueError, match="valid choices: surface, fridge, drawer"):
        generate_episodes("pick", "val", 1, seed=0, cfg=bad)
    only = copy.deepcopy(cfg)
    only["skill_targets"]["shares"]["place"] = {"drawer": 1.0}
    assert all(e.info["receptacle_kind"] == "drawer" for e in generate_episodes("place", "val", 3, seed=0, cfg=only))


@pytest.mark.parametrize(("skill", "where"), [("pick", "fridge"), ("place", "drawer")])
def test_oracle_solves_a_container_episode(skill, where):
    """The first val episode of each with its target on a fridge shelf (pick: in through the open door)
    or going into an open drawer (place: over the drawer's front), solved by the task's own measure."""
    ep = next(e for e in generate_episodes(skill, "val", 10, seed=0) if e.info["receptacle_kind"] == where)
    info, phases, _ = run_oracle_episode(skill, ep)
    assert info["success"] > 0.5, (ep.episode_id, phases)
    if where == "fridge":
        assert {"drive_in", "drive_out"} <= set(phases)
