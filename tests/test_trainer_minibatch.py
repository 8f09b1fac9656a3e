"""VER mini-batches: coverage, equal sizes, sequence boundaries, per-sequence hidden state, packed == stepwise."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer.minibatch import build_minibatches, find_sequences, partition_sizes
from trainer.networks import ActorCritic
from trainer.rollout import Rollout

POLICY_CFG = {
    "visual": {"encoder": "cnn_small", "channels": [4], "kernels": [3], "strides": [2], "out_dim": 8},
    "vector_mlp": [16],
    "rnn": {"hidden_size": 8, "num_layers": 2},
    "action": {"mean_activation": "tanh", "log_std_init": -0.5, "min_log_std": -5.0, "max_log_std": 2.0},
}


def make_episodic_rollout(steps_per_env, episode_ends, first_step=None, hidden_size=8, num_layers=2, seed=0):
    """Interleaved env rows with episodes; every row gets a distinct hidden state (row i is filled with i)."""
    g = torch.Generator().manual_seed(seed)
    num_envs = len(steps_per_env)
    first_step = first_step or [0] * num_envs
    env_sequence = torch.cat([torch.full((n,), e) for e, n in enumerate(steps_per_env)])
    env_ids = env_sequence[torch.randperm(len(env_sequence), generator=g)]
    S = len(env_ids)
    dones = torch.zeros(S, dtype=torch.bool)
    starts = torch.zeros(S, dtype=torch.bool)
    episode_ids = torch.zeros(S, dtype=torch.long)
    step_ids = torch.zeros(S, dtype=torch.long)
    local, episode, step = [0] * num_envs, [0] * num_envs, list(first_step)
    for i, e in enumerate(env_ids.tolist()):
        starts[i] = step[e] == 0
        step_ids[i] = step[e]
        episode_ids[i] = episode[e] * num_envs + e
        dones[i] = local[e] in episode_ends[e]
        local[e] += 1
        step[e] += 1
        if dones[i]:
            episode[e] += 1
            step[e] = 0
    hidden = torch.arange(S, dtype=torch.float32).view(S, 1, 1).expand(S, 2 * num_layers, hidden_size).clone()
    hidden += 0.01 * torch.randn(S, 2 * num_layers, hidden_size, generator=g)
    return Rollout(
        obs={"x": torch.randn(S, 3, generator=g), "depth": torch.rand(S, 12, 12, 1, generator=g)},
        actions=torch.randn(S, 2, generator=g),
        log_probs=torch.randn(S, generator=g),
        values=torch.randn(S, generator=g),
        rewards=torch.randn(S, generator=g),
        dones=dones,
        episode_start=starts,
        hidden=hidden,
        env_ids=env_ids,
        episode_ids=episode_ids,
        step_ids=step_ids,
        policy_version=torch.zeros(S, dtype=torch.long),
        bootstrap_value=torch.zeros(num_envs),
        num_envs=num_envs,
        expected_steps_per_env=6.0,
    )


def rollout_for_tests(seed=0):
    # env 0 starts mid-episode, ends episodes at local steps 3 and 8; env 1 one long episode;
    # env 2 ends an episode on its last row; env 3 contributes 2 rows.
    return make_episodic_rollout(
        [11, 9, 5, 2], [{3, 8}, set(), {1, 4}, set()], first_step=[17, 0, 3, 40], seed=seed
    )


def expected_sequence_starts(r: Rollout) -> set[int]:
    """Rows that must start a sequence: env's first row in the rollout, episode starts."""
    starts = set()
    seen = set()
    for i in range(len(r)):
        e = int(r.env_ids[i])
        if e not in seen or bool(r.episode_start[i]):
            starts.add(i)
        seen.add(e)
    return starts


def test_find_sequences_splits_at_rollout_and_episode_boundaries():
    r = rollout_for_tests()
    seqs = find_sequences(r)
    assert sorted(int(s[0]) for s in seqs) == sorted(expected_sequence_starts(r))
    for s in seqs:
        assert len(set(r.env_ids[s].tolist())) == 1 and len(set(r.episode_ids[s].tolist())) == 1
        assert torch.all(torch.diff(r.step_ids[s]) == 1)  # consecutive steps, in time order
        assert not r.dones[s[:-1]].any()


