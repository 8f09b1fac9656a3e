"""eval.compare_agents: the per-stage chart comparing eval-hab runs, and its one-line errors."""

from __future__ import annotations

import json

import pytest

from eval.compare_agents import main


def _result(tmp_path, name, agent, success, stages, scenario="tidy_house", oracle=()):
    folder = tmp_path / name
    folder.mkdir()
    stage_success = {k: {"mean": v, "ci_low": max(0.0, v - 0.1), "ci_high": min(1.0, v + 0.1), "n": 10}
                     for k, v in stages.items()}
    (folder / "results.json").write_text(json.dumps({
        "scenario": scenario, "agent": agent, "mode": "replan", "oracle_skills": list(oracle),
        "success": {"mean": success, "ci_low": 0.0, "ci_high": 1.0, "n": 10},
        "stage_success": stage_success, "failed_skill": {"pick": 3} if success < 1 else {}}))
    return folder


def test_chart_and_table_for_two_agents(tmp_path, capsys):
    a = _result(tmp_path, "a", "oracle", 0.9, {"pick_0": 1.0, "place_0": 0.9})
    b = _result(tmp_path, "b", "tp-srl", 0.2, {"pick_0": 0.6, "place_0": 0.2}, oracle=["place"])
    out = tmp_path / "chart.png"
    assert main([str(a), str(b / "results.json"), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "oracle replan: 0.90" in text and "tp-srl replan, oracle place: 0.20" in text and "pick 3" in text


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    a = _result(tmp_path, "a", "oracle", 0.9, {"pick_0": 1.0})
    c = _result(tmp_path, "c", "oracle", 0.9, {"open_0": 1.0}, scenario="set_table")
    out = tmp_path / "x.png"
    cases = [([str(a), str(c)], "different scenarios"), ([str(a), str(tmp_path / "none")], "cannot read"),
             ([str(a), str(a)], "share the label"), ([str(a), "--labels", "x", "y"], "2 labels for 1 runs")]
    for argv, message in cases:
        assert main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and "\n" not in err
    assert not out.exists()  # nothing written on bad input


@pytest.mark.parametrize("missing", ["stage_success", "scenario"])
def test_a_file_that_is_not_an_eval_hab_result(tmp_path, capsys, missing):
    folder = _result(tmp_path, "a", "oracle", 0.9, {"pick_0": 1.0})
    data = json.loads((folder / "results.json").read_text())
    del data[missing]
    (folder / "results.json").write_text(json.dumps(data))
    assert main([str(folder), "--out", str(tmp_path / "x.png")]) == 2
    assert missing in capsys.readouterr().err


def test_the_chart_carries_the_failed_skill_histogram(tmp_path, monkeypatch):
    """The failed-skill panel gets each run's `failed_skill` counts, the skills of every run in order of
    first appearance; a run without failures contributes nothing."""
    from eval import plots

    drawn = {}
    real = plots._grouped_bars

    def spy(ax, names, groups):
        drawn[tuple(names)] = groups
        real(ax, names, groups)

    monkeypatch.setattr(plots, "_grouped_bars", spy)
    a = _result(tmp_path, "a", "oracle", 1.0, {"pick_0": 1.0})
    b = _result(tmp_path, "b", "tp-srl", 0.2, {"pick_0": 0.6})
    data = json.loads((b / "results.json").read_text())
    data["failed_skill"] = {"pick": 3, "nav": 5}
    (b / "results.json").write_text(json.dumps(data))
    assert main([str(a), str(b), "--out", str(tmp_path / "c.png")]) == 0
    assert drawn[("pick", "nav")] == {"oracle replan": {}, "tp-srl replan": {"pick": {"mean": 3.0}, "nav": {"mean": 5.0}}}
    assert ("pick_0",) in drawn


def test_markdown_rows_are_readmes_table(tmp_path, capsys):
    """`--markdown` prints README's HAB table: the scenario's name, fixed mode marked as habitat's, stages in the
    plan's order (not the file's), failed skills most first."""
    a = _result(tmp_path, "a", "tp-srl", 0.25, {"place_0": 0.5, "pick_0": 0.75})
    data = json.loads((a / "results.json").read_text())
    data.update(mode="fixed", stage_order=["pick_0", "place_0"], failed_skill={"pick": 2, "nav": 5, "place": 2})
    (a / "results.json").write_text(json.dumps(data))
    assert main([str(a), "--out", str(tmp_path / "c.png"), "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| scenario | agent | mode | success [95% CI] | per-stage success | failed skill (episodes) |" in lines
    assert "| Tidy House | tp-srl | fixed (habitat) | 0.25 [0.00, 1.00] | 0.75 / 0.50 | nav 5, pick 2, place 2 |" in lines
