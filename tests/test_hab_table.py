"""eval.hab_table: README's HAB table from real eval-hab runs, continued where it stopped, and its one-line errors."""

from __future__ import annotations

import pytest

from eval.hab_table import main


def test_one_run_makes_the_table_and_a_second_call_keeps_it(tmp_path, capsys):
    out = tmp_path / "table"
    argv = ["--out", str(out), "--scenarios", "set_table", "--agents", "oracle", "--modes", "replan",
            "--episodes", "1", "--workers", "1"]
    assert main(argv) == 0
    lines = (out / "table.md").read_text().splitlines()
    assert lines[0].startswith("| scenario | agent | mode |")
    assert lines[2].startswith("| Set Table | oracle | replan | ") and lines[2].count(" / ") == 5  # six stages
    assert (out / "hab50_set_table.png").read_bytes()[:4] == b"\x89PNG"
    assert "[1/1] set_table oracle replan:" in capsys.readouterr().out
    log = out / "set_table_oracle_replan.log"
    before = log.stat().st_mtime_ns
    assert main(argv) == 0  # the finished run is kept, not run again
    assert log.stat().st_mtime_ns == before


@pytest.mark.parametrize("argv, message", [
    (["--agents", "oracle,fly"], "unknown agent 'fly'"),
    (["--modes", ""], "--modes is empty"),
    (["--scenarios", "kitchen"], "unknown scenario 'kitchen'"),
    (["--episodes", "0"], "--episodes must be >= 1"),
    (["--split", "test"], "unknown split 'test'"),
])
def test_bad_choices_are_one_line_errors_before_any_run(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path / "t"), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not (tmp_path / "t").exists()  # nothing written


def test_a_failing_eval_hab_run_stops_the_table_with_its_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path / "t"), "--scenarios", "set_table", "--agents", "oracle", "--modes", "replan",
              "--episodes", "1", "agent.unstick_skills=[fly]"])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip()
    assert "eval-hab set_table oracle replan failed" in err and "fly" in err and "\n" not in err
    assert not (tmp_path / "t" / "table.md").exists()
