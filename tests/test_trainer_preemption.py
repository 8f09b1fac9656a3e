"""Straggler preemption rules on simulated step times, and filling a preempted rollout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainer.collector import fill_from_previous
from trainer.gae import compute_gae
from trainer.minibatch import build_minibatches
from trainer.preemption import StepIntervals, ddppo_should_stop, optimal_rollout_time
from trainer.rollout import Rollout


def simulate_ddppo(step_times: list[float], num_steps: int, threshold: float = 0.6,
                   min_fraction: float = 0.25) -> list[int]:
    """Lock-step ranks with constant per-step times; returns the steps each rank collected."""
    world = len(step_times)
    finish = [num_steps * d for d in step_times]
    steps = []
    for d in step_times:
        collected = 0
        while collected < num_steps:
            now = collected * d
            ranks_done = sum(f <= now for f in finish)
            if ddppo_should_stop(ranks_done, world, collected, num_steps, threshold, min_fraction):
                break
            collected += 1
        steps.append(collected)
    return steps


def test_ddppo_rule_preempts_stragglers_after_60_percent():
    # 5 ranks: once 3 of 5 (60%) are done (t = 110), the two slower ones stop
    steps = simulate_ddppo([1.0, 1.0, 1.1, 1.2, 4.0], num_steps=100)
    assert steps == [100, 100, 100, 92, 28]
    # an extreme straggler still collects at least a quarter of T
    assert simulate_ddppo([1.0, 1.0, 1.0, 1.0, 100.0], num_steps=100)[4] == 25
    # equal ranks all finish
    assert simulate_ddppo([1.0] * 4, num_steps=50) == [50] * 4


def test_ddppo_rule_basic_cases():
    assert not ddppo_should_stop(0, 1, 100, 100, 0.6, 0.25)  # one rank: never
    assert not ddppo_should_stop(2, 5, 100, 100, 0.6, 0.25)  # 40% done
    assert ddppo_should_stop(3, 5, 25, 100, 0.6, 0.25)
    assert not ddppo_should_stop(3, 5, 24, 100, 0.6, 0.25)  # below the 1/4 minimum


def test_ver_rule_collects_everything_with_equal_ranks():
    intervals = [np.full(4, 0.01), np.full(4, 0.01)]
    plan = optimal_rollout_time(intervals, learn_time=0.5, max_steps_per_rank=40)
    assert plan.expected_steps == 80
    assert plan.rollout_time == pytest.approx(0.1)


def test_ver_rule_preempts_a_straggler_rank_when_learning_is_short():
    fast, slow = np.full(4, 0.01), np.full(4, 0.04)  # rank 1 is 4x slower
    plan = optimal_rollout_time([fast, slow], learn_time=0.01, max_steps_per_rank=40)
    # at 0.08 s: fast rank 32 + slow rank 8 steps = 40 in 0.09 s, better than all 80 in 0.41 s
    assert plan.rollout_time == pytest.approx(0.08)
    assert plan.expected_steps == 40
    assert plan.score == pytest.approx(40 / 0.09)
    assert plan.score > 80 / 0.41


def test_ver_rule_waits_for_the_straggler_when_learning_dominates():
    fast, slow = np.full(4, 0.01), np.full(4, 0.04)
    plan = optimal_rollout_time([fast, slow], learn_time=10.0, max_steps_per_rank=40)
    assert plan.expected_steps == 80 and plan.rollout_time == pytest.approx(0.4)


def test_ver_rule_matches_brute_force_on_random_step_times():
    rng = np.random.default_rng(0)
    for _ in range(20):
        intervals = [rng.uniform(0.005, 0.05, size=3) for _ in range(3)]
        learn_time = float(rng.uniform(0.0, 0.5))
        cap = 12
        plan = optimal_rollout_time(intervals, learn_time, cap)
        t = np.linspace(1e-4, 2.0, 40001)
        steps = sum(np.minimum(np.floor(t[:, None] / iv[None, :] + 1e-12).sum(axis=1), cap) for iv in intervals)
        best = float(np.max(steps / (t + learn_time)))
        assert plan.score >= best * 0.999
        assert plan.expected_steps <= cap * 3


def test_ver_rule_needs_measurements():
    assert optimal_rollout_time([np.array([0.01, np.nan])], 0.1, 10) is None
    assert optimal_rollout_time([], 0.1, 10) is None


def test_step_intervals_windowed_mean():
    si = StepIntervals(2, window=3)
    for v in (1.0, 2.0, 3.0, 4.0):
        si.add(0, v)
    means = si.means()
    assert means[0] == pytest.approx(3.0) and np.isnan(means[1])


def _rollout(num_envs: int, per_env: list[int], version: int) -> Rollout:
    env_ids = torch.cat([torch.full((n,), e) for e, n in enumerate(per_env)])
    s = len(env_ids)
    return Rollout(
        obs={"obs": torch.randn(s, 3)}, actions=torch.zeros(s, dtype=torch.long), log_probs=torch.zeros(s),
        values=torch.randn(s), rewards=torch.ones(s), dones=torch.zeros(s, dtype=torch.bool),
        episode_start=torch.zeros(s, dtype=torch.bool), hidden=torch.zeros(s, 2, 8), env_ids=env_ids,
        episode_ids=env_ids.clone(), step_ids=torch.cat([torch.arange(n) for n in per_env]),
        policy_version=torch.full((s,), version), bootstrap_value=torch.arange(num_envs, dtype=torch.float32),
        num_envs=num_envs, expected_steps_per_env=4.0,
    )


def test_fill_from_previous_tops_up_to_the_full_batch():
    previous = _rollout(2, [4, 4], version=0)
    preempted = _rollout(2, [3, 1], version=1)
    filled = fill_from_previous(preempted, previous, target_rows=8)
    assert len(filled) == 8 and filled.num_envs == 4
    # the added rows are the previous rollout's newest rows, as separate envs 2 and 3, stale version
    assert filled.env_ids[4:].tolist() == [3, 3, 3, 3]
    assert torch.equal(filled.values[4:], previous.values[4:])
    assert filled.policy_version[4:].tolist() == [0] * 4
    assert filled.bootstrap_value.tolist() == [0.0, 1.0, 0.0, 1.0]
    # learning code accepts it
    advantages, _ = compute_gae(filled, 0.99, 0.95)
    assert advantages.shape == (8,)
    assert sum(len(mb) for mb in build_minibatches(filled, 2)) == 8
    # nothing to fill: unchanged
    assert fill_from_previous(previous, preempted, target_rows=8) is previous
    assert fill_from_previous(preempted, None, target_rows=8) is preempted
