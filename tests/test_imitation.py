"""Imitation (DAgger from the oracles): behaviour cloning fits what it is shown, labelled episodes follow
the oracle or the policy as beta says, and `imitate-skill` writes checkpoints every consumer loads."""

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

from skills.imitate import ImitationConfig, main
from tests.cli_errors import one_line_exit_2
from trainer.imitation import DemoRows, clone_behaviour

FF_POLICY = {"architecture": "feedforward", "obs_norm": True, "obs_norm_clip": 5.0,
             "feedforward": {"actor": [64, 64], "critic": [64, 64], "activation": "tanh"},
             "action": {"mean_activation": "tanh", "log_std_init": -1.0, "min_log_std": -5.0, "max_log_std": 2.0}}


def _linear_rows(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(3.0, 2.0, size=(n, 4)).astype(np.float32)  # off-centre: obs norm must matter
    w = rng.normal(size=(4, 2)).astype(np.float32) / 4
    return x, np.tanh((x - 3.0) @ w).astype(np.float32)


def _model():
    from trainer.networks import ActorCritic

    obs_space = gym.spaces.Dict({"x": gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)})
    return ActorCritic(obs_space, gym.spaces.Box(-1.0, 1.0, (2,), np.float32), FF_POLICY)


def test_clone_behaviour_fits_the_expert_and_sets_statistics_and_noise():
    x, y = _linear_rows(4000)
    rows = DemoRows()
    rows.add({"x": x[:1000]}, y[:1000])
    rows.add({"x": x[1000:]}, y[1000:])
    obs, actions = rows.tensors()
    model = _model()
    critic_before = [p.clone() for p in model.critic.parameters()]
    with torch.no_grad():
        before = float((model.action_head(model.actor(model.encode(obs))).mean - actions).pow(2).mean())
    fit = clone_behaviour(model, obs, actions, epochs=30, batch_size=256, lr=3e-3, seed=0)
    assert fit["mse"] < 0.02 < before
    # the observation statistics are the rows' own
    np.testing.assert_allclose(model.obs_norm.mean.numpy(), x.mean(0), atol=1e-3)
    # the log-std moved from -1 toward the log of the residual (well below the initial noise)
    assert fit["log_std"] < -1.5
    assert all(torch.equal(a, b) for a, b in zip(critic_before, model.critic.parameters(), strict=True))


def test_clone_behaviour_is_seeded():
    x, y = _linear_rows(600)
    outs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = _model()
        clone_behaviour(model, {"x": torch.from_numpy(x)}, torch.from_numpy(y), epochs=2, batch_size=64, lr=1e-3, seed=3)
        outs.append(model.action_head.mean.weight.detach().clone())
    assert torch.equal(outs[0], outs[1])


def _memory_rows(episodes: int, length: int = 8, seed: int = 0):
    """A task only memory solves: the first observation of an episode is +-1, the rest 0, and the action
    at every step is 0.8 x that first observation."""
    rng = np.random.default_rng(seed)
    rows = DemoRows()
    for _ in range(episodes):
        sign = float(rng.choice([-1.0, 1.0]))
        x = np.zeros((length, 3), np.float32)
        x[0, 0] = sign
        rows.add({"obs": x}, np.full((length, 2), 0.8 * sign, np.float32))
    return rows


def test_a_recurrent_policy_clones_whole_sequences_and_remembers():
    from trainer.networks import ActorCritic

    rows = _memory_rows(200)
    obs, actions = rows.tensors()
    errors = {}
    for arch in ("feedforward", "recurrent"):
        torch.manual_seed(0)
        cfg = {**FF_POLICY, "architecture": arch, "vector_mlp": [32], "rnn": {"hidden_size": 32, "num_layers": 1}}
        model = ActorCritic(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32), cfg)
        fit = clone_behaviour(model, obs, actions, epochs=40, batch_size=64, lr=3e-3, seed=0, lengths=rows.lengths)
        errors[arch] = fit["mse"]
    # rows after the first carry no sign: only the LSTM can fit them
    assert errors["recurrent"] < 0.02 < 0.3 < errors["feedforward"]


