"""Critic-only observations (`skill.critic_obs_keys` -> `policy.critic_only_keys`): the critic reads them,
the actor never does, the skill env serves them in training, and a deployed policy runs without them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from configs.compose import compose, to_plain
from rearrange.sensors import observation_space
from rearrange.tasks.skill_base import skill_obs_keys
from skills.policy import SkillPolicy
from tests.skill_checkpoints import untrained_checkpoint
from trainer.networks import ActorCritic

POLICY = {
    "architecture": "feedforward",
    "obs_norm": True,
    "feedforward": {"actor": [32, 32], "critic": [32, 32], "activation": "tanh"},
    "action": {"mean_activation": "tanh", "log_std_init": -1.0, "min_log_std": -5.0, "max_log_std": 2.0},
}
SPACE = gym.spaces.Dict({
    "joint": gym.spaces.Box(-np.inf, np.inf, (7,), np.float32),
    "obj_goal_sensor": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
    "obj_start_sensor": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
})
ACTIONS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)


def _obs(seed: int, batch: int = 5) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(batch, *s.shape, generator=g) for k, s in SPACE.spaces.items()}


def _model(critic_only: list[str]) -> ActorCritic:
    torch.manual_seed(0)
    model = ActorCritic(SPACE, ACTIONS, {**POLICY, "critic_only_keys": critic_only})
    with torch.no_grad():  # non-trivial normalisation statistics and heads, so every column matters
        model.obs_norm.update(torch.randn(64, 13) * 2.0 + 1.0)
        model.action_head.mean.weight.normal_()
    return model


def test_actor_ignores_critic_only_inputs_and_critic_reads_them() -> None:
    model = _model(["obj_start_sensor"])
    assert model.actor[0].in_features == 10 and model.critic[0].in_features == 13
    obs = _obs(1)
    changed = dict(obs, obj_start_sensor=obs["obj_start_sensor"] + 3.0)
    hidden, start = model.initial_hidden(5), torch.ones(5, dtype=torch.bool)
    a, b = model.act(obs, hidden, start, deterministic=True), model.act(changed, hidden, start, deterministic=True)
    assert torch.equal(a.action, b.action)
    assert not torch.allclose(a.value, b.value)
    # the learner's passes agree with the collector's
    ev = model.evaluate(changed, b.action, hidden, [5])
    assert torch.allclose(ev.log_prob, b.log_prob) and torch.allclose(ev.value, b.value)
    assert torch.allclose(model.action_dist(obs, hidden, [5]).log_prob(a.action), a.log_prob)


def test_without_critic_only_keys_the_actor_reads_every_input() -> None:
    model = _model([])
    assert model.actor_columns is None and model.actor[0].in_features == 13
    obs = _obs(2)
    changed = dict(obs, obj_start_sensor=obs["obj_start_sensor"] + 3.0)
    hidden, start = model.initial_hidden(5), torch.ones(5, dtype=torch.bool)
    assert not torch.equal(model.act(obs, hidden, start, True).action, model.act(changed, hidden, start, True).action)


@pytest.mark.parametrize(("keys", "arch", "message"), [
    (["head_pose"], "feedforward", "policy.critic_only_keys names head_pose, not a vector observation; valid choices"),
    (["joint"], "recurrent", "policy.critic_only_keys needs policy.architecture=feedforward"),
])
def test_bad_critic_only_keys_are_one_line_errors(keys: list[str], arch: str, message: str) -> None:
    cfg = {**POLICY, "architecture": arch, "critic_only_keys": keys, "vector_mlp": [8],
           "rnn": {"hidden_size": 8, "num_layers": 1}}
    with pytest.raises(ValueError, match=message) as err:
        ActorCritic(SPACE, ACTIONS, cfg)
    assert "\n" not in str(err.value)


def test_skill_env_serves_critic_keys_after_the_policy_keys() -> None:
    node = to_plain(compose("train_skill", ["skill=place", "skill.critic_obs_keys=[obj_start_sensor]"]))
    assert node["policy"]["critic_only_keys"] == ["obj_start_sensor"]  # composed from the skill node
    keys = skill_obs_keys(node["skill"])
    assert keys[-1] == "obj_start_sensor" and keys[:-1] == tuple(node["skill"]["obs_keys"])
    assert skill_obs_keys({"obs_keys": ["joint"]}) == ("joint",)  # a config saved before the key


@pytest.mark.parametrize(("critic_keys", "message"), [
    (["head_depth"], "must be vector sensors"),
    (["joint"], "must be vector sensors"),  # already the policy's
    (["obj_start_sensor", "obj_start_sensor"], "each once"),
    (["gps"], "unknown sensor 'gps'; valid choices"),
])
def test_bad_critic_obs_keys_are_one_line_errors(critic_keys: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        skill_obs_keys({"obs_keys": ["head_depth", "joint"], "critic_obs_keys": critic_keys})
    assert "\n" not in str(err.value)


def test_train_skill_rejects_a_bad_critic_key_before_any_work(tmp_path, capsys) -> None:
    from skills.train_cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--skill", "place", "--out", str(tmp_path / "run"), "profile=cpu", "skill.critic_obs_keys=[joint]"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "critic_obs_keys" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_deployed_policy_needs_no_critic_only_sensor(tmp_path) -> None:
    path = tmp_path / "place.pt"
    space = observation_space(["head_depth", "obj_goal_sensor", "joint", "is_holding", "relative_resting_position",
                               "obj_start_sensor"], (16, 16), 10.0)
    untrained_checkpoint(path, "place", ["profile=cpu", "skill.critic_obs_keys=[obj_start_sensor]"], obs_space=space)
    policy = SkillPolicy.from_checkpoint(path)
    assert policy.critic_only_keys == ("obj_start_sensor",) and "obj_start_sensor" not in policy.obs_keys
    obs = {k: np.ones(s.shape, np.float32) for k, s in space.spaces.items() if k != "obj_start_sensor"}
    first = policy.act(obs)
    policy.reset()
    assert np.array_equal(policy.act({**obs, "obj_start_sensor": np.full(3, 9.0, np.float32)}), first)


@pytest.mark.slow
def test_tiny_place_run_trains_the_critic_on_a_sensor_the_policy_does_not_need(tmp_path) -> None:
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import make_skill_task
    from skills.train_cli import main
    from trainer.checkpoint import latest_checkpoint, load_checkpoint

    out = tmp_path / "run"
    main(["--skill", "place", "--out", str(out), "profile=cpu", "trainer.num_envs=2", "trainer.envs_per_worker=2",
          "trainer.num_steps=32", "trainer.total_steps=128", "trainer.progress_bar=false", "dataset.count=2",
          "skill.oracle_start.prob=0", "skill.critic_obs_keys=[obj_start_sensor]"])
    ckpt = latest_checkpoint(out / "checkpoints")
    state = load_checkpoint(ckpt)
    assert "obj_start_sensor" in state["obs_space"].spaces  # the env served it in training
    assert state["model"]["critic.0.weight"].shape[1] == state["model"]["actor.0.weight"].shape[1] + 3
    policy = SkillPolicy.from_checkpoint(ckpt)
    assert "obj_start_sensor" not in policy.obs_keys
    node = {**policy.config["skill"], "critic_obs_keys": []}  # an env (eval-hab's) without the sensor
    env = RearrangeEnv(make_skill_task(node), next((out / "episodes").iterdir()), sim_cfg=policy.config["sim"])
    try:
        obs, _ = env.reset(seed=0)
        assert "obj_start_sensor" not in obs and policy.act(obs).shape == (10,)
    finally:
        env.close()
