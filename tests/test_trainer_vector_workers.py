"""Several envs per worker process (`trainer.envs_per_worker`): fewer processes, the same seeds, the
same deterministic rollouts and learning as one env per process, and a crash restarts all of the
worker's envs."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import torch
from collect_runs import collect_through_restart

from configs.compose import compose
from trainer.cli import make_gym_env
from trainer.collector import Collector
from trainer.diagnostic_envs import CountingEnv, faulty_counting_env, make_counting_env
from trainer.env_worker import split_envs
from trainer.inference import batch_limits
from trainer.networks import ActorCritic
from trainer.ppo import PPO
from trainer.rollout import Rollout


def test_envs_are_split_into_contiguous_blocks_of_at_most_k():
    assert [b.tolist() for b in split_envs(8, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [b.tolist() for b in split_envs(10, 4)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]  # remainder spread
    assert [b.tolist() for b in split_envs(3, 8)] == [[0, 1, 2]]
    assert len(split_envs(16, 1)) == 16
    with pytest.raises(ValueError, match="envs_per_worker"):
        split_envs(4, 0)


def test_min_batch_counts_whole_worker_answers():
    assert batch_limits(16, 1.5, 1.5, lock_step=False, envs_per_worker=1) == (10, 24)
    assert batch_limits(16, 1.5, 1.5, lock_step=False, envs_per_worker=8) == (8, 24)  # 2 workers: act on one
    assert batch_limits(16, 1.5, 1.5, lock_step=False, envs_per_worker=4) == (8, 24)  # 4 workers: two answers
    assert batch_limits(16, 1.5, 1.5, lock_step=True, envs_per_worker=8) == (16, 16)


def run_sync(envs_per_worker: int, updates: int = 3, num_envs: int = 8, num_steps: int = 16):
    """Deterministic sync training on CartPole; returns the rollouts, the final parameters and the
    worker process ids."""
    cfg = compose("train_rl", ["trainer=sync", "trainer.deterministic=true", f"trainer.num_envs={num_envs}",
                               f"trainer.num_steps={num_steps}", f"trainer.envs_per_worker={envs_per_worker}"])
    env_fn = functools.partial(make_gym_env, env_id="CartPole-v1")
    probe = env_fn(0)
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    ppo = PPO(ac, cfg.trainer.ppo, total_updates=updates, seed=0, max_seq_len=num_steps)
    collector = Collector(env_fn, probe.observation_space, probe.action_space, ac, cfg.trainer, seed=0)
    rollouts = []
    try:
        for _ in range(updates):
            rollouts.append(collector.collect(ppo.policy_version))
            ppo.update(rollouts[-1])
        pids = {w.proc.pid for w in collector.pool.workers}
    finally:
        collector.close()
        torch.use_deterministic_algorithms(was_deterministic)
    return rollouts, [p.detach().clone() for p in ac.parameters()], pids


def assert_same_rollout(a: Rollout, b: Rollout) -> None:
    for name in Rollout.row_fields():
        va, vb = getattr(a, name), getattr(b, name)
        if isinstance(va, dict):
            assert all(torch.equal(va[k], vb[k]) for k in va), name
        else:
            assert torch.equal(va, vb), name
    assert torch.equal(a.bootstrap_value, b.bootstrap_value)


def test_sync_rollouts_and_learning_do_not_depend_on_envs_per_worker():
    rollouts_1, params_1, pids_1 = run_sync(1)
    rollouts_4, params_4, pids_4 = run_sync(4)
    rollouts_3, params_3, pids_3 = run_sync(3)  # 8 envs in 3 workers of 3, 3 and 2
    assert (len(pids_1), len(pids_4), len(pids_3)) == (8, 2, 3)  # worker processes
    assert any(bool(r.dones.any()) for r in rollouts_1)  # episodes ended (and auto-reset) in between
    for other_rollouts, other_params in ((rollouts_4, params_4), (rollouts_3, params_3)):
        for a, b in zip(rollouts_1, other_rollouts, strict=True):
            assert_same_rollout(a, b)
        assert all(torch.equal(p, q) for p, q in zip(params_1, other_params, strict=True))


def test_ver_with_several_envs_per_worker_loses_no_step():
    num_envs, num_steps, episode_length = 6, 5, 4
    cfg = compose("train_rl", ["trainer.mode=ver", f"trainer.num_envs={num_envs}", f"trainer.num_steps={num_steps}",
                               "trainer.envs_per_worker=4"])  # workers of 3 and 3 envs
    env_fn = functools.partial(make_counting_env, episode_length=episode_length, step_delays=(0.0, 0.001, 0.003))
    probe = CountingEnv(0, episode_length)
    torch.manual_seed(0)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    collector = Collector(env_fn, probe.observation_space, probe.action_space, ac, cfg.trainer, seed=0)
    assert collector.pool.num_workers == 2
    try:
        rollouts = [collector.collect(k) for k in range(6)]
    finally:
        collector.close()
    for e in range(num_envs):
        obs = torch.cat([r.obs["obs"][r.env_ids == e] for r in rollouts])
        assert torch.all(obs[:, 0] == e)  # each env wrote its own row
        flat = obs[:, 1].long() * episode_length + obs[:, 2].long()
        assert flat.tolist() == list(range(len(flat)))  # consecutive: nothing lost or duplicated


@pytest.mark.parametrize("kind", ["exit", "hang"])
def test_a_crashed_worker_restarts_all_its_envs_and_drops_their_episodes(tmp_path: Path, kind: str):
    episode_length, fault_env, fault_step = 7, 1, 10
    cfg = compose("train_rl", ["trainer.mode=ver", "trainer.num_envs=4", "trainer.num_steps=5",
                               "trainer.envs_per_worker=2", "trainer.worker_timeout_s=0.5"])
    env_fn = functools.partial(faulty_counting_env, fault_env=fault_env, fault_step=fault_step, kind=kind,
                               marker=str(tmp_path / "fault_marker"), episode_length=episode_length)
    probe = CountingEnv(0)
    torch.manual_seed(0)
    ac = ActorCritic(probe.observation_space, probe.action_space, cfg.policy)
    collector = Collector(env_fn, probe.observation_space, probe.action_space, ac, cfg.trainer, seed=0)
    rollouts = collect_through_restart(collector, before=8, after=6)
    assert collector.total_restarts == 1  # one worker process, counted once
    for e in range(4):
        rows = [r.obs["obs"][r.env_ids == e] for r in rollouts]
        rollout_of_row = torch.cat([torch.full((len(x),), i) for i, x in enumerate(rows)])
        history = torch.cat(rows)
        episode, step = history[:, 1].long(), history[:, 2].long()
        starts = torch.nonzero((episode == 0) & (step == 0)).flatten()
        if e in (0, 1):  # the failed worker's envs: a fresh env instance begins again at episode 0
            assert len(starts) == 2
            restart_at = int(starts[1])
            flat = episode * episode_length + step
            before = flat[:restart_at]
            assert before.tolist() == list(range(restart_at))
            assert (flat[restart_at:] == torch.arange(len(flat) - restart_at)).all()
            # rows of the episodes in progress at the crash were learned only before the crash's rollout
            partial = episode[:restart_at] == episode[restart_at - 1]
            if step[restart_at - 1] != episode_length - 1:
                assert torch.all(rollout_of_row[:restart_at][partial] < rollout_of_row[restart_at])
        else:  # the other worker's envs ran on undisturbed
            assert len(starts) == 1
            flat = episode * episode_length + step
            assert flat.tolist() == list(range(len(flat)))
    assert np.all(collector.failures_in_row == 0)