def test_clone_behaviour_rejects_missing_sequences_and_mismatched_rows():
    from trainer.networks import ActorCritic

    cfg = {**FF_POLICY, "architecture": "recurrent", "vector_mlp": [16], "rnn": {"hidden_size": 8, "num_layers": 1}}
    model = ActorCritic(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32), cfg)
    with pytest.raises(ValueError, match="sequence lengths"):
        clone_behaviour(model, {"obs": torch.zeros(4, 3)}, torch.zeros(4, 2), epochs=1, batch_size=2, lr=1e-3, seed=0)
    rows = DemoRows()
    rows.add({"a": np.zeros((2, 1))}, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="keys"):
        rows.add({"b": np.zeros((2, 1))}, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="rows"):
        rows.add({"a": np.zeros((3, 1))}, np.zeros((2, 2)))
    assert rows.lengths == [2]


@pytest.mark.parametrize("node, key", [
    ({"betas": []}, "imitation.betas"), ({"betas": [1.5]}, "imitation.betas"),
    ({"epochs": 0}, "imitation.epochs"), ({"workers": "two"}, "imitation.workers"), ({"lr": -1}, "imitation.lr"),
    ({"noise": 2.0}, "imitation.noise"),
])
def test_imitation_config_names_the_bad_key(node, key):
    from configs.compose import ConfigError

    good = {"betas": [1.0, 0.0], "episodes_per_round": 2, "epochs": 1, "batch_size": 8, "lr": 1e-3, "workers": 1}
    with pytest.raises(ConfigError, match=key):
        ImitationConfig.from_node({**good, **node})


def test_bad_input_is_one_line_exit_2(capsys, tmp_path):
    assert "unknown skill 'juggle'" in one_line_exit_2(capsys, main, ["--skill", "juggle", "--out", str(tmp_path / "r")])
    err = one_line_exit_2(capsys, main, ["--skill", "place", "--out", str(tmp_path / "r"), "imitation.epochs=0"])
    assert "imitation.epochs" in err
    err = one_line_exit_2(capsys, main, ["--skill", "place", "--out", str(tmp_path / "r"), "imitation.noise=3"])
    assert "imitation.noise" in err
    (tmp_path / "old" / "checkpoints").mkdir(parents=True)
    (tmp_path / "old" / "checkpoints" / "ckpt_000000000001.pt").write_bytes(b"x")
    assert "already holds a run" in one_line_exit_2(capsys, main, ["--skill", "place", "--out", str(tmp_path / "old")])
    (tmp_path / "afile").write_text("keep")
    assert "is a file" in one_line_exit_2(capsys, main, ["--skill", "place", "--out", str(tmp_path / "afile")])
    assert (tmp_path / "afile").read_text() == "keep"
    assert (tmp_path / "old" / "checkpoints" / "ckpt_000000000001.pt").read_bytes() == b"x"


def _worker_env(tmp_path, skill: str):
    from rearrange.episodes import save_episodes
    from rearrange.generate import generate_episodes
    from rearrange.tasks.skill_tasks import load_skill_config
    from skills.imitate import _init_worker

    path = tmp_path / f"{skill}.json.gz"
    save_episodes(path, generate_episodes(skill, "val", 2, 0, sim_cfg={"camera": {"head": {"backend": "raycast", "width": 16, "height": 16}}}))
    policy = {**FF_POLICY, "prev_action": True, "visual": {"encoder": "cnn_small", "channels": [8], "kernels": [3],
                                                            "strides": [2], "out_dim": 16}}
    _init_worker({"skill_cfg": {**load_skill_config(skill), "oracle_start": {"prob": 0.0}},
                  "sim_cfg": {"camera": {"head": {"backend": "raycast", "width": 16, "height": 16}}},
                  "episodes_path": str(path)}, policy)
    return policy


