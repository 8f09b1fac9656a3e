"""Checkpoints: round trip, exact resume of PPO, atomic writes, clear errors, keep-last-K."""

import random

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer import checkpoint as ckpt
from trainer.checkpoint import (
    CheckpointError,
    build_checkpoint_state,
    checkpoint_path,
    keep_last_checkpoints,
    latest_checkpoint,
    load_checkpoint,
    restore_training_state,
    save_checkpoint,
)
from trainer.networks import ActorCritic
from trainer.ppo import PPO
from trainer.rollout import Rollout

POLICY_CFG = {
    "visual": {"encoder": "cnn_small", "channels": [4], "kernels": [3], "strides": [2], "out_dim": 8},
    "vector_mlp": [16],
    "rnn": {"hidden_size": 8, "num_layers": 2},
    "action": {"mean_activation": "tanh", "log_std_init": 0.0, "min_log_std": -5.0, "max_log_std": 2.0},
}
PPO_CFG = {
    "gamma": 0.99, "gae_lambda": 0.95, "clip_param": 0.2, "ppo_epoch": 2, "num_mini_batch": 2,
    "value_loss_coef": 0.5, "use_clipped_value_loss": True, "normalize_advantage": False,
    "use_importance_weights": True, "normalize_value": False, "value_norm_beta": 0.1, "max_grad_norm": 0.5, "lr": 1e-3, "eps": 1e-5, "lr_schedule": "cosine",
    "entropy": {"learned": True, "coef": 1e-3, "target": 0.0, "target_per_action_dim": True,
                "min_coef": 1e-4, "max_coef": 1.0},
}  # fmt: skip
OBS_SPACE = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (3,), np.float32)})
ACTION_SPACE = gym.spaces.Box(-1, 1, (2,), np.float32)


def random_rollout(ac: ActorCritic, version: int, S: int = 20) -> Rollout:
    """A rollout whose content comes from the global torch RNG (so resuming must restore it)."""
    env_ids = torch.randint(0, 3, (S,))
    with torch.no_grad():
        out = ac.act({"x": torch.rand(S, 3)}, ac.initial_hidden(S), torch.ones(S, dtype=torch.bool))
    return Rollout(
        obs={"x": torch.rand(S, 3)}, actions=out.action, log_probs=out.log_prob, values=out.value,
        rewards=torch.randn(S), dones=torch.ones(S, dtype=torch.bool), episode_start=torch.ones(S, dtype=torch.bool),
        hidden=ac.initial_hidden(S), env_ids=env_ids, episode_ids=torch.arange(S), step_ids=torch.zeros(S, dtype=torch.long),
        policy_version=torch.full((S,), version), bootstrap_value=torch.zeros(3), num_envs=3, expected_steps_per_env=S / 3,
    )  # fmt: skip


def make_learner(seed: int = 0, policy_cfg: dict = POLICY_CFG):
    torch.manual_seed(seed)
    ac = ActorCritic(OBS_SPACE, ACTION_SPACE, policy_cfg)
    return ac, PPO(ac, PPO_CFG, total_updates=6, seed=seed)


def train(ac, ppo, updates):
    return [ppo.update(random_rollout(ac, ppo.policy_version)) for _ in range(updates)]


@pytest.mark.parametrize("obs_norm", [False, True], ids=["plain", "obs_norm"])
def test_resume_continues_identically(tmp_path, obs_norm):
    policy_cfg = {**POLICY_CFG, "obs_norm": obs_norm}
    ac, ppo = make_learner(policy_cfg=policy_cfg)
    random.seed(1)
    np.random.seed(1)
    reference = train(ac, ppo, 4)
    reference_state = {k: v.clone() for k, v in ac.state_dict().items()}  # parameters and buffers

    ac, ppo = make_learner(policy_cfg=policy_cfg)
    random.seed(1)
    np.random.seed(1)
    train(ac, ppo, 2)
    path = checkpoint_path(tmp_path, 2)
    save_checkpoint(
        path,
        build_checkpoint_state(ac, ppo, {"policy": policy_cfg}, OBS_SPACE, ACTION_SPACE, {"env_steps": 40}),
    )
    saved_buffers = {k: v.clone() for k, v in ac.named_buffers()}
    train(ac, ppo, 1)  # diverge the live objects and RNGs before restoring

    state = load_checkpoint(path)
    assert state["obs_space"] == OBS_SPACE and state["action_space"] == ACTION_SPACE
    ac2, ppo2 = make_learner(seed=123, policy_cfg=policy_cfg)  # different init and RNG: all from the file
    counters = restore_training_state(state, ac2, ppo2)
    assert counters == {"env_steps": 40} and ppo2.policy_version == 2
    # buffers (value and observation normalisation statistics) come back with the weights
    assert all(torch.equal(v, saved_buffers[k]) for k, v in ac2.named_buffers())
    if obs_norm:
        assert ac2.obs_norm is not None and float(ac2.obs_norm.count) > 0  # statistics of 2 updates
    resumed = train(ac2, ppo2, 2)
    assert resumed == reference[2:]
    assert all(torch.equal(v, reference_state[k]) for k, v in ac2.state_dict().items())


