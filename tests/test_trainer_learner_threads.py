"""`trainer.learner_threads`: the PPO update runs on that many torch threads, collection on
`trainer.torch_threads` before and after it; 0 leaves the update on torch_threads."""

from __future__ import annotations

import functools
from pathlib import Path

import torch

from configs.compose import compose
from trainer.cli import make_gym_env
from trainer.ppo import PPO
from trainer.train import train


def _threads_seen(monkeypatch, out: Path, learner_threads: int) -> tuple[list[int], int]:
    seen: list[int] = []
    update = PPO.update

    def recording_update(self, rollout, **kwargs):
        seen.append(torch.get_num_threads())
        return update(self, rollout, **kwargs)

    monkeypatch.setattr(PPO, "update", recording_update)
    cfg = compose("train_rl", ["env_id=Pendulum-v1", "trainer=sync", "trainer.num_envs=2", "trainer.num_steps=32",
                               "trainer.total_steps=128", "trainer.progress_bar=false", "trainer.checkpoint_interval=0",
                               "policy=mlp_ff", "trainer.torch_threads=1", f"trainer.learner_threads={learner_threads}",
                               f"output_dir={out}"])
    before = torch.get_num_threads()
    try:
        train(cfg, functools.partial(make_gym_env, env_id="Pendulum-v1"))
        return seen, torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_the_update_runs_on_learner_threads_and_collection_goes_back_to_torch_threads(monkeypatch, tmp_path):
    seen, after = _threads_seen(monkeypatch, tmp_path / "two", 2)
    assert seen == [2, 2] and after == 1


def test_zero_learner_threads_keeps_the_update_on_torch_threads(monkeypatch, tmp_path):
    seen, after = _threads_seen(monkeypatch, tmp_path / "zero", 0)
    assert seen == [1, 1] and after == 1
