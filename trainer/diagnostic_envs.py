"""Tiny deterministic Gymnasium envs for checking the trainer's collection machinery.

`CountingEnv` writes its own (env index, episode, step) into every observation and pays a reward
that encodes the step that earned it, so a test can verify from a `Rollout` alone that no step was
lost, duplicated or given the wrong reward, even with per-env step delays (unequal step counts under
VER). `faulty_counting_env` adds one transient fault (raise, process exit or hang) at a chosen step,
happening once per marker file, to exercise worker restarts. Build them with the top-level
factories (picklable through `functools.partial`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np

FAULT_KINDS = ("raise", "exit", "hang")


def reward_code(episode: int, step: int) -> float:
    """Reward paid for the step that moves an episode from `step` to `step + 1`."""
    return float(episode * 1000 + step + 1)


class CountingEnv(gym.Env):
    """Observation [env, episode, step, target]; episodes last `episode_length` steps.

    Discrete(2) actions; the action does not change the dynamics. `step_delay_s` sleeps in every step
    (to make some envs slower than others).
    """

    def __init__(self, env_idx: int, episode_length: int = 7, step_delay_s: float = 0.0) -> None:
        self.env_idx = env_idx
        self.episode_length = episode_length
        self.step_delay_s = step_delay_s
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.episode = -1
        self.t = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.env_idx, self.episode, self.t, self.episode_length], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        if self.step_delay_s > 0:
            time.sleep(self.step_delay_s)
        reward = reward_code(self.episode, self.t)
        self.t += 1
        terminated = self.t >= self.episode_length
        return self._obs(), reward, terminated, False, {"final_step": float(self.t)}


def make_counting_env(env_idx: int, episode_length: int = 7, step_delays: Sequence[float] = ()) -> CountingEnv:
    delay = step_delays[env_idx % len(step_delays)] if step_delays else 0.0
    return CountingEnv(env_idx, episode_length, delay)


class FaultyCountingEnv(CountingEnv):
    """A CountingEnv whose env `fault_env` fails once at its `fault_step`-th step (counted over episodes).

    The fault happens only while `marker` does not exist; the env creates it just before failing,
    so the restarted env runs normally (a transient fault); with `once=False` it fails every time.
    """

    def __init__(self, env_idx: int, fault_env: int, fault_step: int, kind: str, marker: str,
                 episode_length: int = 7, once: bool = True) -> None:
        super().__init__(env_idx, episode_length)
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind '{kind}'; valid choices: {', '.join(FAULT_KINDS)}")
        self.fault_env, self.fault_step, self.kind, self.marker = fault_env, fault_step, kind, Path(marker)
        self.once = once
        self.steps_taken = 0

    def step(self, action):
        self.steps_taken += 1
        if self.env_idx == self.fault_env and self.steps_taken == self.fault_step and not (self.once and self.marker.exists()):
            self.marker.touch()
            if self.kind == "raise":
                raise RuntimeError("injected env failure")
            if self.kind == "exit":
                os._exit(3)
            time.sleep(3600)  # hang
        return super().step(action)


def faulty_counting_env(env_idx: int, fault_env: int, fault_step: int, kind: str, marker: str,
                        episode_length: int = 7, once: bool = True) -> FaultyCountingEnv:
    return FaultyCountingEnv(env_idx, fault_env, fault_step, kind, marker, episode_length, once)
