"""`trainer.overlap_learning`: the PPO update runs on a thread while the next rollout is collected.

The collector acts with a copy of the network that takes the learner's weights only when an update
is finished, so each rollout is collected by the policy one update older than the one that learns
from it; a checkpoint waits for the update in flight (exact resume: tests/test_trainer_resume.py).
"""

from __future__ import annotations

import functools
import json
import os
import threading
from pathlib import Path

import pytest
import torch

from configs.compose import compose
from tests.test_trainer_checkpoint import make_learner, random_rollout
from trainer.cli import make_gym_env
from trainer.learner import UPDATE_THREAD_NICE, Learner
from trainer.train import train


def _params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_the_acting_network_keeps_the_old_weights_until_the_update_is_finished():
    ac, ppo = make_learner()
    learner = Learner(ppo, ac, overlap=True)
    assert learner.acting is not ac and _same(_params(learner.acting), _params(ac))
    before = _params(learner.acting)
    release = threading.Event()
    update = ppo.update

    def held_update(rollout, **kwargs):  # the update waits until the test has looked at the acting copy
        release.wait(10)
        return update(rollout, **kwargs)

    ppo.update = held_update
    learner.start(random_rollout(ac, learner.acting_version))
    assert learner.busy and learner.acting_version == 0
    release.set()
    for _ in range(200):  # the update finishes on its thread; the acting copy must not move
        if ppo.policy_version == 1:
            break
        threading.Event().wait(0.01)
    assert ppo.policy_version == 1 and not _same(_params(ac), before)
    assert _same(_params(learner.acting), before)
    stats, seconds = learner.finish()
    assert "learner/action_loss" in stats and seconds >= 0
    assert learner.acting_version == 1 and _same(_params(learner.acting), _params(ac))
    assert learner.finish() is None and not learner.busy
    learner.close()


def test_without_overlap_the_collector_acts_with_the_learners_own_network():
    ac, ppo = make_learner()
    learner = Learner(ppo, ac, overlap=False)
    assert learner.acting is ac
    learner.start(random_rollout(ac, 0))
    assert ppo.policy_version == 1  # updated at once, on this thread
    assert learner.finish()[0]["learner/policy_lag_mean"] == 0.0
    learner.close()


def _learner_whose_update_failed() -> Learner:
    """An overlapping learner whose started update raises FloatingPointError("nan in the loss")."""
    ac, ppo = make_learner()
    learner = Learner(ppo, ac, overlap=True)

    def broken_update(rollout, **kwargs):
        raise FloatingPointError("nan in the loss")

    ppo.update = broken_update
    learner.start(random_rollout(ac, 0))
    return learner


def test_an_error_in_the_overlapped_update_surfaces_at_finish():
    learner = _learner_whose_update_failed()
    with pytest.raises(FloatingPointError, match="nan in the loss"):
        learner.finish()
    assert not learner.busy
    learner.close()


def test_a_second_start_before_finish_is_refused():
    ac, ppo = make_learner()
    learner = Learner(ppo, ac, overlap=True)
    learner.start(random_rollout(ac, 0))
    with pytest.raises(RuntimeError, match="not finished"):
        learner.start(random_rollout(ac, 0))
    learner.finish()
    learner.close()


def _lags(out: Path, overlap: bool) -> list[float | None]:
    cfg = compose("train_rl", ["env_id=CartPole-v1", "trainer=sync", "trainer.num_envs=2", "trainer.num_steps=16",
                               "trainer.total_steps=192", "trainer.checkpoint_interval=3", "trainer.progress_bar=false",
                               f"trainer.overlap_learning={str(overlap).lower()}", f"output_dir={out}"])
    summary = train(cfg, functools.partial(make_gym_env, env_id="CartPole-v1"))
    assert summary["updates"] == 6
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [line.get("learner/policy_lag_mean") for line in lines]


def test_overlapped_rollouts_are_collected_one_update_behind(tmp_path):
    # updates 0..5, checkpoints after updates 3 and 6: the update of rollouts 2 and 5 is finished at
    # once (nothing in flight at a checkpoint), so rollouts 3 and 0 start with fresh weights; every
    # other rollout was collected while the previous one's update ran, with the weights before it
    assert _lags(tmp_path / "sync", overlap=False) == [0.0] * 6
    assert _lags(tmp_path / "overlap", overlap=True) == [None, 0.0, 1.0, None, 0.0, 1.0]


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="per-thread nice is a Linux feature")
def test_the_update_thread_runs_below_the_collectors_priority():
    ac, ppo = make_learner()
    learner = Learner(ppo, ac, overlap=True)
    seen: list[int] = []
    update = ppo.update

    def recording_update(rollout, **kwargs):
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return update(rollout, **kwargs)

    ppo.update = recording_update
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    learner.start(random_rollout(ac, 0))
    learner.finish()
    learner.close()
    assert seen == [min(mine + UPDATE_THREAD_NICE, 19)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the caller's thread is untouched


def test_close_waits_for_a_failed_update_without_raising(caplog):
    # training's `finally` calls close(), often while another error is propagating: it must not replace it
    learner = _learner_whose_update_failed()
    learner.close()
    assert not learner.busy and "nan in the loss" in caplog.text
