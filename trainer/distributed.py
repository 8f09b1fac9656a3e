"""torch.distributed glue: init from torchrun's environment, gradient and statistics all-reduce,
rank-aware seeds and logs.

Launch with torchrun (single or multi node); each rank runs its own env workers and learner, and
gradients are averaged with an all-reduce after every backward pass (DD-PPO); learner statistics
(return moments, observation moments) are averaged the same way by `make_stats_sync`. Backend: nccl
when CUDA is available, gloo on CPU. Without torchrun's variables everything degrades to one rank.
`RolloutDoneCounter` is DD-PPO's key-value counter of ranks that finished collecting.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import os
import random
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from typing import TypeVar

import numpy as np
import torch
import torch.distributed as dist
from torch import nn


@dataclass(frozen=True)
class DistInfo:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device: str = "auto", timeout_s: float = 1800.0) -> DistInfo:
    """Join the process group described by torchrun's RANK/WORLD_SIZE/LOCAL_RANK/MASTER_* variables."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() if device == "auto" else device.startswith("cuda")
    if use_cuda:
        torch.cuda.set_device(local_rank)
        dev = torch.device("cuda", local_rank)
    else:
        dev = torch.device("cpu")
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group(
            backend="nccl" if use_cuda else "gloo", rank=rank, world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
    return DistInfo(rank=rank, world_size=world_size, local_rank=local_rank, device=dev)


def shutdown_distributed() -> None:
    """Leave the process group after a run every rank finished: wait for the others, then tear it
    down. A rank exiting with the group alive can abort at interpreter exit ("terminate called without
    an active exception") while its gloo threads are still running."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def make_grad_sync(world_size: int):
    """A `grad_sync(params)` for PPO: average the gradients of `params` across ranks in place."""

    def grad_sync(params: Iterable[nn.Parameter]) -> None:
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat /= world_size
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    return grad_sync


def make_stats_sync(world_size: int) -> Callable[[torch.Tensor], None]:
    """A `stats_sync(tensor)` for PPO and observation normalisation: average `tensor` across ranks in
    place. Any dtype the backend reduces (float32, float64) and any device: under nccl a CPU tensor
    travels through the rank's GPU and back."""

    def stats_sync(tensor: torch.Tensor) -> None:
        device = tensor.device
        if dist.get_backend() == "nccl" and device.type != "cuda":
            device = torch.device("cuda", torch.cuda.current_device())
        buffer = tensor.detach().to(device).contiguous()
        dist.all_reduce(buffer)
        buffer /= world_size
        tensor.copy_(buffer)

    return stats_sync


def broadcast_module(module: nn.Module, src: int = 0) -> None:
    """Make every rank's parameters and buffers equal to rank `src`'s."""
    if not dist.is_initialized():
        return
    for tensor in list(module.parameters()) + list(module.buffers()):
        dist.broadcast(tensor.data, src)


def all_reduce_sum(values: list[float], device: torch.device) -> list[float]:
    if not dist.is_initialized():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


Fields = TypeVar("Fields")


def all_reduce_sum_fields(values: Fields, device: torch.device) -> Fields:
    """A copy of the dataclass `values` with every (numeric) field summed over ranks, as floats."""
    names = [f.name for f in fields(values)]  # type: ignore[arg-type]
    summed = all_reduce_sum([float(getattr(values, n)) for n in names], device)
    return replace(values, **dict(zip(names, summed, strict=True)))  # type: ignore[type-var]


def all_reduce_max(value: float, device: torch.device) -> float:
    if not dist.is_initialized():
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def all_gather_objects(obj: object) -> list:
    """Every rank's `obj` (small picklable things: episode stats, per-env step times, RNG states)."""
    if not dist.is_initialized():
        return [obj]
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def parameter_checksum(module: nn.Module) -> str:
    """SHA-256 of all parameters' and buffers' bytes (value and observation normalisation statistics
    are buffers): equal on every rank iff they are identical."""
    h = hashlib.sha256()
    for t in list(module.parameters()) + list(module.buffers()):
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def rank_seed(seed: int, rank: int) -> int:
    """Seed of a rank's sampling RNGs (rank 0 keeps `seed`)."""
    return int(seed) + 1_000_003 * int(rank)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def setup_logging(rank: int) -> None:
    """Rank 0 logs INFO, other ranks only warnings; every line names its rank."""
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING,
        format=f"[rank {rank}] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )


class RolloutDoneCounter:
    """How many ranks have finished collecting rollout k (DD-PPO's TCPStore counter)."""

    def __init__(self) -> None:
        self._store = None
        if dist.is_initialized():
            self._store = dist.PrefixStore("rollout_done", dist.distributed_c10d._get_default_store())

    def mark_done(self, rollout_index: int) -> None:
        if self._store is not None:
            self._store.add(str(rollout_index), 1)

    def count(self, rollout_index: int) -> int:
        if self._store is None:
            return 0
        return int(self._store.add(str(rollout_index), 0))
