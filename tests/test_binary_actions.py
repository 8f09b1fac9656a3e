"""Binary action entries (`policy.action.binary_dims`, `skill_binary_actions`): a skill's stop drawn from a
Bernoulli as -1 / +1. The numerics match torch's Normal and Bernoulli, the stop's firing rate is learned per
state (what a Gaussian entry with one shared std near its threshold could not do), and train-skill wires the
subset through to a checkpoint whose deterministic stop is exactly -1 or +1."""

import numpy as np
import pytest
import torch

from trainer.distributions import DiagGaussian, GaussianBinary, GaussianHead

HEAD_CFG = {"mean_activation": "tanh", "log_std_init": -1.0, "min_log_std": -5.0, "max_log_std": 2.0}


def test_log_prob_entropy_sample_and_mode_match_normal_and_bernoulli():
    torch.manual_seed(0)
    head = GaussianHead(6, 4, {**HEAD_CFG, "binary_dims": [1, 3]})
    with torch.no_grad():
        head.mean.weight.normal_()  # logits of both signs
    dist = head(torch.randn(2000, 6))
    assert isinstance(dist, GaussianBinary)
    actions = dist.sample()
    assert set(actions[:, [1, 3]].unique().tolist()) == {-1.0, 1.0}
    assert len(actions[:, 0].unique()) > 1000  # Gaussian entries stay continuous

    normal = torch.distributions.Normal(dist.gaussian.mean, dist.gaussian.std)
    bern = torch.distributions.Bernoulli(logits=dist.logits)
    expected = normal.log_prob(actions[:, [0, 2]]).sum(-1) + bern.log_prob((actions[:, [1, 3]] > 0).float()).sum(-1)
    assert torch.allclose(dist.log_prob(actions), expected, atol=1e-5)
    assert torch.allclose(dist.entropy(), normal.entropy().sum(-1) + bern.entropy().sum(-1), atol=1e-5)

    mode = dist.mode()
    assert torch.equal(mode[:, [1, 3]], torch.where(dist.logits > 0, 1.0, -1.0))
    assert torch.equal(mode[:, [0, 2]], dist.gaussian.mean)
    fired = (actions[:, [1, 3]] > 0).float().mean(0)
    assert torch.allclose(fired, torch.sigmoid(dist.logits).mean(0), atol=0.04)
    assert torch.allclose(dist.mean[:, [1, 3]], 2 * torch.sigmoid(dist.logits) - 1, atol=1e-6)


def test_without_binary_dims_the_head_is_the_plain_gaussian():
    torch.manual_seed(0)
    plain = GaussianHead(5, 3, HEAD_CFG)
    torch.manual_seed(0)
    empty = GaussianHead(5, 3, {**HEAD_CFG, "binary_dims": []})
    x = torch.randn(4, 5)
    a, b = plain(x), empty(x)
    assert isinstance(a, DiagGaussian) and isinstance(b, DiagGaussian)
    assert torch.equal(a.mean, b.mean)
    assert set(plain.state_dict()) == {"mean.weight", "mean.bias", "log_std"}  # checkpoints unchanged
    assert set(GaussianHead(5, 3, {**HEAD_CFG, "binary_dims": [2]}).state_dict()) == set(plain.state_dict())


def test_initial_mean_of_a_binary_entry_is_its_expected_action():
    head = GaussianHead(8, 3, {**HEAD_CFG, "initial_mean": [0.0, 0.5, -0.986], "binary_dims": [2]})
    dist = head(torch.zeros(1, 8))
    assert torch.allclose(dist.mean[0], torch.tensor([0.0, 0.5, -0.986]), atol=1e-5)
    assert float(torch.sigmoid(dist.logits[0, 0]).detach()) == pytest.approx(0.007, abs=1e-4)  # stop on 0.7% of steps
    with pytest.raises(ValueError, match="binary_dims must lie in"):
        GaussianHead(8, 3, {**HEAD_CFG, "binary_dims": [3]})
    with pytest.raises(ValueError, match="must lie in \\(-1, 1\\)"):
        GaussianHead(8, 3, {**HEAD_CFG, "mean_activation": "none", "initial_mean": [0, 0, -1.0], "binary_dims": [2]})


def test_the_firing_rate_is_learned_per_state():
    """Fire in states with x > 0, not in the others: policy gradient drives p(fire) to each side."""
    torch.manual_seed(0)
    head = GaussianHead(2, 2, {**HEAD_CFG, "initial_mean": [0.0, -0.9], "binary_dims": [1]})
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    for _ in range(300):
        x = torch.randn(256, 1).sign()
        features = torch.cat([x, torch.ones_like(x)], dim=1)
        dist = head(features)
        action = dist.sample()
        reward = torch.where((action[:, 1] > 0) == (x[:, 0] > 0), 1.0, -1.0)
        loss = -(dist.log_prob(action) * (reward - reward.mean())).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        on, off = head(torch.tensor([[1.0, 1.0]])), head(torch.tensor([[-1.0, 1.0]]))
    assert float(torch.sigmoid(on.logits)) > 0.95 and float(torch.sigmoid(off.logits)) < 0.05
    assert on.mode()[0, 1] == 1.0 and off.mode()[0, 1] == -1.0


def test_train_skill_makes_the_stop_binary(tmp_path, capsys):
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import make_skill_task
    from skills.policy import SkillPolicy
    from skills.train_cli import main
    from trainer.checkpoint import latest_checkpoint

    out = tmp_path / "run"
    main(["--skill", "nav", "--out", str(out), "trainer.num_envs=2", "trainer.num_steps=32",
          "trainer.total_steps=128", "trainer.progress_bar=false", "dataset.count=2", "profile=cpu",
          "trainer.device=cpu", "skill_binary_actions=[stop]", "skill_initial_action.stop=-0.986"])
    policy = SkillPolicy.from_checkpoint(latest_checkpoint(out / "checkpoints"))
    assert policy.config["policy"]["action"]["binary_dims"] == [2]  # base 2 + stop
    env = RearrangeEnv(make_skill_task(policy.config["skill"]), next((out / "episodes").iterdir()),
                       sim_cfg=policy.config["sim"])
    obs, _ = env.reset(seed=0)
    policy.reset()
    for _ in range(3):
        action = policy.act(obs)
        assert action[2] in (-1.0, 1.0) and np.all(np.abs(action) <= 1.0)
        obs, *_ = env.step(action)
    env.close()

    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["--skill", "nav", "--out", str(tmp_path / "bad"), "profile=cpu", "skill_binary_actions=[jump]"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert err[0].startswith("error: skill_binary_actions has unknown action subset(s) jump; valid choices:")
