"""Filtering episode files by the receptacle the target starts on (or goes to) and by how far a pick start must drive round
furniture: exactly those kept, clear errors."""

from __future__ import annotations

import pytest

from rearrange.episodes import load_dataset, save_episodes
from rearrange.filter_episodes import goal_receptacle, main, start_receptacle
from rearrange.generate import generate_episodes


@pytest.fixture(scope="module")
def pick_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("filter") / "pick.json.gz"
    episodes = generate_episodes("pick", "train", 12, 3)
    save_episodes(path, episodes, seed=3)
    return path, episodes


def test_keeps_exactly_the_named_receptacles(pick_file, tmp_path):
    path, episodes = pick_file
    counts = {}
    for e in episodes:
        counts[start_receptacle(e)] = counts.get(start_receptacle(e), 0) + 1
    assert len(counts) >= 2  # the filter has something to drop
    name = max(counts, key=counts.get)
    out = tmp_path / "kept.json.gz"
    assert main(["--receptacle", name, "--out", str(out), str(path)]) == 0
    data = load_dataset(out)
    assert [e.episode_id for e in data["episodes"]] == [e.episode_id for e in episodes if start_receptacle(e) == name]
    assert (data["kind"], data["split"], data["seed"]) == ("pick", "train", 3)
    two = sorted(counts)[:2]
    assert main(["--receptacle", two[0], "--receptacle", two[1], "--out", str(out), str(path)]) == 0
    assert len(load_dataset(out)["episodes"]) == counts[two[0]] + counts[two[1]]


def test_goal_receptacle_keeps_the_places_onto_the_named_receptacle(tmp_path, capsys):
    path = tmp_path / "place.json.gz"
    episodes = generate_episodes("place", "train", 16, 4)
    save_episodes(path, episodes, seed=4)
    goals = [goal_receptacle(e) for e in episodes]
    assert len(set(goals)) >= 2 and "" not in goals  # every place has a goal, and the filter has something to drop
    name = max(set(goals), key=goals.count)
    out = tmp_path / "kept.json.gz"
    assert main(["--goal-receptacle", name, "--out", str(out), str(path), "--no-progress"]) == 0
    kept = load_dataset(out)["episodes"]
    assert [e.episode_id for e in kept] == [e.episode_id for e, g in zip(episodes, goals, strict=True) if g == name]
    assert all(goal_receptacle(e) == name for e in kept)
    with pytest.raises(SystemExit) as exc:  # a goal no episode has: one line naming the goals there are
        main(["--goal-receptacle", "fridge_shelf_9", "--out", str(tmp_path / "none.json.gz"), str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "goes to fridge_shelf_9" in err and name in err
    assert not (tmp_path / "none.json.gz").exists()


@pytest.mark.parametrize("case", ["unknown", "missing", "bad_out"])
def test_bad_input_is_one_line_and_nothing_is_written(pick_file, tmp_path, capsys, case):
    path, episodes = pick_file
    out = tmp_path / ("kept.txt" if case == "bad_out" else "kept.json.gz")
    source = tmp_path / "missing.json.gz" if case == "missing" else path
    with pytest.raises(SystemExit) as exc:
        main(["--receptacle", "fridge_shelf_9", "--out", str(out), str(source)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    expected = {"unknown": "fridge_shelf_9", "missing": "does not exist", "bad_out": "--out must end with"}[case]
    assert expected in err
    if case == "unknown":  # the valid choices are named
        assert all(r in err for r in {start_receptacle(e) for e in episodes})
    assert not out.exists()


def test_min_detour_keeps_the_starts_that_must_drive_round_furniture(pick_file, tmp_path):
    from rearrange.filter_episodes import pick_detours

    path, episodes = pick_file
    surface = [e for e in episodes if not start_receptacle(e).startswith(("fridge", "drawer"))]
    detours = pick_detours(surface)
    assert len(detours) == len(surface) and all(d >= 0.0 for d in detours)
    src = tmp_path / "surface.json.gz"
    save_episodes(src, surface)
    threshold = sorted(detours)[len(detours) // 2]  # about half pass
    out = tmp_path / "round.json.gz"
    assert main(["--min-detour", str(threshold), "--no-progress", "--out", str(out), str(src)]) == 0
    kept = [e.episode_id for e in load_dataset(out)["episodes"]]
    assert kept == [e.episode_id for e, d in zip(surface, detours, strict=True) if d > threshold]
    assert 0 < len(kept) < len(surface)


@pytest.mark.parametrize("argv, message", [
    ([], "give --receptacle NAME, --goal-receptacle NAME, --min-detour M, or several"),
    (["--min-detour", "-1"], "--min-detour must be >= 0"),
])
def test_bad_filter_arguments(pick_file, tmp_path, capsys, argv, message):
    path, _ = pick_file
    out = tmp_path / "kept.json.gz"
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(out), str(path)])
    assert exc.value.code == 2 and message in capsys.readouterr().err and not out.exists()


def test_min_detour_refuses_other_kinds(tmp_path, capsys):
    src = tmp_path / "nav.json.gz"
    save_episodes(src, generate_episodes("nav", "train", 1, 0))
    with pytest.raises(SystemExit) as exc:
        main(["--min-detour", "0.3", "--out", str(tmp_path / "x.json.gz"), str(src)])
    assert exc.value.code == 2 and "measures pick episodes" in capsys.readouterr().err
