"""The collector's linear rollout storage (VER's layout): one slot per step, in the order actions were chosen.

Inference reserves slots for a batch and writes observation, action, log-prob, value, input
recurrent state, ids and policy version; the step's reward, done and truncated flags are written
into the same slots later, when the envs' next requests arrive (`set_results`). A slot whose reward
has not arrived is *in flight*. At the end of a rollout `build` hands the complete rows to learning
and `carry_over` moves the in-flight rows to the front, so they become the first rows of the next
rollout. `drop_episodes` removes the rows of episodes whose env worker failed.

The slots are one preallocated `Rollout` table (`self.table`), so moving and copying rows works on
every field at once.
"""

from __future__ import annotations

from dataclasses import replace

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

        def zeros(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros((capacity, *shape), dtype=dtype)

        self.table = Rollout(
            obs={k: zeros(*shape, dtype=dt) for k, (shape, dt) in obs_layout.items()},
            actions=zeros(*action_shape, dtype=action_dtype), log_probs=zeros(), values=zeros(), rewards=zeros(),
            dones=zeros(dtype=torch.bool), episode_start=zeros(dtype=torch.bool), hidden=zeros(*hidden_shape),
            env_ids=zeros(dtype=torch.long), episode_ids=zeros(dtype=torch.long), step_ids=zeros(dtype=torch.long),
            policy_version=zeros(dtype=torch.long), truncated=zeros(dtype=torch.bool),
            bootstrap_value=torch.zeros(0), num_envs=0, expected_steps_per_env=0.0,
        )
        self.complete = np.zeros(capacity, dtype=bool)  # reward and done have arrived
        self.size = 0
        # numpy views of the table (same memory): small per-batch writes are cheaper through numpy
        self._np = {name: t.numpy() for name, t in self.table.map_rows(lambda t: t).items() if name != "obs"}
        self._obs_np = {k: v.numpy() for k, v in self.table.obs.items()}

    def append(self, obs: dict[str, torch.Tensor], policy_version: int, **columns: torch.Tensor) -> np.ndarray:
        """Write one inference batch into the next free slots; returns the slot of each row.

        `columns`: actions, log_probs, values, hidden, episode_start, env_ids, episode_ids, step_ids.
        Rewards, dones and truncated flags start as zero until `set_results`.
        """
        count = int(columns["env_ids"].shape[0])
        if self.size + count > self.capacity:
            raise RuntimeError(f"rollout storage overflow: {self.size} + {count} > {self.capacity}")
        s = slice(self.size, self.size + count)
        for key, value in obs.items():
            self._obs_np[key][s] = value.numpy()
        for name, value in columns.items():
            self._np[name][s] = value.numpy()
        self._np["policy_version"][s] = policy_version
        self._np["rewards"][s] = 0.0
        self._np["dones"][s] = False
        self._np["truncated"][s] = False
        self.complete[s] = False
        self.size += count
        return np.arange(s.start, s.stop)

    def set_results(self, slots: np.ndarray, rewards: np.ndarray, dones: np.ndarray, truncated: np.ndarray) -> None:
        """The env answers of the rows at `slots` arrived (they are complete now)."""
        self._np["rewards"][slots] = rewards
        self._np["dones"][slots] = dones
        self._np["truncated"][slots] = truncated
        self.complete[slots] = True

    def drop_episodes(self, hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Remove the rows where `hit` (bool over the stored rows), compacting the buffer.

        Returns (the removed slots, `new_slot` with `new_slot[old] = new position` or -1 if removed).
        """
        n = self.size
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

        def move(t: torch.Tensor) -> torch.Tensor:
            t[:k] = t[src].clone()
            return t

        self.table.map_rows(move)
        self.complete[:k] = self.complete[slots]

    def build(self, bootstrap_value: torch.Tensor, num_envs: int, expected_steps_per_env: float) -> Rollout:
        """The complete rows in slot order (copies), as a `Rollout`."""
        rows = torch.from_numpy(np.nonzero(self.complete[: self.size])[0])
        return replace(self.table.select(rows),  # advanced indexing copies
                       bootstrap_value=bootstrap_value.clone().float(), num_envs=num_envs,
                       expected_steps_per_env=float(expected_steps_per_env))

    def carry_over(self, slots: np.ndarray) -> np.ndarray:
        """Keep only the rows at `slots` (in flight), moved to the front in order; returns their new slots."""
        slots = np.sort(np.asarray(slots, dtype=np.int64))
        if len(slots):
            self._move(slots)
        self.size = len(slots)
        return np.arange(len(slots))
