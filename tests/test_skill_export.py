"""The policy-only export keeps what running a skill needs and acts exactly like the full checkpoint."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from configs.compose import compose, to_plain
from skills.export import export_policy
from skills.policy import SkillPolicy
from trainer.checkpoint import CheckpointError, build_checkpoint_state, save_checkpoint
from trainer.networks import ActorCritic
from trainer.ppo import PPO


def _full_checkpoint(path):
    cfg = to_plain(compose("train_skill", ["skill=pick", "profile=cpu"]))
    obs_space = spaces.Dict({
        "head_depth": spaces.Box(0.0, 10.0, (16, 16, 1), np.float32),
        "joint": spaces.Box(-np.inf, np.inf, (7,), np.float32),
        "obj_start_sensor": spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "is_holding": spaces.Box(0.0, 1.0, (1,), np.float32),
        "relative_resting_position": spaces.Box(-np.inf, np.inf, (3,), np.float32),
        "prev_action": spaces.Box(-1.0, 1.0, (10,), np.float32),
    })
    action_space = spaces.Box(-1.0, 1.0, (10,), np.float32)
    torch.manual_seed(0)
    model = ActorCritic(obs_space, action_space, cfg["policy"])
    model.update_obs_normalization({k: torch.randn(64, *s.shape) * 3 + 1 for k, s in obs_space.spaces.items()})
    ppo = PPO(model, cfg["trainer"]["ppo"], total_updates=10)
    state = build_checkpoint_state(model, ppo, cfg, obs_space, action_space,
                                   {"env_steps": 1234, "updates": 1, "episodes": 0, "worker_restarts": 0})
    save_checkpoint(path, state)
    return obs_space


def test_export_is_smaller_and_acts_the_same(tmp_path):
    obs_space = _full_checkpoint(tmp_path / "ckpt_000000001234.pt")
    small = export_policy(tmp_path / "ckpt_000000001234.pt", tmp_path / "pick.pt")
    assert "ppo" not in small and small["counters"]["env_steps"] == 1234
    assert (tmp_path / "pick.pt").stat().st_size < (tmp_path / "ckpt_000000001234.pt").stat().st_size
    full = SkillPolicy.from_checkpoint(tmp_path / "ckpt_000000001234.pt")
    shipped = SkillPolicy.from_checkpoint(tmp_path / "pick.pt")
    rng = np.random.default_rng(1)
    for _ in range(3):
        obs = {k: rng.uniform(-1, 1, s.shape).astype(np.float32) for k, s in obs_space.spaces.items()}
        np.testing.assert_array_equal(full.act(obs), shipped.act(obs))


def test_export_refuses_a_non_skill_checkpoint(tmp_path):
    torch.save({"model": {}, "config": {"trainer": {}}, "obs_space": None, "action_space": None},
               tmp_path / "x.pt")
    with pytest.raises(CheckpointError, match="not a skill checkpoint"):
        export_policy(tmp_path / "x.pt", tmp_path / "y.pt")
    assert not (tmp_path / "y.pt").exists()
