"""Experience collection: no step lost or duplicated (with in-flight carry-over), per-mode step counts,
dynamic batching limits, bootstrap values. Uses `CountingEnv`, which writes (env, episode, step) into
its observations and pays a reward that names the step that earned it."""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
import torch

from configs.compose import compose
from trainer.collector import Collector
from trainer.diagnostic_envs import CountingEnv, make_counting_env, reward_code
from trainer.inference import batch_limits, select_batch, should_act
from trainer.networks import ActorCritic
from trainer.rollout import Rollout

EPISODE_LENGTH = 5
DELAYS = (0.0, 0.002, 0.006, 0.02)  # env 3 is ten times slower than env 1


def make_collector(mode: str, num_envs: int = 4, num_steps: int = 6, delays=DELAYS, **overrides):
    cfg = compose("train_rl", [f"trainer.mode={mode}", f"trainer.num_envs={num_envs}",
                               f"trainer.num_steps={num_steps}", *[f"trainer.{k}={v}" for k, v in overrides.items()]])
    env_fn = functools.partial(make_counting_env, episode_length=EPISODE_LENGTH, step_delays=delays)
    probe = CountingEnv(0, EPISODE_LENGTH)
    torch.manual_seed(0)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    return Collector(env_fn, probe.observation_space, probe.action_space, ac, cfg.trainer, seed=0)


def collect(collector: Collector, rollouts: int):
    out = []
    try:
        for k in range(rollouts):
            out.append((collector.collect(k), collector.last_stats))
    finally:
        collector.close()
    return out


def check_rows_are_consecutive(rollouts, num_envs: int) -> dict[int, int]:
    """Every env's rows over all rollouts are its steps 0,1,...,L-1 of episode 0, then episode 1, ...

    Returns the number of rows per env. Also checks rewards, dones, ids and episode starts per row.
    """
    counts = {}
    for e in range(num_envs):
        obs = torch.cat([r.obs["obs"][r.env_ids == e] for r, _ in rollouts])
        rewards = torch.cat([r.rewards[r.env_ids == e] for r, _ in rollouts])
        dones = torch.cat([r.dones[r.env_ids == e] for r, _ in rollouts])
        starts = torch.cat([r.episode_start[r.env_ids == e] for r, _ in rollouts])
        step_ids = torch.cat([r.step_ids[r.env_ids == e] for r, _ in rollouts])
        episode_ids = torch.cat([r.episode_ids[r.env_ids == e] for r, _ in rollouts])
        assert torch.all(obs[:, 0] == e)
        episode, step = obs[:, 1].long(), obs[:, 2].long()
        flat = episode * EPISODE_LENGTH + step  # position in the env's whole history
        assert flat.tolist() == list(range(len(flat))), f"env {e}: steps lost, duplicated or out of order"
        expected_rewards = [reward_code(int(ep), int(st)) for ep, st in zip(episode, step, strict=True)]
        assert rewards.tolist() == expected_rewards, f"env {e}: a reward landed in the wrong row"
        assert dones.tolist() == (step == EPISODE_LENGTH - 1).tolist()
        assert starts.tolist() == (step == 0).tolist()
        assert step_ids.tolist() == step.tolist()
        # collector episode ids change exactly when the env's own episode counter changes
        assert torch.equal(torch.diff(episode_ids) != 0, torch.diff(episode) != 0)
        counts[e] = len(flat)
    return counts


def check_bootstrap_values(rollouts, num_envs: int) -> None:
    """Without learning in between, an env's bootstrap value equals the value of its next row."""
    for (r, _), (nxt, _) in zip(rollouts[:-1], rollouts[1:], strict=True):
        for e in range(num_envs):
            rows = torch.nonzero(r.env_ids == e).flatten()
            next_rows = torch.nonzero(nxt.env_ids == e).flatten()
            if len(rows) == 0 or len(next_rows) == 0:
                continue
            if r.dones[rows[-1]]:
                assert r.bootstrap_value[e] == 0.0
            else:
                assert r.bootstrap_value[e].item() == pytest.approx(nxt.values[next_rows[0]].item(), abs=1e-5)


