"""Nav episodes that start where a pick or place leaves the robot (`nav.start_at_receptacle_prob`), and
make-episodes' KEY=VALUE overrides of configs/episodes.yaml."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rearrange.episodes import load_episodes
from rearrange.episodes_cli import main as make_episodes_main
from rearrange.generate import generate_episodes, load_generator_config
from rearrange.layout import generate_layout
from rearrange.navmap import NavMap


def _distance_to_receptacle(xy: np.ndarray, rec) -> float:
    """2-D distance from `xy` to the receptacle's surface rectangle (0 above it)."""
    c, s = np.cos(rec.yaw), np.sin(rec.yaw)
    d = xy - np.asarray(rec.center[:2])
    local = np.array([c * d[0] + s * d[1], -s * d[0] + c * d[1]])
    outside = np.maximum(np.abs(local) - np.asarray(rec.half_extent), 0.0)
    return float(np.linalg.norm(outside))


def _angle_to_receptacle(xy: np.ndarray, yaw: float, rec) -> float:
    """Smallest angle between the heading `yaw` and the bearing from `xy` to a point of the surface."""
    u = np.linspace(-1.0, 1.0, 21)
    local = np.stack(np.meshgrid(u, u), -1).reshape(-1, 2) * np.asarray(rec.half_extent)
    c, s = np.cos(rec.yaw), np.sin(rec.yaw)
    world = np.asarray(rec.center[:2]) + local @ np.array([[c, s], [-s, c]])
    bearing = np.arctan2(world[:, 1] - xy[1], world[:, 0] - xy[0])
    return float(np.min(np.abs((bearing - yaw + np.pi) % (2 * np.pi) - np.pi)))


def _cfg(**nav: float) -> dict:
    cfg = copy.deepcopy(load_generator_config())
    cfg["nav"].update(nav)
    return cfg


def test_receptacle_starts_lie_beside_a_receptacle_facing_it_and_far_from_the_goal():
    cfg = _cfg(start_at_receptacle_prob=1.0)
    episodes = generate_episodes("nav", "train", 6, seed=3, cfg=cfg)
    assert len(episodes) == 6
    max_dist = cfg["nav"]["receptacle_start_max_dist"]
    off = []
    for ep in episodes:
        layout = generate_layout(ep.layout_seed)
        xy = np.asarray(ep.robot_start["xy"])
        near = [r for r in layout.receptacles.values() if _distance_to_receptacle(xy, r) <= max_dist + 1e-6]
        assert near, f"{ep.episode_id}: no receptacle within {max_dist} m of the start"
        nav = NavMap(layout)
        assert nav.geodesic_distance(xy, ep.info["nav_goal"][:2]) >= cfg["nav"]["min_start_distance"]
        off.append(min(_angle_to_receptacle(xy, ep.robot_start["yaw"], r) for r in near))
    # faces a point of a receptacle it stands beside, up to the spawn's yaw noise (std 30 deg); a uniform
    # yaw is ~0.8 rad off on average on these episodes, the spawn ~0.07
    assert np.mean(off) < 0.4, off


def test_the_option_off_keeps_the_episodes_made_before_it_existed():
    """At 0 the generator draws nothing more, so older datasets (and the val benchmark) are unchanged."""
    without = copy.deepcopy(load_generator_config())
    for key in ("start_at_receptacle_prob", "receptacle_start_max_dist", "receptacle_start_tries"):
        without["nav"].pop(key)
    a = generate_episodes("nav", "val", 4, seed=0)
    b = generate_episodes("nav", "val", 4, seed=0, cfg=without)
    assert [e.robot_start for e in a] == [e.robot_start for e in b]
    c = generate_episodes("nav", "val", 4, seed=0, cfg=_cfg(start_at_receptacle_prob=1.0))
    assert [e.robot_start for e in a] != [e.robot_start for e in c]


def test_make_episodes_applies_an_override(tmp_path):
    out = tmp_path / "nav.json.gz"
    argv = ["--kind", "nav", "--split", "train", "--count", "2", "--out", str(out), "--no-progress"]
    assert make_episodes_main([*argv, "nav.start_at_receptacle_prob=1.0"]) == 0
    expected = generate_episodes("nav", "train", 2, seed=0, cfg=_cfg(start_at_receptacle_prob=1.0))
    assert [e.robot_start for e in load_episodes(out)] == [e.robot_start for e in expected]


@pytest.mark.parametrize("override, message", [
    ("nav.no_such_key=1", "invalid config override: Could not override 'nav.no_such_key'."),
    ("nav.start_at_receptacle_prob=1.5", "nav.start_at_receptacle_prob must be in [0, 1] (got 1.5)"),
    ("nav.start_at_receptacle_prob=often", "nav.start_at_receptacle_prob must be in [0, 1] (got often)"),
    ("nav.start_at_receptacle_prob", "invalid config override: Error parsing override 'nav.start_at_receptacle_prob'"),
])
def test_make_episodes_rejects_a_bad_override_in_one_line_and_writes_nothing(tmp_path, capsys, override, message):
    out = tmp_path / "nav.json.gz"
    out.write_bytes(b"old")
    argv = ["--kind", "nav", "--split", "train", "--count", "2", "--out", str(out), "--no-progress", override]
    with pytest.raises(SystemExit) as exc:
        make_episodes_main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {message}"
    assert out.read_bytes() == b"old"
