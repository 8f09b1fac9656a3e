"""Benchmark (not a test): PPO with VER collection on HalfCheetah-v5 for 1M steps.

    pip install "gymnasium[mujoco]"        # or: pip install -e ".[mujoco-bench]"
    python -m trainer.bench_halfcheetah [--total-steps 1000000] [--mode ver] [overrides ...]

Prints the mean return of the last 10 episodes and the wall time. Reference: CleanRL's
ppo_continuous_action reaches about 1,440 at 1M steps. Like CleanRL, every env worker wraps its env
with observation normalisation and reward scaling (running statistics per env, clipped to +-10);
the reported return is the raw environment return, recorded before those wrappers.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from trainer.config import ConfigError, compose, exit_with_error

ENV_ID = "HalfCheetah-v5"
# CleanRL ppo_continuous_action settings, mapped onto this trainer (2048 steps per rollout)
CLEANRL_LIKE = [
    "trainer.num_envs=8", "trainer.num_steps=256", "trainer.ppo.lr=3e-4", "trainer.ppo.ppo_epoch=10",
    "trainer.ppo.num_mini_batch=32", "trainer.ppo.gamma=0.99", "trainer.ppo.gae_lambda=0.95",
    "trainer.ppo.clip_param=0.2", "trainer.ppo.normalize_advantage=true", "trainer.ppo.max_grad_norm=0.5",
    "trainer.ppo.value_loss_coef=0.5", "trainer.ppo.use_clipped_value_loss=true",
    "trainer.ppo.entropy.learned=false", "trainer.ppo.entropy.coef=0.0", "trainer.ppo.lr_schedule=cosine",
    "trainer.checkpoint_interval=100",
]


class RawEpisodeReturn(gym.Wrapper):
    """Puts the unnormalised episode return into the final step's info as `raw_return`."""

    def reset(self, **kwargs):
        self._ret = 0.0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._ret += float(reward)
        if terminated or truncated:
            info = {**info, "raw_return": self._ret}
        return obs, reward, terminated, truncated, info


def make_bench_env(env_idx: int, env_id: str = ENV_ID, gamma: float = 0.99) -> gym.Env:
    env = RawEpisodeReturn(gym.make(env_id))
    env = gym.wrappers.ClipAction(env)
    env = gym.wrappers.NormalizeObservation(env)
    env = gym.wrappers.TransformObservation(env, lambda o: np.clip(o, -10, 10), env.observation_space)
    env = gym.wrappers.NormalizeReward(env, gamma=gamma)
    return gym.wrappers.TransformReward(env, lambda r: float(np.clip(r, -10, 10)))


def last_episodes_mean(metrics_file: Path, key: str, count: int) -> tuple[float | None, int]:
    """Mean of `key` over (about) the last `count` episodes, from the per-update means in metrics.jsonl."""
    lines = [json.loads(x) for x in metrics_file.read_text().splitlines()] if metrics_file.exists() else []
    total, episodes = 0.0, 0
    for line in reversed(lines):
        n = int(line.get("metrics/episodes", 0))
        if n and key in line:
            total += line[key] * n
            episodes += n
            if episodes >= count:
                break
    return (total / episodes if episodes else None), episodes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trainer.bench_halfcheetah", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total-steps", type=int, default=1_000_000)
    parser.add_argument("--mode", default="ver", choices=["ver", "nover", "sync"])
    parser.add_argument("--output-dir", default="runs/bench_halfcheetah")
    parser.add_argument("overrides", nargs="*", help="extra config overrides, key=value")
    args = parser.parse_args(argv)
    try:
        gym.make(ENV_ID).close()
    except Exception as exc:  # gymnasium's mujoco extra missing
        exit_with_error(f"cannot create {ENV_ID} ({exc}); install it with: pip install \"gymnasium[mujoco]\"")
    try:
        cfg = compose("train_rl", [f"env_id={ENV_ID}", f"trainer.mode={args.mode}",
                                   f"trainer.total_steps={args.total_steps}", f"output_dir={args.output_dir}",
                                   *CLEANRL_LIKE, *args.overrides])
    except ConfigError as exc:
        exit_with_error(str(exc))
    from trainer.train import train

    start = time.monotonic()
    summary = train(cfg, functools.partial(make_bench_env, gamma=float(cfg.trainer.ppo.gamma)))
    wall = time.monotonic() - start
    mean_return, episodes = last_episodes_mean(Path(args.output_dir) / "metrics.jsonl", "metrics/raw_return", 10)
    print(f"{ENV_ID} {args.mode}: {summary['env_steps']} steps in {wall:.0f} s ({summary['sps']:.0f} steps/s); "
          f"mean raw return of the last {episodes} episodes: "
          f"{'n/a' if mean_return is None else f'{mean_return:.1f}'} (CleanRL PPO reference ~1440 at 1M)")


if __name__ == "__main__":
    main()
