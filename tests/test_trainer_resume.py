"""Deterministic mode repeats exactly; a resumed run continues exactly like the uninterrupted one."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest

from configs.compose import compose
from trainer.checkpoint import list_checkpoints, load_checkpoint
from trainer.cli import make_gym_env
from trainer.train import train

COMPARED_PREFIXES = ("learner/", "metrics/")


def run(out: Path, resume: Path | None = None, overlap: bool = False,
        total_steps: int = 256, num_envs: int = 2) -> tuple[dict, list[dict]]:
    cfg = compose("train_rl", [f"trainer.overlap_learning={str(overlap).lower()}",
        "env_id=CartPole-v1", "trainer=sync", "trainer.deterministic=true", f"trainer.num_envs={num_envs}",
        "trainer.num_steps=32", f"trainer.total_steps={total_steps}", "trainer.checkpoint_interval=2",
        "trainer.checkpoint_keep=5", "trainer.progress_bar=false", f"output_dir={out}",
    ])
    summary = train(cfg, functools.partial(make_gym_env, env_id="CartPole-v1"), resume=resume)
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return summary, lines


def comparable(line: dict) -> dict:
    return {k: v for k, v in line.items() if k.startswith(COMPARED_PREFIXES) or k in ("update", "env_steps")}


@pytest.mark.parametrize("overlap", [False, True], ids=["update-then-collect", "overlap_learning"])
def test_deterministic_sync_repeats_and_resume_continues_identically(tmp_path, overlap):
    # overlap_learning: the update runs on a thread during the next collection; the results must not
    # depend on how the threads interleave, and a checkpoint waits for the update in flight
    summary_a, lines_a = run(tmp_path / "a", overlap=overlap)
    _, lines_b = run(tmp_path / "b", overlap=overlap)
    assert summary_a["updates"] == 4 and len(lines_a) == 4
    assert any("metrics/episode_return" in line for line in lines_a)
    # two runs with the same seed: identical learning metrics, update by update
    assert [comparable(x) for x in lines_a] == [comparable(x) for x in lines_b]

    # resume from the checkpoint written after update 2 and finish the run in a new directory
    checkpoints = list_checkpoints(tmp_path / "a" / "checkpoints")
    assert [load_checkpoint(p)["counters"]["updates"] for p in checkpoints] == [2, 4]
    summary_c, lines_c = run(tmp_path / "c", resume=checkpoints[0], overlap=overlap)
    assert summary_c["env_steps"] == summary_a["env_steps"]
    assert [comparable(x) for x in lines_c] == [comparable(x) for x in lines_a[2:]]
    assert summary_c["param_checksums"] == summary_a["param_checksums"]


def test_a_run_resumed_with_a_larger_total_stretches_its_learning_rate_schedule(tmp_path):
    # 2 updates planned, then resumed with 4: the cosine spans 4 updates from the resume on, so
    # updates 2 and 3 learn at lr/2 and lr(1 + cos(3pi/4))/2 instead of the old schedule's end, 0
    _, first = run(tmp_path / "a", total_steps=128)
    lr = compose("train_rl", ["env_id=CartPole-v1", "trainer=sync"]).trainer.ppo.lr
    assert [line["learner/lr"] for line in first] == pytest.approx([lr, lr / 2])
    summary, resumed = run(tmp_path / "b", resume=tmp_path / "a", total_steps=256)
    assert summary["updates"] == 4
    assert [line["learner/lr"] for line in resumed] == pytest.approx([lr / 2, lr * (1 + math.cos(0.75 * math.pi)) / 2])


@pytest.mark.parametrize("num_envs", [1, 4])
def test_a_run_resumes_with_another_number_of_envs(tmp_path, num_envs):
    # a run moved to a machine with more (or fewer) cores: the first envs keep their episode streams
    _, first = run(tmp_path / "a", total_steps=128)
    summary, resumed = run(tmp_path / "b", resume=tmp_path / "a", total_steps=128 + 2 * 32 * num_envs,
                           num_envs=num_envs)
    assert summary["env_steps"] == 128 + 2 * 32 * num_envs
    assert [line["env_steps"] for line in resumed] == [128 + 32 * num_envs, 128 + 2 * 32 * num_envs]


def test_resuming_a_finished_run_says_there_is_nothing_to_train(tmp_path, capsys):
    # a scheduler re-running `--resume` after the end must not fail, but the user learns why nothing ran
    run(tmp_path / "a", total_steps=128)
    capsys.readouterr()
    summary, lines = run(tmp_path / "b", resume=tmp_path / "a", total_steps=128)
    assert summary["updates"] == 2 and lines == []
    assert "nothing to train: the checkpoint already has 128 env steps" in capsys.readouterr().err
