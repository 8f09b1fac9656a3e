"""Environment worker processes: one Gymnasium env per process, driven through shared memory.

Protocol over one duplex pipe per worker (only small messages travel):
  main -> worker: ("reset", seed) | ("step",) | ("close",)
  worker -> main: ("ready", episode_stats | None) after writing its row of the transfer buffers,
                  ("error", message) when the env raised (the worker then exits).
On `step` the worker reads its action row, steps the env, and writes observation, reward and done.
When the episode ends it resets the env itself and writes the final step's reward/done together
with the NEW episode's first observation; `episode_stats` then carries the finished episode's
return, length and the scalar entries of its final `info`.

`WorkerPool` starts, watches, kills and restarts these processes for the collector.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

import gymnasium as gym
import numpy as np
import torch
import torch.multiprocessing as torch_mp

from trainer.shared_buffers import TransferBuffers

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


def worker_main(env_idx: int, env_fn: EnvFn, buffers: TransferBuffers, conn: Connection) -> None:
    """Body of one env worker process (see the module docstring for the protocol)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the main process
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["LP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    env = None
    try:
        env = env_fn(env_idx)
        row = buffers.env_view(env_idx)
        episode_return, episode_length = 0.0, 0
        while True:
            command = conn.recv()
            if command[0] == "step":
                action = _prepare_action(row.action(), env.action_space)
                obs, reward, terminated, truncated, info = env.step(action)
                episode_return += float(reward)
                episode_length += 1
                done = bool(terminated or truncated)
                stats = None
                if done:
                    stats = {"return": episode_return, "length": float(episode_length), **_scalar_info(info)}
                    obs, _ = env.reset()
                    episode_return, episode_length = 0.0, 0
                row.write(obs, float(reward), done)
                conn.send(("ready", stats))
            elif command[0] == "reset":
                obs, _ = env.reset(seed=command[1])
                episode_return, episode_length = 0.0, 0
                row.write(obs, 0.0, False)
                conn.send(("ready", None))
            elif command[0] == "close":
                break
    except (EOFError, BrokenPipeError):
        pass  # the main process went away
    except Exception as exc:  # report, then die: the main process restarts us with a fresh env
        with contextlib.suppress(BrokenPipeError, OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        os._exit(1)
    finally:
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()


class WorkerPool:
    """The N env worker processes of one rank: start, send commands, detect death, restart."""

    def __init__(self, env_fn: EnvFn, buffers: TransferBuffers, start_method: str = "forkserver") -> None:
        self.env_fn = env_fn
        self.buffers = buffers
        self.num_envs = buffers.num_envs
        self._ctx = torch_mp.get_context(start_method)
        if start_method == "forkserver":
            self._ctx.set_forkserver_preload(["trainer.env_worker"])
        self.procs: list = [None] * self.num_envs
        self.conns: list[Connection | None] = [None] * self.num_envs
        self.busy_since = np.full(self.num_envs, np.nan)  # time a command was sent and not yet answered

    def start(self, env_idx: int) -> None:
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(
            target=worker_main, args=(env_idx, self.env_fn, self.buffers, child), daemon=True,
            name=f"env-worker-{env_idx}",
        )
        proc.start()
        child.close()
        self.procs[env_idx], self.conns[env_idx] = proc, parent
        self.busy_since[env_idx] = np.nan

    def start_all(self) -> None:
        for env_idx in range(self.num_envs):
            self.start(env_idx)

    def send(self, env_idx: int, command: tuple) -> None:
        self.busy_since[env_idx] = time.monotonic()
        self.conns[env_idx].send(command)

    def kill(self, env_idx: int) -> None:
        proc, conn = self.procs[env_idx], self.conns[env_idx]
        if proc is not None and proc.is_alive():
            proc.kill()
        if proc is not None:
            proc.join(timeout=5.0)
        if conn is not None:
            conn.close()
        self.procs[env_idx], self.conns[env_idx] = None, None
        self.busy_since[env_idx] = np.nan

    def restart(self, env_idx: int) -> None:
        self.kill(env_idx)
        self.start(env_idx)

    def conn_to_env(self) -> dict[Connection, int]:
        return {conn: idx for idx, conn in enumerate(self.conns) if conn is not None}

    def sentinel_to_env(self) -> dict[int, int]:
        return {proc.sentinel: idx for idx, proc in enumerate(self.procs) if proc is not None}

    def hung(self, timeout_s: float) -> list[int]:
        """Envs that have not answered a command within `timeout_s` seconds."""
        waited = time.monotonic() - self.busy_since
        return [int(i) for i in np.nonzero(waited > timeout_s)[0]]

    def close(self) -> None:
        for conn in self.conns:
            if conn is not None:
                with contextlib.suppress(BrokenPipeError, OSError):
                    conn.send(("close",))
        deadline = time.monotonic() + 3.0
        for env_idx, proc in enumerate(self.procs):
            if proc is not None:
                proc.join(timeout=max(0.0, deadline - time.monotonic()))
            self.kill(env_idx)
