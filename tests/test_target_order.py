"""Clutter-aware target order (planner/target_order.py): a target whose start lies near another's goal is
handled first, in replan mode only; a bad radius is a one-line error."""

from __future__ import annotations

import numpy as np
import pytest

from configs.compose import ConfigError, compose, to_plain
from eval.agent_config import check_agent_config, planned_episodes
from eval.hab_eval import initial_plans
from planner.target_order import clutter_order, ordered_episode, shortest_order
from rearrange.generate import generate_episodes

FAR = [(0.0, 0.0, 0.8), (5.0, 0.0, 0.8), (10.0, 0.0, 0.8)]


def test_target_picked_before_an_object_is_put_beside_it():
    goals = [(10.2, 0.0, 0.8), (20.0, 0.0, 0.8), (30.0, 0.0, 0.8)]  # target 0's goal beside target 2's start
    assert clutter_order(FAR, goals, 0.5) == [1, 2, 0]
    assert clutter_order(FAR, goals, 0.1) == [0, 1, 2]  # 0.2 m apart: outside a 0.1 m radius
    assert clutter_order(FAR, goals, 0.0) == [0, 1, 2]


def test_targets_waiting_for_each_other_keep_index_order():
    goals = [(5.1, 0.0, 0.8), (0.1, 0.0, 0.8), (30.0, 0.0, 0.8)]  # 0's goal at 1's start and 1's goal at 0's
    assert clutter_order(FAR, goals, 0.5) == [0, 1, 2]
    goals = [(5.1, 0.0, 0.8), (0.1, 0.0, 0.8), (0.2, 0.0, 0.8)]  # ... and 2's goal at 0's start: 0 before 2
    assert clutter_order(FAR, goals, 0.5) == [0, 1, 2]
    goals = [(10.1, 0.0, 0.8), (30.0, 0.0, 0.8), (5.1, 0.0, 0.8)]  # 0 waits for 2, which waits for 1
    assert clutter_order(FAR, goals, 0.5) == [1, 2, 0]


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError, match="3 starts but 2 goals"):
        clutter_order(FAR, FAR[:2], 0.5)


def _crowded_tidy_house_episode():
    """The first Tidy House val episode (seed 0) whose index order puts an object beside a later target."""
    for ep in generate_episodes("tidy_house", "val", 8, 0):
        if ordered_episode(ep, 0.5) is not ep:
            return ep
    raise AssertionError("no crowded episode among the first 8")


def test_ordered_episode_permutes_targets_only():
    ep = _crowded_tidy_house_episode()
    ordered = ordered_episode(ep, 0.5)
    assert sorted(t.object for t in ordered.targets) == sorted(t.object for t in ep.targets)
    assert [t.object for t in ordered.targets] != [t.object for t in ep.targets]
    assert ordered.objects == ep.objects and ordered.episode_id == ep.episode_id
    assert ordered_episode(ep, 0.0) is ep


def test_replan_mode_plans_the_new_order_and_fixed_mode_keeps_habitats():
    ep = _crowded_tidy_house_episode()
    first_pick = {}
    for mode in ("replan", "fixed"):
        [episode] = planned_episodes([ep], {"mode": mode, "target_order_radius": 0.5})
        [plan] = initial_plans("tidy_house", [episode])
        first_pick[mode] = next(a.args[0] for a in plan if a.name == "pick")
    assert first_pick["fixed"] == ep.targets[0].object
    assert first_pick["replan"] == ordered_episode(ep, 0.5).targets[0].object != first_pick["fixed"]


@pytest.mark.parametrize("value", [-0.1, 2.5, "near", True])
def test_bad_radius_is_a_one_line_error(value):
    agent = to_plain(compose("eval_hab"))["agent"]
    with pytest.raises(ConfigError, match="agent.target_order_radius must be a number of metres in \\[0, 2\\]"):
        check_agent_config({**agent, "target_order_radius": value})


def _straight(a, b):
    return float(np.linalg.norm(np.subtract(a, b)))


def test_shortest_order_takes_the_short_trip_within_the_constraints():
    starts = [(10.0, 0.0, 0.8), (1.0, 0.0, 0.8), (20.0, 0.0, 0.8)]
    goals = [(11.0, 0.0, 0.8), (2.0, 0.0, 0.8), (21.0, 0.0, 0.8)]
    assert shortest_order((0.0, 0.0), starts, goals, 0.5, _straight) == [1, 0, 2]  # along the line
    goals[1] = (20.1, 0.0, 0.8)  # target 1's goal now lies beside target 2's start: 2 must come first
    assert shortest_order((0.0, 0.0), starts, goals, 0.5, _straight) == [0, 2, 1]
    assert shortest_order((0.0, 0.0), starts, goals, 0.0, _straight) == [1, 2, 0]  # no constraint: 1 ends by 2


def test_unreachable_legs_count_as_the_straight_line():
    starts = [(10.0, 0.0, 0.8), (1.0, 0.0, 0.8)]
    goals = [(11.0, 0.0, 0.8), (2.0, 0.0, 0.8)]
    assert shortest_order((0.0, 0.0), starts, goals, 0.5, lambda a, b: float("inf")) == [1, 0]


def test_travel_order_in_eval_hab_only_in_replan_mode():
    eps = generate_episodes("tidy_house", "val", 3, 0)
    replan = planned_episodes(eps, {"mode": "replan", "target_order_radius": 0.5, "target_order_travel": True})
    fixed = planned_episodes(eps, {"mode": "fixed", "target_order_radius": 0.5, "target_order_travel": True})
    assert all(f is e for f, e in zip(fixed, eps, strict=True))
    assert any([t.object for t in r.targets] != [t.object for t in e.targets] for r, e in zip(replan, eps, strict=True))


@pytest.mark.parametrize("mode", ["replan", "fixed"])
def test_eval_hab_records_the_order_it_handled(tmp_path, capsys, mode):
    import json

    from eval.hab_eval import main

    ep = _crowded_tidy_house_episode()
    index = int(ep.episode_id.rsplit("_", 1)[1])
    out = tmp_path / mode
    assert main(["--scenario", "tidy_house", "--agent", "oracle", "--episodes", str(index + 1), "--only", str(index),
                 "--out", str(out), "--no-progress", f"agent.mode={mode}", "hab_task.max_steps=5"]) == 0
    result = json.loads((out / "results.json").read_text())
    [row] = result["episodes"]
    handled = [t.object for t in (ordered_episode(ep, 0.5) if mode == "replan" else ep).targets]
    assert row["targets"] == handled
    assert result["reordered_episodes"] == (1 if mode == "replan" else 0)
    assert ("out of index order" in capsys.readouterr().out) == (mode == "replan")
