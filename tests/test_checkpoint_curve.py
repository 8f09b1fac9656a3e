"""eval.checkpoint_curve: wall time across resumed sessions, and bad input as one line with exit 2."""

from __future__ import annotations

import json

import pytest

from eval import checkpoint_curve


def _run_dir(tmp_path, wall_times):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    with open(run / "metrics.jsonl", "w", encoding="utf-8") as f:
        for i, t in enumerate(wall_times):
            f.write(json.dumps({"update": i + 1, "env_steps": 100 * (i + 1), "wall_time": t}) + "\n")
    return run


def test_resumed_sessions_are_laid_end_to_end(tmp_path):
    run = _run_dir(tmp_path, [10.0, 20.0, 5.0, 15.0])  # the clock restarted at the resume
    steps, times = checkpoint_curve.cumulative_wall_time(run / "metrics.jsonl")
    assert steps.tolist() == [100, 200, 300, 400]
    assert times.tolist() == [10.0, 20.0, 25.0, 35.0]


@pytest.mark.parametrize("args, message", [
    (["--split", "tset"], "unknown split 'tset'; valid choices: train, val"),
    ([], "corrupt or not a checkpoint"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    run = _run_dir(tmp_path, [1.0])
    (run / "checkpoints" / "ckpt_000000000100.pt").write_bytes(b"")
    with pytest.raises(SystemExit) as exc:
        checkpoint_curve.main([str(run), "--episodes", "1", "--workers", "1", *args])
    assert exc.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0]
    assert not (run / "checkpoint_curve.json").exists()


def test_a_run_without_checkpoints_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        checkpoint_curve.main([str(tmp_path)])
    assert exc.value.code == 2 and "no checkpoint" in capsys.readouterr().err
