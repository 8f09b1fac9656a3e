"""Where eval-hab and eval-skill find skill checkpoints: DIR/<skill>.pt, a train-skill run folder (its
newest ckpt_<step>.pt), agent.checkpoints.<skill>, and the checkpoints shipped in the repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_errors import one_line_exit_2
from skill_checkpoints import untrained_checkpoint

import eval.skill_library as library
from eval.skill_library import CheckpointMissing, resolve_checkpoints
from trainer.checkpoint import checkpoint_path

# the repository's checkpoints/ folder, found from the package (not the working directory)
SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints"
CPU = ("profile=cpu",)  # small, fast checkpoints: ray-cast 16x16 depth, small MLP policy


def _run_folder(root: Path, skill: str, steps: list[int], make=None) -> list[Path]:
    """train-skill's layout, <root>/<skill>/checkpoints/ckpt_<step>.pt (`make(path)` writes each file)."""
    paths = [checkpoint_path(root / skill / "checkpoints", s) for s in steps]
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        if make is None:
            p.write_bytes(b"x")
        else:
            make(p)
    return paths


def test_train_skill_run_folder_gives_the_newest_checkpoint(tmp_path):
    old, newest, middle = _run_folder(tmp_path, "pick", [900, 12000, 5000])
    assert resolve_checkpoints(["pick"], {}, tmp_path) == {"pick": newest}
    # DIR/<skill>.pt still works, and wins over a run folder beside it
    (tmp_path / "pick.pt").write_bytes(b"x")
    assert resolve_checkpoints(["pick"], {"pick": None}, tmp_path) == {"pick": tmp_path / "pick.pt"}
    # agent.checkpoints.<skill> wins over both; it may name a run folder too
    assert resolve_checkpoints(["pick"], {"pick": str(old)}, tmp_path) == {"pick": old}
    assert resolve_checkpoints(["pick"], {"pick": str(tmp_path / "pick")}, None) == {"pick": newest}


