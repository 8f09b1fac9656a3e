"""Episodes drawn by failure per receptacle kind (skills/episode_balance.py): uniform at the start, toward
the kinds the policy fails once it has failed them, only ordinary starts counted, reproducible per seed,
and a bad value one line before any work."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from cli_errors import one_line_exit_2

from rearrange.env import RearrangeEnv
from rearrange.episodes import load_episodes, save_episodes
from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task
from skills.episode_balance import EpisodeBalanceConfig, EpisodeBalanceEnv, draw_weights, episode_kinds
from skills.train_cli import main as train_skill_main
from skills.train_cli import make_skill_env

PICK_EPISODES = Path(__file__).resolve().parents[1] / "checkpoints/pick_cpu_run/episodes/pick_train_200_seed0.json.gz"


def _pick_episodes(count: int = 30) -> list:
    return load_episodes(PICK_EPISODES)[:count]


def _balanced_pick_env(mix: float, floor: float = 0.05) -> EpisodeBalanceEnv:
    env = RearrangeEnv(make_skill_task(load_skill_config("pick")), _pick_episodes())
    return EpisodeBalanceEnv(env, EpisodeBalanceConfig(mix=mix, floor=floor))


def _set_rates(env: EpisodeBalanceEnv, **rates: float) -> None:
    """Rates as if each kind had been seen long enough for the bias correction to vanish."""
    env.average.update(rates)
    env.seen.update({k: 10**6 for k in rates})


def test_the_episodes_kinds_come_from_their_layouts():
    kinds = Counter(episode_kinds(load_episodes(PICK_EPISODES)))
    assert kinds == {"surface": 80, "fridge": 70, "drawer": 50}  # the stage-1 set of pick's two-hour recipe


def test_draws_are_uniform_until_a_kind_is_scored_then_lean_to_the_failed_kind():
    kinds = ["surface"] * 4 + ["fridge"] * 4 + ["drawer"] * 2
    start = draw_weights(kinds, {"surface": 0.0, "fridge": 0.0, "drawer": 0.0}, mix=0.5, floor=0.05)
    np.testing.assert_allclose(start, np.full(10, 0.1))
    p = draw_weights(kinds, {"surface": 0.9, "fridge": 0.2, "drawer": 0.9}, mix=0.5, floor=0.05)
    assert p.sum() == pytest.approx(1.0)
    fridge, surface = p[4:8].sum(), p[:4].sum()
    assert fridge > 0.55 and surface < 0.3  # shares 0.4 / 0.4 at the start
    assert surface >= 0.5 * 0.4  # a solved kind keeps (1 - mix) of its share
    assert draw_weights(kinds, {"fridge": 0.2}, mix=0.0, floor=0.05) == pytest.approx(np.full(10, 0.1))


def test_the_env_draws_only_the_failed_kind_when_mix_is_one_and_the_others_are_solved():
    env = _balanced_pick_env(mix=1.0, floor=0.0)
    try:
        _set_rates(env, surface=1.0, drawer=1.0, fridge=0.0)
        env.reset(seed=3)
        drawn = [env.kinds[env.unwrapped.episodes.index(env.unwrapped.current_episode)]]
        for _ in range(11):
            env.reset()
            drawn.append(env.kinds[env.unwrapped.episodes.index(env.unwrapped.current_episode)])
        assert set(drawn) == {"fridge"}
    finally:
        env.close()


def test_an_ended_episode_moves_its_kinds_rate_and_reports_the_rates():
    env = _balanced_pick_env(mix=0.5)
    try:
        _set_rates(env, surface=1.0, fridge=1.0, drawer=1.0)
        env.reset(seed=0)
        kind = env._kind
        env.unwrapped.task.max_steps = 2  # a failed episode after two steps (truncated)
        zero = np.zeros(env.action_space.shape, dtype=np.float32)
        _, _, terminated, truncated, info = env.step(zero)
        assert not (terminated or truncated) and "balance/fridge" not in info
        _, _, terminated, truncated, info = env.step(zero)
        assert truncated and info["success"] == 0.0
        assert env.success[kind] == pytest.approx(1.0 - env.cfg.rate)
        assert env.seen[kind] == 10**6 + 1
        assert info[f"balance/{kind}"] == pytest.approx(1.0 - env.cfg.rate)
        assert all(env.success[k] == 1.0 for k in env.success if k != kind)
    finally:
        env.close()


def test_oracle_starts_do_not_count(tmp_path):
    """An episode begun by the oracle (skills/oracle_start.py) says nothing about the policy's own start."""
    path = tmp_path / "eps.json.gz"
    save_episodes(path, _pick_episodes(6), kind="pick", split="train")
    cfg = load_skill_config("pick")
    cfg["oracle_start"] = {**cfg["oracle_start"], "prob": 1.0, "phases": ["raise"], "extra_steps": 0}
    cfg["episode_balance"] = {"mix": 0.5}
    env = make_skill_env(0, skill_cfg=cfg, sim_cfg=None, episodes_path=str(path))
    try:
        assert isinstance(env, EpisodeBalanceEnv)
        _set_rates(env, surface=1.0, fridge=1.0, drawer=1.0)
        _, info = env.reset(seed=0)
        assert info["oracle_start"] == 1.0
        env.unwrapped.task.max_steps = info["num_steps"] + 1
        _, _, _, truncated, info = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        assert truncated and info["oracle_start"] == 1.0
        assert env.success == {"surface": 1.0, "fridge": 1.0, "drawer": 1.0} and set(env.seen.values()) == {10**6}
    finally:
        env.close()


