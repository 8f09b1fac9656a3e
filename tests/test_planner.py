"""Task planner: HAB domain and problems through the `pddl` parser, exact plans per scenario,
re-planning after failed skills, predicates on constructed states, grounding to skill calls."""

from __future__ import annotations

import dataclasses
from importlib import resources

import numpy as np
import pytest
from omegaconf import OmegaConf

from planner.grounding import SKILL_OF_ACTION, SkillCall, ground_action
from planner.pddl_io import PddlError, load_domain, parse_problem_text
from planner.predicates import (
    PredicateThresholds,
    SymbolicInputs,
    container_state_atoms,
    evaluate_state,
    load_planner_cfg,
)
from planner.problem import build_planner, load_scenario_cfg, problem_from_episode
from planner.search import GroundAction, PlanningError, replan
from rearrange.episodes import Episode, ObjectSpec, TargetSpec
from rearrange.layout import generate_layout

QUAT = [1.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def layout():
    return generate_layout(100)


@pytest.fixture(scope="module")
def planner_cfg():
    return load_planner_cfg()


@pytest.fixture(scope="module")
def th(planner_cfg):
    return PredicateThresholds.from_cfg(planner_cfg.predicates)


def _on(layout, receptacle: str, dx: float = 0.0) -> list[float]:
    c = layout.receptacles[receptacle].center
    return [c[0] + dx, c[1], c[2] + 0.05]


def _episode(layout, kind, starts, goals, art, eid="0003") -> Episode:
    objects = []
    for i, r in enumerate(starts):
        pos = _on(layout, r, 0.06 * i)
        container = layout.receptacles[r].container
        if container is not None and layout.articulated[container].joint_type == "slide":
            pos[1] -= art[container]  # an open drawer carries its contents out (towards -y in these layouts)
        objects.append(ObjectSpec(f"obj_{i}", "bowl", pos, QUAT, r))
    targets = [TargetSpec(f"obj_{i}", _on(layout, g, -0.06 * i), g) for i, g in goals]
    return Episode(eid, kind, "train", layout.seed, objects, targets, art)


OPEN = {"fridge": 1.5, "drawer_0": 0.45, "drawer_1": 0.45}
CLOSED = {"fridge": 0.0, "drawer_0": 0.0, "drawer_1": 0.0}


def tidy_house(layout) -> Episode:
    # obj_0 starts in the living room, 2 m or more from every other object and goal
    starts = ["sofa_0", "counter_0", "drawer_0", "fridge_shelf_0", "table_0"]
    goals = [(0, "tv_stand_0"), (1, "table_0"), (2, "counter_0"), (3, "shelves_0"), (4, "fridge_shelf_1")]
    return _episode(layout, "tidy_house", starts, goals, OPEN)


def prepare_groceries(layout) -> Episode:
    starts = ["counter_0", "counter_0", "fridge_shelf_0"]
    goals = [(0, "fridge_shelf_1"), (1, "fridge_shelf_0"), (2, "counter_0")]
    return _episode(layout, "prepare_groceries", starts, goals, {"fridge": 1.5, "drawer_0": 0.0, "drawer_1": 0.0})


def set_table(layout) -> Episode:
    return _episode(layout, "set_table", ["drawer_0", "fridge_shelf_1"], [(0, "table_0"), (1, "table_0")], CLOSED)


def _problem(layout, th, episode, close=False):
    cfg = load_scenario_cfg(episode.kind)
    cfg.close_containers = close
    return problem_from_episode(episode, layout, cfg, th)


def _plan_text(plan) -> list[str]:
    return [str(a) for a in plan]


def _fetch(i: int) -> list[str]:
    return [f"(nav obj_{i})", f"(pick obj_{i})", f"(nav goal_obj_{i})", f"(place obj_{i} goal_obj_{i})"]


# ----------------------------------------------------------------------------- domain and problems


def test_domain_parses_with_pddl_library():
    domain = load_domain()
    assert {str(a.name) for a in domain.actions} == set(SKILL_OF_ACTION)
    assert domain.types["fridge"] == "container" and domain.types["cab"] == "container"
    preds = {str(p.name) for p in domain.predicates}
    assert {"holding", "hand_empty", "in", "object_at", "robot_at", "opened_fridge", "closed_cab"} <= preds


def test_problem_text_roundtrips_through_parser(layout, th):
    problem = _problem(layout, th, set_table(layout))
    parsed = parse_problem_text(problem.to_pddl())
    types = {str(c.name): str(c.type_tag) for c in parsed.objects}
    assert types == {"obj_0": "movable", "obj_1": "movable", "goal_obj_0": "goal", "goal_obj_1": "goal",
                     "drawer_0": "cab", "fridge": "fridge"}
    assert {("in", "obj_0", "drawer_0"), ("in", "obj_1", "fridge"), ("closed_cab", "drawer_0"),
            ("closed_fridge", "fridge"), ("hand_empty",)} <= problem.init
    assert problem.goal == {("object_at", "obj_0", "goal_obj_0"), ("object_at", "obj_1", "goal_obj_1"), ("hand_empty",)}


def test_bad_domain_file_gives_one_line_error(tmp_path):
    bad = tmp_path / "bad.pddl"
    bad.write_text("(define (domain x) (:requirements :strips) (:predicates (p))")
    with pytest.raises(PddlError, match="cannot parse PDDL domain") as info:
        load_domain(bad)
    assert "\n" not in str(info.value)
    with pytest.raises(PddlError, match="not found"):
        load_domain(tmp_path / "missing.pddl")


def test_bad_problem_text_gives_one_line_error():
    with pytest.raises(PddlError, match="invalid PDDL problem") as info:
        parse_problem_text("(define (problem p) (:domain hab_rearrange) (:objects x - spaceship) (:init) (:goal (and)))")
    assert "\n" not in str(info.value)


def test_episode_must_match_scenario(layout, th):
    ep = tidy_house(layout)
    with pytest.raises(ValueError, match="not 'set_table'"):
        problem_from_episode(ep, layout, load_scenario_cfg("set_table"), th)
    with pytest.raises(ValueError, match="no targets"):
        _problem(layout, th, dataclasses.replace(ep, targets=[]))
    with pytest.raises(ValueError, match="receptacle 'attic_0'"):
        bad = dataclasses.replace(ep.targets[0], goal_receptacle="attic_0")
        _problem(layout, th, dataclasses.replace(ep, targets=[bad, *ep.targets[1:]]))
    with pytest.raises(ValueError, match="valid choices: tidy_house, prepare_groceries, set_table"):
        load_scenario_cfg("clean_kitchen")


# ----------------------------------------------------------------------------- plans


def test_tidy_house_plan(layout, th, planner_cfg):
    plan = build_planner(_problem(layout, th, tidy_house(layout)), planner_cfg).plan()
    assert _plan_text(plan) == sum((_fetch(i) for i in range(5)), [])


def test_prepare_groceries_plan(layout, th, planner_cfg):
    plan = build_planner(_problem(layout, th, prepare_groceries(layout)), planner_cfg).plan()
    assert _plan_text(plan) == sum((_fetch(i) for i in range(3)), [])


SET_TABLE_PLAN = [
    "(nav_to_receptacle drawer_0 obj_0)", "(open_cab drawer_0)", "(pick obj_0)", "(nav goal_obj_0)",
    "(place obj_0 goal_obj_0)",
    "(nav_to_receptacle fridge obj_1)", "(open_fridge fridge)", "(pick obj_1)", "(nav goal_obj_1)",
    "(place obj_1 goal_obj_1)",
]


def test_set_table_plan(layout, th, planner_cfg):
    problem = _problem(layout, th, set_table(layout))
    assert _plan_text(build_planner(problem, planner_cfg).plan()) == SET_TABLE_PLAN
    assert [s.name for s in problem.stages] == ["open_0", "pick_0", "place_0", "open_1", "pick_1", "place_1"]


def test_set_table_plan_with_closing(layout, th, planner_cfg):
    problem = _problem(layout, th, set_table(layout), close=True)
    expected = SET_TABLE_PLAN[:5] + ["(nav drawer_0)", "(close_cab drawer_0)"] + SET_TABLE_PLAN[5:] + [
        "(nav fridge)", "(close_fridge fridge)"]
    assert _plan_text(build_planner(problem, planner_cfg).plan()) == expected
    assert [s.name for s in problem.stages][-1] == "close_1"
    assert ("closed_fridge", "fridge") in problem.goal


def test_plan_order_follows_target_order(layout, th, planner_cfg):
    ep = prepare_groceries(layout)
    reordered = dataclasses.replace(ep, targets=[ep.targets[2], ep.targets[0], ep.targets[1]])
    plan = build_planner(_problem(layout, th, reordered), planner_cfg).plan()
    assert _plan_text(plan) == _fetch(2) + _fetch(0) + _fetch(1)


@pytest.mark.parametrize("scenario", [prepare_groceries, set_table])
def test_a_remembered_rest_of_plan_is_what_a_new_search_returns(layout, th, planner_cfg, scenario):
    """plan() answers a state on a plan it found with the rest of that plan; a fresh search from every
    such state, and from states a random walk reaches (off the plans), must return the same."""
    planner = build_planner(_problem(layout, th, scenario(layout), close=True), planner_cfg)
    fresh = build_planner(_problem(layout, th, scenario(layout), close=True), planner_cfg)
    full = planner.plan()
    state = planner.init
    for k, action in enumerate(full):
        assert planner.plan(state) == full[k:] == fresh.search(state)
        state = planner.apply(state, action)
    rng = np.random.default_rng(0)
    for _ in range(12):  # walks of random applicable actions: plans from there, then states on those plans
        state = planner.init
        for _ in range(int(rng.integers(1, 8))):
            options = planner.applicable(state)
            state = planner.apply(state, options[int(rng.integers(len(options)))])
        first = planner.plan(state)
        assert first == fresh.search(state)
        for action in first[:3]:
            state = planner.apply(state, action)
            assert planner.plan(state) == fresh.search(state)


def test_plan_reaches_goal_when_applied(layout, th, planner_cfg):
    planner = build_planner(_problem(layout, th, set_table(layout), close=True), planner_cfg)
    state = planner.init
    for action in planner.plan():
        assert not planner.is_goal(state)
        state = planner.apply(state, action)
    assert planner.is_goal(state)
    # pick from a closed drawer is not applicable
    with pytest.raises(ValueError, match="precondition"):
        planner.apply(planner.apply(planner.init, GroundAction("nav", ("obj_0",))), GroundAction("pick", ("obj_0",)))


def test_unreachable_goal_and_search_limit(layout, th, planner_cfg):
    planner = build_planner(_problem(layout, th, set_table(layout)), planner_cfg)
    no_hand = planner.init - {("hand_empty",)}  # holding nothing the planner knows, hand not empty
    with pytest.raises(PlanningError, match="unreachable"):
        planner.plan(no_hand)
    tiny = OmegaConf.merge(planner_cfg, {"search": {"max_expansions": 3}})
    with pytest.raises(PlanningError, match="max_expansions=3"):
        build_planner(_problem(layout, th, set_table(layout)), tiny).plan()
    with pytest.raises(ValueError, match="not in the problem"):
        planner.plan(planner.init | {("holding", "obj_9")})


# ----------------------------------------------------------------------------- predicates and re-planning


def _inputs(layout, episode, base_xy, grasped=None, moved=None, art=None) -> SymbolicInputs:
    pos = {o.name: np.array(o.pos) for o in episode.objects}
    pos.update({k: np.asarray(v, dtype=float) for k, v in (moved or {}).items()})
    handles = {a.handle: np.array(a.handle_box.center) for a in layout.articulated.values()}
    return SymbolicInputs(np.asarray(base_xy, dtype=float), grasped, pos, dict(art or episode.art_states),
                          layout.receptacles, handles)


def _xy_near(p, dist: float) -> np.ndarray:
    return np.asarray(p[:2], dtype=float) + np.array([dist, 0.0])


def test_initial_state_from_episode_matches_problem_init(layout, th):
    for make in (tidy_house, prepare_groceries, set_table):
        ep = make(layout)
        problem = _problem(layout, th, ep)
        far = np.array([50.0, 50.0])  # the robot is near nothing
        assert evaluate_state(_inputs(layout, ep, far), problem, th) == problem.init, ep.kind


def test_replan_after_failed_pick_starts_with_pick(layout, th, planner_cfg):
    ep = tidy_house(layout)
    problem = _problem(layout, th, ep)
    planner = build_planner(problem, planner_cfg)
    state = evaluate_state(_inputs(layout, ep, _xy_near(ep.objects[0].pos, 1.0)), problem, th)
    assert ("robot_at", "obj_0") in state and ("holding", "obj_0") not in state
    plan = replan(planner, state)
    assert _plan_text(plan) == _fetch(0)[1:] + sum((_fetch(i) for i in range(1, 5)), [])
    # static facts (goal_of) left out by a caller are added back
    assert replan(planner, {a for a in state if a[0] != "goal_of"}) == plan


def test_replan_after_drop_starts_with_nav_to_object(layout, th, planner_cfg):
    ep = tidy_house(layout)
    problem = _problem(layout, th, ep)
    planner = build_planner(problem, planner_cfg)
    goal0 = np.array(ep.targets[0].goal_pos)
    dropped = goal0 + np.array([0.0, -1.5, -0.3])  # fell on the floor on the way, 1.5 m short of the goal
    state = evaluate_state(_inputs(layout, ep, _xy_near(goal0, 3.0), moved={"obj_0": dropped}), problem, th)
    assert ("robot_at", "obj_0") not in state and ("hand_empty",) in state
    assert _plan_text(replan(planner, state))[:4] == _fetch(0)


def test_replan_after_place_counts_placed_object(layout, th, planner_cfg):
    ep = tidy_house(layout)
    problem = _problem(layout, th, ep)
    planner = build_planner(problem, planner_cfg)
    on_goal = np.array(ep.targets[0].goal_pos) + np.array([0.1, 0.0, 0.0])  # within 0.3 m of the goal
    state = evaluate_state(_inputs(layout, ep, _xy_near(on_goal, 10.0), moved={"obj_0": on_goal}), problem, th)
    assert ("object_at", "obj_0", "goal_obj_0") in state
    assert _plan_text(replan(planner, state)) == sum((_fetch(i) for i in range(1, 5)), [])


def test_replan_while_holding_goes_to_goal(layout, th, planner_cfg):
    ep = set_table(layout)
    problem = _problem(layout, th, ep)
    planner = build_planner(problem, planner_cfg)
    art = {**ep.art_states, "drawer_0": 0.45}
    base = np.array(layout.articulated["drawer_0"].front_center)
    state = evaluate_state(_inputs(layout, ep, base, grasped="obj_0", art=art), problem, th)
    assert {("holding", "obj_0"), ("opened_cab", "drawer_0")} <= state and ("hand_empty",) not in state
    assert _plan_text(replan(planner, state)) == SET_TABLE_PLAN[3:]


def test_set_table_replan_after_failed_pick_in_open_drawer(layout, th, planner_cfg):
    ep = set_table(layout)
    problem = _problem(layout, th, ep)
    planner = build_planner(problem, planner_cfg)
    q = 0.45  # the drawer was opened: the bowl moved out with it
    inside = np.array(ep.objects[0].pos) + np.array([0.0, -q, 0.0])
    base = np.array(layout.articulated["drawer_0"].front_center)
    state = evaluate_state(_inputs(layout, ep, base, moved={"obj_0": inside}, art={**ep.art_states, "drawer_0": q}),
                           problem, th)
    assert {("in", "obj_0", "drawer_0"), ("opened_cab", "drawer_0"), ("robot_at", "obj_0")} <= state
    assert _plan_text(replan(planner, state)) == SET_TABLE_PLAN[2:]


def test_half_open_fridge_is_opened_again_before_the_pick(layout, th, planner_cfg):
    # set_table after its first object: the fridge door got pushed half shut (neither opened nor
    # closed); picking from it needs an open_fridge first
    ep = set_table(layout)
    problem = _problem(layout, th, ep)
    planner = build_planner(problem, planner_cfg)
    goal0 = np.array(ep.targets[0].goal_pos)
    art = {**ep.art_states, "drawer_0": 0.45, "fridge": 0.6}
    state = evaluate_state(_inputs(layout, ep, _xy_near(ep.objects[1].pos, 1.0), moved={"obj_0": goal0}, art=art),
                           problem, th)
    assert ("opened_fridge", "fridge") not in state and ("closed_fridge", "fridge") not in state
    assert ("robot_at", "obj_1") in state
    assert _plan_text(replan(planner, state))[:2] == ["(open_fridge fridge)", "(pick obj_1)"]


def test_predicate_thresholds(layout, th):
    ep = set_table(layout)
    problem = _problem(layout, th, ep)
    obj = np.array(ep.objects[1].pos)
    # robot_at within 2.0 m
    assert ("robot_at", "obj_1") in evaluate_state(_inputs(layout, ep, _xy_near(obj, 1.95)), problem, th)
    assert ("robot_at", "obj_1") not in evaluate_state(_inputs(layout, ep, _xy_near(obj, 2.05)), problem, th)
    # object_at within 0.3 m, and never while held
    goal = np.array(ep.targets[1].goal_pos)
    far = np.array([50.0, 50.0])
    for offset, expected in ((0.25, True), (0.35, False)):
        s = evaluate_state(_inputs(layout, ep, far, moved={"obj_1": goal + [offset, 0, 0]}), problem, th)
        assert (("object_at", "obj_1", "goal_obj_1") in s) == expected
    held = evaluate_state(_inputs(layout, ep, far, grasped="obj_1", moved={"obj_1": goal}), problem, th)
    assert ("object_at", "obj_1", "goal_obj_1") not in held and ("in", "obj_1", "fridge") not in held
    # a grasped handle does not fill the hand
    assert ("hand_empty",) in evaluate_state(_inputs(layout, ep, far, grasped="fridge_handle"), problem, th)
    # joint thresholds (habitat: opened_fridge > 1.22 - 0.15, closed |q| < 0.15, opened_cab > 0.45 - 0.1)
    assert container_state_atoms("fridge", "fridge", 1.10, th) == {("opened_fridge", "fridge")}
    assert container_state_atoms("fridge", "fridge", 1.00, th) == set()
    assert container_state_atoms("fridge", "fridge", 0.10, th) == {("closed_fridge", "fridge")}
    assert container_state_atoms("d", "cab", 0.40, th) == {("opened_cab", "d")}
    assert container_state_atoms("d", "cab", 0.30, th) == set()
    assert container_state_atoms("d", "cab", -0.10, th) == {("closed_cab", "d")}


def test_in_uses_receptacle_region(layout, th):
    ep = set_table(layout)
    problem = _problem(layout, th, ep)
    far = np.array([50.0, 50.0])
    bowl = np.array(ep.objects[0].pos)
    above_counter = bowl + np.array([0.0, 0.0, 0.4])  # on the counter top over the drawer
    s = evaluate_state(_inputs(layout, ep, far, moved={"obj_0": above_counter}), problem, th)
    assert ("in", "obj_0", "drawer_0") not in s
    # closed drawer: the region is where the layout declares it; a 0.3 m-open drawer carries it along
    s = evaluate_state(_inputs(layout, ep, far, art={**ep.art_states, "drawer_0": 0.3}), problem, th)
    assert ("in", "obj_0", "drawer_0") not in s
    s = evaluate_state(_inputs(layout, ep, far, moved={"obj_0": bowl - [0.0, 0.3, 0.0]},
                               art={**ep.art_states, "drawer_0": 0.3}), problem, th)
    assert ("in", "obj_0", "drawer_0") in s


def test_thresholds_config_errors(planner_cfg):
    bad = {k: v for k, v in planner_cfg.predicates.items() if k != "robot_at_dist"}
    with pytest.raises(ValueError, match=r"missing keys \['robot_at_dist'\]"):
        PredicateThresholds.from_cfg(bad)


# ----------------------------------------------------------------------------- grounding


def test_grounding_plan_steps_to_skill_calls(layout, th, planner_cfg):
    ep = set_table(layout)
    problem = _problem(layout, th, ep)
    inputs = _inputs(layout, ep, np.array([50.0, 50.0]))
    calls = [ground_action(a, problem, inputs) for a in build_planner(problem, planner_cfg).plan()]
    assert all(isinstance(c, SkillCall) for c in calls)
    assert [c.skill for c in calls] == ["nav", "open_cab", "pick", "nav", "place", "nav", "open_fridge", "pick",
                                        "nav", "place"]
    nav_drawer, open_cab, pick, nav_goal, place = calls[:5]
    assert nav_drawer.args == ("drawer_0", "obj_0") and nav_drawer.target.handle == "drawer_0_handle"
    assert np.allclose(nav_drawer.target.nav_goal, layout.articulated["drawer_0"].handle_box.center)
    assert open_cab.target.handle == "drawer_0_handle" and open_cab.target.nav_goal is None
    assert pick.target.object == "obj_0" and np.allclose(pick.target.goal_pos, ep.targets[0].goal_pos)
    assert nav_goal.target.kind == "goal" and np.allclose(nav_goal.target.nav_goal, ep.targets[0].goal_pos)
    assert place.target.object == "obj_0" and place.args == ("obj_0", "goal_obj_0")
    assert calls[6].target.handle == "fridge_handle"
    # a nav to an object goes to where the object is now
    moved = _inputs(layout, ep, np.array([50.0, 50.0]), moved={"obj_1": [1.0, 2.0, 0.1]})
    call = ground_action(GroundAction("nav", ("obj_1",)), problem, moved)
    assert call.target.nav_goal == (1.0, 2.0, 0.1)
    with pytest.raises(ValueError, match="valid choices"):
        ground_action(GroundAction("teleport", ("obj_1",)), problem, moved)


def test_skill_of_action_matches_skill_configs():
    from_configs = {}
    for f in resources.files("configs").joinpath("skill").iterdir():
        if f.name.endswith(".yaml"):
            cfg = OmegaConf.create(f.read_text())
            for action in cfg.hab.pddl_actions:
                from_configs[str(action)] = str(cfg.name)
    assert from_configs == SKILL_OF_ACTION


# ----------------------------------------------------------------------------- with the real simulator


@pytest.mark.parametrize("kind", ["tidy_house", "prepare_groceries", "set_table"])
def test_generated_episode_in_sim(kind, planner_cfg, th):
    """Episodes from the generator: the simulator's state reads back as the problem's init (up to
    where the robot starts), plans have the expected shape, and re-planning follows the sim."""
    from rearrange.generate import generate_episodes
    from rearrange.sim import RearrangeSim

    ep = generate_episodes(kind, "train", 1, 0)[0]
    layout = generate_layout(ep.layout_seed)
    problem = problem_from_episode(ep, layout, load_scenario_cfg(kind), th)
    planner = build_planner(problem, planner_cfg)
    sim = RearrangeSim(layout, ep.object_kinds())
    try:
        sim.reset_state({o.name: (o.pos, o.quat) for o in ep.objects}, ep.art_states, ep.robot_start["xy"],
                        ep.robot_start["yaw"])
        for _ in range(10):  # let physics run: nothing moves by itself
            sim.step(np.zeros(7), None, np.zeros(2))
        state = evaluate_state(SymbolicInputs.from_sim(sim), problem, th)
        assert {a for a in state if a[0] != "robot_at"} == problem.init
        plan = _plan_text(planner.plan())
        if kind == "set_table":
            assert plan == SET_TABLE_PLAN
            # the drawer was opened (its contents slid out with it), then the pick failed
            drawer = layout.articulated["drawer_0"]
            bowl = sim.object_pos("obj_0")
            out = np.append(np.asarray(drawer.front_center) - bowl[:2], 0.0)
            sim.set_art_q("drawer_0", 0.45)
            sim.set_object_pose("obj_0", bowl + 0.45 * out / np.linalg.norm(out), sim.object_quat("obj_0"))
            sim.set_base_pose(drawer.front_center, drawer.facing_yaw)
            state = evaluate_state(SymbolicInputs.from_sim(sim), problem, th)
            assert {("in", "obj_0", "drawer_0"), ("opened_cab", "drawer_0"), ("robot_at", "obj_0")} <= state
            assert _plan_text(replan(planner, state)) == SET_TABLE_PLAN[2:]
        else:
            assert plan == sum((_fetch(i) for i in range(len(problem.objects))), [])
            # holding the first object near its start: go to its goal next
            sim.reset_state({o.name: (o.pos, o.quat) for o in ep.objects}, ep.art_states,
                            np.asarray(ep.objects[0].pos[:2]), 0.0, grasped="obj_0")
            state = evaluate_state(SymbolicInputs.from_sim(sim), problem, th)
            assert ("holding", "obj_0") in state
            to_goal = ["(place obj_0 goal_obj_0)"]  # generated goals can lie within 2 m of the start
            if ("robot_at", "goal_obj_0") not in state:
                to_goal.insert(0, "(nav goal_obj_0)")
            assert _plan_text(replan(planner, state))[: len(to_goal)] == to_goal
    finally:
        sim.close()
