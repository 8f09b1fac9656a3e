"""Pre-allocated shared-memory transfer buffers between the main process and the env workers.

One row per environment (a worker process may hold several envs and writes each of their rows).
After a step the worker writes the env's row of `obs`, `reward`, `terminated` and `truncated`, and on
a time-limit truncation also `final_obs` (the observation the episode ended in, before the
auto-reset replaced `obs` with the next episode's first one); the main process writes row `e` of
`action` before telling the worker to step. Only env indices and small commands travel through
pipes, never the arrays themselves.

The buffers are torch tensors in shared memory (`share_memory_()`), so they can be handed to a
`forkserver`/`spawn` child as process arguments; both sides work on numpy views of them.
"""

from __future__ import annotations

from collections.abc import Mapping

import gymnasium as gym
import numpy as np
import torch

from trainer.networks import BOX_OBS_KEY, observation_spaces


def storage_dtype(space: gym.spaces.Box) -> torch.dtype:
    """Float observations are stored as float32; integer ones (images) keep their width."""
    if np.issubdtype(space.dtype, np.floating):
        return torch.float32
    return torch.from_numpy(np.zeros(0, dtype=space.dtype)).dtype


def action_layout(action_space: gym.Space) -> tuple[tuple[int, ...], torch.dtype]:
    """Shape of one action and its dtype: Box -> (A,) float32, Discrete -> () int64."""
    if isinstance(action_space, gym.spaces.Box):
        return (int(np.prod(action_space.shape)),), torch.float32
    if isinstance(action_space, gym.spaces.Discrete):
        return (), torch.int64
    raise ValueError(f"unsupported action space {type(action_space).__name__}; use Box or Discrete")


class TransferBuffers:
    """Shared per-env rows: observation parts, final observation, reward, terminated, truncated, action.

    `obs[key][e]` holds env `e`'s newest observation (after an auto-reset: the new episode's first
    observation); `reward[e]`, `terminated[e]`, `truncated[e]` belong to the step that produced it,
    and `final_obs[key][e]` holds that step's own observation when `truncated[e]`.
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, num_envs: int) -> None:
        self.num_envs = num_envs
        spaces = observation_spaces(obs_space)
        self.obs: dict[str, torch.Tensor] = {
            key: torch.zeros((num_envs, *space.shape), dtype=storage_dtype(space)).share_memory_()
            for key, space in spaces.items()
        }
        self.final_obs: dict[str, torch.Tensor] = {k: torch.zeros_like(v).share_memory_() for k, v in self.obs.items()}
        shape, dtype = action_layout(action_space)
        self.action = torch.zeros((num_envs, *shape), dtype=dtype).share_memory_()
        self.reward = torch.zeros(num_envs, dtype=torch.float32).share_memory_()
        self.terminated = torch.zeros(num_envs, dtype=torch.bool).share_memory_()
        self.truncated = torch.zeros(num_envs, dtype=torch.bool).share_memory_()

    def env_view(self, env_idx: int) -> EnvRow:
        """Numpy views on one env's row (used inside the worker)."""
        return EnvRow(self, env_idx)


def _write_obs(views: dict[str, np.ndarray], obs: np.ndarray | Mapping[str, np.ndarray]) -> None:
    if isinstance(obs, Mapping):
        for key, view in views.items():
            view[...] = obs[key]
    else:
        views[BOX_OBS_KEY][...] = obs


class EnvRow:
    """Numpy views on row `env_idx` of the transfer buffers: what a worker reads and writes for one env."""

    def __init__(self, buffers: TransferBuffers, env_idx: int) -> None:
        self.obs = {key: t[env_idx].numpy() for key, t in buffers.obs.items()}
        self.final_obs = {key: t[env_idx].numpy() for key, t in buffers.final_obs.items()}
        self._reward = buffers.reward.numpy()
        self._terminated = buffers.terminated.numpy()
        self._truncated = buffers.truncated.numpy()
        self._action = buffers.action.numpy()
        self.env_idx = env_idx

    def write(self, obs: np.ndarray | Mapping[str, np.ndarray], reward: float, terminated: bool,
              truncated: bool) -> None:
        _write_obs(self.obs, obs)
        self._reward[self.env_idx] = reward
        self._terminated[self.env_idx] = terminated
        self._truncated[self.env_idx] = truncated

    def write_final(self, obs: np.ndarray | Mapping[str, np.ndarray]) -> None:
        """The observation a truncated episode ended in (its value is added to the step's reward)."""
        _write_obs(self.final_obs, obs)

    def action(self) -> np.ndarray:
        return self._action[self.env_idx].copy()
