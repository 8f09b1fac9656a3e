"""Dynamic-batched inference in the main process, writing experience straight into the rollout storage.

Batching rule (habitat-lab's VER inference worker, one inference worker): act on every ready
request, at least `min_batch = max(int(N / min_factor), 1)` of them, at most
`max_batch = max(int(N * max_factor), 1)`; never wait for a fixed count: a smaller batch goes as
soon as `max_wait_s` has passed since the last batch, or at once when no other request can come.
Lock-step (sync) collection is the special case min = max = N with no timeout. With K envs per worker
process the minimum counts whole worker answers: `max(int(W / min_factor), 1) * K` envs for W workers
(so one answer of K envs need not wait for a second worker when W / factor < 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from trainer.networks import ActorCritic
from trainer.shared_buffers import TransferBuffers
from trainer.storage import RolloutStorage


def batch_limits(num_envs: int, min_factor: float, max_factor: float, lock_step: bool,
                 envs_per_worker: int = 1) -> tuple[int, int]:
    """(min_batch, max_batch) for N envs in workers of K envs; lock-step acts on all N at once."""
    if lock_step:
        return num_envs, num_envs
    num_workers = -(-num_envs // envs_per_worker)
    min_batch = min(max(int(num_workers / min_factor), 1) * envs_per_worker, num_envs)
    return min_batch, max(int(num_envs * max_factor), 1)


def should_act(num_ready: int, min_batch: int, num_incoming: int, waited_s: float, max_wait_s: float) -> bool:
    """Act now? `num_ready` requests wait; `num_incoming` more could still arrive for this batch."""
    if num_ready == 0:
        return False
    return num_ready >= min_batch or num_incoming == 0 or waited_s >= max_wait_s


def select_batch(ready_envs: np.ndarray, steps_in_rollout: np.ndarray, limit: int) -> np.ndarray:
    """Up to `limit` ready envs, those with the fewest steps in this rollout first (ties: lower index)."""
    ready_envs = np.asarray(ready_envs, dtype=np.int64)
    if len(ready_envs) <= limit:
        return np.sort(ready_envs)
    order = np.lexsort((ready_envs, steps_in_rollout[ready_envs]))
    return np.sort(ready_envs[order[:limit]])


@dataclass
class BatchResult:
    slots: np.ndarray  # storage slot of each row, in env order of `env_ids`
    hidden: torch.Tensor  # new recurrent state per env of the batch


class Inference:
    """Runs the actor-critic on a batch of env requests and records the rows."""

    def __init__(self, actor_critic: ActorCritic, buffers: TransferBuffers, storage: RolloutStorage,
                 device: torch.device) -> None:
        self.actor_critic = actor_critic
        self.buffers = buffers
        self.storage = storage
        self.device = device

    def batch_obs(self, env_ids: np.ndarray, final: bool = False) -> dict[str, torch.Tensor]:
        """Copies of the envs' observation rows (of their final observations if `final`)."""
        idx = torch.from_numpy(env_ids)
        source = self.buffers.final_obs if final else self.buffers.obs
        return {k: v[idx] for k, v in source.items()}  # copies: the workers may overwrite

    @torch.no_grad()
    def act(
        self,
        env_ids: np.ndarray,
        hidden: torch.Tensor,
        episode_start: np.ndarray,
        episode_ids: np.ndarray,
        step_ids: np.ndarray,
        policy_version: int,
        on_actions: Callable[[], None] | None = None,
    ) -> BatchResult:
        """Choose actions for `env_ids`, write them into the transfer buffers and the rows into storage.

        `hidden` is each env's state before this step; it is zeroed where `episode_start`.
        `on_actions` is called as soon as the actions are in the transfer buffers (the collector sends
        the step commands there, so that the envs step while the rows are being recorded).
        """
        obs = self.batch_obs(env_ids)
        start = torch.from_numpy(episode_start)
        hidden_in = hidden * (~start).to(hidden.dtype).view(-1, *([1] * (hidden.dim() - 1)))
        out = self.actor_critic.act(
            {k: v.to(self.device) for k, v in obs.items()}, hidden_in.to(self.device), start.to(self.device)
        )
        actions = out.action.cpu()
        self.buffers.action[torch.from_numpy(env_ids)] = actions.to(self.buffers.action.dtype).reshape(
            (len(env_ids), *self.buffers.action.shape[1:])
        )
        if on_actions is not None:
            on_actions()
        slots = self.storage.append(
            obs, policy_version, actions=actions, log_probs=out.log_prob.cpu(), values=out.value.cpu(),
            hidden=hidden_in, episode_start=start, env_ids=torch.from_numpy(env_ids),
            episode_ids=torch.from_numpy(episode_ids), step_ids=torch.from_numpy(step_ids),
        )
        return BatchResult(slots=slots, hidden=out.hidden.cpu())

    @torch.no_grad()
    def values(self, env_ids: np.ndarray, hidden: torch.Tensor, episode_start: np.ndarray,
               final: bool = False) -> torch.Tensor:
        """Value of the envs' current observations (the bootstrap value), without acting.

        `final`: of the observations their truncated episodes ended in (`TransferBuffers.final_obs`).
        """
        obs = self.batch_obs(env_ids, final)
        start = torch.from_numpy(episode_start)
        return self.actor_critic.get_value(
            {k: v.to(self.device) for k, v in obs.items()}, hidden.to(self.device), start.to(self.device)
        ).cpu()
