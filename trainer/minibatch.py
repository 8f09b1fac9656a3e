"""VER mini-batches: sequences in random order, cut into mini-batches with equal numbers of steps.

A *sequence* is a maximal run of consecutive rows of one env within one episode: sequences split
at rollout boundaries (an env's first and last row in the rollout) and at episode boundaries.
Sequences are shuffled, their rows concatenated, and the resulting list of S rows is cut into
`num_mini_batch` contiguous pieces of S // B or S // B + 1 rows. With `max_seq_len` (the trainer passes
T), longer sequences are cut into pieces of at most that many rows first: in VER a fast env can
collect far more than T steps in one rollout, and one such sequence makes the packed LSTM run that
many serial steps for the whole mini-batch. A sequence cut by a piece boundary
continues in the next piece as a new sequence that starts from the stored hidden state of its own
first row, `rollout.hidden[row]` (the state the collector fed to that row). Every sequence, split or
not, starts from the stored state of its own first row; habitat-lab instead reuses the state of the
env's earliest sequence in the mini-batch (reference notes 1.5), which we do not repeat.

Feed-forward policies need no sequences: `build_row_minibatches` cuts a random permutation of the
rows into `num_mini_batch` pieces (every row a sequence of length 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainer.rollout import Rollout


@dataclass
class MiniBatch:
    rows: torch.Tensor  # [M] long, rollout row indices, sequence after sequence, each in time order
    seq_lengths: torch.Tensor  # [num_seqs] long, sums to M
    seq_first_rows: torch.Tensor  # [num_seqs] long, rollout row of each sequence's first step

    def __len__(self) -> int:
        return int(self.rows.shape[0])


def find_sequences(rollout: Rollout) -> list[torch.Tensor]:
    """Row indices of every sequence (one env, one episode, consecutive rows), in env-then-time order."""
    env_ids = rollout.env_ids.long().cpu()
    order = torch.argsort(env_ids, stable=True)
    if order.numel() == 0:
        return []
    envs = env_ids[order]
    episodes = rollout.episode_ids.long().cpu()[order]
    starts = rollout.episode_start.bool().cpu()[order]
    dones = rollout.dones.bool().cpu()[order]
    new_seq = torch.ones_like(envs, dtype=torch.bool)
    new_seq[1:] = (envs[1:] != envs[:-1]) | (episodes[1:] != episodes[:-1]) | starts[1:] | dones[:-1]
    lengths = torch.diff(torch.nonzero(new_seq).flatten(), append=torch.tensor([order.numel()]))
    return list(torch.split(order, lengths.tolist()))


def partition_sizes(total: int, parts: int) -> list[int]:
    """`parts` sizes summing to `total` that differ by at most one (larger ones first)."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def build_minibatches(
    rollout: Rollout, num_mini_batch: int, generator: torch.Generator | None = None,
    max_seq_len: int | None = None,
) -> list[MiniBatch]:
    """One epoch's mini-batches: every row exactly once, `num_mini_batch` pieces of equal step counts,
    no sequence longer than `max_seq_len` rows (None: no limit)."""
    num_rows = len(rollout)
    if num_mini_batch < 1 or num_mini_batch > num_rows:
        raise ValueError(
            f"num_mini_batch must be between 1 and the rollout size {num_rows}, got {num_mini_batch}"
        )
    sequences = find_sequences(rollout)
    if max_seq_len is not None:
        if max_seq_len < 1:
            raise ValueError(f"max_seq_len must be at least 1, got {max_seq_len}")
        sequences = [piece for seq in sequences for piece in torch.split(seq, max_seq_len)]
    perm = torch.randperm(len(sequences), generator=generator)
    rows = torch.cat([sequences[i] for i in perm.tolist()])
    # Position p in `rows` starts a sequence if it starts a (shuffled) sequence or a mini-batch.
    seq_start = torch.zeros(num_rows, dtype=torch.bool)
    seq_start[torch.cumsum(torch.tensor([0] + [len(sequences[i]) for i in perm.tolist()][:-1]), 0)] = True

    batches = []
    begin = 0
    for size in partition_sizes(num_rows, num_mini_batch):
        piece = rows[begin : begin + size]
        starts = seq_start[begin : begin + size].clone()
        starts[0] = True
        start_pos = torch.nonzero(starts).flatten()
        lengths = torch.diff(start_pos, append=torch.tensor([size]))
        batches.append(MiniBatch(rows=piece, seq_lengths=lengths, seq_first_rows=piece[start_pos]))
        begin += size
    return batches


def build_row_minibatches(
    rollout: Rollout, num_mini_batch: int, generator: torch.Generator | None = None
) -> list[MiniBatch]:
    """One epoch's mini-batches for a feed-forward policy: rows sampled independently (a random
    permutation cut into `num_mini_batch` pieces of equal size, +-1)."""
    num_rows = len(rollout)
    if num_mini_batch < 1 or num_mini_batch > num_rows:
        raise ValueError(
            f"num_mini_batch must be between 1 and the rollout size {num_rows}, got {num_mini_batch}"
        )
    rows = torch.randperm(num_rows, generator=generator)
    return [
        MiniBatch(rows=piece, seq_lengths=torch.ones(len(piece), dtype=torch.long), seq_first_rows=piece)
        for piece in torch.split(rows, partition_sizes(num_rows, num_mini_batch))
    ]
