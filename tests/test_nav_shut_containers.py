"""Nav episodes like HAB's drives before an open skill: to the handle of a shut fridge or drawer
(`nav.to_shut_container_prob`), past drawers a task left open (`nav.open_drawer_prob`)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rearrange.generate import check_generator_config, generate_episodes, load_generator_config
from rearrange.layout import generate_layout


def _cfg(**nav: float) -> dict:
    cfg = copy.deepcopy(load_generator_config())
    cfg["nav"].update(nav)
    return cfg


def test_a_container_target_drives_to_the_handle_of_its_shut_container():
    episodes = generate_episodes("nav", "train", 10, seed=5, cfg=_cfg(to_shut_container_prob=1.0))
    shut = [e for e in episodes if "nav_to_container" in e.info]
    assert len(shut) >= 3, [e.info.get("receptacle_kind") for e in episodes]
    for ep in episodes:
        layout = generate_layout(ep.layout_seed)
        if ep.info["receptacle_kind"] == "surface" or "start_holding" in ep.info:
            assert "nav_to_container" not in ep.info
            continue
        name = ep.info["nav_to_container"]
        art = layout.articulated[name]
        target = next(o for o in ep.objects if o.name == ep.targets[0].object)
        assert layout.receptacles[target.receptacle].container == name  # the target lies in it ...
        assert ep.art_states[name] == pytest.approx(art.joint_range[0])  # ... and it is shut
        assert np.allclose(ep.info["nav_goal"], art.handle_box.center)  # the goal is its handle
    # every container stays shut: nothing was opened for these episodes
    for ep in shut:
        layout = generate_layout(ep.layout_seed)
        assert all(ep.art_states[n] == pytest.approx(a.joint_range[0]) for n, a in layout.articulated.items())


def test_drawers_left_open_and_the_fridge_as_before():
    episodes = generate_episodes("nav", "train", 6, seed=2, cfg=_cfg(open_drawer_prob=1.0))
    for ep in episodes:
        layout = generate_layout(ep.layout_seed)
        target = next(o for o in ep.objects if o.name == ep.targets[0].object)
        own = {layout.receptacles[r].container for r in (target.receptacle, ep.targets[0].goal_receptacle)}
        for name, art in layout.articulated.items():
            lo, hi = art.joint_range
            if art.joint_type == "slide":
                assert ep.art_states[name] == pytest.approx(hi), (ep.episode_id, name)  # open (fraction 1.0)
            elif name not in own:
                assert ep.art_states[name] == pytest.approx(lo)  # the fridge stays shut unless it is the target's


def test_both_off_keep_the_episodes_made_before_they_existed():
    without = copy.deepcopy(load_generator_config())
    for key in ("to_shut_container_prob", "open_drawer_prob"):
        without["nav"].pop(key)
    a = generate_episodes("nav", "val", 4, seed=0)
    b = generate_episodes("nav", "val", 4, seed=0, cfg=without)
    assert [(e.robot_start, e.art_states, e.info) for e in a] == [(e.robot_start, e.art_states, e.info) for e in b]


@pytest.mark.parametrize("key", ["to_shut_container_prob", "open_drawer_prob"])
def test_a_probability_outside_0_1_is_a_one_line_error(key):
    with pytest.raises(ValueError, match=rf"^nav\.{key} must be in \[0, 1\] \(got 1.5\)$"):
        check_generator_config("nav", _cfg(**{key: 1.5}))
