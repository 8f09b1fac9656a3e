"""End to end: VER training solves a classic control task with either policy (slow; runs in CI)."""

from __future__ import annotations

import functools
import json

import pytest

from configs.compose import compose
from trainer.cli import make_gym_env
from trainer.train import train

# Settings chosen for a small LSTM actor-critic with a shared trunk on CartPole: returns reach the
# hundreds, so the value head learns normalised returns (`normalize_value`), which keeps the value loss
# from drowning the policy gradient. Measured on seeds 1-4 (VER, 2 cores): a 5-update mean return of
# 150 first reached after 10-27 updates (5-14k steps), 500 reached on every seed. Without value
# normalisation (value loss down-weighted to 0.02 instead) seed 3 never reached 150 in 100k steps
# and a CI run of seed 1 stayed at 25: VER's batch composition depends on timing, so the run is
# not repeatable and the settings have to learn on every seed.
CARTPOLE_SETTINGS = [
    "env_id=CartPole-v1", "trainer.mode=ver", "trainer.num_envs=8", "trainer.num_steps=64",
    "trainer.total_steps=50000", "trainer.seed=1", "trainer.progress_bar=false",
    "trainer.checkpoint_interval=0", "trainer.ppo.lr=1e-3", "trainer.ppo.lr_schedule=constant",
    "trainer.ppo.ppo_epoch=4", "trainer.ppo.num_mini_batch=4", "trainer.ppo.normalize_advantage=true",
    "trainer.ppo.max_grad_norm=0.5", "trainer.ppo.normalize_value=true", "trainer.ppo.entropy.learned=false",
    "trainer.ppo.entropy.coef=0.01",
]
RETURN_THRESHOLD = 200.0  # a random policy scores about 22
# The same settings train the feed-forward policy (configs/policy/mlp_ff.yaml: separate 256-256 tanh actor
# and critic, observation normalisation, rows sampled independently): issue 12 asks for >= 200 in 50k steps.
# Measured 2026-11-23 (loaded 2-core machine): a 5-update mean of 200 first reached at 7.7k (seed 1) and
# 11.3k steps (seed 2), 500 at the end on both.
POLICIES = ["mlp", "mlp_ff"]


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
def test_ver_learns_cartpole_within_50k_steps(tmp_path, policy):
    cfg = compose("train_rl", [*CARTPOLE_SETTINGS, f"policy={policy}", f"output_dir={tmp_path}"])
    summary = train(cfg, functools.partial(make_gym_env, env_id="CartPole-v1"))
    assert summary["env_steps"] <= 51_000
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    returns = [x["metrics/episode_return"] for x in lines if "metrics/episode_return" in x]
    best_window = max(sum(returns[i : i + 5]) / 5 for i in range(len(returns) - 4))
    assert best_window >= RETURN_THRESHOLD, f"best 5-update mean return {best_window:.1f}"
    assert returns[0] < 50  # it started from scratch