def test_run_folder_without_checkpoints_is_a_one_line_error(tmp_path):
    (tmp_path / "place" / "checkpoints").mkdir(parents=True)
    with pytest.raises(CheckpointMissing) as exc:
        resolve_checkpoints(["place"], {}, tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg and "'place'" in msg
    assert str(tmp_path / "place.pt") in msg and "holds no ckpt_<step>.pt" in msg
    with pytest.raises(CheckpointMissing, match=r"skill 'nav' not found: no .*nav\.pt, and no run folder"):
        resolve_checkpoints(["nav"], {}, tmp_path)
    with pytest.raises(CheckpointMissing, match=r"agent\.checkpoints\.nav"):
        resolve_checkpoints(["nav"], {"nav": str(tmp_path / "missing.pt")}, tmp_path)


def test_shipped_checkpoints_are_the_default(tmp_path, monkeypatch):
    shipped = SHIPPED
    assert (shipped / "pick.pt").is_file()  # found from the package, whatever the working directory
    monkeypatch.chdir(tmp_path)
    assert resolve_checkpoints(["pick"], {}, None) == {"pick": shipped / "pick.pt"}
    # a skill without a shipped checkpoint: one line naming the skill, the path searched, how to pass one
    monkeypatch.setattr(library, "SHIPPED_CHECKPOINTS", tmp_path / "shipped")
    with pytest.raises(CheckpointMissing) as exc:
        resolve_checkpoints(["pick"], {}, None)
    msg = str(exc.value)
    assert "\n" not in msg and "'pick'" in msg and str(tmp_path / "shipped" / "pick.pt") in msg
    assert "--checkpoint-dir" in msg and "agent.checkpoints.pick" in msg


def test_the_agent_without_nav_has_its_own_shipped_pick(tmp_path):
    """tp-srl-nonav's default pick is checkpoints/nonav/pick.pt (it crosses the house to the object); every
    other skill, and every skill of tp-srl, is the shared checkpoints/<skill>.pt; a shipped folder without
    a nonav/ pick falls back to the shared one."""
    both = ["pick", "place"]
    assert resolve_checkpoints(both, {}, None, agent_type="tp-srl-nonav") == {
        "pick": SHIPPED / "nonav" / "pick.pt", "place": SHIPPED / "place.pt"}
    assert resolve_checkpoints(both, {}, None, agent_type="tp-srl") == {
        "pick": SHIPPED / "pick.pt", "place": SHIPPED / "place.pt"}
    other = tmp_path / "other.pt"
    other.write_bytes(b"")
    assert resolve_checkpoints(["pick"], {"pick": str(other)}, None, agent_type="tp-srl-nonav") == {"pick": other}
    (tmp_path / "pick.pt").write_bytes(b"")
    assert resolve_checkpoints(["pick"], {}, None, shipped_dir=tmp_path, agent_type="tp-srl-nonav") == {
        "pick": tmp_path / "pick.pt"}


def test_eval_hab_runs_from_a_train_skill_folder_and_from_shipped_defaults(tmp_path, monkeypatch):
    from eval.hab_eval import main

    runs = tmp_path / "runs" / "skill"
    newest = {}
    for skill in ("pick", "place"):
        make = lambda p, s=skill: untrained_checkpoint(p, s, CPU)  # noqa: E731
        newest[skill] = _run_folder(runs, skill, [100, 200], make)[-1]
    argv = ["--scenario", "prepare_groceries", "--agent", "tp-srl-nonav", "--episodes", "1", "--no-progress",
            "hab_task.max_steps=4"]
    assert main([*argv, "--checkpoint-dir", str(runs), "--out", str(tmp_path / "a")]) == 0
    result = json.loads((tmp_path / "a" / "results.json").read_text())
    assert result["checkpoints"] == {k: str(v) for k, v in newest.items()}
    assert result["episodes"][0]["measures"]["steps"] >= 1
    # no --checkpoint-dir, no agent.checkpoints: the shipped folder
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for skill in ("pick", "place"):
        (shipped / f"{skill}.pt").write_bytes(newest[skill].read_bytes())
    monkeypatch.setattr(library, "SHIPPED_CHECKPOINTS", shipped)
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    result = json.loads((tmp_path / "b" / "results.json").read_text())
    assert result["checkpoints"] == {"pick": str(shipped / "pick.pt"), "place": str(shipped / "place.pt")}
    # a pick shipped for the agent without nav (shipped/nonav/pick.pt) is the one it runs
    (shipped / "nonav").mkdir()
    (shipped / "nonav" / "pick.pt").write_bytes(newest["pick"].read_bytes())
    assert main([*argv, "--out", str(tmp_path / "c")]) == 0
    result = json.loads((tmp_path / "c" / "results.json").read_text())
    assert result["checkpoints"] == {"pick": str(shipped / "nonav" / "pick.pt"), "place": str(shipped / "place.pt")}


def test_eval_hab_names_a_skill_with_no_shipped_checkpoint(tmp_path, monkeypatch, capsys):
    from eval.hab_eval import main

    monkeypatch.setattr(library, "SHIPPED_CHECKPOINTS", tmp_path / "shipped")
    err = one_line_exit_2(capsys, main, ["--scenario", "prepare_groceries", "--agent", "tp-srl", "--episodes",
                                         "1", "--out", str(tmp_path / "out"), "--no-progress"])
    assert "no checkpoint for skill 'nav'" in err and "--checkpoint-dir" in err
    assert not (tmp_path / "out").exists()


def test_eval_skill_defaults_to_the_shipped_checkpoint(tmp_path, capsys):
    from eval.skill_eval import main

    out = tmp_path / "r.json"
    main(["--skill", "pick", "--episodes", "1", "--no-progress", "--out", str(out),
          "eval.bootstrap_samples=100"])
    result = json.loads(out.read_text())
    assert result["agent"] == "checkpoint"
    assert Path(result["checkpoint"]) == SHIPPED / "pick.pt"


def test_eval_skill_run_folder_and_missing_shipped_checkpoint(tmp_path, monkeypatch, capsys):
    from eval.skill_eval import main

    newest = _run_folder(tmp_path, "place", [7, 30], lambda p: untrained_checkpoint(p, "place", CPU))[-1]
    out = tmp_path / "r.json"
    main(["--skill", "place", "--checkpoint", str(tmp_path / "place"), "--episodes", "1", "--no-progress",
          "--out", str(out), "eval.bootstrap_samples=100"])
    assert json.loads(out.read_text())["checkpoint"] == str(newest)
    (tmp_path / "empty" / "checkpoints").mkdir(parents=True)
    err = one_line_exit_2(capsys, main, ["--skill", "place", "--checkpoint", str(tmp_path / "empty")])
    assert "holds no ckpt_<step>.pt" in err
    monkeypatch.setattr(library, "SHIPPED_CHECKPOINTS", tmp_path / "shipped")
    err = one_line_exit_2(capsys, main, ["--skill", "nav", "--out", str(tmp_path / "n.json")])
    assert "skill 'nav'" in err and str(tmp_path / "shipped" / "nav.pt") in err
    assert "--checkpoint" in err and "--oracle" in err
    assert not (tmp_path / "n.json").exists()


def test_eval_skill_help_shows_a_plain_percent(capsys):
    from eval.skill_eval import main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "95% bootstrap" in text and "%%" not in text and "checkpoints/<skill>.pt" in text


def test_oracle_skills_fill_in_for_skills_without_a_checkpoint(tmp_path, monkeypatch, capsys):
    """agent.oracle_skills: the shipped learned pick runs inside Tidy House with oracle nav and place;
    only pick needs (and records) a checkpoint, the oracle skills are recorded too."""
    from eval.hab_eval import main

    oracle = ["nav", "place", "open_fridge", "close_fridge", "open_cab", "close_cab"]
    argv = ["--scenario", "tidy_house", "--agent", "tp-srl", "--episodes", "1", "--no-progress",
            "hab_task.max_steps=300", f"agent.oracle_skills=[{','.join(oracle)}]"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    result = json.loads((tmp_path / "a" / "results.json").read_text())
    assert result["checkpoints"] == {"pick": str(SHIPPED / "pick.pt")} and result["oracle_skills"] == oracle
    calls = result["episodes"][0]["skill_calls"]
    assert calls[0].startswith("nav(") and calls[1].startswith("pick("), calls  # oracle nav, then the policy
    # without the oracle stand-in, the missing nav checkpoint is named, with the way out
    monkeypatch.setattr(library, "SHIPPED_CHECKPOINTS", tmp_path / "shipped")
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / "pick.pt").write_bytes((SHIPPED / "pick.pt").read_bytes())
    err = one_line_exit_2(capsys, main, [*argv[:-1], "--out", str(tmp_path / "b")])
    assert "no checkpoint for skill 'nav'" in err and "agent.oracle_skills=[nav]" in err
    err = one_line_exit_2(capsys, main, [*argv[:-1], "agent.oracle_skills=[jump]", "--out", str(tmp_path / "c")])
    assert "agent.oracle_skills entry" in err and "'jump'" in err and "pick, place, nav" in err
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()