@pytest.mark.parametrize("envs_per_worker", [1, 2])
def test_ver_loses_and_duplicates_no_step_across_rollouts(envs_per_worker):
    num_envs, num_steps, rollouts = 4, 6, 8
    results = collect(make_collector("ver", num_envs, num_steps, envs_per_worker=envs_per_worker), rollouts)
    counts = check_rows_are_consecutive(results, num_envs)
    check_bootstrap_values(results, num_envs)
    # variable experience: the fast env contributed clearly more than the slow one
    assert counts[0] > 2 * counts[3]
    # in-flight steps were carried from one rollout into the next
    assert sum(stats.carried_in for _, stats in results) > 0
    # T x N new actions per rollout: rows learned = carried in + T*N - carried out
    for rollout, stats in results:
        assert len(rollout) == stats.carried_in + num_steps * num_envs - stats.carried_out
        assert torch.all(rollout.policy_version <= rollout.policy_version.max())
    # importance weights: min(1, T / n_e)
    rollout = results[-1][0]
    per_env = rollout.steps_per_env().float()
    expected = torch.clamp(num_steps / per_env, max=1.0)[rollout.env_ids]
    assert torch.allclose(rollout.importance_weights(), expected)


@pytest.mark.parametrize("mode", ["nover", "sync"])
def test_fixed_modes_collect_exactly_T_per_env(mode):
    num_envs, num_steps = 4, 6
    results = collect(make_collector(mode, num_envs, num_steps, delays=(0.0, 0.001, 0.003, 0.006)), 4)
    for rollout, stats in results:
        assert rollout.steps_per_env().tolist() == [num_steps] * num_envs
        assert stats.carried_in == 0 and stats.carried_out == 0
    check_rows_are_consecutive(results, num_envs)
    check_bootstrap_values(results, num_envs)
    if mode == "sync":  # lock-step: every inference batch holds all N envs
        assert all(s.batch_size_min == s.batch_size_max == num_envs for _, s in results)


def test_batch_limits_follow_habitat_factors():
    assert batch_limits(16, 1.5, 1.5, lock_step=False) == (10, 24)
    assert batch_limits(18, 1.5, 1.5, lock_step=False) == (12, 27)
    assert batch_limits(1, 1.5, 1.5, lock_step=False) == (1, 1)
    assert batch_limits(8, 1.5, 1.5, lock_step=True) == (8, 8)


def test_should_act_never_waits_for_a_fixed_count():
    assert not should_act(0, 4, 3, waited_s=1.0, max_wait_s=0.01)  # nothing ready
    assert should_act(4, 4, 3, waited_s=0.0, max_wait_s=0.01)  # min reached
    assert not should_act(2, 4, 3, waited_s=0.0, max_wait_s=0.01)  # below min, more coming, no timeout
    assert should_act(2, 4, 3, waited_s=0.02, max_wait_s=0.01)  # short wait passed
    assert should_act(2, 4, 0, waited_s=0.0, max_wait_s=0.01)  # nobody else can arrive
    assert not should_act(7, 8, 1, waited_s=10.0, max_wait_s=float("inf"))  # lock-step waits for all


def test_select_batch_serves_slow_envs_first_and_respects_max():
    steps = np.array([5, 1, 3, 0, 9, 2])
    chosen = select_batch(np.array([0, 1, 2, 3, 4, 5]), steps, limit=3)
    assert chosen.tolist() == [1, 3, 5]
    assert len(select_batch(np.arange(6), steps, limit=10)) == 6


@pytest.mark.parametrize("envs_per_worker", [1, 6])
def test_collector_batches_stay_within_max(envs_per_worker):
    # with 6 envs in one worker, its answer of 6 envs is acted on in two batches of 3: the second
    # command queues behind the first in the worker's pipe
    collector = make_collector("ver", num_envs=6, num_steps=4, delays=(0.0,), max_batch_factor=0.5,
                               envs_per_worker=envs_per_worker)
    assert collector.max_batch == 3
    results = collect(collector, 3)
    assert all(s.batch_size_min >= 1 and s.batch_size_max <= 3 for _, s in results)
    assert all(len(r) > 0 for r, _ in results)
    check_rows_are_consecutive(results, 6)


