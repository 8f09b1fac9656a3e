"""eval/learning_curve.py: success from ordinary starts, per-step tables, resumed runs' metrics, the CLI."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from eval.learning_curve import main, ordinary_start_success, read_run_metrics, step_table


def _row(update: int, steps: int, episodes: int, success: float, oracle: float, own: float) -> dict:
    return {"update": update, "env_steps": steps, "metrics/episodes": episodes, "metrics/episode_return": 1.0,
            "metrics/success": success, "metrics/oracle_start": oracle, "metrics/start_success": own}


def _run_dir(tmp_path: Path, rows: list[dict], gz_rows: list[dict] | None = None) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("skill:\n  name: place\n")
    with open(run / "metrics.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
        f.write(json.dumps({"update": 99, "env_steps": 1, "perf/sps": 5.0}) + "\n")  # no episodes: skipped
    if gz_rows is not None:
        with gzip.open(run / "metrics.jsonl.gz", "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in gz_rows)
    return run


def test_success_from_ordinary_starts_leaves_the_oracle_prefix_episodes_out():
    # 10 episodes, half began part-way through the oracle; 2 successes came from the skill's own start
    own, n = ordinary_start_success([_row(1, 100, 10, success=0.6, oracle=0.5, own=0.2)])
    assert n == pytest.approx(5.0) and own == pytest.approx(0.4)
    # weighted by the ordinary episodes, not averaged per line
    own, n = ordinary_start_success([_row(1, 100, 10, 0.0, 0.5, 0.2), _row(2, 200, 10, 0.0, 0.0, 0.1)])
    assert n == pytest.approx(15.0) and own == pytest.approx((2 + 1) / 15)
    # a run without oracle starts: the plain success
    plain = {"env_steps": 5, "metrics/episodes": 4, "metrics/success": 0.75}
    assert ordinary_start_success([plain]) == (pytest.approx(0.75), pytest.approx(4.0))
    value, n = ordinary_start_success([_row(1, 100, 10, 1.0, 1.0, 0.0)])
    assert n == 0.0 and math.isnan(value)


def test_step_table_buckets_by_the_steps_each_update_ended_at():
    rows = [_row(1, 100, 10, 0.5, 0.5, 0.1), _row(2, 250, 10, 0.5, 0.5, 0.3), _row(3, 251, 20, 0.25, 0.0, 0.25)]
    table = step_table(rows, 250)
    assert [t["env_steps"] for t in table] == [250, 500]
    assert table[0]["episodes"] == 20 and table[0]["success"] == pytest.approx(0.5)
    assert table[0]["ordinary_start_success"] == pytest.approx((1 + 3) / 10)
    assert table[1]["ordinary_start_success"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="--every"):
        step_table(rows, 0)


def test_a_resumed_run_reads_its_compressed_part_and_its_new_lines_once(tmp_path):
    before = [_row(1, 100, 10, 0.1, 0.0, 0.1), _row(2, 200, 10, 0.2, 0.0, 0.2)]
    after = [_row(2, 200, 10, 0.2, 0.0, 0.2), _row(3, 300, 10, 0.3, 0.0, 0.3)]  # update 2 in both files
    rows = read_run_metrics(_run_dir(tmp_path, after, gz_rows=before))
    assert [r["env_steps"] for r in rows] == [100, 200, 300]


def test_cli_writes_the_plot_into_the_run_and_prints_the_table(tmp_path, capsys):
    run = _run_dir(tmp_path, [_row(i, 100 * i, 10, 0.5, 0.5, 0.2) for i in range(1, 7)])
    main([str(run), "--every", "300", "--untrained-episodes", "0", "--bins", "3"])
    out = capsys.readouterr().out
    assert (run / "learning_curve.png").stat().st_size > 0
    assert "from ordinary starts" in out and "600" in out
    report = json.loads(out[out.index("{"):])
    assert [t["ordinary_start_success"] for t in report["per_steps"]] == [pytest.approx(0.4)] * 2
    assert report["ordinary_start_success"]["last_bin"] == pytest.approx(0.4)


@pytest.mark.parametrize("args, message", [
    (["--every", "0"], "--every must be >= 1"),
    (["--bins", "0"], "--bins must be >= 1"),
])
def test_cli_bad_values_are_one_line_errors(tmp_path, capsys, args, message):
    run = _run_dir(tmp_path, [_row(1, 100, 10, 0.5, 0.5, 0.2)])
    with pytest.raises(SystemExit) as exc:
        main([str(run), "--untrained-episodes", "0", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (run / "learning_curve.png").exists()


def test_cli_on_a_folder_without_metrics_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path), "--untrained-episodes", "0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "metrics.jsonl does not exist" in err and "a train-skill run" in err and "\n" not in err
