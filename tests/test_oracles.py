"""Oracle controllers: IK accuracy on the real arm, path following around obstacles, and each of the
seven oracles solving its skill task through the real env (the task's own success measure)."""

from __future__ import annotations

import numpy as np
import pytest

from rearrange.actions import ACTION_DIM, ACTION_SLICES, expand_action
from rearrange.apartment import box_frame, in_footprint
from rearrange.env import make_registered_env
from rearrange.layout import generate_layout, layout_seeds
from rearrange.sim import RearrangeSim
from rearrange.tasks.skill_tasks import SKILL_ENV_IDS, SKILL_NAMES, register_skill_envs
from skills.oracles.base import select_subset
from skills.oracles.base_follow import (
    DOOR_MIN_HEIGHT,
    BaseFollower,
    FollowGains,
    box_distance,
    furniture_clearance,
    wall_between,
)
from skills.oracles.factory import ORACLES, make_oracle, oracle_config
from skills.oracles.ik import ArmIK, IKGains


@pytest.fixture(scope="module")
def cfg():
    return oracle_config()


@pytest.fixture(scope="module")
def sim():
    s = RearrangeSim(generate_layout(layout_seeds("val")[0]), ["apple"])
    yield s
    s.close()


def _open_floor(sim, seed: int) -> np.ndarray:
    """A navigable point far from walls and furniture (so the arm touches nothing)."""
    rng = np.random.default_rng(seed)
    pts = np.array([sim.navmap.sample_navigable(rng) for _ in range(200)])
    return pts[int(np.argmax(furniture_clearance(sim, pts, 0.0)))]


def _world(sim, p_base):
    c, s = np.cos(sim.base_yaw), np.sin(sim.base_yaw)
    x, y = sim.base_xy
    return np.array([x + c * p_base[0] - s * p_base[1], y + s * p_base[0] + c * p_base[1], p_base[2]])


def _footprint_distance(box, pts):
    """One box's footprint distance the plain way (apartment.box_frame), the reference for the batched tests."""
    lx, ly = box_frame(box.center, box.yaw, pts)
    return np.hypot(np.maximum(np.abs(lx) - box.half_size[0], 0.0), np.maximum(np.abs(ly) - box.half_size[1], 0.0))


def test_clearance_and_wall_tests_agree_box_by_box_with_doors_open():
    """furniture_clearance and wall_between test every box at once; they must give exactly what testing one
    box at a time gives (box_frame, in_footprint), open doors and drawers included."""
    layout = generate_layout(layout_seeds("val")[0])
    s = RearrangeSim(layout, ["apple"])
    try:
        s.reset_state({}, {"fridge": 1.2, "drawer_0": 0.3}, np.array(layout.articulated["fridge"].front_center), 0.0)
        assert len(s.moving_part_boxes()) >= 2
        rng = np.random.default_rng(0)
        pts = rng.uniform(-1.0, 1.0, (300, 2)) * 6.0
        for above in (0.0, 0.5, 1.0, 3.0):
            boxes = [b for b in (*layout.obstacles_2d(), *s.moving_part_boxes())
                     if b.center[2] + b.half_size[2] > above]
            one_by_one = np.min([_footprint_distance(b, pts) for b in boxes], axis=0) if boxes else np.full(len(pts), np.inf)
            assert np.array_equal(furniture_clearance(s, pts, above), one_by_one)
        target = np.array(layout.articulated["drawer_0"].front_center[:2])
        cands = pts[:40]
        doors = [b for b in s.moving_part_boxes() if b.center[2] + b.half_size[2] > DOOR_MIN_HEIGHT]
        blockers = [*layout.walls, *(b for b in doors if box_distance(b, target)[0] > 0.1)]
        assert len(blockers) > len(layout.walls)  # the open fridge door is one
        n = int(np.ceil(np.max(np.linalg.norm(cands - target, axis=1)) / 0.02))
        expected = [any(np.any(in_footprint(b.center, b.half_size, b.yaw,
                                            c + np.linspace(0.0, 1.0, n + 1)[:, None] * (target - c)))
                        for b in blockers) for c in cands]
        crossed = wall_between(s, cands, target)
        assert crossed.tolist() == expected and any(expected) and not all(expected)
    finally:
        s.close()


def test_every_skill_has_an_oracle():
    assert tuple(ORACLES) == SKILL_NAMES


def test_select_subset_inverts_expand_action():
    full = np.arange(1, ACTION_DIM + 1) / (ACTION_DIM + 1)
    for subsets in (("arm", "grip", "base"), ("base", "stop"), ("arm", "grip", "base", "stop")):
        back = expand_action(subsets, select_subset(subsets, full))
        for name, sl in ACTION_SLICES.items():
            assert np.allclose(back[sl], full[sl] if name in subsets else 0.0)


@pytest.mark.parametrize("target_base", [(0.6, 0.0, 0.8), (0.7, 0.25, 0.6), (0.5, -0.3, 1.1), (0.8, 0.0, 0.5),
                                         (0.55, 0.2, 0.5), (0.85, -0.1, 0.95)])