def test_policy_rebuilds_from_checkpoint_alone(tmp_path):
    ac, ppo = make_learner()
    path = tmp_path / "policy.pt"
    save_checkpoint(
        path, build_checkpoint_state(ac, ppo, {"policy": POLICY_CFG}, OBS_SPACE, ACTION_SPACE, {})
    )
    state = load_checkpoint(path)
    rebuilt = ActorCritic(state["obs_space"], state["action_space"], state["config"]["policy"])
    rebuilt.load_state_dict(state["model"])
    obs, h, start = {"x": torch.rand(2, 3)}, ac.initial_hidden(2), torch.ones(2, dtype=torch.bool)
    assert torch.equal(ac.act(obs, h, start, True).action, rebuilt.act(obs, h, start, True).action)


def test_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save_checkpoint(
        path, {"model": {"w": torch.ones(3)}, "config": {}, "obs_space": None, "action_space": None}
    )

    def crash_midway(obj, f, *args, **kwargs):
        f.write(b"partial garbage")
        raise KeyboardInterrupt

    monkeypatch.setattr(ckpt.torch, "save", crash_midway)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(
            path, {"model": {"w": torch.zeros(3)}, "config": {}, "obs_space": None, "action_space": None}
        )
    monkeypatch.undo()
    assert torch.equal(load_checkpoint(path)["model"]["w"], torch.ones(3))
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # no temp file left behind


def test_missing_corrupt_and_incomplete_files_raise_one_line_errors(tmp_path):
    with pytest.raises(CheckpointError, match="checkpoint not found") as err:
        load_checkpoint(tmp_path / "nope.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"\x80\x04 this is not a checkpoint" * 10)
    with pytest.raises(CheckpointError, match="corrupt") as err:
        load_checkpoint(bad)
    assert "\n" not in str(err.value)
    good = tmp_path / "good.pt"
    save_checkpoint(good, {"model": {}, "config": {}, "obs_space": None, "action_space": None})
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    with pytest.raises(CheckpointError, match="corrupt") as err:
        load_checkpoint(truncated)
    assert "\n" not in str(err.value)
    partial = tmp_path / "partial.pt"
    save_checkpoint(partial, {"model": {}})
    with pytest.raises(CheckpointError, match="missing config, obs_space, action_space"):
        load_checkpoint(partial)


def test_keep_last_k(tmp_path):
    for step in (5, 100, 20, 3000):
        save_checkpoint(
            checkpoint_path(tmp_path, step),
            {"model": {}, "config": {}, "obs_space": None, "action_space": None},
        )
    (tmp_path / "other.pt").write_bytes(b"x")
    removed = keep_last_checkpoints(tmp_path, 2)
    assert [p.name for p in removed] == ["ckpt_000000000005.pt", "ckpt_000000000020.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ckpt_000000000100.pt",
        "ckpt_000000003000.pt",
        "other.pt",
    ]
    assert latest_checkpoint(tmp_path).name == "ckpt_000000003000.pt"


def test_resume_run_finds_the_checkpoint_config_and_run_dir(tmp_path):
    from configs.compose import ConfigError
    from trainer.checkpoint import ResumeTarget, resume_run

    run = tmp_path / "run"
    for step in (10, 20):
        save_checkpoint(checkpoint_path(run / "checkpoints", step),
                        {"model": {}, "config": {"trainer": {"seed": step}}, "obs_space": None, "action_space": None})
    target = resume_run(run, ["trainer.seed=7", "new.key=1"])
    assert isinstance(target, ResumeTarget) and target.checkpoint.name == "ckpt_000000000020.pt"
    assert target.run_dir == run and target.config.trainer.seed == 7 and target.config.new.key == 1
    first = resume_run(checkpoint_path(run / "checkpoints", 10))  # a file: its run is two levels up
    assert first.run_dir == run and first.config.trainer.seed == 10
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no checkpoint"):
        resume_run(tmp_path / "empty")
    with pytest.raises(ConfigError, match="invalid config override"):
        resume_run(run, ["trainer.seed=[1"])
