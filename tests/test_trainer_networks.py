"""ActorCritic shapes for Box/Discrete actions, Dict obs with image + vector, resnet18_half, deterministic act."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from trainer.networks import ActorCritic

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "policy"


def policy_cfg(name):
    return OmegaConf.load(CONFIGS / f"{name}.yaml")


def sample_obs(space: gym.spaces.Dict, batch: int) -> dict[str, torch.Tensor]:
    space.seed(0)
    return {k: torch.as_tensor(np.stack([s.sample() for _ in range(batch)])) for k, s in space.spaces.items()}


DEPTH_VEC = gym.spaces.Dict(
    {
        "head_depth": gym.spaces.Box(0.0, 10.0, (64, 64, 1), np.float32),
        "joint": gym.spaces.Box(-3.0, 3.0, (7,), np.float32),
        "ee_pos": gym.spaces.Box(-5.0, 5.0, (3,), np.float32),
    }
)


@pytest.mark.parametrize(
    "action_space,action_shape",
    [(gym.spaces.Box(-1, 1, (10,), np.float32), (5, 10)), (gym.spaces.Discrete(4), (5,))],
)
def test_act_and_evaluate_shapes_with_image_and_vector(action_space, action_shape):
    torch.manual_seed(0)
    ac = ActorCritic(DEPTH_VEC, action_space, policy_cfg("cnn_small"))
    obs = sample_obs(DEPTH_VEC, 5)
    hidden = ac.initial_hidden(5)
    assert hidden.shape == (5, 4, 256)
    out = ac.act(obs, hidden, torch.ones(5, dtype=torch.bool))
    assert out.action.shape == action_shape and out.log_prob.shape == (5,) and out.value.shape == (5,)
    assert out.hidden.shape == hidden.shape and out.hidden.abs().sum() > 0
    if isinstance(action_space, gym.spaces.Discrete):
        assert out.action.dtype == torch.long and int(out.action.max()) < 4
    ev = ac.evaluate(obs, out.action, hidden[:2], [3, 2])
    assert ev.log_prob.shape == ev.entropy.shape == ev.value.shape == (5,)


def test_plain_box_obs_and_uint8_rgb():
    ac = ActorCritic(gym.spaces.Box(-1, 1, (4,), np.float32), gym.spaces.Discrete(2), policy_cfg("mlp"))
    out = ac.act({"obs": torch.zeros(3, 4)}, ac.initial_hidden(3), torch.zeros(3, dtype=torch.bool))
    assert out.action.shape == (3,)
    rgb = gym.spaces.Dict({"rgb": gym.spaces.Box(0, 255, (32, 32, 3), np.uint8)})
    ac = ActorCritic(rgb, gym.spaces.Box(-1, 1, (2,), np.float32), policy_cfg("mlp"))
    out = ac.act(sample_obs(rgb, 2), ac.initial_hidden(2), torch.zeros(2, dtype=torch.bool))
    assert out.action.shape == (2, 2)


def test_episode_start_resets_the_recurrent_state():
    torch.manual_seed(0)
    ac = ActorCritic(DEPTH_VEC, gym.spaces.Box(-1, 1, (3,), np.float32), policy_cfg("mlp"))
    obs = sample_obs(DEPTH_VEC, 2)
    stale = torch.randn(2, 2, 64)
    reset = ac.act(obs, stale, torch.tensor([True, False]), deterministic=True)
    fresh = ac.act(obs, ac.initial_hidden(2), torch.tensor([True, True]), deterministic=True)
    torch.testing.assert_close(reset.hidden[0], fresh.hidden[0])
    assert not torch.allclose(reset.hidden[1], fresh.hidden[1])


def test_deterministic_act_returns_the_mode():
    torch.manual_seed(0)
    ac = ActorCritic(DEPTH_VEC, gym.spaces.Box(-1, 1, (3,), np.float32), policy_cfg("cnn_small"))
    obs = sample_obs(DEPTH_VEC, 4)
    args = (obs, ac.initial_hidden(4), torch.ones(4, dtype=torch.bool))
    a, b = ac.act(*args, deterministic=True), ac.act(*args, deterministic=True)
    assert torch.equal(a.action, b.action)
    assert a.action.abs().max() < 1.0  # tanh-squashed mean
    sampled = ac.act(*args)
    assert not torch.equal(sampled.action, a.action)


def test_invalid_config_and_spaces_give_clear_errors():
    cfg = policy_cfg("cnn_small")
    cfg.visual.encoder = "vit"
    with pytest.raises(
        ValueError, match="unknown policy.visual.encoder 'vit'; valid choices: cnn_small, resnet18_half"
    ):
        ActorCritic(DEPTH_VEC, gym.spaces.Discrete(2), cfg)
    with pytest.raises(ValueError, match="valid choices: Box, Discrete"):
        ActorCritic(DEPTH_VEC, gym.spaces.MultiBinary(3), policy_cfg("mlp"))


def test_resnet18_half_forward_at_128():
    torch.manual_seed(0)
    space = gym.spaces.Dict(
        {
            "head_depth": gym.spaces.Box(0.0, 10.0, (128, 128, 1), np.float32),
            "joint": gym.spaces.Box(-3, 3, (7,), np.float32),
        }
    )
    cfg = policy_cfg("resnet18_half")
    ac = ActorCritic(space, gym.spaces.Box(-1, 1, (10,), np.float32), cfg)
    enc = ac.visual_encoder
    assert sum(isinstance(m, torch.nn.GroupNorm) for m in enc.modules()) > 10
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in enc.modules())
    convs = [m for m in enc.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convs[0].kernel_size == (4, 4) and convs[0].stride == (4, 4)  # patchify stem
    assert max(m.dilation[0] for m in convs) == 2
    assert max(m.out_channels for m in convs) == 256  # half of ResNet18's 512
    obs = sample_obs(space, 2)
    out = ac.act(obs, ac.initial_hidden(2), torch.ones(2, dtype=torch.bool))
    assert out.action.shape == (2, 10) and out.hidden.shape == (2, 4, 512)
    assert torch.isfinite(out.value).all()
    out.value.sum().backward()  # gradients reach the stem
    assert convs[0].weight.grad is not None and convs[0].weight.grad.abs().sum() > 0


def test_distributions_match_torch_numerics_without_argument_validation():
    from trainer.distributions import CategoricalDist, DiagGaussian

    torch.manual_seed(0)
    mean, log_std, actions = torch.randn(32, 6), torch.randn(6) * 0.7, torch.randn(32, 6)
    ours, ref = DiagGaussian(mean, log_std), torch.distributions.Normal(mean, log_std.expand_as(mean).exp())
    assert torch.equal(ours.log_prob(actions), ref.log_prob(actions).sum(-1))  # bit-identical
    assert torch.equal(ours.entropy(), ref.entropy().sum(-1))
    torch.manual_seed(1)
    sample = ours.sample()
    torch.manual_seed(1)
    assert torch.equal(sample, ref.sample())
    # no argument validation (it cost ~100 us per batch): NaN parameters pass through instead of raising
    assert torch.isnan(DiagGaussian(torch.full((2, 3), float("nan")), torch.zeros(3)).log_prob(torch.zeros(2, 3))).all()
    assert torch.isnan(CategoricalDist(torch.full((2, 3), float("nan"))).entropy()).all()
