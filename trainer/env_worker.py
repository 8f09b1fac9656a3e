"""Environment worker processes: each holds K Gymnasium envs and steps them through shared memory.

Worker `w` holds a contiguous block of envs (`WorkerPool.envs_of(w)`); it builds them with
`env_fn(global env index)`. Protocol over one duplex pipe per worker (only small messages travel;
`envs` are the worker's local env indices, all of its envs when left out):
  main -> worker: ("step", envs) | ("reset", seeds, envs) | ("close",)
  worker -> main: ("ready", seconds, episodes) after writing the rows of those envs into the
                  transfer buffers; `seconds` is the time the worker spent on the command, and
                  `episodes` holds per env None or the finished episode's stats;
                  ("error", message) when an env raised (the worker then exits).
On `step` the worker steps its envs one after another: read the action row, step, write observation,
reward, terminated and truncated. When an episode ends it resets the env itself and writes the final
step's reward with the NEW episode's first observation; on a time-limit truncation it first writes
the observation the episode ended in into `final_obs`. Episode stats are the return, the length and
the scalar entries of the final `info`.

`WorkerPool` starts, watches, kills and restarts these processes and turns their answers, deaths
and silences into `Ready`, `Failed` and `Hung` events for the collector.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.multiprocessing as torch_mp

from trainer.shared_buffers import EnvRow, TransferBuffers

EnvFn = Callable[[int], gym.Env]


def _scalar_info(info: dict) -> dict[str, float]:
    """The finite scalar numbers of an env's `info` (measures such as success), as floats."""
    scalars = {}
    for key, value in info.items():
        if key.startswith("_") or isinstance(value, str):
            continue
        if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)) or (
            isinstance(value, np.ndarray) and value.size == 1
        ):
            number = float(np.asarray(value).reshape(()))
            if math.isfinite(number):
                scalars[key] = number
    return scalars


def _prepare_action(action: np.ndarray, space: gym.Space) -> np.ndarray | int:
    if isinstance(space, gym.spaces.Discrete):
        return int(action)
    return np.clip(action.reshape(space.shape), space.low, space.high).astype(space.dtype)


class _EnvRunner:
    """One env inside a worker: its buffer row and the running episode's return and length."""

    def __init__(self, env: gym.Env, row: EnvRow) -> None:
        self.env, self.row = env, row
        self.episode_return, self.episode_length = 0.0, 0

    def reset(self, seed: int | None) -> None:
        obs, _ = self.env.reset(seed=seed)
        self.episode_return, self.episode_length = 0.0, 0
        self.row.write(obs, 0.0, False, False)

    def step(self) -> dict | None:
        obs, reward, terminated, truncated, info = self.env.step(_prepare_action(self.row.action(),
                                                                                 self.env.action_space))
        self.episode_return += float(reward)
        self.episode_length += 1
        terminated = bool(terminated)
        truncated = bool(truncated) and not terminated
        stats = None
        if terminated or truncated:
            stats = {"return": self.episode_return, "length": float(self.episode_length), **_scalar_info(info)}
            if truncated:
                self.row.write_final(obs)
            obs, _ = self.env.reset()
            self.episode_return, self.episode_length = 0.0, 0
        self.row.write(obs, float(reward), terminated, truncated)
        return stats


