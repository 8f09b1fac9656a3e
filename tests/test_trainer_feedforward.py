"""Feed-forward actor-critic: shapes, dummy state, separate actor/critic parameters, CleanRL init,
evaluate == act, row mini-batches, and a PPO update on them."""

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from trainer.minibatch import build_row_minibatches
from trainer.networks import ActorCritic
from trainer.ppo import PPO
from trainer.rollout import Rollout

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
OBS = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (6,), np.float32), "y": gym.spaces.Box(-1, 1, (2,), np.float32)})


def ff_cfg(**feedforward):
    cfg = OmegaConf.load(CONFIGS / "policy" / "mlp_ff.yaml")
    cfg.feedforward.update(feedforward)
    return cfg


def obs_batch(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"x": torch.rand(n, 6, generator=g) * 2 - 1, "y": torch.rand(n, 2, generator=g) * 2 - 1}


@pytest.mark.parametrize("action_space", [gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(4)])
def test_shapes_dummy_state_and_evaluate_equals_act(action_space):
    torch.manual_seed(0)
    ac = ActorCritic(OBS, action_space, ff_cfg())
    assert not ac.is_recurrent and not any(isinstance(m, torch.nn.LSTM) for m in ac.modules())
    hidden = ac.initial_hidden(5)
    assert hidden.shape == (5, 1, 1) and not hidden.any()
    obs = obs_batch(5)
    out = ac.act(obs, hidden, torch.ones(5, dtype=torch.bool))
    assert out.log_prob.shape == out.value.shape == (5,) and out.hidden.shape == (5, 1, 1)
    assert out.action.shape == ((5, 3) if isinstance(action_space, gym.spaces.Box) else (5,))
    ev = ac.evaluate(obs, out.action, hidden[:2], torch.tensor([3, 2]))
    torch.testing.assert_close(ev.log_prob, out.log_prob)
    torch.testing.assert_close(ev.value, out.value)
    torch.testing.assert_close(ac.get_value(obs, hidden, torch.zeros(5, dtype=torch.bool)), out.value)
    ev_rows = ac.evaluate(obs, out.action, hidden, torch.ones(5, dtype=torch.long))
    torch.testing.assert_close(ev_rows.log_prob, out.log_prob)
    with pytest.raises(ValueError, match="seq_lengths sum to 4"):
        ac.evaluate(obs, out.action, hidden[:1], [4])


def test_actor_and_critic_have_separate_parameters():
    torch.manual_seed(0)
    ac = ActorCritic(OBS, gym.spaces.Box(-1, 1, (3,), np.float32), ff_cfg())
    actor = {id(p) for p in [*ac.actor.parameters(), *ac.action_head.parameters()]}
    critic = {id(p) for p in [*ac.critic.parameters(), *ac.value_head.parameters()]}
    assert actor.isdisjoint(critic) and actor | critic == {id(p) for p in ac.parameters()}
    obs = obs_batch(4)
    ac.get_value(obs, ac.initial_hidden(4), torch.ones(4, dtype=torch.bool)).sum().backward()
    assert all(p.grad is None for p in [*ac.actor.parameters(), *ac.action_head.parameters()])
    assert all(p.grad is not None for p in ac.critic.parameters())
    ac.zero_grad(set_to_none=True)
    ev = ac.evaluate(obs, torch.zeros(4, 3), ac.initial_hidden(1), [4])
    ev.log_prob.sum().backward()
    assert all(p.grad is None for p in [*ac.critic.parameters(), *ac.value_head.parameters()])
    assert all(p.grad is not None for p in ac.actor.parameters())


def test_cleanrl_initialisation_and_activation_choice():
    torch.manual_seed(0)
    ac = ActorCritic(OBS, gym.spaces.Box(-1, 1, (3,), np.float32), ff_cfg(actor=[64, 64], activation="relu"))
    hidden_layer = ac.actor[2]  # 64 x 64, orthogonal with gain sqrt(2): W W^T = 2 I
    torch.testing.assert_close(hidden_layer.weight @ hidden_layer.weight.T, 2 * torch.eye(64), atol=1e-4, rtol=0)
    assert isinstance(ac.actor[1], torch.nn.ReLU) and isinstance(ac.critic[1], torch.nn.ReLU)
    assert ac.action_head.mean.weight.detach().norm(dim=1).max() <= 0.01 + 1e-6  # actor head gain 0.01
    assert float(ac.value_head.weight.detach().norm()) == pytest.approx(1.0, rel=1e-5)  # critic head gain 1
    assert all(float(m.bias.detach().abs().max()) == 0 for m in ac.modules() if isinstance(m, torch.nn.Linear))
    with pytest.raises(ValueError, match="valid choices: tanh, relu"):
        ActorCritic(OBS, gym.spaces.Discrete(2), ff_cfg(activation="gelu"))
    cfg = ff_cfg()
    cfg.architecture = "transformer"
    with pytest.raises(ValueError, match="valid choices: recurrent, feedforward"):
        ActorCritic(OBS, gym.spaces.Discrete(2), cfg)


