"""bench-ver: tiny end-to-end runs write a well-formed report (every mode, its ratio to raw simulation) on
train-skill's profile config; bad input exits 2 naming the choices; Sample Factory gets our layout and net.

No assertion on speed: only that numbers exist, are positive and are consistent with each other.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from configs.compose import ConfigError, compose, to_plain
from eval import bench_ver, bench_ver_analyse, bench_ver_report, bench_ver_run
from trainer.diagnostic_envs import make_counting_env


def _run_main(argv: list[str]) -> int:
    try:
        bench_ver.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_tiny_run_writes_consistent_json_and_png(tmp_path, capsys):
    out = tmp_path / "bench"
    code = _run_main(["--skill", "cartpole", "--num-envs", "2", "--envs-per-worker", "1", "--num-steps", "8",
                      "--steps", "48", "--modes", "raw,sync,ver,ver_overlap", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads((out / bench_ver_report.RESULT_FILE).read_text())
    assert report["config"]["num_envs"] == 2 and report["config"]["num_steps"] == 8
    assert report["config"]["envs_per_worker"] == 1 and report["config"]["num_workers"] == 2
    assert report["config"]["steps_per_mode"] == 48
    assert list(report["modes"]) == ["raw", "sync", "ver", "ver_overlap"]
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
    assert ratios["ver_overlap_over_ver"] == pytest.approx(modes["ver_overlap"]["mean_sps"] / modes["ver"]["mean_sps"])
    # only the ver_overlap run learned on the thread: its rollouts after the first were collected one update behind
    lags = {mode: [json.loads(line).get("learner/policy_lag_mean")
                   for line in (out / "runs" / mode / "train" / "metrics.jsonl").read_text().splitlines()]
            for mode in ("ver", "ver_overlap")}
    assert max(lag for lag in lags["ver"] if lag is not None) < 1.0
    assert max(lag for lag in lags["ver_overlap"] if lag is not None) >= 1.0
    goals = {g["name"]: g for g in report["goals"]}
    assert goals["ver_over_sync"]["met"] == (ratios["ver_over_sync"] >= goals["ver_over_sync"]["target"])
    png = (out / bench_ver_report.PLOT_FILE).read_bytes()
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
        (["--skill", "cartpole", "--profile", "gpu"], "unknown profile 'gpu'; valid choices: auto, cpu, paper"),
        (["--skill", "cartpole", "--envs-per-worker", "0"], "--envs-per-worker must be >= 1"),
        (["--skill", "cartpole", "--max-seconds", "0"], "--max-seconds must be > 0"),
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
    run = bench_ver_run
    counters = torch.zeros((3, run.NUM_COUNTERS), dtype=torch.float64).share_memory_()
    base = make_counting_env
    env = run.make_bench_env(2, base_fn=base, counters=counters, slow=(2,), slow_factor=1.5)
    env.reset(seed=0)
    for _ in range(9):  # CountingEnv episodes last 7 steps
        _, _, terminated, _, _ = env.step(0)
        if terminated:
            env.reset()
    c = counters.numpy()
    assert c[2, run.SIM_STEPS] == 9 and c[2, run.RESETS] == 2
    assert c[2, run.SIM_SECONDS] > 0 and c[2, run.RESET_SECONDS] > 0
    assert c[2, run.SIM_CPU_SECONDS] >= 0
    assert np.all(c[:2] == 0)  # other envs' rows untouched
    assert run.slow_env_indices(8, 3) == [5, 6, 7] and run.slow_env_indices(8, 0) == []


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
    stats = bench_ver_analyse.train_stats(records, warmup=1)
    assert stats["mean_sps"] == pytest.approx(200 / 3.0)
    assert stats["max_sps"] == 100.0  # the warm-up rollout (10 SPS) is excluded
    assert stats["measured_steps"] == 200 and stats["rollouts"] == 2
    assert stats["time_s"]["learning"] == pytest.approx(1.0)
    assert stats["time_s"]["inference"] == pytest.approx(0.5)
    assert stats["time_s"]["waiting"] == pytest.approx(0.3)
    assert stats["time_s"]["collect_other"] == pytest.approx(2.0 - 0.5 - 0.3)
    assert stats["steps_per_env_min"] == 8 and stats["steps_per_env_max"] == 12
    with pytest.raises(ValueError, match="raise --steps"):
        bench_ver_analyse.train_stats(records[:1], warmup=1)


def test_sample_factory_unavailable_gives_a_one_line_reason(tmp_path):
    from eval.bench_sample_factory import SampleFactoryUnavailable, ensure_venv

    sf_cfg = {"venv": "sf-venv", "python": str(tmp_path / "no-such-python"), "requirements": [["sample-factory"]],
              "install_timeout_s": 30}
    with pytest.raises(SampleFactoryUnavailable, match="cannot run .*no-such-python") as info:
        ensure_venv(sf_cfg, root=tmp_path)
    assert "\n" not in str(info.value)


def test_sample_factory_arguments_match_our_layout_batch_geometry_and_network():
    from eval.bench_sample_factory import sf_arguments, sf_setup

    cfg = to_plain(compose("bench_ver", ["skill=pick", "profile=cpu"]))
    sf_cfg, trainer, policy = cfg["sample_factory"], cfg["trainer"], cfg["policy"]
    n, k, t_len = trainer["num_envs"], trainer["envs_per_worker"], trainer["num_steps"]
    args = sf_arguments(sf_cfg, trainer, policy, total_steps=4096, train_dir="/tmp/x", max_seconds=90)
    flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    # the cpu profile's layout: N envs in N / K worker processes, as our workers hold them
    assert int(flags["num_workers"]) == n // k and int(flags["num_envs_per_worker"]) == k > 1
    assert int(flags["batch_size"]) * int(flags["num_batches_per_epoch"]) == n * t_len  # one PPO batch = T x N
    assert int(flags["num_epochs"]) == trainer["ppo"]["ppo_epoch"] and int(flags["rollout"]) == t_len
    assert flags["device"] == "cpu" and int(flags["train_for_env_steps"]) == 4096
    assert int(flags["train_for_seconds"]) == 90
    # skill_cpu is feed-forward: no RNN, separate actor and critic MLPs of its sizes
    assert flags["use_rnn"] == "False" and flags["actor_critic_share_weights"] == "False"
    assert int(flags["recurrence"]) == 1  # rows are sampled independently, as our feed-forward learner does
    decoder = args[args.index("--decoder_mlp_layers") + 1:][:len(policy["feedforward"]["actor"])]
    assert [int(v) for v in decoder] == policy["feedforward"]["actor"]
    setup = sf_setup({"kind": "skill", "name": "pick", "sim_cfg": cfg["sim"]}, sf_cfg, trainer, policy)
    assert "head depth 16x16 raycast" in setup and "prev_action" in setup and "cnn_small" in setup
    with pytest.raises(ValueError, match="not a multiple"):
        sf_arguments({**sf_cfg, "envs_per_worker": 3}, trainer, policy, total_steps=4096, train_dir="/tmp/x")


def test_sample_factory_conv_matches_our_small_cnn():
    """The conv head SF gets for the cpu profile has our cnn_small's layers (SF's own nets need >= 36x36)."""
    from eval.bench_sample_factory import sf_model_arguments
    from trainer.encoders import SmallCNN

    cfg = to_plain(compose("bench_ver", ["skill=pick", "profile=cpu"]))
    _, conv, _ = sf_model_arguments(cfg["sample_factory"], cfg["policy"])
    visual = cfg["policy"]["visual"]
    assert conv == {"channels": visual["channels"], "kernels": visual["kernels"], "strides": visual["strides"],
                    "out_dim": visual["out_dim"]}
    ours = SmallCNN(1, 16, 16, visual)
    convs = [m for m in ours.convs if isinstance(m, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size[0], c.stride[0]) for c in convs] == list(
        zip(conv["channels"], conv["kernels"], conv["strides"], strict=True))
    paper = to_plain(compose("bench_ver", ["skill=pick", "profile=paper"]))
    flags, conv, net = sf_model_arguments(paper["sample_factory"], paper["policy"])
    assert conv is None and "--use_rnn=True" in flags and "resnet18_half" in net


@pytest.mark.parametrize(("profile", "depth", "encoder", "per_worker", "num_envs"), [
    ("cpu", (16, 16, "raycast"), "cnn_small", 16, 32), ("paper", (128, 128, "render"), "resnet18_half", 1, 16)])
def test_every_mode_composes_train_skills_profile(profile, depth, encoder, per_worker, num_envs):
    from skills.train_cli import resolve_profile

    bench = to_plain(bench_ver.base_config())["bench"]
    overrides = bench_ver.profile_overrides(profile, [], "auto")
    assert overrides == resolve_profile([f"profile={profile}"])
    for mode in ("sync", "nover", "ver"):
        cfg = bench_ver.mode_config("pick", mode, overrides, bench, "/tmp/x")
        head = cfg.sim.camera.head
        assert cfg.profile == profile and cfg.trainer.mode == mode
        assert (head.width, head.height, head.backend) == depth and cfg.policy.visual.encoder == encoder
        assert cfg.trainer.envs_per_worker == per_worker and cfg.trainer.num_envs == num_envs
    # profile=auto resolves like train-skill: cpu without CUDA
    auto = bench_ver.profile_overrides(None, [], "auto")
    assert auto == [f"profile={'paper' if torch.cuda.is_available() else 'cpu'}"]
    with pytest.raises(ConfigError, match="disagree"):
        bench_ver.profile_overrides("cpu", ["profile=paper"], "auto")


def test_pick_cpu_profile_tiny_run_reports_every_mode_and_its_ratio_to_raw(tmp_path, capsys):
    """The cpu profile's env and policy, 2 envs per worker process, every mode, a tiny budget."""
    out = tmp_path / "bench"
    code = _run_main(["--skill", "pick", "--profile", "cpu", "--num-envs", "4", "--envs-per-worker", "2",
                      "--num-steps", "8", "--steps", "96", "--modes", "raw,sync,nover,ver,sample_factory",
                      "--out", str(out), "dataset.count=2", f"bench.cache_dir={tmp_path}",
                      f"sample_factory.python={tmp_path / 'no-python'}", f"sample_factory.venv={tmp_path / 'sf'}"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads((out / bench_ver_report.RESULT_FILE).read_text())
    cfg = report["config"]
    assert cfg["profile"] == "cpu" and cfg["head_depth"] == "16x16 raycast" and "feedforward" in cfg["policy_name"]
    assert cfg["num_envs"] == 4 and cfg["envs_per_worker"] == 2 and cfg["num_workers"] == 2
    assert report["machine"]["cpu"] and isinstance(report["machine"]["cpu_bf16"], bool)   # where learner_bf16: auto
    modes = report["modes"]
    assert list(modes) == ["raw", "sync", "nover", "ver", "sample_factory"]
    for mode in ("raw", "sync", "nover", "ver"):
        row = modes[mode]
        assert row["status"] == "ok", (mode, row)
        assert row["mean_sps"] > 0 and row["sim"]["ms_per_step"] > 0
        assert set(row["time_s"]) >= {"collection", "inference", "learning", "waiting"}
        assert row["over_raw"] == pytest.approx(row["mean_sps"] / modes["raw"]["mean_sps"])
        # where the cores went: the main process's CPU per step is part of the machine's
        cpu = row["cpu"]
        assert 0 < cpu["main_cpu_ms_per_step"] <= cpu["machine_cpu_ms_per_step"], (mode, cpu)
        assert 0 < cpu["cores_busy"] <= cpu["cores"] + 1e-6
    for mode in ("sync", "nover", "ver"):
        assert report["ratios"][f"{mode}_over_raw"] == pytest.approx(modes[mode]["over_raw"])
        assert modes[mode]["time_s"]["learning"] > 0
    assert modes["raw"]["measured_steps"] == 64  # 3 windows of T x N = 32, one of them warm-up
    # Sample Factory could not run here; the row says why and what it would have run on
    sf = modes["sample_factory"]
    assert sf["status"].startswith("not run: cannot run") and "head depth 16x16 raycast" in sf["setup"]
    assert "VER / raw = " in captured.out and "NoVER / raw = " in captured.out and "sync / raw = " in captured.out
    assert "main CPU ms" in captured.out and "cores busy" in captured.out
    assert "sample_factory not run: cannot run" in captured.out and "sample_factory: same env as ours" in captured.out


def test_cpu_snapshot_counts_this_process_and_the_machine():
    before = bench_ver_run.cpu_snapshot()
    end = time.process_time() + 0.05
    while time.process_time() < end:  # 50 ms of CPU in this process
        pass
    totals = bench_ver_run.cpu_totals(before, bench_ver_run.cpu_snapshot())
    assert totals["main_seconds"] >= 0.05
    if Path("/proc/stat").exists():  # the machine's busy seconds include ours and never exceed its total
        assert totals["main_seconds"] - 0.02 <= totals["machine_busy_seconds"] <= totals["machine_seconds"]


def test_cpu_stats_per_step_and_busy_cores():
    cpu = {"main_seconds": 0.5, "machine_busy_seconds": 3.0, "machine_seconds": 4.0, "cores": 2}
    stats = bench_ver_analyse.cpu_stats(cpu, steps=1000)
    assert stats["main_cpu_ms_per_step"] == pytest.approx(0.5)
    assert stats["machine_cpu_ms_per_step"] == pytest.approx(3.0)
    assert stats["cores_busy"] == pytest.approx(1.5)  # 3 of 4 core-seconds busy on 2 cores
    assert math.isnan(bench_ver_analyse.cpu_stats({**cpu, "machine_seconds": 0.0}, 10)["cores_busy"])


def test_repeats_combine_into_mean_std_and_best_max():
    def row(mean, best, learn):
        return {"status": "ok", "mean_sps": mean, "max_sps": best, "collect_sps": 2 * mean, "measured_steps": 100,
                "measured_seconds": 100 / mean, "time_s": {"learning": learn, "inference": 1.0, "waiting": 0.5},
                "sim": {"ms_per_step": 10.0, "busy_fraction": 0.5}, "rollout_sps": [mean], "ranks": 1}

    combined = bench_ver_analyse.combine_repeats([row(10.0, 12.0, 2.0), row(20.0, 25.0, 3.0), {"status": "failed: x"}])
    assert combined["mean_sps"] == pytest.approx(15.0)
    assert combined["mean_sps_std"] == pytest.approx(np.std([10.0, 20.0], ddof=1))
    assert combined["max_sps"] == 25.0 and combined["failed_repeats"] == 1
    assert combined["time_s"]["learning"] == pytest.approx(5.0) and combined["measured_steps"] == 200
    assert bench_ver_analyse.combine_repeats([{"status": "failed: x"}])["status"] == "failed: x"
