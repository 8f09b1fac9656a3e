"""SkillPolicy applies the checkpoint's observation statistics and feeds its own previous action."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from omegaconf import OmegaConf

from rearrange.actions import action_space
from rearrange.tasks.skill_tasks import load_skill_config
from skills.policy import SkillPolicy
from trainer.checkpoint import save_checkpoint
from trainer.networks import ActorCritic
from trainer.wrappers import PREV_ACTION_KEY, previous_action_space

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "policy"
SKILL = load_skill_config("pick")
ACTIONS = action_space(SKILL["action_subsets"])  # Box([-1, 1]^10)
OBS = {"joint": gym.spaces.Box(-3, 3, (7,), np.float32), "is_holding": gym.spaces.Box(0, 1, (1,), np.float32)}


def write_checkpoint(path, obs_space, policy_name, model_edit, **policy):
    cfg = OmegaConf.to_container(OmegaConf.load(CONFIGS / f"{policy_name}.yaml"))
    cfg.update(policy)
    torch.manual_seed(0)
    ac = ActorCritic(obs_space, ACTIONS, cfg)
    model_edit(ac)
    save_checkpoint(path, {"model": ac.state_dict(), "config": {"skill": SKILL, "policy": cfg},
                           "obs_space": obs_space, "action_space": ACTIONS})
    return ac


def env_obs():
    return {"joint": np.linspace(-1, 1, 7, dtype=np.float32), "is_holding": np.ones(1, np.float32),
            "extra_sensor": np.zeros(3)}


def set_stats(mean_shift):
    def edit(ac):
        with torch.no_grad():
            ac.action_head.mean.weight.mul_(100.0)  # actions that visibly depend on the input
            ac.obs_norm.mean.copy_(torch.arange(8.0) * 0.1 + mean_shift)
            ac.obs_norm.var.copy_(torch.linspace(0.5, 4.0, 8))
            ac.obs_norm.count.fill_(1000)
    return edit


def test_skill_policy_applies_the_checkpoints_observation_statistics(tmp_path):
    space = gym.spaces.Dict(OBS)
    ac = write_checkpoint(tmp_path / "a.pt", space, "mlp_ff", set_stats(0.0))
    write_checkpoint(tmp_path / "b.pt", space, "mlp_ff", set_stats(1.0))
    a = SkillPolicy.from_checkpoint(tmp_path / "a.pt").act(env_obs())
    b = SkillPolicy.from_checkpoint(tmp_path / "b.pt").act(env_obs())
    assert not np.allclose(a, b, atol=1e-3)  # same weights, different statistics
    # `a` is the network on the observations normalised by hand with the checkpoint's statistics
    obs = env_obs()
    vec = torch.as_tensor(np.concatenate([obs["is_holding"], obs["joint"]]))  # sorted keys
    normed = ((vec - ac.obs_norm.mean) / (ac.obs_norm.var + 1e-8).sqrt()).clamp(-5, 5)
    ac.obs_norm = None
    with torch.no_grad():
        ref = ac.act({"is_holding": normed[None, :1], "joint": normed[None, 1:]}, ac.initial_hidden(1),
                     torch.ones(1, dtype=torch.bool), deterministic=True).action[0]
    np.testing.assert_allclose(a, np.clip(ref.numpy(), -1, 1), rtol=1e-5, atol=1e-6)


def test_skill_policy_feeds_its_previous_action(tmp_path):
    space = gym.spaces.Dict({**OBS, PREV_ACTION_KEY: previous_action_space(ACTIONS)})

    def big_actions(ac):
        with torch.no_grad():
            ac.action_head.mean.weight.mul_(300.0)
            ac.action_head.mean.bias.copy_(torch.linspace(-2.0, 2.0, 10))  # some entries beyond the Box

    write_checkpoint(tmp_path / "c.pt", space, "mlp", big_actions, prev_action=True)
    policy = SkillPolicy.from_checkpoint(tmp_path / "c.pt")
    assert PREV_ACTION_KEY not in policy.obs_keys  # the env is not asked for it
    seen = []
    act = policy.actor_critic.act

    def spy(obs, *args, **kwargs):
        seen.append(obs[PREV_ACTION_KEY][0].clone())
        return act(obs, *args, **kwargs)

    policy.actor_critic.act = spy
    first = policy.act(env_obs())
    assert np.abs(first).max() == 1.0  # some entries were clipped
    second = policy.act(env_obs())
    policy.reset()
    policy.act(env_obs())
    assert torch.equal(seen[0], torch.zeros(10))
    np.testing.assert_array_equal(seen[1].numpy(), first.astype(np.float32))  # clipped to the Box
    assert torch.equal(seen[2], torch.zeros(10))  # zeros after reset
    assert not np.allclose(first, second)  # the recurrent state and previous action changed the action
