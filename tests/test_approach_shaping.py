"""Approach shaping (rearrange/tasks/approach.py): the multi-source geodesic field on numbers, then the
pick and place term on a real sim and episode (toward / away / blocked by furniture, off, stops after
the grasp or release, bad values)."""

import numpy as np
import pytest
from reward_envs import action, arm_toward, make_env
from sim_poses import put_at_suction_cup

from rearrange.apartment import ApartmentLayout, Box
from rearrange.navmap import NavMap
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

COEF = 2.0
_EPISODES: dict = {}


def episodes(kind: str):
    if kind not in _EPISODES:
        from rearrange.generate import generate_episodes

        _EPISODES[kind] = generate_episodes(kind, "train", 4, 0)
    return _EPISODES[kind]


def approach_env(kind: str, episode, coef: float = COEF):
    """A `kind` env on `episode` with approach_reward = `coef`."""
    return make_env(kind, [episode], reward__approach_reward=coef)


def teleport(env, xy, yaw):
    """Put the base at (xy, yaw), everything else as it is, and restart the approach delta from there."""
    sim = env.sim
    art = {n: sim.art_q(n) for n in sim.art_names}
    poses = {n: (sim.object_pos(n), sim.object_quat(n)) for n in sim.object_names}
    sim.reset_state(poses, art, np.asarray(xy, dtype=np.float64), float(yaw), arm_qpos=sim.arm_qpos,
                    grasped=sim.grasped)
    env.task.approach.delta.reset(env.task.approach.distance(sim))


def unit(angle):
    return np.array([np.cos(angle), np.sin(angle)])


