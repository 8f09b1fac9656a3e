"""Straggler preemption rules, as pure functions of counts and measured step times.

* DD-PPO (Wijmans et al. 2020): a rank stops collecting once `threshold` (60%) of the ranks have
  finished their rollout, but only after it has collected at least `min_fraction` (1/4) of T steps.
* VER (Wijmans et al. 2022, Eq. 1): choose the amount of experience S that maximises
  S / (Time(S) + LT) subject to S <= T * N * #ranks, where Time(S) comes from each env's mean step
  interval in the previous rollout and LT is the last learning time. The answer is returned as a
  rollout duration (a deadline every rank applies to its own collection).

`StepIntervals` keeps the per-env windowed mean step interval the VER rule needs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def ddppo_should_stop(
    ranks_done: int, world_size: int, steps_collected: int, max_steps: int, threshold: float, min_fraction: float
) -> bool:
    """DD-PPO's rule: stop once `threshold` of all ranks are done and `min_fraction` of T is collected."""
    if world_size <= 1:
        return False
    return ranks_done >= threshold * world_size and steps_collected >= min_fraction * max_steps


@dataclass(frozen=True)
class PreemptionPlan:
    rollout_time: float  # seconds after the rollout start at which every rank stops collecting
    expected_steps: int  # steps all ranks together are expected to collect by then
    score: float  # expected_steps / (rollout_time + learn_time), the quantity Eq. 1 maximises


def optimal_rollout_time(
    step_intervals: Sequence[np.ndarray], learn_time: float, max_steps_per_rank: int
) -> PreemptionPlan | None:
    """VER's optimal preemption (Eq. 1) from per-env mean step intervals, one array per rank.

    Env e of a rank with interval d_e has collected floor(t / d_e) steps at time t; a rank counts at
    most `max_steps_per_rank` (its T * N quota). The objective only grows at the moments some env
    finishes a step, so those moments (up to the time the slowest rank fills its quota) are the
    candidates. Returns None when some interval is unknown (no measurement yet).
    """
    if learn_time < 0 or max_steps_per_rank <= 0 or not step_intervals:
        return None
    per_rank_times = []
    for intervals in step_intervals:
        intervals = np.asarray(intervals, dtype=np.float64)
        if intervals.size == 0 or not np.all(np.isfinite(intervals)) or np.any(intervals <= 0):
            return None
        # the first `max_steps_per_rank` step-completion times of this rank, merged over its envs
        ks = np.arange(1, max_steps_per_rank + 1, dtype=np.float64)
        times = np.sort((ks[None, :] * intervals[:, None]).ravel())[:max_steps_per_rank]
        per_rank_times.append(times)
    horizon = max(times[-1] for times in per_rank_times)  # every rank has filled its quota
    candidates = np.unique(np.concatenate(per_rank_times))
    candidates = candidates[candidates <= horizon]
    steps = np.zeros(candidates.shape, dtype=np.int64)
    for times in per_rank_times:
        steps += np.searchsorted(times, candidates, side="right")  # already capped at the quota
    scores = steps / (candidates + learn_time)
    best = int(np.argmax(scores))
    return PreemptionPlan(float(candidates[best]), int(steps[best]), float(scores[best]))


class StepIntervals:
    """Windowed mean time between an env's consecutive experience steps (inference + simulation)."""

    def __init__(self, num_envs: int, window: int) -> None:
        self._windows = [deque(maxlen=window) for _ in range(num_envs)]

    def add(self, env_idx: int, seconds: float) -> None:
        self._windows[env_idx].append(seconds)

    def means(self) -> np.ndarray:
        """Mean interval per env; NaN for an env with no measurement yet."""
        return np.array([np.mean(w) if w else np.nan for w in self._windows], dtype=np.float64)
