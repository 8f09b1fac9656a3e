"""End to end: VER training solves a classic control task (slow; runs in CI)."""

from __future__ import annotations

import functools
import json

import pytest

from trainer.cli import make_gym_env
from trainer.config import compose
from trainer.train import train

# Settings chosen for a small LSTM actor-critic with a shared trunk on CartPole: the value loss is
# down-weighted (returns reach the hundreds and would otherwise drown the policy gradient).
CARTPOLE_SETTINGS = [
    "env_id=CartPole-v1", "trainer.mode=ver", "trainer.num_envs=8", "trainer.num_steps=64",
    "trainer.total_steps=100000", "trainer.seed=1", "trainer.progress_bar=false",
    "trainer.checkpoint_interval=0", "trainer.ppo.lr=2e-3", "trainer.ppo.lr_schedule=constant",
    "trainer.ppo.ppo_epoch=4", "trainer.ppo.num_mini_batch=4", "trainer.ppo.normalize_advantage=true",
    "trainer.ppo.max_grad_norm=0.5", "trainer.ppo.value_loss_coef=0.02", "trainer.ppo.entropy.learned=false",
    "trainer.ppo.entropy.coef=0.01",
]
RETURN_THRESHOLD = 150.0  # a random policy scores about 22


@pytest.mark.slow
def test_ver_learns_cartpole_within_100k_steps(tmp_path):
    cfg = compose("train_rl", [*CARTPOLE_SETTINGS, f"output_dir={tmp_path}"])
    summary = train(cfg, functools.partial(make_gym_env, env_id="CartPole-v1"))
    assert summary["env_steps"] <= 101_000
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    returns = [x["metrics/episode_return"] for x in lines if "metrics/episode_return" in x]
    best_window = max(sum(returns[i : i + 5]) / 5 for i in range(len(returns) - 4))
    assert best_window >= RETURN_THRESHOLD, f"best 5-update mean return {best_window:.1f}"
    assert returns[0] < 50  # it started from scratch
