"""Observation normalisation: running moments match numpy, the forward uses them, they survive a
state-dict round trip, PPO updates them once per update (synced across ranks), images are untouched."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from trainer.checkpoint import load_checkpoint, save_checkpoint
from trainer.networks import ActorCritic
from trainer.normalization import RunningMeanStd
from trainer.ppo import PPO
from trainer.rollout import Rollout

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "policy"
VEC_SPACE = gym.spaces.Dict(
    {"b": gym.spaces.Box(-100, 100, (2,), np.float32), "a": gym.spaces.Box(-100, 100, (3,), np.float32)}
)
BOX = gym.spaces.Box(-1, 1, (2,), np.float32)


def policy_cfg(name="mlp", **overrides):
    cfg = OmegaConf.load(CONFIGS / f"{name}.yaml")
    for key, value in overrides.items():
        cfg[key] = value
    return cfg


def scaled_data(rows, seed=0):
    g = np.random.default_rng(seed)
    return (g.normal(size=(rows, 5)) * [1.0, 10.0, 0.1, 3.0, 50.0] + [5.0, -20.0, 0.0, 1.0, 100.0]).astype(
        np.float32
    )


def test_running_moments_match_numpy_over_several_batches():
    data = scaled_data(1000)
    rms = RunningMeanStd(5)
    for piece in np.array_split(data, [7, 300, 301, 650]):
        rms.update(torch.as_tensor(piece))
    np.testing.assert_allclose(rms.mean.numpy(), data.astype(np.float64).mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rms.var.numpy(), data.astype(np.float64).var(0), rtol=1e-4)
    assert float(rms.count) == 1000
    x = torch.as_tensor(data[:4])
    expected = np.clip((data[:4] - data.mean(0)) / np.sqrt(data.var(0) + 1e-8), -5, 5)
    np.testing.assert_allclose(rms.normalize(x).numpy(), expected, rtol=1e-4, atol=1e-4)
    assert rms.normalize(torch.full((1, 5), 1e6)).max() == 5.0  # clipped


def test_stats_sync_gives_every_rank_the_moments_of_all_ranks_data():
    data = scaled_data(300, seed=1)
    rank_data = [data[:100], data[100:]]  # unequal batch sizes
    sent = []

    def capture(t):
        sent.append(t.clone())

    other = RunningMeanStd(5)
    other.update(torch.as_tensor(rank_data[1]), stats_sync=capture)
    assert sent[0].dtype == torch.float64 and sent[0].device.type == "cpu"

    def average_with_rank_1(t):  # an all-reduce mean over two ranks
        t.copy_((t + sent[0]) / 2)

    rank0 = RunningMeanStd(5)
    rank0.update(torch.as_tensor(rank_data[0]), stats_sync=average_with_rank_1)
    np.testing.assert_allclose(rank0.mean.numpy(), data.astype(np.float64).mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rank0.var.numpy(), data.astype(np.float64).var(0), rtol=1e-4)


def test_forward_uses_the_statistics_and_images_are_not_normalised():
    torch.manual_seed(0)
    space = gym.spaces.Dict({**VEC_SPACE.spaces, "depth": gym.spaces.Box(0, 1, (32, 32, 1), np.float32)})
    ac = ActorCritic(space, BOX, policy_cfg(obs_norm=True, obs_norm_clip=3.0))
    assert ac.obs_norm is not None and ac.obs_norm.mean.shape == (5,)  # vector dims only
    plain = ActorCritic(space, BOX, policy_cfg())
    assert not any(k.startswith("obs_norm") for k in plain.state_dict())  # old checkpoints still load
    plain.load_state_dict({k: v for k, v in ac.state_dict().items() if not k.startswith("obs_norm")})

    data = torch.as_tensor(scaled_data(64))
    ac.update_obs_normalization({"a": data[:, :3], "b": data[:, 3:], "depth": torch.rand(64, 32, 32, 1)})
    mean, std = ac.obs_norm.mean, (ac.obs_norm.var + 1e-8).sqrt()
    obs = {"a": data[:6, :3], "b": data[:6, 3:], "depth": torch.rand(6, 32, 32, 1)}
    normed = ((data[:6] - mean) / std).clamp(-3, 3)  # keys in sorted order: a then b
    by_hand = {"a": normed[:, :3], "b": normed[:, 3:], "depth": obs["depth"]}
    args = (ac.initial_hidden(6), torch.ones(6, dtype=torch.bool))
    out = ac.act(obs, *args, deterministic=True)
    ref = plain.act(by_hand, *args, deterministic=True)
    torch.testing.assert_close(out.action, ref.action)
    torch.testing.assert_close(out.value, ref.value)
    unnormalised = plain.act(obs, *args, deterministic=True)
    assert not torch.allclose(out.action, unnormalised.action)


def test_statistics_survive_a_checkpoint_round_trip(tmp_path):
    ac = ActorCritic(VEC_SPACE, BOX, policy_cfg("mlp_ff"))
    data = torch.as_tensor(scaled_data(50))
    ac.update_obs_normalization({"a": data[:, :3], "b": data[:, 3:]})
    cfg = OmegaConf.to_container(policy_cfg("mlp_ff"))
    save_checkpoint(tmp_path / "c.pt", {"model": ac.state_dict(), "config": {"policy": cfg},
                                        "obs_space": VEC_SPACE, "action_space": BOX})
    state = load_checkpoint(tmp_path / "c.pt")
    fresh = ActorCritic(state["obs_space"], state["action_space"], state["config"]["policy"])
    assert float(fresh.obs_norm.count) == 0
    fresh.load_state_dict(state["model"])
    for name in ("mean", "var", "count"):
        assert torch.equal(getattr(fresh.obs_norm, name), getattr(ac.obs_norm, name))
    assert float(fresh.obs_norm.count) == 50


def _rollout(obs: dict[str, torch.Tensor], hidden_shape) -> Rollout:
    rows = next(iter(obs.values())).shape[0]
    return Rollout(
        obs=obs, actions=torch.zeros(rows, 2), log_probs=torch.zeros(rows), values=torch.zeros(rows),
        rewards=torch.randn(rows), dones=torch.zeros(rows, dtype=torch.bool),
        episode_start=torch.arange(rows) == 0, hidden=torch.zeros(rows, *hidden_shape),
        env_ids=torch.zeros(rows, dtype=torch.long), episode_ids=torch.zeros(rows, dtype=torch.long),
        step_ids=torch.arange(rows), policy_version=torch.zeros(rows, dtype=torch.long),
        bootstrap_value=torch.zeros(1), num_envs=1, expected_steps_per_env=float(rows),
    )  # fmt: skip


@pytest.mark.parametrize("policy", ["mlp", "mlp_ff"])
def test_ppo_update_merges_the_rollout_observations_once_through_stats_sync(policy):
    torch.manual_seed(0)
    ac = ActorCritic(VEC_SPACE, BOX, policy_cfg(policy, obs_norm=True))
    ppo_cfg = OmegaConf.load(CONFIGS.parent / "trainer" / "ppo.yaml").ppo
    synced = []
    ppo = PPO(ac, ppo_cfg, total_updates=2, seed=0, stats_sync=lambda t: synced.append(t.numel()))
    data = torch.as_tensor(scaled_data(40))
    ppo.update(_rollout({"a": data[:, :3], "b": data[:, 3:]}, ac.initial_hidden(1).shape[1:]))
    assert synced == [1 + 2 * 5]  # count, sums, sums of squares: one sync per update
    expected = torch.cat([data[:, :3], data[:, 3:]], 1).double()
    torch.testing.assert_close(ac.obs_norm.mean, expected.mean(0).float(), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ac.obs_norm.var, expected.var(0, correction=0).float(), rtol=1e-4, atol=1e-4)
