"""`python -m trainer.bench_halfcheetah`: each side writes well-formed JSON on a tiny budget (ours always
when gymnasium's MuJoCo envs are installed; SB3 when its venv can be built, else skipped with the reason),
and the summary, goal and report follow the runs. No test asserts a time."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from configs.compose import compose
from trainer.bench_halfcheetah import (
    PLOT_FILE,
    RESULT_FILE,
    last_episodes_mean,
    main,
    report_lines,
    summarise,
)

# HalfCheetah episodes last 1,000 steps: 2 envs x 1,024 steps x 2 updates finish 2 episodes per env
TINY_OURS = ["trainer.num_envs=2", "trainer.envs_per_worker=2", "trainer.num_steps=1024", "trainer.ppo.ppo_epoch=1",
             "trainer.ppo.num_mini_batch=4"]
TINY_STEPS = 4096


def _needs_halfcheetah() -> None:
    gym = pytest.importorskip("gymnasium")
    try:
        gym.make("HalfCheetah-v5").close()
    except Exception as exc:  # the mujoco extra is missing
        pytest.skip(f"HalfCheetah-v5 unavailable ({exc}); pip install 'gymnasium[mujoco]'")


def check_run(run: dict, trainer: str, steps: int) -> None:
    """A run record as the JSON holds it: episodes of (wall s, env steps, raw return), counters, timings."""
    assert run["status"] == "ok" and run["trainer"] == trainer and run["seed"] == 0
    assert run["env_steps"] >= steps and run["wall_s"] > 0
    episodes = run["episodes"]
    assert len(episodes) >= 2
    assert all(len(ep) == 3 and all(math.isfinite(v) for v in ep) for ep in episodes)
    times, env_steps = [ep[0] for ep in episodes], [ep[1] for ep in episodes]
    assert times == sorted(times) and env_steps == sorted(env_steps)
    assert 0 < env_steps[0] <= run["env_steps"] and times[-1] <= run["wall_s"]
    assert all(-5000 < ep[2] < 5000 for ep in episodes)  # raw HalfCheetah returns, not normalised ones
    assert all(v >= 0 for v in run["timings"].values())


def check_result(out: Path, trainer: str) -> dict:
    result = json.loads((out / RESULT_FILE).read_text(encoding="utf-8"))
    assert result["env_id"] == "HalfCheetah-v5" and result["seeds"] == [0] and result["steps"] == TINY_STEPS
    assert [r["trainer"] for r in result["runs"]] == [trainer]
    check_run(result["runs"][0], trainer, TINY_STEPS)
    summary = result["summary"][trainer]
    assert summary["returns"] == [last_episodes_mean(result["runs"][0]["episodes"], 10)]
    assert (out / PLOT_FILE).stat().st_size > 0
    return result


def test_ours_writes_well_formed_json_on_a_tiny_budget(tmp_path, capsys):
    _needs_halfcheetah()
    main(["--steps", str(TINY_STEPS), "--seeds", "0", "--sides", "ours", "--out", str(tmp_path), *TINY_OURS])
    result = check_result(tmp_path, "ours")
    timings = result["runs"][0]["timings"]
    assert set(timings) >= {"collect_s", "inference_s", "env_wait_s", "env_step_s", "learn_s", "other_s"}
    assert timings["learn_s"] > 0 and timings["inference_s"] > 0 and timings["env_step_s"] > 0
    # our side: the feed-forward policy with the trainer's own observation and reward normalisation
    assert result["ours_config"]["policy"]["architecture"] == "feedforward"
    assert result["ours_config"]["policy"]["obs_norm"] is True
    assert result["ours_config"]["trainer"]["ppo"]["normalize_reward"] is True
    printed = capsys.readouterr().out
    assert "ours" in printed and "return (last 10 episodes)" in printed and "learning" in printed


@pytest.mark.slow
def test_sb3_writes_well_formed_json_on_a_tiny_budget(tmp_path):
    _needs_halfcheetah()
    from omegaconf import OmegaConf

    from trainer.bench_sb3 import ensure_sb3_venv
    from trainer.bench_venv import VenvUnavailable

    try:
        ensure_sb3_venv(OmegaConf.to_container(compose("bench_halfcheetah").sb3))
    except VenvUnavailable as exc:
        pytest.skip(f"the Stable-Baselines3 venv cannot be built here (offline?): {exc}")
    main(["--steps", str(TINY_STEPS), "--seeds", "0", "--sides", "sb3", "--out", str(tmp_path)])
    run = check_result(tmp_path, "sb3")["runs"][0]
    assert set(run["timings"]) == {"setup_s", "collect_s", "learn_s"}
    setup = run["setup"]  # SB3's own defaults, untouched
    assert (setup["n_envs"], setup["n_steps"], setup["batch_size"], setup["n_epochs"]) == (1, 2048, 64, 10)
    assert setup["versions"]["stable_baselines3"] == "2.9.2"


def _run(trainer: str, seed: int, returns: list[float], wall: float) -> dict:
    episodes = [[10.0 * (i + 1), 1000 * (i + 1), r] for i, r in enumerate(returns)]
    return {"status": "ok", "trainer": trainer, "seed": seed, "wall_s": wall, "env_steps": 1000 * len(returns),
            "episodes": episodes, "timings": {"collect_s": 1.0, "inference_s": 0.2, "env_wait_s": 0.3,
                                              "env_step_s": 0.5, "collector_s": 0.5, "learn_s": 2.0, "other_s": 0.1}}


def test_summary_uses_the_last_episodes_of_each_run_and_judges_the_goal():
    runs = [_run("ours", 0, [0.0] * 5 + [100.0] * 10, 50.0), _run("ours", 1, [300.0] * 3, 70.0),
            {"trainer": "sb3", "seed": 0, "status": "not run: offline"}]
    summary = summarise(runs, last=10)
    assert summary["ours"]["returns"] == [100.0, 300.0]
    assert (summary["ours"]["return_mean"], summary["ours"]["return_min"], summary["ours"]["return_max"]) == (
        200.0, 100.0, 300.0)
    assert summary["ours"]["wall_mean_s"] == 60.0 and summary["sb3"] == {"status": "not run: offline"}
    assert "goal" not in summary
    runs[2] = {**_run("sb3", 0, [150.0] * 12, 40.0), "timings": {"setup_s": 1.0, "collect_s": 20.0, "learn_s": 19.0}}
    summary = summarise(runs, last=10)
    assert summary["goal"] == {"return_at_least_sb3": True, "wall_below_sb3": False, "wall_ratio_ours_to_sb3": 1.5}
    lines = report_lines({"summary": summary, "last_episodes": 10, "env_id": "HalfCheetah-v5", "steps": 15000,
                          "seeds": [0, 1], "date": "today", "machine": "2 CPUs"})
    text = "\n".join(lines)
    assert "200.0 [100.0, 300.0]" in text and "ours wall time < SB3's: MISSED" in text
    assert "ours return >= SB3's: met" in text and "learning 2" in text


def test_sb3_side_reports_not_run_when_its_venv_cannot_be_built(tmp_path):
    from omegaconf import OmegaConf

    from trainer.bench_sb3 import run_sb3

    sb3_cfg = {**OmegaConf.to_container(compose("bench_halfcheetah").sb3), "venv": str(tmp_path / "venv"),
               "python": "no-such-python"}
    run = run_sb3(sb3_cfg, "HalfCheetah-v5", 0, 2048, tmp_path / "run")
    assert run["status"].startswith("not run: cannot run no-such-python")
    assert "not run: cannot run" in "\n".join(report_lines({
        "summary": summarise([{"trainer": "sb3", "seed": 0, **run}], last=10), "last_episodes": 10,
        "env_id": "HalfCheetah-v5", "steps": 2048, "seeds": [0], "date": "today", "machine": "2 CPUs"}))
