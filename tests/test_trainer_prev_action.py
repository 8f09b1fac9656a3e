"""The previous-action wrapper: obs after a step equals the (clipped) action, zeros after reset,
one-hot for Discrete, Box obs moved under "obs", a picklable factory, and a network that reads it."""

import pickle
from functools import partial
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from trainer.networks import ActorCritic
from trainer.wrappers import PREV_ACTION_KEY, PreviousAction, with_previous_action


def make_env(index: int, env_id: str = "Pendulum-v1") -> gym.Env:
    return gym.make(env_id)


class DictEnv(gym.Env):
    """A Dict observation and Discrete(3) actions."""

    observation_space = gym.spaces.Dict({"state": gym.spaces.Box(-1, 1, (2,), np.float32)})
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        return {"state": np.zeros(2, np.float32)}, {}

    def step(self, action):
        return {"state": np.ones(2, np.float32)}, 0.0, False, False, {}


def test_box_actions_are_observed_clipped_after_each_step_and_zero_after_reset():
    env = PreviousAction(make_env(0))  # Pendulum: Box obs (3,), Box action [-2, 2]
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict) and set(space.spaces) == {"obs", PREV_ACTION_KEY}
    obs, _ = env.reset(seed=0)
    assert np.array_equal(obs[PREV_ACTION_KEY], np.zeros(1, np.float32)) and obs["obs"].shape == (3,)
    assert space.contains(obs)
    obs, *_ = env.step(np.array([1.25], np.float32))
    assert obs[PREV_ACTION_KEY].dtype == np.float32
    np.testing.assert_array_equal(obs[PREV_ACTION_KEY], [1.25])
    obs, *_ = env.step(np.array([7.0], np.float32))
    np.testing.assert_array_equal(obs[PREV_ACTION_KEY], [2.0])  # clipped to the Box
    assert space.contains(obs)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[PREV_ACTION_KEY], [0.0])


def test_discrete_actions_are_one_hot_and_dict_observations_keep_their_keys():
    env = PreviousAction(DictEnv())
    assert set(env.observation_space.spaces) == {"state", PREV_ACTION_KEY}
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs[PREV_ACTION_KEY], [0.0, 0.0, 0.0])
    obs, *_ = env.step(2)
    np.testing.assert_array_equal(obs[PREV_ACTION_KEY], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(obs["state"], [1.0, 1.0])
    obs, *_ = env.step(np.int64(0))
    np.testing.assert_array_equal(obs[PREV_ACTION_KEY], [1.0, 0.0, 0.0])
    assert env.observation_space.contains(obs)
    with pytest.raises(ValueError, match="already has a 'prev_action'"):
        PreviousAction(env)


def test_factory_is_picklable_and_builds_wrapped_envs():
    env_fn = with_previous_action(partial(make_env, env_id="Pendulum-v1"))
    restored = pickle.loads(pickle.dumps(env_fn))
    env = restored(3)
    assert PREV_ACTION_KEY in env.observation_space.spaces
    env.close()


def test_actor_critic_reads_the_previous_action():
    env = PreviousAction(make_env(0))
    cfg = OmegaConf.load(Path(__file__).resolve().parents[1] / "configs" / "policy" / "mlp.yaml")
    torch.manual_seed(0)
    ac = ActorCritic(env.observation_space, env.action_space, cfg)
    assert PREV_ACTION_KEY in ac.vector_keys
    obs = {"obs": torch.zeros(2, 3), PREV_ACTION_KEY: torch.tensor([[0.0], [2.0]])}
    out = ac.act(obs, ac.initial_hidden(2), torch.ones(2, dtype=torch.bool), deterministic=True)
    assert out.value[0] != out.value[1]