def test_labelled_episode_follows_the_oracle_at_beta_1_and_the_policy_at_beta_0(tmp_path):
    from skills.imitate import _WORKER, _weights_bytes, run_labelled_episode
    from trainer.networks import ActorCritic

    policy = _worker_env(tmp_path, "close_cab")
    oracle_run = run_labelled_episode(0, 1.0, None, seed=0)
    assert oracle_run["success"] and oracle_run["policy_steps"] == 0
    assert oracle_run["actions"].shape == (oracle_run["steps"], _WORKER["env"].action_space.shape[0])
    assert set(oracle_run["obs"]) >= {"prev_action", "joint", "head_depth"}
    # the previous-action row of step t is the oracle's label of step t-1 (the oracle executed it)
    np.testing.assert_allclose(oracle_run["obs"]["prev_action"][1:], np.clip(oracle_run["actions"][:-1], -1, 1), atol=1e-6)
    env = _WORKER["env"]
    untrained = ActorCritic(env.observation_space, env.action_space, policy)
    weights = _weights_bytes(untrained)
    policy_run = run_labelled_episode(0, 0.0, weights, seed=0)
    # the worker's copy is rebuilt only when the weights change, not for every job's copy of them
    from skills.imitate import _policy

    assert _policy(bytes(bytearray(weights))) is _policy(weights)
    assert policy_run["policy_steps"] == policy_run["steps"] and not policy_run["success"]
    # labels are still the oracle's: the same first label as in the oracle's episode
    np.testing.assert_allclose(policy_run["actions"][0], oracle_run["actions"][0])
    # DART: the executed (previous) action is the label plus noise, the label the oracle's own
    noisy = run_labelled_episode(0, 1.0, None, seed=0, noise=0.2)
    np.testing.assert_allclose(noisy["actions"][0], oracle_run["actions"][0])
    executed = noisy["obs"]["prev_action"][1:]
    assert np.abs(executed - np.clip(noisy["actions"][:-1], -1, 1)).max() > 0.05


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["feedforward", "recurrent"])
def test_imitate_skill_writes_checkpoints_that_eval_and_fine_tune_load(tmp_path, capsys, architecture):
    from skills.policy import SkillPolicy
    from trainer.checkpoint import latest_checkpoint

    out = tmp_path / "dagger"
    main(["--skill", "close_cab", "--out", str(out), "profile=cpu", "dataset.count=3", "imitation.betas=[1.0,0.0]",
          "imitation.episodes_per_round=3", "imitation.epochs=2", "imitation.workers=1",
          f"policy.architecture={architecture}"])
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["beta"] for r in records] == [1.0, 0.0]
    assert records[0]["success"] == 1.0 and records[1]["rows"] > records[0]["rows"]
    assert 0 < records[0]["wall_time"] <= records[1]["wall_time"]
    ckpt = latest_checkpoint(out / "checkpoints")
    assert ckpt is not None and ckpt.name == f"ckpt_{records[1]['env_steps']:012d}.pt"
    policy = SkillPolicy.from_checkpoint(ckpt)
    assert policy.actor_critic.obs_norm is not None and float(policy.actor_critic.obs_norm.count) == records[1]["rows"]
    # a VER fine-tune starts from it
    from skills.train_cli import main as train_main

    assert policy.actor_critic.is_recurrent == (architecture == "recurrent")
    train_main(["--skill", "close_cab", "--out", str(tmp_path / "ft"), "profile=cpu", f"trainer.init_from={out}",
                f"policy.architecture={architecture}",
                "trainer.num_envs=2", "trainer.envs_per_worker=2", "trainer.num_steps=16", "trainer.total_steps=32",
                "trainer.progress_bar=false", "dataset.count=2"])
    assert latest_checkpoint(tmp_path / "ft" / "checkpoints") is not None
