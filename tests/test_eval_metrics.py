"""Evaluation metrics (bootstrap intervals, per-stage success, failure histogram, atomic JSON),
the stage tracker, and the PNG plots."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from eval.metrics import EpisodeRecord, StageTracker, aggregate, bootstrap_ci, load_records, write_json_atomic
from eval.plots import Curve, plot_learning_curves, plot_stage_success
from planner.problem import Stage


def test_bootstrap_all_ones_is_exact():
    r = bootstrap_ci(np.ones(50))
    assert r == {"mean": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n": 50}


def test_bootstrap_known_vector_contains_mean_and_narrows():
    x = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 1], dtype=float)  # mean 0.7
    r = bootstrap_ci(x, n_resamples=2000, seed=3)
    assert r["mean"] == pytest.approx(0.7)
    assert 0.3 < r["ci_low"] < 0.7 < r["ci_high"] <= 1.0
    # the percentile interval of a binomial mean is close to the normal approximation
    se = np.sqrt(0.7 * 0.3 / 10)
    assert r["ci_high"] - r["ci_low"] == pytest.approx(2 * 1.96 * se, rel=0.25)
    big = bootstrap_ci(np.tile(x, 40), n_resamples=2000, seed=3)  # same mean, 40x the episodes
    assert big["mean"] == pytest.approx(0.7)
    assert big["ci_low"] <= 0.7 <= big["ci_high"]
    assert (big["ci_high"] - big["ci_low"]) < 0.25 * (r["ci_high"] - r["ci_low"])
    assert bootstrap_ci(x, seed=3) == r  # seeded: identical
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_ci([])


def _records() -> list[EpisodeRecord]:
    stages = ["pick_0", "place_0", "pick_1", "place_1"]

    def rec(i, reached, success, failed, steps):
        return EpisodeRecord(f"{i:04d}", success, {s: (j < reached) for j, s in enumerate(stages)}, failed,
                             {"steps": steps})

    return [
        rec(0, 4, True, None, 900.0),
        rec(1, 4, True, None, 1100.0),
        rec(2, 2, False, "pick", 3000.0),
        rec(3, 1, False, "place", 3000.0),
        rec(4, 0, False, "nav", 3000.0),
        # reached place_1 out of order without pick_1: not progressive completion of place_1
        EpisodeRecord("0005", False, {"pick_0": True, "place_0": False, "pick_1": True, "place_1": True}, "pick",
                      {"steps": 3000.0}),
    ]


def test_aggregate_success_stages_failures_measures():
    out = aggregate(_records(), ["pick_0", "place_0", "pick_1", "place_1"], n_resamples=500, seed=0)
    assert out["num_episodes"] == 6
    assert out["success"]["mean"] == pytest.approx(2 / 6)
    prog = {k: v["mean"] for k, v in out["stage_success"].items()}
    assert prog == pytest.approx({"pick_0": 5 / 6, "place_0": 3 / 6, "pick_1": 2 / 6, "place_1": 2 / 6})
    assert list(prog) == out["stage_order"] == ["pick_0", "place_0", "pick_1", "place_1"]
    assert out["stage_reached"]["place_1"]["mean"] == pytest.approx(3 / 6)
    assert out["failed_skill"] == {"nav": 1, "pick": 2, "place": 1}
    assert out["measures"]["steps"]["mean"] == pytest.approx((900 + 1100 + 4 * 3000) / 6)
    for stats in [out["success"], *out["stage_success"].values(), out["measures"]["steps"]]:
        assert stats["ci_low"] <= stats["mean"] <= stats["ci_high"]
    json.dumps(out, allow_nan=False)  # JSON-serialisable as is
    with pytest.raises(ValueError, match="at least one"):
        aggregate([])


def test_write_json_atomic_and_reload(tmp_path):
    path = tmp_path / "sub" / "result.json"
    records = _records()
    write_json_atomic(path, {"episodes": [r.to_dict() for r in records]})
    back = load_records(json.loads(path.read_text())["episodes"])
    assert back == records
    before = path.read_text()
    with pytest.raises(ValueError):  # NaN is not valid JSON: nothing written, old file intact
        write_json_atomic(path, {"x": float("nan")})
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]  # no temp files left


def test_stage_tracker_requires_prerequisites():
    stages = [
        Stage("open_0", frozenset({("opened_cab", "drawer_0")})),
        Stage("pick_0", frozenset({("holding", "obj_0")})),
        Stage("place_0", frozenset({("object_at", "obj_0", "goal_obj_0")}), ("pick_0",)),
        Stage("close_0", frozenset({("closed_cab", "drawer_0")}), ("open_0",)),
    ]
    t = StageTracker(stages)
    assert t.update({("closed_cab", "drawer_0"), ("hand_empty",)}, 0) == []  # closed at the start: no stage
    assert t.update({("object_at", "obj_0", "goal_obj_0")}, 5) == []  # at goal without a pick: not placed
    assert t.update({("opened_cab", "drawer_0")}, 10) == ["open_0"]
    assert t.update({("holding", "obj_0"), ("opened_cab", "drawer_0")}, 20) == ["pick_0"]
    assert t.last_reached() == "pick_0"
    assert t.update({("object_at", "obj_0", "goal_obj_0"), ("closed_cab", "drawer_0")}, 30) == ["place_0", "close_0"]
    assert t.first_step == {"open_0": 10, "pick_0": 20, "place_0": 30, "close_0": 30}
    assert all(t.reached.values()) and t.last_reached() == "close_0"


def test_stage_success_plot(tmp_path):
    out = aggregate(_records(), n_resamples=200)
    path = plot_stage_success(out["stage_success"], tmp_path / "stages.png", title="tidy_house")
    img = Image.open(path)
    assert img.format == "PNG" and img.size[0] > 200 and img.size[1] > 150
    with pytest.raises(ValueError, match="at least one stage"):
        plot_stage_success({}, tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()


def test_learning_curve_plot(tmp_path):
    x = np.arange(10) * 1000
    y = np.linspace(0, 0.8, 10)
    curves = [Curve("ver", x, y, y - 0.1, y + 0.1), Curve("sync", x, y * 0.5)]
    path = plot_learning_curves(curves, tmp_path / "curve.png")
    assert Image.open(path).format == "PNG"
    with pytest.raises(ValueError, match="both low and high"):
        plot_learning_curves([Curve("bad", x, y, low=y)], tmp_path / "bad.png")
    with pytest.raises(ValueError, match="equal length"):
        plot_learning_curves([Curve("bad", x, y[:3])], tmp_path / "bad.png")
