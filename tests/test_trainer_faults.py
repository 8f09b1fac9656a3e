"""Faults: env workers that raise, die or hang are restarted and counted; training goes on; Ctrl-C
writes a checkpoint; bad input (corrupt checkpoint, unknown env id) is a one-line error, exit 2."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from collect_runs import collect_through_restart

from configs.compose import compose
from trainer.collector import Collector, WorkerFailure
from trainer.diagnostic_envs import CountingEnv, faulty_counting_env
from trainer.networks import ActorCritic
from trainer.train import train

EPISODE_LENGTH = 7
FAULT_ENV, FAULT_STEP = 1, 10  # env 1 fails on its 10th step: episode 1, step 2


def faulty_collector(tmp_path: Path, kind: str, once: bool = True, fault_step: int = FAULT_STEP,
                     **overrides) -> Collector:
    cfg = compose("train_rl", ["trainer.mode=ver", "trainer.num_envs=3", "trainer.num_steps=5",
                               *[f"trainer.{k}={v}" for k, v in overrides.items()]])
    env_fn = functools.partial(faulty_counting_env, fault_env=FAULT_ENV, fault_step=fault_step, kind=kind,
                               marker=str(tmp_path / "fault_marker"), episode_length=EPISODE_LENGTH, once=once)
    probe = CountingEnv(0)
    torch.manual_seed(0)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    return Collector(env_fn, probe.observation_space, probe.action_space, ac, cfg.trainer, seed=0)


def test_env_workers_ignore_sigint_and_sigterm(tmp_path):
    # the main process handles both (a checkpoint at a safe point); a terminal's Ctrl-C or a scheduler's
    # SIGTERM also reaches every worker of the process group, which must not die of it
    collector = faulty_collector(tmp_path, "raise", fault_step=10**9)
    try:
        collector.collect(0)
        pids = [w.proc.pid for w in collector.pool.workers]
        for pid in pids:
            os.kill(pid, signal.SIGINT)
            os.kill(pid, signal.SIGTERM)
        time.sleep(0.5)
        collector.collect(1)
        assert [w.proc.pid for w in collector.pool.workers] == pids
        assert all(w.proc.is_alive() for w in collector.pool.workers)
        assert collector.total_restarts == 0
    finally:
        collector.close()


@pytest.mark.parametrize("kind", ["raise", "exit", "hang"])
def test_failed_worker_is_restarted_and_its_episode_dropped(tmp_path, kind):
    collector = faulty_collector(tmp_path, kind, worker_timeout_s=1.0)
    rollouts = collect_through_restart(collector, before=10, after=8)
    assert (tmp_path / "fault_marker").exists()
    assert collector.total_restarts == 1
    env_rows = [r.obs["obs"][r.env_ids == FAULT_ENV] for r in rollouts]
    rollout_of_row = torch.cat([torch.full((len(x),), i) for i, x in enumerate(env_rows)])
    history = torch.cat(env_rows)
    episode, step = history[:, 1].long(), history[:, 2].long()
    # the first env instance: episode 0 complete, then episode 1 failed during its step 2; the
    # restarted instance begins again at its own episode 0, step 0
    restart_at = int(torch.nonzero((episode == 0) & (step == 0)).flatten()[1])
    assert episode[:EPISODE_LENGTH].tolist() == [0] * EPISODE_LENGTH
    partial = slice(EPISODE_LENGTH, restart_at)  # rows of the failed episode that survived
    assert episode[partial].tolist() == [1] * (restart_at - EPISODE_LENGTH)
    assert step[partial].tolist() == list(range(restart_at - EPISODE_LENGTH))
    assert restart_at - EPISODE_LENGTH <= 2  # its step-2 row (in flight at the failure) was dropped
    # surviving rows of the failed episode were learned from in earlier rollouts only: the rollout
    # in which the failure happened holds none of them
    assert torch.all(rollout_of_row[partial] < rollout_of_row[restart_at])
    assert step[restart_at:].tolist()[:EPISODE_LENGTH] == list(range(EPISODE_LENGTH))
    # training data kept flowing from the restarted env
    assert len(history) - restart_at >= EPISODE_LENGTH
    # every rollout row of that env has its reward and episode ids consistent with its observation
    for r in rollouts:
        rows = r.env_ids == FAULT_ENV
        starts = r.episode_start[rows]
        assert starts.tolist() == (r.obs["obs"][rows][:, 2] == 0).tolist()


def test_env_failing_after_every_restart_stops_with_a_clear_error(tmp_path):
    collector = faulty_collector(tmp_path, "raise", once=False, fault_step=1, max_worker_failures_in_row=2)
    # VER fills rollouts from the healthy workers while the faulty one restarts (a process start, seconds
    # on a loaded machine), so the number of rollouts until the third failure varies: collect until it
    # comes, with a generous deadline (a worker that never gives up would hang here, not pass)
    deadline = time.monotonic() + 120.0
    with pytest.raises(WorkerFailure, match="failed 3 times in a row"):
        try:
            k = 0
            while time.monotonic() < deadline:
                collector.collect(k)
                k += 1
        finally:
            collector.close()


def test_training_continues_after_a_worker_crash_and_counts_it(tmp_path):
    cfg = compose("train_rl", ["trainer.num_envs=3", "trainer.num_steps=8", "trainer.total_steps=120",
                               "trainer.progress_bar=false", "trainer.checkpoint_interval=0",
                               f"output_dir={tmp_path / 'run'}"])
    env_fn = functools.partial(faulty_counting_env, fault_env=FAULT_ENV, fault_step=FAULT_STEP, kind="exit",
                               marker=str(tmp_path / "fault_marker"))
    summary = train(cfg, env_fn)
    assert summary["env_steps"] >= 120 and summary["worker_restarts"] == 1
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert lines[-1]["perf/worker_restarts"] == 1


def _cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainer", *args], capture_output=True, text=True, timeout=120,
                          **kwargs)


def test_corrupt_checkpoint_and_unknown_env_id_are_one_line_errors(tmp_path):
    ckpt_dir = tmp_path / "run" / "checkpoints"
    ckpt_dir.mkdir(parents=True)
    bad = ckpt_dir / "ckpt_000000000100.pt"
    bad.write_bytes(b"this is not a checkpoint")
    result = _cli("--resume", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and result.stderr.startswith("error: checkpoint")
    assert bad.read_bytes() == b"this is not a checkpoint"  # left untouched

    result = _cli("--env-id", "CartPoel-v1")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "unknown env id 'CartPoel-v1'" in result.stderr and "CartPole-v1" in result.stderr

    result = _cli("--env-id", "CartPole-v1", "trainer.no_such_key=3")
    assert result.returncode == 2 and result.stderr.startswith("error: invalid config override")


@pytest.mark.parametrize("sig, to_group, code", [(signal.SIGINT, False, 130), (signal.SIGTERM, True, 143)])
def test_ctrl_c_or_sigterm_writes_a_checkpoint_and_exits_130_or_143(tmp_path, sig, to_group, code):
    """Ctrl-C, or SIGTERM sent to the whole process group (main and env workers) as `timeout` and job
    schedulers send it: the run stops at a safe point, writes a checkpoint, exits 128 + the signal."""
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainer", "--env-id", "CartPole-v1", "trainer.num_envs=2", "trainer.num_steps=16",
         "trainer.total_steps=10000000", "trainer.progress_bar=false", "trainer.checkpoint_interval=0",
         f"output_dir={out}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    # the file is opened before the interrupt handler is installed; its first line means updates run
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (metrics.exists() and metrics.read_text().strip()):
        time.sleep(0.2)
    assert metrics.exists() and metrics.read_text().strip(), (
        proc.stderr.read() if proc.poll() is not None else "no metrics")
    if to_group:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "restart" not in stderr, stderr  # no env worker was restarted on the way out
    checkpoints = list((out / "checkpoints").glob("ckpt_*.pt"))
    assert len(checkpoints) == 1
    assert json.loads((out / "summary.json").read_text())["interrupt_signal"] == sig.name
    # the interrupted run can be resumed
    result = _cli("--resume", str(out), "trainer.total_steps=200")
    assert result.returncode == 0, result.stderr
