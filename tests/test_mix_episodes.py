"""Mixing episode files: copies weight a file, ids stay unique, one kind only, clear errors."""

from __future__ import annotations

import pytest

from rearrange.episodes import load_episodes, save_episodes
from rearrange.generate import generate_episodes
from rearrange.mix_episodes import main, parse_source


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("mix")
    a, b = generate_episodes("pick", "train", 2, 0), generate_episodes("pick", "train", 1, 5)
    b = [type(e)(**{**e.__dict__, "episode_id": "other_0"}) for e in b]
    save_episodes(d / "a.json.gz", a)
    save_episodes(d / "b.json.gz", b)
    save_episodes(d / "nav.json.gz", generate_episodes("nav", "train", 1, 0))
    return d


def test_copies_weight_a_file_and_ids_stay_unique(files, tmp_path):
    out = tmp_path / "mix.json.gz"
    assert main(["--out", str(out), str(files / "a.json.gz"), f"{files / 'b.json.gz'}:3"]) == 0
    episodes = load_episodes(out)
    ids = [e.episode_id for e in episodes]
    assert len(ids) == 2 + 3 and len(set(ids)) == 5
    assert ids[2:] == ["other_0", "other_0_c1", "other_0_c2"]
    assert episodes[3].objects == episodes[2].objects


def test_parse_source():
    assert parse_source("x/a.json.gz") == ("x/a.json.gz", 1)
    assert parse_source("x/a.json.gz:4") == ("x/a.json.gz", 4)
    with pytest.raises(ValueError, match="copies must be >= 1"):
        parse_source("a.json:0")


@pytest.mark.parametrize("case, message", [
    ("kinds", "several kinds (nav, pick)"),
    ("dup", "occurs in more than one file"),
    ("missing", "missing.json.gz"),
])
def test_bad_input_is_one_line_and_nothing_is_written(files, tmp_path, capsys, case, message):
    sources = {"kinds": ["a.json.gz", "nav.json.gz"], "dup": ["a.json.gz", "a.json.gz"],
               "missing": ["missing.json.gz"]}[case]
    out = tmp_path / "mix.json.gz"
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(out), *(str(files / s) for s in sources)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()
