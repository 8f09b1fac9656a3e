"""`python -m eval.failed_episodes`: the train episodes an eval-skill run failed, plus a share of the
solved ones, as one dataset; never from val episodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_errors import one_line_exit_2

from eval.failed_episodes import main
from eval.skill_eval import main as eval_skill_main
from rearrange.episodes import load_dataset, save_episodes
from rearrange.generate import generate_episodes


def _result(tmp_path, split: str, solved: set[int], n: int = 8) -> tuple[str, list]:
    """An episode file of `n` open_cab episodes and an eval-skill-style result that solved `solved`."""
    episodes = generate_episodes("open_cab", split, n, 3)
    path = tmp_path / f"open_cab_{split}.json.gz"
    save_episodes(path, episodes, kind="open_cab", split=split, seed=3)
    rows = [{"episode_id": e.episode_id, "success": i in solved} for i, e in enumerate(episodes)]
    result = tmp_path / f"result_{split}.json"
    result.write_text(json.dumps({"skill": "open_cab", "episodes_file": str(path), "episodes": rows}))
    return str(result), episodes


def test_failed_episodes_and_a_share_of_the_solved_ones(tmp_path, capsys):
    result, episodes = _result(tmp_path, "train", solved={0, 1, 2, 3, 4})  # 3 failed, 5 solved
    out = tmp_path / "hard.json.gz"
    assert main([result, "--successes", "1.0", "--out", str(out)]) == 0
    data = load_dataset(out)
    ids = [e.episode_id for e in data["episodes"]]
    assert data["split"] == "train" and data["kind"] == "open_cab"
    assert ids[:3] == [e.episode_id for e in episodes[5:]]  # every failure, in order
    assert len(ids) == 6 and set(ids[3:]) <= {e.episode_id for e in episodes[:5]}  # 1.0 x 3 solved ones
    again = tmp_path / "again.json.gz"
    main([result, "--successes", "1.0", "--out", str(again)])
    assert [e.episode_id for e in load_dataset(again)["episodes"]] == ids  # the same seed draws the same
    main([result, "--successes", "0", "--out", str(again)])
    assert len(load_dataset(again)["episodes"]) == 3
    assert "3 failed, 3 solved" in capsys.readouterr().out


def test_val_episodes_never_choose_training_episodes(tmp_path, capsys):
    result, _ = _result(tmp_path, "val", solved={0})
    out = tmp_path / "hard.json.gz"
    err = one_line_exit_2(capsys, main, [result, "--out", str(out)])
    assert "train-split" in err and not out.exists()


def test_a_result_naming_unknown_episodes_is_a_one_line_error(tmp_path, capsys):
    result, _ = _result(tmp_path, "train", solved=set(), n=2)
    data = json.loads(Path(result).read_text())
    data["episodes"][0]["episode_id"] = "nope"
    Path(result).write_text(json.dumps(data))
    assert "nope" in one_line_exit_2(capsys, main, [result, "--out", str(tmp_path / "x.json.gz")])


def test_eval_skill_records_the_split_of_its_episode_file(tmp_path):
    """eval-skill --episodes-file on train episodes writes split 'train' (it wrote the default 'val')."""
    episodes = generate_episodes("open_cab", "train", 1, 5)
    path = tmp_path / "train.json.gz"
    save_episodes(path, episodes, kind="open_cab", split="train", seed=5)
    out = tmp_path / "res.json"
    eval_skill_main(["--skill", "open_cab", "--oracle", "--episodes-file", str(path), "--out", str(out),
                     "--no-progress", "eval.bootstrap_samples=50"])
    assert json.loads(out.read_text())["split"] == "train"


@pytest.mark.parametrize("bad", [["--successes", "-1"], ["--successes", "nan"]])
def test_bad_successes_share_is_named(tmp_path, capsys, bad):
    result, _ = _result(tmp_path, "train", solved=set(), n=2)
    assert "--successes" in one_line_exit_2(capsys, main, [result, *bad, "--out", str(tmp_path / "x.json.gz")])