def test_ik_reaches_targets_within_2cm(sim, cfg, target_base):
    """Closed-loop joint-delta IK through sim.step (the action interface) from the rest pose."""
    sim.reset_state({}, {}, _open_floor(sim, 0), 0.3)
    ik = ArmIK(IKGains.from_cfg(cfg["ik"]))
    target = _world(sim, target_base)
    start_err = ik.ee_error(sim, target)
    for _ in range(200):
        action = ik.action_towards(sim, target)
        assert np.all(np.abs(action) <= 1.0 + 1e-9)
        sim.step(action, None, np.zeros(2))
        if ik.ee_error(sim, target) < 0.01:
            break
    assert start_err > 0.1
    assert ik.ee_error(sim, target) < 0.02


def test_ik_returns_to_rest(sim, cfg):
    sim.reset_state({}, {}, _open_floor(sim, 1), 0.0)
    ik = ArmIK(IKGains.from_cfg(cfg["ik"]))
    target = _world(sim, (0.7, 0.2, 0.6))
    for _ in range(150):
        sim.step(ik.action_towards(sim, target), None, np.zeros(2))
    assert ik.rest_error(sim) > 0.3
    for _ in range(200):
        sim.step(ik.action_to_rest(sim), None, np.zeros(2))
    assert ik.rest_error(sim) < 0.05


def test_base_follower_goes_around_an_obstacle(sim, cfg):
    """Start and goal with furniture or a wall on the straight line between them: the follower drives
    the navmap path around it and arrives, without scraping along obstacles."""
    navmap = sim.navmap
    rng = np.random.default_rng(3)
    for _ in range(2000):
        a, b = navmap.sample_navigable(rng), navmap.sample_navigable(rng)
        d = float(np.linalg.norm(a - b))
        if 2.0 < d < 5.0 and not navmap.segment_clear(a, b) and navmap.geodesic_distance(a, b) < d + 3.0:
            break
    else:
        pytest.fail("no start/goal pair with an obstacle in between")
    sim.reset_state({}, {}, a, float(rng.uniform(-np.pi, np.pi)))
    follower = BaseFollower(FollowGains.from_cfg(cfg["base"]))
    assert follower.set_goal(sim, b)
    blocked = 0
    for _ in range(400):
        if follower.arrived(sim):
            break
        sim.step(np.zeros(7), None, follower.act(sim))
        blocked += int(sim.base_collided)
    assert float(np.linalg.norm(sim.base_xy - b)) < 0.2
    assert blocked <= 5


def test_unknown_skill_names_valid_choices(cfg):
    with pytest.raises(ValueError, match="valid choices: pick, place, nav"):
        make_oracle("fly", cfg)


def _solve_rate(skill: str, episodes: int, cfg) -> tuple[int, list[str]]:
    register_skill_envs()
    env = make_registered_env(SKILL_ENV_IDS[skill], split="val", episode_seed=0, episode_count=episodes,
                              episode_order="cycle")
    oracle = make_oracle(skill, cfg)
    solved, failed = 0, []
    try:
        for i in range(episodes):
            env.reset(options={"episode_index": i})
            oracle.start(env.sim, env.task.sensor_target)
            while True:
                action = select_subset(env.task.action_subsets, oracle.act(env.sim))
                _, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            if info["success"] > 0.5:
                solved += 1
            else:
                failed.append(f"{env.current_episode.episode_id}: phase {oracle.phase}, steps {info['num_steps']:.0f}")
    finally:
        env.close()
    return solved, failed


@pytest.mark.parametrize("skill", [
    "pick",
    "place",
    "nav",
    "open_fridge",
    "close_fridge",
    "open_cab",
    "close_cab",
])
def test_oracle_solves_its_skill(skill, cfg):
    """At least 8 of the first 10 val episodes, judged by the skill task's own success measure."""
    solved, failed = _solve_rate(skill, 10, cfg)
    assert solved >= 8, f"{skill} oracle solved {solved}/10; failures: {failed}"


def test_ready_in_zone_ends_an_approach_once_the_point_is_in_reach(sim, cfg):
    """Mid-approach, with the work point already in the work zone: by default the oracle drives on to its
    standing point; with `ready_in_zone` (imitate-skill's labeller) the approach is finished."""
    start = _open_floor(sim, 0)
    sim.reset_state({}, {}, start, 0.0)
    point = _world(sim, np.array([0.6, 0.0, 0.8]))
    oracle = make_oracle("pick", cfg)
    assert oracle.in_work_zone(sim, point, cfg["zone"])
    rng = np.random.default_rng(1)
    goal = next(p for p in (sim.navmap.sample_navigable(rng) for _ in range(500))
                if 1.0 < float(np.linalg.norm(p - start)) < 3.0)
    for ready in (False, True):
        oracle.ready_in_zone = ready
        oracle._approach = "drive"
        assert oracle.follower.set_goal(sim, goal)
        base, finished = oracle.approach(sim, point, cfg["zone"])
        assert finished is ready
        assert np.any(base != 0.0) is not ready