def test_the_same_seed_draws_the_same_episodes():
    def sequence() -> list[int]:
        env = _balanced_pick_env(mix=0.8)
        try:
            _set_rates(env, surface=0.9, fridge=0.1, drawer=0.5)
            env.reset(seed=7)
            out = [env.unwrapped.episodes.index(env.unwrapped.current_episode)]
            for _ in range(7):
                env.reset()
                out.append(env.unwrapped.episodes.index(env.unwrapped.current_episode))
            return out
        finally:
            env.close()

    assert sequence() == sequence()


def test_off_by_default_the_env_is_not_wrapped(tmp_path):
    path = tmp_path / "eps.json.gz"
    save_episodes(path, _pick_episodes(2), kind="pick", split="train")
    env = make_skill_env(0, skill_cfg=load_skill_config("pick"), sim_cfg=None, episodes_path=str(path))
    assert isinstance(env, RearrangeEnv)
    env.close()


def test_a_kind_seen_once_counts_its_outcome_not_the_averages_start():
    """Without the bias correction one success would read as a rate of `rate` (0.02): a kind met rarely
    (drawers in a short fine-tune) would look failed and be over-drawn for the whole run."""
    env = _balanced_pick_env(mix=0.5)
    try:
        env.average["drawer"], env.seen["drawer"] = env.cfg.rate * 1.0, 1  # one success
        env.average["fridge"], env.seen["fridge"] = 0.0, 1                  # one failure
        assert env.success == {"surface": 0.0, "fridge": 0.0, "drawer": pytest.approx(1.0)}
    finally:
        env.close()


@pytest.mark.parametrize("node, key", [({"mix": 1.5}, "mix"), ({"mix": "half"}, "mix"), ({"rate": 0}, "rate"),
                                       ({"rate": 2}, "rate"), ({"floor": -1}, "floor"), ({"mixx": 0.5}, "mixx")])
def test_bad_episode_balance_values_are_named(node, key):
    with pytest.raises(ValueError, match=f"skill.episode_balance.*{key}"):
        EpisodeBalanceConfig.from_node(node)


def test_train_skill_rejects_a_bad_episode_balance_before_any_work(capsys, tmp_path):
    line = one_line_exit_2(capsys, train_skill_main, ["--skill", "pick", "--out", str(tmp_path / "run"),
                                                      "skill.episode_balance.mix=2"])
    assert "skill.episode_balance.mix" in line
    assert not (tmp_path / "run" / "episodes").exists()