def test_collector_batches_reach_min_unless_the_quota_ends_the_rollout():
    # with a very long wait, a batch below the minimum can only be the rollout's last (quota-limited) one
    collector = make_collector("ver", num_envs=6, num_steps=5, delays=(0.0, 0.003), max_batch_wait_s=60)
    assert (collector.min_batch, collector.max_batch) == (4, 9)
    for _, stats in collect(collector, 4):
        assert all(size >= 4 for size in stats.batch_sizes[:-1]), stats.batch_sizes
        assert sum(stats.batch_sizes) == 30


def test_auto_batch_wait_is_half_the_mean_env_step_time():
    collector = make_collector("ver", num_envs=4, num_steps=8, delays=(0.02,), max_batch_wait_s="auto")
    assert collector.auto_wait and collector.max_wait_s == 0.01  # until step times are known
    collect(collector, 2)
    # exactly half the mean of the step times it measured, steps only (each sleeps 20 ms; the first
    # answers, to the workers' resets, are fast and used to pull the mean under 20 ms); no wall-clock
    # ceiling, which a loaded machine stretches
    times = list(collector._env_step_times)
    assert len(times) >= 4 * 8 and min(times) >= 0.02
    assert collector.max_wait_s == pytest.approx(0.5 * sum(times) / len(times))
    assert collector.max_wait_s >= 0.01


def test_auto_batch_wait_ignores_the_learning_phase_between_rollouts(monkeypatch):
    # Steps carried over a rollout boundary are answered while the learner runs; only the env's own
    # step time may count. The learning phase is simulated by moving the main process's clock on by
    # 1000 s between two rollouts (the workers' clocks are their own), so no test time is spent.
    collector = make_collector("ver", num_envs=4, num_steps=8, delays=(0.02,), max_batch_wait_s="auto")
    offset = [0.0]
    real_monotonic = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real_monotonic() + offset[0])
    try:
        collector.collect(0)
        offset[0] += 1000.0  # "learning"
        collector.collect(1)
        carried = collector.last_stats.carried_in
    finally:
        collector.close()
    assert carried > 0  # some steps were in flight across the simulated learning phase
    assert max(collector._env_step_times) < 1000.0
    assert collector.max_wait_s < 500.0
    assert collector.total_restarts == 0  # nor did the pause look like a hang (learning > worker_timeout_s)


def test_bad_batch_wait_is_a_clear_error():
    with pytest.raises(ValueError, match="max_batch_wait_s must be a number of seconds or 'auto'"):
        make_collector("ver", max_batch_wait_s="soon")


def test_rollout_select_and_cat_cover_every_field():
    # every per-row field (found through dataclasses.fields) is selected and concatenated, so a field
    # added to Rollout later cannot be forgotten by fill_from_previous or the storage
    a = make_collector("sync", num_envs=2, num_steps=3, delays=(0.0,))
    try:
        r = a.collect(0)
    finally:
        a.close()
    assert len(Rollout.row_fields()) == 13 and "truncated" in Rollout.row_fields()
    first = r.select(torch.arange(2))
    joined = Rollout.cat(r, first)
    assert len(joined) == len(r) + 2 and joined.num_envs == 4
    assert torch.equal(joined.env_ids[len(r):], r.env_ids[:2] + 2)  # the second part's envs are new envs
    assert torch.equal(joined.bootstrap_value, torch.cat([r.bootstrap_value, r.bootstrap_value]))
    back = joined.select(slice(0, len(r)))
    for name in Rollout.row_fields():
        x, y = getattr(back, name), getattr(r, name)
        assert all(torch.equal(x[k], y[k]) for k in x) if isinstance(x, dict) else torch.equal(x, y), name