def test_images_go_through_a_shared_encoder():
    space = gym.spaces.Dict({**OBS.spaces, "depth": gym.spaces.Box(0, 1, (32, 32, 1), np.float32)})
    ac = ActorCritic(space, gym.spaces.Discrete(2), ff_cfg())
    obs = {**obs_batch(2), "depth": torch.rand(2, 32, 32, 1)}
    out = ac.act(obs, ac.initial_hidden(2), torch.ones(2, dtype=torch.bool))
    assert out.action.shape == (2,) and ac.actor[0].in_features == ac.visual_encoder.out_dim + 8


def test_row_minibatches_cover_every_row_once_in_random_order():
    rollout = make_rollout(ActorCritic(OBS, gym.spaces.Discrete(2), ff_cfg()), rows=23)
    g = torch.Generator().manual_seed(0)
    batches = build_row_minibatches(rollout, 4, g)
    assert [len(b) for b in batches] == [6, 6, 6, 5]
    rows = torch.cat([b.rows for b in batches])
    assert sorted(rows.tolist()) == list(range(23)) and rows.tolist() != list(range(23))
    for b in batches:
        assert b.seq_lengths.tolist() == [1] * len(b) and torch.equal(b.seq_first_rows, b.rows)
    assert not torch.equal(rows, torch.cat([b.rows for b in build_row_minibatches(rollout, 4, g)]))
    with pytest.raises(ValueError, match="num_mini_batch"):
        build_row_minibatches(rollout, 24)


def make_rollout(ac: ActorCritic, rows: int, seed: int = 0) -> Rollout:
    """One env's steps with the policy's own actions; reward +1 for action 1 (Discrete)."""
    obs = obs_batch(rows, seed)
    hidden = ac.initial_hidden(rows)
    with torch.no_grad():
        out = ac.act(obs, hidden, torch.zeros(rows, dtype=torch.bool))
    return Rollout(
        obs=obs, actions=out.action, log_probs=out.log_prob, values=out.value,
        rewards=(out.action == 1).float() * 2 - 1, dones=torch.ones(rows, dtype=torch.bool),
        episode_start=torch.ones(rows, dtype=torch.bool), hidden=hidden,
        env_ids=torch.arange(rows) % 2, episode_ids=torch.arange(rows), step_ids=torch.zeros(rows, dtype=torch.long),
        policy_version=torch.zeros(rows, dtype=torch.long), bootstrap_value=torch.zeros(2), num_envs=2,
        expected_steps_per_env=rows / 2,
    )  # fmt: skip


def test_ppo_update_uses_row_minibatches_and_improves_the_good_action():
    torch.manual_seed(0)
    ac = ActorCritic(OBS, gym.spaces.Discrete(2), ff_cfg(actor=[32], critic=[32]))
    ppo_cfg = OmegaConf.load(CONFIGS / "trainer" / "ppo.yaml").ppo
    ppo_cfg.lr = 3e-3
    ppo = PPO(ac, ppo_cfg, total_updates=10, seed=0, max_seq_len=4)
    rollout = make_rollout(ac, rows=64)
    batches = ppo._minibatches(rollout)
    assert len(batches) == ppo_cfg.num_mini_batch and all((b.seq_lengths == 1).all() for b in batches)
    probe = obs_batch(64, seed=1)
    ones = torch.ones(64, dtype=torch.long)
    before = ac.evaluate(probe, ones, ac.initial_hidden(1), [64]).log_prob.mean()
    stats = ppo.update(rollout)
    after = ac.evaluate(probe, ones, ac.initial_hidden(1), [64]).log_prob.mean()
    assert after > before and math.isfinite(stats["learner/value_loss"])
