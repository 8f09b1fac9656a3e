"""The collector's linear rollout storage (VER's layout): one slot per step, in the order actions were chosen.

Inference reserves slots for a batch and writes observation, action, log-prob, value, input
recurrent state, ids and policy version; the step's reward and done are written into the same slot
later, when the env's next request arrives (`set_result`). A slot whose reward has not arrived is
*in flight*. At the end of a rollout `build` hands the complete rows to learning and `carry_over`
moves the in-flight rows to the front, so they become the first rows of the next rollout.
`drop_episode` removes the rows of an episode whose env worker failed.
"""

from __future__ import annotations

import numpy as np
import torch

from trainer.rollout import Rollout


class RolloutStorage:
    def __init__(
        self,
        obs_layout: dict[str, tuple[tuple[int, ...], torch.dtype]],
        action_shape: tuple[int, ...],
        action_dtype: torch.dtype,
        hidden_shape: tuple[int, ...],
        capacity: int,
    ) -> None:
        self.capacity = capacity
        self.obs = {k: torch.zeros((capacity, *shape), dtype=dt) for k, (shape, dt) in obs_layout.items()}
        self.actions = torch.zeros((capacity, *action_shape), dtype=action_dtype)
        self.log_probs = torch.zeros(capacity)
        self.values = torch.zeros(capacity)
        self.rewards = torch.zeros(capacity)
        self.dones = torch.zeros(capacity, dtype=torch.bool)
        self.episode_start = torch.zeros(capacity, dtype=torch.bool)
        self.hidden = torch.zeros((capacity, *hidden_shape))
        self.env_ids = torch.zeros(capacity, dtype=torch.long)
        self.episode_ids = torch.zeros(capacity, dtype=torch.long)
        self.step_ids = torch.zeros(capacity, dtype=torch.long)
        self.policy_version = torch.zeros(capacity, dtype=torch.long)
        self.complete = np.zeros(capacity, dtype=bool)  # reward and done have arrived
        self.size = 0

    def append(
        self,
        obs: dict[str, torch.Tensor],
        actions: torch.Tensor,
        log_probs: torch.Tensor,
        values: torch.Tensor,
        hidden: torch.Tensor,
        episode_start: torch.Tensor,
        env_ids: torch.Tensor,
        episode_ids: torch.Tensor,
        step_ids: torch.Tensor,
        policy_version: int,
    ) -> np.ndarray:
        """Write one inference batch into the next free slots; returns the slot of each row."""
        count = int(env_ids.shape[0])
        if self.size + count > self.capacity:
            raise RuntimeError(f"rollout storage overflow: {self.size} + {count} > {self.capacity}")
        s = slice(self.size, self.size + count)
        for key, value in obs.items():
            self.obs[key][s] = value
        self.actions[s] = actions
        self.log_probs[s] = log_probs
        self.values[s] = values
        self.hidden[s] = hidden
        self.episode_start[s] = episode_start
        self.env_ids[s] = env_ids
        self.episode_ids[s] = episode_ids
        self.step_ids[s] = step_ids
        self.policy_version[s] = policy_version
        self.rewards[s] = 0.0
        self.dones[s] = False
        self.complete[s] = False
        self.size += count
        return np.arange(s.start, s.stop)

    def set_result(self, slot: int, reward: float, done: bool) -> None:
        self.rewards[slot] = reward
        self.dones[slot] = done
        self.complete[slot] = True

    def drop_episode(self, env_idx: int, episode_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Remove every stored row of one (env, episode), compacting the buffer.

        Returns (the removed slots, `new_slot` with `new_slot[old] = new position` or -1 if removed).
        """
        n = self.size
        hit = (self.env_ids[:n].numpy() == env_idx) & (self.episode_ids[:n].numpy() == episode_id)
        removed = np.nonzero(hit)[0]
        keep = np.nonzero(~hit)[0]
        new_slot = np.full(n, -1, dtype=np.int64)
        new_slot[keep] = np.arange(len(keep))
        if len(removed):
            self._move(keep)
            self.size = len(keep)
        return removed, new_slot

    def _move(self, slots: np.ndarray) -> None:
        """Rows at `slots` (ascending) become rows 0..len(slots)-1."""
        k = len(slots)
        src = torch.from_numpy(slots)
        for tensor in (*self.obs.values(), self.actions, self.log_probs, self.values, self.rewards, self.dones,
                       self.episode_start, self.hidden, self.env_ids, self.episode_ids, self.step_ids,
                       self.policy_version):
            tensor[:k] = tensor[src].clone()
        self.complete[:k] = self.complete[slots]

    def build(self, bootstrap_value: torch.Tensor, num_envs: int, expected_steps_per_env: float) -> Rollout:
        """The complete rows in slot order (copies), as a `Rollout`."""
        n = self.size
        rows = torch.from_numpy(np.nonzero(self.complete[:n])[0])
        return Rollout(
            obs={k: v[rows].clone() for k, v in self.obs.items()},
            actions=self.actions[rows].clone(),
            log_probs=self.log_probs[rows].clone(),
            values=self.values[rows].clone(),
            rewards=self.rewards[rows].clone(),
            dones=self.dones[rows].clone(),
            episode_start=self.episode_start[rows].clone(),
            hidden=self.hidden[rows].clone(),
            env_ids=self.env_ids[rows].clone(),
            episode_ids=self.episode_ids[rows].clone(),
            step_ids=self.step_ids[rows].clone(),
            policy_version=self.policy_version[rows].clone(),
            bootstrap_value=bootstrap_value.clone().float(),
            num_envs=num_envs,
            expected_steps_per_env=float(expected_steps_per_env),
        )

    def carry_over(self, slots: np.ndarray) -> np.ndarray:
        """Keep only the rows at `slots` (in flight), moved to the front in order; returns their new slots."""
        slots = np.sort(np.asarray(slots, dtype=np.int64))
        if len(slots):
            self._move(slots)
        self.size = len(slots)
        return np.arange(len(slots))
