"""Behaviour cloning of an actor (feed-forward or recurrent) on (observation, expert action) rows: DAgger's learner step.

The trainer knows nothing about where the rows come from (`skills/imitate.py` labels a skill's states
with its scripted oracle). `DemoRows` aggregates rows over rounds (DAgger keeps every round's data);
`clone_behaviour` fits the policy to all of them (each `add` is one sequence, an episode: a recurrent
policy is fitted on whole sequences from a zero state, a feed-forward one on rows in random order):

- the observation normalisation statistics (`policy.obs_norm`) are recomputed from the rows, so a
  PPO fine-tune (`trainer.init_from`) starts with statistics of the states the policy visits;
- the action mean is fitted by mean squared error to the expert action, clipped to the Box (a tanh
  mean cannot reach +-1 exactly, so targets are clipped to +-`target_clip`);
- the state-independent log-std is set by maximum likelihood of the expert actions around the
  (detached) mean: the exploration noise a PPO fine-tune starts from is the imitation error.

Only the actor's path gets gradients (the shared visual encoder included; a recurrent policy shares its
LSTM with the critic, so there the critic's input moves too); the value head is untouched. Rows or
sequences are sampled in a seeded order, so the same rows, weights and seed give the same policy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import torch

from trainer.networks import ActorCritic


class DemoRows:
    """Observation dicts and expert actions, appended in chunks, concatenated on demand."""

    def __init__(self) -> None:
        self._obs: dict[str, list[np.ndarray]] = {}
        self._actions: list[np.ndarray] = []
        self.lengths: list[int] = []  # one per `add`: the sequences

    def __len__(self) -> int:
        return sum(self.lengths)

    def add(self, obs: Mapping[str, np.ndarray], actions: np.ndarray) -> None:
        """Append one sequence of N rows: `obs[k]` is `[N, ...]` for every key, `actions` `[N, A]`."""
        n = int(np.shape(actions)[0])
        if self._obs and set(obs) != set(self._obs):
            raise ValueError(f"rows have keys {sorted(obs)}, earlier rows {sorted(self._obs)}")
        for key, value in obs.items():
            if np.shape(value)[0] != n:
                raise ValueError(f"observation '{key}' has {np.shape(value)[0]} rows, actions {n}")
            self._obs.setdefault(key, []).append(np.asarray(value, dtype=np.float32))
        self._actions.append(np.asarray(actions, dtype=np.float32))
        self.lengths.append(n)

    def tensors(self) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Every row so far as `({key: [M, ...]}, [M, A])` float32 tensors."""
        if not self.lengths:
            raise ValueError("no demonstration rows")
        obs = {k: torch.from_numpy(np.concatenate(v)) for k, v in self._obs.items()}
        return obs, torch.from_numpy(np.concatenate(self._actions))


def reset_obs_normalization(actor_critic: ActorCritic, obs: Mapping[str, torch.Tensor]) -> None:
    """Replace the running observation statistics by those of `obs` (no-op without obs_norm)."""
    norm = actor_critic.obs_norm
    if norm is None:
        return
    norm.mean.zero_()
    norm.var.fill_(1.0)
    norm.count.zero_()
    actor_critic.update_obs_normalization(obs)


def clone_behaviour(actor_critic: ActorCritic, obs: Mapping[str, torch.Tensor], actions: torch.Tensor, *,
                    epochs: int, batch_size: int, lr: float, seed: int, lengths: Sequence[int] | None = None,
                    target_clip: float = 0.97) -> dict[str, float]:
    """Fit the actor of `actor_critic` (Box actions) to `actions` on `obs`, in place.

    A recurrent policy needs `lengths` (the rows' sequences, in order; `DemoRows.lengths`) and takes
    whole sequences per mini-batch, about `batch_size` rows of them. Returns the last epoch's mean
    squared error of the mean and the fitted log-std (mean over dims).
    """
    if actor_critic.is_discrete:
        raise ValueError("behaviour cloning needs Box actions")
    if epochs <= 0 or batch_size <= 0 or lr <= 0:
        raise ValueError(f"epochs, batch_size and lr must be > 0 (got {epochs}, {batch_size}, {lr})")
    rows = int(actions.shape[0])
    if actor_critic.is_recurrent and (lengths is None or sum(lengths) != rows):
        raise ValueError("a recurrent policy needs the rows' sequence lengths (summing to the number of rows)")
    low = torch.as_tensor(actor_critic.action_space.low, dtype=torch.float32)
    high = torch.as_tensor(actor_critic.action_space.high, dtype=torch.float32)
    targets = torch.clamp(actions, low, high).clamp(-target_clip, target_clip)
    reset_obs_normalization(actor_critic, obs)
    head = actor_critic.action_head
    mean_params = [p for name, p in actor_critic.named_parameters()
                   if not name.startswith(("critic.", "value_head.")) and name != "action_head.log_std"]
    optimizer = torch.optim.Adam([{"params": mean_params}, {"params": [head.log_std]}], lr=lr)
    generator = torch.Generator().manual_seed(int(seed))
    batches = _sequence_batches if actor_critic.is_recurrent else _row_batches
    actor_critic.train()
    mse = 0.0
    for _ in range(int(epochs)):
        total, count = 0.0, 0
        for idx, seq_lengths in batches(rows, lengths, int(batch_size), generator):
            batch = {k: v[idx] for k, v in obs.items()}
            hidden = actor_critic.initial_hidden(len(seq_lengths))
            dist = actor_critic.action_dist(batch, hidden, seq_lengths)
            err = (dist.mean - targets[idx]).pow(2)
            log_std = head.log_std.clamp(head.min_log_std, head.max_log_std)
            # Gaussian NLL of the targets around the detached mean: log-std -> log of the residual's RMS
            std_loss = (err.detach().mean(0) / (2 * torch.exp(2 * log_std)) + log_std).mean()
            optimizer.zero_grad()
            (err.mean() + std_loss).backward()
            optimizer.step()
            total += float(err.detach().sum())
            count += int(err.numel())
        mse = total / max(count, 1)
    actor_critic.eval()
    return {"mse": mse, "log_std": float(head.log_std.detach().mean())}


def _row_batches(rows: int, lengths: Sequence[int] | None, batch_size: int,
                 generator: torch.Generator) -> Iterator[tuple[torch.Tensor, list[int]]]:
    """Rows in random order, `batch_size` at a time (each row its own sequence of length 1)."""
    order = torch.randperm(rows, generator=generator)
    for start in range(0, rows, batch_size):
        idx = order[start : start + batch_size]
        yield idx, [1] * len(idx)


def _sequence_batches(rows: int, lengths: Sequence[int] | None, batch_size: int,
                      generator: torch.Generator) -> Iterator[tuple[torch.Tensor, list[int]]]:
    """Whole sequences in random order, as many as fill about `batch_size` rows per batch."""
    assert lengths is not None
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    order = torch.randperm(len(lengths), generator=generator).tolist()
    chosen: list[int] = []
    filled = 0
    for i, seq in enumerate(order):
        chosen.append(seq)
        filled += int(lengths[seq])
        if filled >= batch_size or i == len(order) - 1:
            idx = torch.cat([torch.arange(starts[j], starts[j] + lengths[j]) for j in chosen])
            yield idx, [int(lengths[j]) for j in chosen]
            chosen, filled = [], 0