def worker_main(worker_idx: int, env_ids: Sequence[int], env_fn: EnvFn, buffers: TransferBuffers,
                conn: Connection) -> None:
    """Body of one worker process holding the envs `env_ids` (see the module docstring)."""
    # Ctrl-C and SIGTERM (sent to the whole process group by a terminal, `timeout` or a job scheduler) are the
    # main process's to handle: it stops at a safe point, checkpoints and closes us; we also end when our pipe
    # closes, so a main process killed outright leaves no worker behind
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["LP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    runners: list[_EnvRunner] = []
    try:
        for e in env_ids:
            runners.append(_EnvRunner(env_fn(e), buffers.env_view(e)))
        every = tuple(range(len(runners)))
        while True:
            command = conn.recv()
            t0 = time.perf_counter()
            if command[0] == "step":
                local = command[1] if len(command) > 1 else every
                episodes = tuple(runners[i].step() for i in local)
            elif command[0] == "reset":
                seeds = command[1] if isinstance(command[1], Sequence) else (command[1],)
                local = command[2] if len(command) > 2 else every
                for i, seed in zip(local, seeds, strict=True):
                    runners[i].reset(seed)
                episodes = (None,) * len(local)
            elif command[0] == "close":
                break
            else:
                raise ValueError(f"unknown worker command {command[0]!r}")
            conn.send(("ready", time.perf_counter() - t0, episodes))
    except (EOFError, BrokenPipeError):
        pass  # the main process went away
    except Exception as exc:  # report, then die: the main process restarts us with fresh envs
        with contextlib.suppress(BrokenPipeError, OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        os._exit(1)
    finally:
        for runner in runners:
            with contextlib.suppress(Exception):
                runner.env.close()


# ---------------------------------------------------------------------------------------- events
@dataclass
class Ready:
    """A worker answered its oldest command: the rows of `envs` (global indices) are written."""

    worker: int
    envs: np.ndarray
    command: str  # "step" | "reset"
    seconds: float  # time the worker spent on the command (measured inside the worker)
    episodes: tuple  # per env of `envs`: None, or the stats of the episode that just ended


@dataclass
class Failed:
    """A worker raised or died; its envs' state is lost (restart it)."""

    worker: int
    envs: np.ndarray
    reason: str


@dataclass
class Hung(Failed):
    """A worker did not answer within its command's timeout (restart it)."""


Event = Ready | Failed


@dataclass
class _Command:
    kind: str
    envs: np.ndarray  # global env indices
    timeout_s: float


@dataclass
class _Worker:
    envs: np.ndarray  # global env indices, contiguous
    proc: Any = None
    conn: Connection | None = None
    commands: deque[_Command] = field(default_factory=deque)  # sent, not answered, oldest first
    clock_start: float = math.nan  # when the oldest command started counting towards its timeout


def split_envs(num_envs: int, envs_per_worker: int) -> list[np.ndarray]:
    """Envs of each worker: ceil(N / K) workers holding contiguous blocks, sizes differing by at most 1."""
    if envs_per_worker < 1:
        raise ValueError(f"trainer.envs_per_worker must be >= 1, got {envs_per_worker}")
    num_workers = -(-num_envs // envs_per_worker)
    return [np.asarray(b, dtype=np.int64) for b in np.array_split(np.arange(num_envs), num_workers)]


class WorkerPool:
    """The env worker processes of one rank: start, command, watch (events), restart, close.

    Timeouts scale with the number of envs a command covers: `step_timeout_s` per env stepped,
    `start_timeout_s` per env reset (a reset answer after a (re)start includes building the envs).
    """

    def __init__(self, env_fn: EnvFn, buffers: TransferBuffers, start_method: str = "forkserver",
                 envs_per_worker: int = 1, step_timeout_s: float = math.inf,
                 start_timeout_s: float = math.inf) -> None:
        self.env_fn = env_fn
        self.buffers = buffers
        self.num_envs = buffers.num_envs
        self.step_timeout_s, self.start_timeout_s = step_timeout_s, start_timeout_s
        self._ctx = torch_mp.get_context(start_method)
        if start_method == "forkserver":
            self._ctx.set_forkserver_preload(["trainer.env_worker"])
        self.workers = [_Worker(envs) for envs in split_envs(self.num_envs, envs_per_worker)]
        self.num_workers = len(self.workers)
        self.worker_of = np.concatenate([np.full(len(w.envs), i) for i, w in enumerate(self.workers)])
        self._first_env = np.array([int(w.envs[0]) for w in self.workers])
        self._paused_at: float | None = None
        self._selector: selectors.BaseSelector | None = None  # what `poll` waits on: pipes and sentinels

    def _forget_selector(self) -> None:
        if self._selector is not None:
            self._selector.close()
            self._selector = None

    def envs_of(self, worker: int) -> np.ndarray:
        return self.workers[worker].envs

    # ------------------------------------------------------------------ processes
    def start(self, worker: int) -> None:
        w = self.workers[worker]
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(
            target=worker_main, args=(worker, tuple(int(e) for e in w.envs), self.env_fn, self.buffers, child),
            daemon=True, name=f"env-worker-{worker}",
        )
        proc.start()
        child.close()
        w.proc, w.conn = proc, parent
        w.commands.clear()
        w.clock_start = math.nan
        self._forget_selector()

    def start_all(self) -> None:
        for worker in range(self.num_workers):
            self.start(worker)

    def kill(self, worker: int) -> None:
        w = self.workers[worker]
        if w.proc is not None and w.proc.is_alive():
            w.proc.kill()
        if w.proc is not None:
            w.proc.join(timeout=5.0)
        if w.conn is not None:
            w.conn.close()
        w.proc, w.conn = None, None
        w.commands.clear()
        w.clock_start = math.nan
        self._forget_selector()

    def restart(self, worker: int) -> None:
        self.kill(worker)
        self.start(worker)

    def close(self) -> None:
        for w in self.workers:
            if w.conn is not None:
                with contextlib.suppress(BrokenPipeError, OSError):
                    w.conn.send(("close",))
        deadline = time.monotonic() + 3.0
        for worker, w in enumerate(self.workers):
            if w.proc is not None:
                w.proc.join(timeout=max(0.0, deadline - time.monotonic()))
            self.kill(worker)

    # ------------------------------------------------------------------ commands
    def send(self, worker: int, command: tuple, envs: np.ndarray | None = None) -> None:
        """Send `command` to a worker; `envs` (global indices) are the envs it covers (default: all)."""
        w = self.workers[worker]
        envs = w.envs if envs is None else envs
        per_env = self.step_timeout_s if command[0] == "step" else self.start_timeout_s
        if not w.commands:
            w.clock_start = time.monotonic()
        w.commands.append(_Command(command[0], envs, per_env * len(envs)))
        w.conn.send(command)

    def _by_worker(self, envs: np.ndarray) -> list[tuple[int, np.ndarray]]:
        if self.num_workers == self.num_envs:  # one env per worker: worker index == env index
            return [(int(e), envs[i : i + 1]) for i, e in enumerate(envs)]
        if len(envs) > 1 and np.any(envs[1:] < envs[:-1]):
            envs = np.sort(envs)
        workers = self.worker_of[envs]  # non-decreasing: envs of a worker are contiguous
        bounds = np.flatnonzero(workers[1:] != workers[:-1]) + 1
        return [(int(self.worker_of[g[0]]), g) for g in np.split(envs, bounds)]

    def step(self, envs: np.ndarray) -> None:
        """Step the envs (global indices; their actions are in the transfer buffers): one message per worker."""
        for worker, group in self._by_worker(np.asarray(envs, dtype=np.int64)):
            self.send(worker, ("step", tuple((group - self._first_env[worker]).tolist())), group)

    def reset(self, envs: np.ndarray, seeds: Sequence[int]) -> None:
        """Reset the envs (global indices) with their seeds: one message per worker."""
        envs = np.asarray(envs, dtype=np.int64)
        seed_of = dict(zip(envs.tolist(), (int(s) for s in seeds), strict=True))
        for worker, group in self._by_worker(envs):
            self.send(worker, ("reset", tuple(seed_of[e] for e in group.tolist()),
                               tuple((group - self._first_env[worker]).tolist())), group)

    def pause_clocks(self) -> None:
        """Stop the timeouts of the commands in flight (the caller stops polling, e.g. to learn)."""
        self._paused_at = time.monotonic()

    def resume_clocks(self) -> None:
        """Continue the timeouts: the time since `pause_clocks` does not count towards a hang."""
        if self._paused_at is None:
            return
        now = time.monotonic()
        for w in self.workers:
            if w.commands:
                w.clock_start = min(w.clock_start + (now - self._paused_at), now)
        self._paused_at = None

    def conn_to_env(self) -> dict[Connection, int]:
        """Pipe of every running worker -> worker index (the env index with one env per worker)."""
        return {w.conn: i for i, w in enumerate(self.workers) if w.conn is not None}

    # ------------------------------------------------------------------ events
    def poll(self, timeout: float) -> list[Event]:
        """Wait up to `timeout` s for answers; returns what happened (answers, failures, hangs), in order."""
        if self._selector is None:  # rebuilt after a (re)start or kill
            self._selector = selectors.DefaultSelector()
            for worker, w in enumerate(self.workers):
                if w.conn is not None:
                    self._selector.register(w.conn, selectors.EVENT_READ, (worker, False))
                    self._selector.register(w.proc.sentinel, selectors.EVENT_READ, (worker, True))
        ready = [key.data for key, _ in self._selector.select(max(timeout, 0.0))]
        events: list[Event] = []
        failed: set[int] = set()
        for worker, is_sentinel in sorted(ready, key=lambda d: d[1]):  # answers before deaths
            w = self.workers[worker]
            if worker in failed or (is_sentinel and w.proc.is_alive()):
                continue
            event = (Failed(worker, w.envs, f"worker exited with code {w.proc.exitcode}") if is_sentinel
                     else self._receive(worker))
            events.append(event)
            if isinstance(event, Failed):
                failed.add(worker)
        now = time.monotonic()
        for worker, w in enumerate(self.workers):
            if w.commands and worker not in failed and now - w.clock_start > w.commands[0].timeout_s:
                events.append(Hung(worker, w.envs, f"no answer within {w.commands[0].timeout_s:.1f} s"))
        return events

    def _receive(self, worker: int) -> Event:
        """One message of a worker whose pipe is readable (a later one makes the pipe readable again)."""
        w = self.workers[worker]
        try:
            message = w.conn.recv()
        except (EOFError, OSError):
            w.proc.join(timeout=1.0)
            return Failed(worker, w.envs, f"worker exited with code {w.proc.exitcode}")
        if message[0] != "ready":
            return Failed(worker, w.envs, f"env raised {message[1]}")
        command = w.commands.popleft()
        w.clock_start = time.monotonic() if w.commands else math.nan
        return Ready(worker, command.envs, command.kind, float(message[1]), message[2])
