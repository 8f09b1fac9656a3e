"""Two ranks under torchrun (gloo on CPU): gradients and learner statistics are all-reduced,
parameters and buffers stay identical."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from trainer.checkpoint import load_checkpoint


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_ranks(out, *overrides: str) -> dict:
    """`train-rl` on CartPole with two CPU ranks; returns the summary."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port()),
           "-m", "trainer", "--env-id", "CartPole-v1", "trainer.mode=ver", "trainer.num_envs=2",
           "trainer.num_steps=16", "trainer.progress_bar=false", f"output_dir={out}", *overrides]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "summary.json").read_text())


@pytest.mark.distributed
def test_two_ranks_keep_identical_parameters(tmp_path):
    out = tmp_path / "run"
    summary = run_two_ranks(out, "trainer.total_steps=256")
    assert summary["world_size"] == 2
    # about 256 steps / (2 ranks x 2 envs x 16 steps): VER rollouts vary a little around T x N
    assert summary["env_steps"] >= 256 and 4 <= summary["updates"] <= 6
    checksums = summary["param_checksums"]
    assert len(checksums) == 2 and checksums[0] == checksums[1]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(line["perf/world_size"] == 2 for line in lines)
    assert "perf/preemption_deadline" in lines[-1]  # VER's Eq. 1 plan was computed from both ranks
    assert all(line["learner/grad_norm"] > 0 for line in lines)  # the ranks did learn (together)
    ckpt = load_checkpoint(summary["checkpoint"])
    assert ckpt["counters"]["updates"] == summary["updates"] and len(ckpt["ranks"]) == 2  # per-rank RNG/collector state


@pytest.mark.distributed
def test_normalization_statistics_stay_identical_across_ranks(tmp_path):
    # each rank sees different returns and observations; without a stats all-reduce every rank rescales
    # its own value head (PopArt) by its own return moments, keeps its own observation statistics
    # (buffers, in the checksum too), and the ranks' parameters drift apart
    summary = run_two_ranks(tmp_path / "run", "trainer.total_steps=192", "trainer.ppo.normalize_value=true",
                            "policy.obs_norm=true")
    assert summary["updates"] >= 2
    checksums = summary["param_checksums"]
    assert len(checksums) == 2 and checksums[0] == checksums[1]


@pytest.mark.distributed
def test_overlapped_updates_keep_the_ranks_identical(tmp_path):
    # trainer.overlap_learning: each rank's update (with its gradient and statistics all-reduces) runs on
    # a thread while the rank collects; the ranks' other collectives wait for it, so they stay matched
    out = tmp_path / "run"
    summary = run_two_ranks(out, "trainer.total_steps=320", "trainer.overlap_learning=true",
                            "trainer.ppo.normalize_value=true", "trainer.ppo.normalize_reward=true", "policy.obs_norm=true",
                            "trainer.checkpoint_interval=0")
    assert summary["updates"] >= 4
    checksums = summary["param_checksums"]
    assert len(checksums) == 2 and checksums[0] == checksums[1]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert max(line.get("learner/policy_lag_mean", 0.0) for line in lines) >= 1.0  # collected one update behind
