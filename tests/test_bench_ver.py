"""bench-ver: a tiny end-to-end run writes a well-formed report; bad input exits 2 naming the choices.

No assertion on speed: only that numbers exist, are positive and are consistent with each other.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from eval import bench_ver
from trainer.diagnostic_envs import make_counting_env


def _run_main(argv: list[str]) -> int:
    try:
        bench_ver.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_tiny_run_writes_consistent_json_and_png(tmp_path, capsys):
    out = tmp_path / "bench"
    code = _run_main(["--skill", "cartpole", "--num-envs", "2", "--num-steps", "8", "--steps", "48",
                      "--modes", "raw,sync,ver", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads((out / bench_ver.RESULT_FILE).read_text())
    assert report["config"]["num_envs"] == 2 and report["config"]["num_steps"] == 8
    assert report["config"]["steps_per_mode"] == 48
    assert list(report["modes"]) == ["raw", "sync", "ver"]
    for mode, row in report["modes"].items():
        assert row["status"] == "ok", (mode, row)
        assert row["mean_sps"] > 0 and row["max_sps"] > 0
        # the best rollout (window) is at least the mean over the measured rollouts, up to rounding
        assert row["max_sps"] >= 0.99 * min(row["rollout_sps"][1:]), mode
        assert row["measured_steps"] > 0 and row["measured_seconds"] > 0
        assert set(row["time_s"]) >= {"inference", "learning", "waiting"}
        assert row["sim"]["ms_per_step"] > 0 and row["sim"]["env_seconds"] > 0
    # 48 steps = 3 rollouts of T x N = 16; one is warm-up
    assert report["modes"]["sync"]["measured_steps"] == 32
    # VER rollouts hold about T x N rows (in-flight steps move between rollouts), so it may need a 4th
    assert len(report["modes"]["ver"]["rollout_sps"]) >= 3
    assert report["modes"]["raw"]["time_s"]["learning"] == 0.0
    assert report["modes"]["ver"]["time_s"]["learning"] > 0.0
    ratios = report["ratios"]
    modes = report["modes"]
    assert ratios["ver_over_sync"] == pytest.approx(modes["ver"]["mean_sps"] / modes["sync"]["mean_sps"])
    assert ratios["ver_over_raw"] == pytest.approx(modes["ver"]["mean_sps"] / modes["raw"]["mean_sps"])
    assert "ver_over_nover" not in ratios  # nover was not measured
    goals = {g["name"]: g for g in report["goals"]}
    assert goals["ver_over_sync"]["met"] == (ratios["ver_over_sync"] >= goals["ver_over_sync"]["target"])
    png = (out / bench_ver.PLOT_FILE).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    assert "ver_over_sync" in captured.out and "mean SPS" in captured.out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--skill", "open_frige"], "unknown skill 'open_frige'; valid choices: pick, place, nav, open_fridge"),
        (["--skill", "cartpole", "--modes", "raw,vr"], "unknown mode 'vr'; valid choices: raw, sync, nover, ver"),
        (["--skill", "cartpole", "--ranks", "0"], "--ranks must be a comma list of positive integers"),
        (["--skill", "cartpole", "--num-envs", "2", "--slow-envs", "3"], "--slow-envs must be between 0"),
        (["--skill", "cartpole", "--num-envs", "2", "--num-steps", "8", "--steps", "16"], "raise --steps to 32"),
        (["--skill", "cartpole", "trainer.no_such_key=1"], "invalid config override"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv, needle):
    out = tmp_path / "bench"
    code = _run_main([*argv, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and needle in err
    assert not out.exists()  # nothing was written


def test_timed_env_counts_steps_and_resets_in_shared_counters():
    counters = torch.zeros((3, bench_ver.NUM_COUNTERS), dtype=torch.float64).share_memory_()
    base = make_counting_env
    env = bench_ver.make_bench_env(2, base_fn=base, counters=counters, slow=(2,), slow_factor=1.5)
    env.reset(seed=0)
    for _ in range(9):  # CountingEnv episodes last 7 steps
        _, _, terminated, _, _ = env.step(0)
        if terminated:
            env.reset()
    c = counters.numpy()
    assert c[2, bench_ver.SIM_STEPS] == 9 and c[2, bench_ver.RESETS] == 2
    assert c[2, bench_ver.SIM_SECONDS] > 0 and c[2, bench_ver.RESET_SECONDS] > 0
    assert c[2, bench_ver.SIM_CPU_SECONDS] >= 0
    assert np.all(c[:2] == 0)  # other envs' rows untouched
    assert bench_ver.slow_env_indices(8, 3) == [5, 6, 7] and bench_ver.slow_env_indices(8, 0) == []


def test_train_stats_mean_after_warmup_and_max_over_rollouts():
    records = [  # what trainer.logger writes: one line per rollout
        {"env_steps": 100, "wall_time": 10.0, "perf/sps": 10.0, "perf/collect_time": 9.0, "perf/learn_time": 1.0,
         "perf/inference_time": 2.0, "perf/env_wait_time": 5.0, "perf/steps_per_env_min": 5,
         "perf/steps_per_env_max": 20},
        {"env_steps": 200, "wall_time": 11.0, "perf/sps": 100.0, "perf/collect_time": 0.5, "perf/learn_time": 0.5,
         "perf/inference_time": 0.2, "perf/env_wait_time": 0.1, "perf/steps_per_env_min": 8,
         "perf/steps_per_env_max": 12},
        {"env_steps": 300, "wall_time": 13.0, "perf/sps": 50.0, "perf/collect_time": 1.5, "perf/learn_time": 0.5,
         "perf/inference_time": 0.3, "perf/env_wait_time": 0.2, "perf/steps_per_env_min": 9,
         "perf/steps_per_env_max": 11},
    ]
    stats = bench_ver.train_stats(records, warmup=1)
    assert stats["mean_sps"] == pytest.approx(200 / 3.0)
    assert stats["max_sps"] == 100.0  # the warm-up rollout (10 SPS) is excluded
    assert stats["measured_steps"] == 200 and stats["rollouts"] == 2
    assert stats["time_s"]["learning"] == pytest.approx(1.0)
    assert stats["time_s"]["inference"] == pytest.approx(0.5)
    assert stats["time_s"]["waiting"] == pytest.approx(0.3)
    assert stats["time_s"]["collect_other"] == pytest.approx(2.0 - 0.5 - 0.3)
    assert stats["steps_per_env_min"] == 8 and stats["steps_per_env_max"] == 12
    with pytest.raises(ValueError, match="raise --steps"):
        bench_ver.train_stats(records[:1], warmup=1)


def test_sample_factory_unavailable_gives_a_one_line_reason(tmp_path):
    from eval.bench_sample_factory import SampleFactoryUnavailable, ensure_venv

    sf_cfg = {"venv": "sf-venv", "python": str(tmp_path / "no-such-python"), "requirements": [["sample-factory"]],
              "install_timeout_s": 30}
    with pytest.raises(SampleFactoryUnavailable, match="cannot run .*no-such-python") as info:
        ensure_venv(sf_cfg, root=tmp_path)
    assert "\n" not in str(info.value)


def test_sample_factory_arguments_match_our_batch_geometry():
    from eval.bench_sample_factory import sf_arguments
    from trainer.config import compose, to_plain

    cfg = to_plain(compose("bench_ver"))
    ppo, sf_cfg = cfg["trainer"]["ppo"], cfg["sample_factory"]
    args = sf_arguments(sf_cfg, ppo, num_envs=8, num_steps=64, total_steps=4096, seed=3, train_dir="/tmp/x")
    flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    assert int(flags["num_workers"]) * int(flags["num_envs_per_worker"]) == 8
    assert int(flags["batch_size"]) * int(flags["num_batches_per_epoch"]) == 8 * 64  # one PPO batch = T x N
    assert int(flags["num_epochs"]) == ppo["ppo_epoch"] and int(flags["rollout"]) == 64
    assert flags["device"] == "cpu" and int(flags["train_for_env_steps"]) == 4096
    with pytest.raises(ValueError, match="not a multiple"):
        sf_arguments({**sf_cfg, "envs_per_worker": 3}, ppo, 8, 64, 4096, 0, "/tmp/x")


def test_repeats_combine_into_mean_std_and_best_max():
    def row(mean, best, learn):
        return {"status": "ok", "mean_sps": mean, "max_sps": best, "collect_sps": 2 * mean, "measured_steps": 100,
                "measured_seconds": 100 / mean, "time_s": {"learning": learn, "inference": 1.0, "waiting": 0.5},
                "sim": {"ms_per_step": 10.0, "busy_fraction": 0.5}, "rollout_sps": [mean], "ranks": 1}

    combined = bench_ver.combine_repeats([row(10.0, 12.0, 2.0), row(20.0, 25.0, 3.0), {"status": "failed: x"}])
    assert combined["mean_sps"] == pytest.approx(15.0)
    assert combined["mean_sps_std"] == pytest.approx(np.std([10.0, 20.0], ddof=1))
    assert combined["max_sps"] == 25.0 and combined["failed_repeats"] == 1
    assert combined["time_s"]["learning"] == pytest.approx(5.0) and combined["measured_steps"] == 200
    assert bench_ver.combine_repeats([{"status": "failed: x"}])["status"] == "failed: x"
