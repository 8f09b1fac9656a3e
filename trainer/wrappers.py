"""Gymnasium wrappers the trainer applies to any env: the previous action as an observation.

VER paper section 4 feeds the policy its previous action. `PreviousAction` adds the observation key
`prev_action` (`PREV_ACTION_KEY`): the last action taken, clipped to the Box (one-hot for
Discrete), zeros after a reset. A plain Box observation becomes a Dict with its Box under
`trainer.networks.BOX_OBS_KEY` ("obs"), the key the networks already use for it.

The training loop applies `with_previous_action(env_fn)` when `policy.prev_action` is true; the
result is picklable (a functools.partial of a top-level function) like every `EnvFn`. Policies
that run outside the trainer (skills.policy.SkillPolicy) fill the key themselves with
`previous_action_obs`, so evaluation needs no wrapped env.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.env_worker import EnvFn
from trainer.networks import BOX_OBS_KEY, observation_spaces

PREV_ACTION_KEY = "prev_action"


def previous_action_space(action_space: gym.Space) -> gym.spaces.Box:
    """Observation space of `prev_action`: the Box's bounds (widened to hold the zeros at reset),
    flattened, float32; `[0, 1]^n` for Discrete(n)."""
    if isinstance(action_space, gym.spaces.Box):
        low = np.minimum(action_space.low.reshape(-1), 0.0).astype(np.float32)
        high = np.maximum(action_space.high.reshape(-1), 0.0).astype(np.float32)
        return gym.spaces.Box(low, high, dtype=np.float32)
    if isinstance(action_space, gym.spaces.Discrete):
        return gym.spaces.Box(0.0, 1.0, (int(action_space.n),), np.float32)
    raise ValueError(f"unsupported action space {type(action_space).__name__}; valid choices: Box, Discrete")


def previous_action_obs(action: Any, action_space: gym.Space) -> np.ndarray:
    """The `prev_action` observation for `action`: clipped to the Box and flattened, or one-hot."""
    if isinstance(action_space, gym.spaces.Discrete):
        one_hot = np.zeros(int(action_space.n), dtype=np.float32)
        one_hot[int(np.asarray(action).reshape(())) - int(action_space.start)] = 1.0
        return one_hot
    flat = np.asarray(action, dtype=np.float64).reshape(-1)
    low, high = action_space.low.reshape(-1), action_space.high.reshape(-1)
    return np.clip(flat, low, high).astype(np.float32)


class PreviousAction(gym.Wrapper):
    """Adds `prev_action` (last action, zeros after reset) to a Dict (or Box -> Dict) observation."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        spaces = observation_spaces(env.observation_space)
        if PREV_ACTION_KEY in spaces:
            raise ValueError(f"the observation space already has a '{PREV_ACTION_KEY}' entry")
        self._dict_obs = isinstance(env.observation_space, gym.spaces.Dict)
        self._prev_space = previous_action_space(env.action_space)
        self.observation_space = gym.spaces.Dict({**spaces, PREV_ACTION_KEY: self._prev_space})

    def _with_prev(self, obs: Any, prev: np.ndarray) -> dict[str, Any]:
        out = dict(obs) if self._dict_obs else {BOX_OBS_KEY: obs}
        out[PREV_ACTION_KEY] = prev
        return out

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict]:
        obs, info = self.env.reset(**kwargs)
        return self._with_prev(obs, np.zeros(self._prev_space.shape, np.float32)), info

    def step(self, action: Any) -> tuple[dict[str, Any], Any, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        prev = previous_action_obs(action, self.env.action_space)
        return self._with_prev(obs, prev), reward, terminated, truncated, info


def _make_with_previous_action(env_fn: EnvFn, index: int) -> gym.Env:
    return PreviousAction(env_fn(index))


def with_previous_action(env_fn: EnvFn) -> EnvFn:
    """`env_fn` whose envs observe their previous action; picklable if `env_fn` is."""
    return functools.partial(_make_with_previous_action, env_fn)