@pytest.mark.parametrize("num_mini_batch", [1, 2, 3, 4])
def test_minibatches_cover_every_row_once_with_equal_sizes_and_own_hidden(num_mini_batch):
    r = rollout_for_tests()
    g = torch.Generator().manual_seed(0)
    for _epoch in range(3):
        batches = build_minibatches(r, num_mini_batch, g)
        assert len(batches) == num_mini_batch
        sizes = [len(b) for b in batches]
        assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(r)
        all_rows = torch.cat([b.rows for b in batches])
        assert sorted(all_rows.tolist()) == list(range(len(r)))  # every row exactly once
        must_start = expected_sequence_starts(r)
        for b in batches:
            assert int(b.seq_lengths.sum()) == len(b)
            pieces = torch.split(b.rows, b.seq_lengths.tolist())
            assert [int(p[0]) for p in pieces] == b.seq_first_rows.tolist()
            for p in pieces:
                assert len(set(r.episode_ids[p].tolist())) == 1 and torch.all(torch.diff(r.step_ids[p]) == 1)
                assert set(p[1:].tolist()).isdisjoint(must_start)  # no episode/rollout start inside
            # the initial hidden state of each sequence is the stored state of its own first row
            init = r.hidden[b.seq_first_rows]
            assert torch.equal(init[:, 0, 0].round(), b.seq_first_rows.float())


def test_minibatch_split_sequence_continues_from_its_own_row():
    # one env, one long episode, 2 mini-batches: the sequence is split at row 5
    r = make_episodic_rollout([10], [set()], first_step=[3])
    a, b = build_minibatches(r, 2, torch.Generator().manual_seed(0))
    assert a.rows.tolist() == list(range(5)) and b.rows.tolist() == list(range(5, 10))
    assert b.seq_first_rows.tolist() == [5]
    assert partition_sizes(10, 3) == [4, 3, 3]


def test_long_sequences_are_cut_at_max_seq_len_and_restart_from_their_own_rows():
    # one env that ran 23 steps of one episode (a fast env in VER with T = 8)
    r = make_episodic_rollout([23], [set()])
    (b,) = build_minibatches(r, 1, torch.Generator().manual_seed(0), max_seq_len=8)
    assert sorted(b.seq_lengths.tolist()) == [7, 8, 8]
    assert sorted(b.seq_first_rows.tolist()) == [0, 8, 16]
    (whole,) = build_minibatches(r, 1, torch.Generator().manual_seed(0))
    assert whole.seq_lengths.tolist() == [23]
    with pytest.raises(ValueError, match="max_seq_len"):
        build_minibatches(r, 1, max_seq_len=0)


def test_packed_evaluation_equals_stepwise_evaluation():
    torch.manual_seed(0)
    obs_space = gym.spaces.Dict(
        {"x": gym.spaces.Box(-1, 1, (3,), np.float32), "depth": gym.spaces.Box(0, 1, (12, 12, 1), np.float32)}
    )
    ac = ActorCritic(obs_space, gym.spaces.Box(-1, 1, (2,), np.float32), POLICY_CFG)
    r = rollout_for_tests(seed=2)
    r.hidden = 0.3 * torch.randn_like(r.hidden)
    for b in build_minibatches(r, 3, torch.Generator().manual_seed(1)):
        obs = {k: v[b.rows] for k, v in r.obs.items()}
        packed = ac.evaluate(obs, r.actions[b.rows], r.hidden[b.seq_first_rows], b.seq_lengths)
        log_probs, values = [], []
        for first, piece in zip(
            b.seq_first_rows.tolist(), torch.split(b.rows, b.seq_lengths.tolist()), strict=True
        ):
            hidden = r.hidden[first : first + 1]
            for row in piece.tolist():
                out, hidden = ac._step(
                    {k: v[row : row + 1] for k, v in r.obs.items()}, hidden, torch.tensor([False])
                )
                dist = ac.action_head(out)
                log_probs.append(dist.log_prob(r.actions[row : row + 1]))
                values.append(ac.value(out))
        torch.testing.assert_close(packed.log_prob, torch.cat(log_probs), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(packed.value, torch.cat(values), rtol=1e-5, atol=1e-5)


def test_importance_weights_are_truncated_expected_over_actual():
    r = make_episodic_rollout([12, 3, 6], [set(), set(), set()])  # T = 6
    w = r.importance_weights()
    expected = torch.tensor([0.5, 1.0, 1.0])[r.env_ids]  # min(1, 6/12), min(1, 6/3) = 1, 6/6
    torch.testing.assert_close(w, expected)