def candidate_cells(env, lo, hi):
    """Navigable cell centres whose approach distance lies in [lo, hi], in a fixed order."""
    ap = env.task.approach
    cells = np.argwhere(np.isfinite(ap.field) & (ap.field >= lo) & (ap.field <= hi))
    return [ap.navmap.cell_to_world(c) for c in cells[:: max(len(cells) // 400, 1)]]


# ----------------------------------------------------------------------------- the field on numbers


def test_region_field_is_zero_in_reach_and_detours_around_a_wall():
    """A 6 x 4 m room split by a wall at x = 3 with a doorway at y in [1.5, 2.5]."""
    walls = [Box("a", (3.0, 0.75, 1.0), (0.05, 0.75, 1.0)), Box("b", (3.0, 3.25, 1.0), (0.05, 0.75, 1.0))]
    layout = ApartmentLayout(seed=0, bounds=((0.0, 0.0), (6.0, 4.0)), rooms=[], walls=walls, furniture=[],
                             receptacles={}, articulated={}, footprints=[])
    nav = NavMap(layout, resolution=0.05, robot_radius=0.3)
    target = (4.0, 0.6)  # right of the wall, beyond reach of the left room
    field = nav.region_distance_field(target, 0.8)
    assert nav.field_at(field, (3.4, 0.6)) == 0.0  # within reach, navigable
    left = nav.field_at(field, (2.0, 0.6))  # 1.2 m from the reach region in a straight line, behind the wall
    assert left > 2.0
    # every distance is the geodesic to the nearest region point: within one cell of geodesic_distance
    assert left <= nav.geodesic_distance((2.0, 0.6), (4.0, 1.4)) + nav.resolution
    assert nav.field_at(field, (2.0, 2.0)) < left  # nearer the doorway
    lone = nav.region_distance_field((3.0, 0.6), 0.1)  # nothing navigable within 0.1 m: nearest cell
    assert np.isfinite(nav.field_at(lone, (1.0, 3.0))) and np.nanmin(lone) == 0.0


def test_region_through_an_opening_excludes_the_sides():
    """A target 0.2 m inside a 'container' whose opening faces -x: only points straight out of the opening
    (within the half width of the line out of it) are in reach; beside it the field is positive."""
    layout = ApartmentLayout(seed=0, bounds=((0.0, 0.0), (6.0, 4.0)), rooms=[], walls=[], furniture=[],
                             receptacles={}, articulated={}, footprints=[])
    nav = NavMap(layout, resolution=0.05, robot_radius=0.3)
    target, out = (4.0, 2.0), np.array([-1.0, 0.0])
    plain = nav.region_distance_field(target, 0.8)
    front = nav.region_distance_field(target, 0.8, (out, 0.25))
    assert nav.field_at(front, (3.4, 2.0)) == 0.0 and nav.field_at(front, (3.4, 2.2)) == 0.0  # straight out
    beside = (4.0, 2.6)  # 0.6 m from the target, off the opening's line
    assert nav.field_at(plain, beside) == 0.0 and nav.field_at(front, beside) > 0.3
    assert nav.field_at(plain, (4.6, 2.0)) == 0.0 and nav.field_at(front, (4.6, 2.0)) > 0.5  # behind it
    # a half width no cell satisfies (an opening into a wall) falls back to the plain radius
    walled = nav.region_distance_field(target, 0.8, (np.array([0.0, 1.0]), 0.0))
    assert np.array_equal(np.isfinite(walled), np.isfinite(plain))


def test_pick_in_the_fridge_is_approached_through_its_opening():
    """On a generated fridge-shelf pick the region lies straight out of the fridge: every zero cell is in
    front of the opening, within the half width of the line out of it."""
    from rearrange.generate import generate_episodes

    episode = next(e for e in generate_episodes("pick", "train", 40, 0)
                   if e.object_spec(e.targets[0].object).receptacle.startswith("fridge"))
    env = approach_env("pick", episode)
    sim, ap = env.sim, env.task.approach
    assert ap.opening_halfwidth == 0.25  # configs/skill/pick.yaml
    rec = sim.layout.receptacles[episode.object_spec(env.task.target).receptacle]
    out = sim.layout.articulated[rec.container].opening_outward()
    zero = np.argwhere(ap.field == 0.0)
    assert len(zero) > 0
    offsets = np.array([ap.navmap.cell_to_world(c) for c in zero]) - sim.object_pos(env.task.target)[:2]
    assert np.all(offsets @ out >= 0.0)
    assert np.all(np.abs(offsets[:, 0] * out[1] - offsets[:, 1] * out[0]) <= 0.25 + 1e-9)
    env.close()


# ----------------------------------------------------------------------------- pick and place on a sim


def test_pick_step_along_geodesic_pays_step_away_costs():
    env = approach_env("pick", episodes("pick")[0])
    sim, ap = env.sim, env.task.approach
    assert ap.active and ap.field is not None
    lin = float(sim.cfg["base"]["max_lin_per_step"])
    dirs = [unit(a) for a in np.linspace(-np.pi, np.pi, 16, endpoint=False)]
    for xy in candidate_cells(env, 0.6, 2.5):
        if not all(sim.base_is_free(xy + 0.12 * u) for u in dirs):
            continue
        values = [ap.navmap.field_at(ap.field, xy + lin * u) for u in dirs]
        here = ap.navmap.field_at(ap.field, xy)
        if min(values) < here - 0.03 and max(values) > here + 0.03:
            break
    else:
        pytest.fail("no open floor cell with a clear geodesic direction")
    for u, sign in ((dirs[int(np.argmin(values))], 1.0), (dirs[int(np.argmax(values))], -1.0)):
        teleport(env, xy, np.arctan2(u[1], u[0]))
        before = ap.distance(sim)
        _, _, _, _, info = env.step(action(env, base=(1.0, 0.0)))
        assert info["base_collided"] == 0.0
        assert sign * info["reward/approach"] > 0.0
        assert info["reward/approach"] == pytest.approx(COEF * (before - ap.distance(sim)))
    env.close()


def test_pick_pushing_into_furniture_toward_the_object_pays_nothing():
    """The local optimum of the Euclidean term: the base blocked by the furniture between it and the
    object. Driving straight at the object (arm reaching toward it) earns no approach reward."""
    env = approach_env("pick", episodes("pick")[0])
    sim, ap, target = env.sim, env.task.approach, env.task.target
    obj = np.asarray(sim.object_pos(target), dtype=np.float64)
    lin = float(sim.cfg["base"]["max_lin_per_step"])
    for xy in candidate_cells(env, 0.3, 3.0):
        d = obj[:2] - xy
        if not (0.5 < np.linalg.norm(d) < 1.6) or not sim.base_is_free(xy):
            continue
        step = lin * d / np.linalg.norm(d)
        moves = [step, np.array([step[0], 0.0]), np.array([0.0, step[1]])]
        if not any(sim.base_is_free(xy + m) for m in moves):  # the step and both slides are blocked
            break
    else:
        pytest.fail("no base position blocked by furniture on its way to the object")
    teleport(env, xy, np.arctan2(d[1], d[0]))
    before_base = sim.base_xy.copy()
    ee_before = float(np.linalg.norm(obj - sim.ee_pos))
    _, _, _, _, info = env.step(action(env, base=(1.0, 0.0), arm=arm_toward(sim, obj)))
    assert info["base_collided"] == 1.0 and np.allclose(sim.base_xy, before_base)
    assert info["ee_to_object_dist"] < ee_before  # the Euclidean term still pays (its local optimum) ...
    assert info["reward/approach"] <= 0.0 and ap.distance(sim) > 0.0  # ... this one does not
    env.close()


def test_defaults_and_exactly_zero_when_off():
    assert load_skill_config("pick")["reward"]["approach_reward"] == 4.0  # measured (configs/skill/pick.yaml)
    assert load_skill_config("place")["reward"]["approach_reward"] == 4.0  # measured (configs/skill/place.yaml)
    env = approach_env("pick", episodes("pick")[0], coef=0.0)
    assert env.task.approach.field is None  # nothing is built when off
    for _ in range(5):
        _, _, _, _, info = env.step(action(env, base=(1.0, 0.3)))
        assert info["reward/approach"] == 0.0
    env.close()


def _drive_changes_distance(env, steps=6):
    """Drive the base (with a turn) and return (approach terms, |change of the approach distance|)."""
    ap = env.task.approach
    navmap, field = ap.navmap, ap.field
    start = navmap.field_at(field, env.sim.base_xy)
    terms = []
    for _ in range(steps):
        _, _, term, _, info = env.step(action(env, base=(-1.0, 0.4), grip=1.0))
        terms.append(info["reward/approach"])
        if term:
            break
    return terms, abs(navmap.field_at(field, env.sim.base_xy) - start)


def test_pick_term_stops_after_the_grasp():
    env = approach_env("pick", episodes("pick")[0])
    sim, ap, target = env.sim, env.task.approach, env.task.target
    for _ in range(25):  # arm out, away from the resting position (a grasp at rest would succeed at once)
        env.step(action(env, arm=arm_toward(sim, sim.object_pos(target)), grip=-1.0))
    assert ap.active
    put_at_suction_cup(sim, target)
    _, _, term, _, info = env.step(action(env, grip=1.0))
    assert sim.grasped == target and info["reward/pick"] == 2.0 and not term
    assert info["reward/approach"] == 0.0 and not ap.active
    terms, moved = _drive_changes_distance(env)
    assert moved > 0.0 and terms == [0.0] * len(terms)  # the distance changed, nothing was paid
    env.close()


def test_place_term_while_held_stops_after_the_release():
    env = approach_env("place", episodes("place")[0])
    sim, ap, target = env.sim, env.task.approach, env.task.target
    assert sim.grasped == target and ap.active
    terms, moved = _drive_changes_distance(env, steps=4)  # while held: the term follows the distance
    assert moved > 0.0 and any(t != 0.0 for t in terms)
    before = ap.distance(sim)
    _, _, _, _, info = env.step(action(env, base=(-1.0, 0.4), grip=-1.0))  # release while driving
    assert sim.grasped is None and not ap.active
    assert info["reward/approach"] == 0.0 and ap.distance(sim) != before
    env.close()


@pytest.mark.parametrize(("key", "value", "message"), [
    ("approach_reward", -0.5, "skill.reward.approach_reward must be >= 0"),
    ("approach_reach", 0.0, "skill.reward.approach_reach must be > 0"),
    ("approach_opening_halfwidth", -0.1, "skill.reward.approach_opening_halfwidth must be >= 0"),
])
@pytest.mark.parametrize("skill", ["pick", "place"])
def test_bad_value_one_line_error(skill, key, value, message):
    cfg = load_skill_config(skill)
    cfg["reward"]["approach_reward"] = 1.0
    cfg["reward"][key] = value
    with pytest.raises(ValueError, match=message) as err:
        make_skill_task(cfg)
    assert "\n" not in str(err.value)
