"""Experience collection for the three modes `ver`, `nover` and `sync`, from one code path.

Every mode runs the same loop: env workers answer requests into shared memory, the main process
acts on a dynamic batch of ready requests (`inference.py`) and records the rows in the linear
storage (`storage.py`); an env's reward is written into its previous row when its next request
arrives. The modes differ only in two rules:

* which env may take another step: `ver` any env until T x N new rows were issued in total (fast
  envs contribute more); `nover` and `sync` each env until it has T rows (an env that has T waits);
* how a batch is formed: `ver`/`nover` act on whatever is ready (between min and max batch),
  `sync` waits for all N envs and acts on them together (classic DD-PPO lock-step).

End of a rollout. `ver` stops issuing actions once the quota is reached (or VER's preemption
deadline passed); the steps still in flight (action sent, answer not back) are carried into the
next rollout and the envs keep stepping while the learner runs. `nover`/`sync` wait until every env
has answered its T-th step (or DD-PPO preemption stopped them), so nothing is in flight.

Bootstrap value: for an env in flight it is the value its in-flight row already computed; for an env
waiting with an observation it is computed at the end of the rollout; both with the policy that
collected the rollout (before the update). It is 0 where the env's last row ended an episode.

Faults: a worker that reports an exception, dies, or does not answer within the timeout is killed and
restarted with a fresh env; the rows of its episode in progress are dropped from the rollout and the
restart is counted.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_for_any

import gymnasium as gym
import numpy as np
import torch

from trainer.env_worker import EnvFn, WorkerPool
from trainer.inference import Inference, batch_limits, select_batch, should_act
from trainer.networks import ActorCritic
from trainer.preemption import StepIntervals
from trainer.rollout import Rollout
from trainer.shared_buffers import TransferBuffers, action_layout
from trainer.storage import RolloutStorage

log = logging.getLogger(__name__)

MODES = ("ver", "nover", "sync")
_POLL_PERIOD_S = 0.05  # longest single wait, so hangs and deadlines are noticed


@dataclass
class CollectStats:
    """What happened during one `collect` call (for logging and the preemption rule)."""

    rows: int = 0
    steps_per_env: np.ndarray = field(default_factory=lambda: np.zeros(0))
    carried_in: int = 0
    carried_out: int = 0
    preempted: bool = False
    rollout_time: float = 0.0
    inference_time: float = 0.0
    wait_time: float = 0.0
    num_batches: int = 0
    batch_size_sum: int = 0
    batch_size_min: int = 0
    batch_size_max: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    restarts: int = 0
    episodes: list[dict] = field(default_factory=list)


class WorkerFailure(RuntimeError):
    """An env keeps failing right after every restart (a bug or a broken env, not a transient fault)."""


class Collector:
    """Owns one rank's env workers, transfer buffers and rollout storage; produces `Rollout`s."""

    def __init__(
        self,
        env_fn: EnvFn,
        obs_space: gym.Space,
        action_space: gym.Space,
        actor_critic: ActorCritic,
        cfg: Mapping,
        seed: int,
        rank: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        mode = str(cfg["mode"])
        if mode not in MODES:
            raise ValueError(f"unknown trainer.mode '{mode}'; valid choices: {', '.join(MODES)}")
        self.mode = mode
        self.num_envs = n = int(cfg["num_envs"])
        self.num_steps = int(cfg["num_steps"])
        if n < 1 or self.num_steps < 1:
            raise ValueError("trainer.num_envs and trainer.num_steps must be >= 1")
        self.min_batch, self.max_batch = batch_limits(
            n, float(cfg["min_batch_factor"]), float(cfg["max_batch_factor"]), lock_step=(mode == "sync")
        )
        wait = cfg["max_batch_wait_s"]
        # "auto" (habitat-lab VER): half the mean env step time of the last 128 steps, 0.01 s until known
        self.auto_wait = mode != "sync" and str(wait) == "auto"
        if not self.auto_wait and mode != "sync":
            try:
                wait = float(wait)
            except (TypeError, ValueError):
                raise ValueError(f"trainer.max_batch_wait_s must be a number of seconds or 'auto', got {wait!r}") from None
        self.max_wait_s = float("inf") if mode == "sync" else (0.01 if self.auto_wait else float(wait))
        self._env_step_times: deque[float] = deque(maxlen=128)
        self.step_timeout_s = float(cfg["worker_timeout_s"])
        self.start_timeout_s = float(cfg["worker_start_timeout_s"])
        self.max_failures_in_row = int(cfg["max_worker_failures_in_row"])
        self.seed, self.rank = int(seed), int(rank)
        self.actor_critic = actor_critic

        self.buffers = TransferBuffers(obs_space, action_space, n)
        action_shape, action_dtype = action_layout(action_space)
        hidden_shape = tuple(actor_critic.initial_hidden(1).shape[1:])
        obs_layout = {k: (tuple(v.shape[1:]), v.dtype) for k, v in self.buffers.obs.items()}
        self.storage = RolloutStorage(obs_layout, action_shape, action_dtype, hidden_shape, (self.num_steps + 1) * n)
        self.inference = Inference(actor_critic, self.buffers, self.storage, torch.device(device))
        self.pool = WorkerPool(env_fn, self.buffers, str(cfg["start_method"]))
        self.step_intervals = StepIntervals(n, window=max(5 * self.num_steps, 16))

        # per-env state
        self.pending = np.full(n, -1, dtype=np.int64)  # slot of the row waiting for its reward
        self.ready = np.zeros(n, dtype=bool)  # an observation waits for an action
        self.hidden = actor_critic.initial_hidden(n, device="cpu")
        self.episode_start = np.ones(n, dtype=bool)
        self.episode_count = np.zeros(n, dtype=np.int64)  # episodes begun per env
        self.step_id = np.zeros(n, dtype=np.int64)
        self.reset_generation = np.zeros(n, dtype=np.int64)  # resets sent per env (seeds the env)
        self.busy_timeout = np.full(n, np.inf)
        self.total_restarts = 0
        self.failures_in_row = np.zeros(n, dtype=np.int64)  # restarts since the env's last good step
        self._last_ready_time = np.full(n, np.nan)
        self._stats = CollectStats()
        self._completed = np.zeros(n, dtype=np.int64)
        self._created = np.zeros(n, dtype=np.int64)
        self._new_rows = 0
        self._carried_boundary = 0  # slots below it were carried in from the previous rollout
        self.interrupt_requested: Callable[[], bool] = lambda: False
        self._started = False

    # ------------------------------------------------------------------ ids and seeds
    @property
    def episode_id(self) -> np.ndarray:
        """Current episode id per env, unique per (env, episode): count * N + env."""
        return (self.episode_count - 1) * self.num_envs + np.arange(self.num_envs)

    def env_seed(self, env_idx: int, generation: int) -> int:
        """Seed of an env's `generation`-th explicit reset; depends on (seed, rank, env, generation) only."""
        state = np.random.SeedSequence([self.seed, self.rank, env_idx, generation]).generate_state(1)
        return int(state[0])

    def state_dict(self) -> dict:
        return {"episode_count": self.episode_count.copy(), "reset_generation": self.reset_generation.copy(),
                "total_restarts": self.total_restarts}

    def load_state_dict(self, state: Mapping) -> None:
        if self._started:
            raise RuntimeError("load the collector state before start()")
        self.episode_count = np.asarray(state["episode_count"], dtype=np.int64).copy()
        self.reset_generation = np.asarray(state["reset_generation"], dtype=np.int64).copy()
        self.total_restarts = int(state["total_restarts"])

    # ------------------------------------------------------------------ worker control
    def start(self) -> None:
        """Start the workers; each resets its env with its seed (answers arrive during `collect`)."""
        self.pool.start_all()
        for e in range(self.num_envs):
            self._send_reset(e, self.start_timeout_s)
        self._started = True

    def _send_reset(self, e: int, timeout_s: float) -> None:
        seed = self.env_seed(e, int(self.reset_generation[e]))
        self.reset_generation[e] += 1
        self.episode_count[e] += 1
        self.step_id[e] = 0
        self.episode_start[e] = True
        self.hidden[e] = 0.0
        self.ready[e] = False
        self.busy_timeout[e] = timeout_s
        self.pool.send(e, ("reset", seed))

    def _send_step(self, e: int) -> None:
        self.busy_timeout[e] = self.step_timeout_s
        self.pool.send(e, ("step",))

    def _restart(self, e: int, reason: str) -> None:
        """Kill env `e`'s worker, drop its episode in progress, start a fresh one."""
        self.failures_in_row[e] += 1
        if self.failures_in_row[e] > self.max_failures_in_row:
            raise WorkerFailure(f"env worker {e} failed {self.failures_in_row[e]} times in a row; last: {reason}")
        log.warning("env worker %d (rank %d) restarted: %s", e, self.rank, reason)
        self.pending[e] = -1
        complete_before = self.storage.complete[: self.storage.size].copy()
        dropped, new_slot = self.storage.drop_episode(e, int(self.episode_id[e]))
        # the dropped rows no longer count towards this rollout's quotas
        new_dropped = dropped[dropped >= self._carried_boundary]
        self._created[e] -= len(new_dropped)
        self._completed[e] -= int(np.sum(complete_before[dropped]))
        self._new_rows -= len(new_dropped)
        self._carried_boundary -= int(np.sum(dropped < self._carried_boundary))
        busy = self.pending >= 0
        self.pending[busy] = new_slot[self.pending[busy]]
        self.total_restarts += 1
        self._stats.restarts += 1
        self._last_ready_time[e] = np.nan
        self.pool.restart(e)
        self._send_reset(e, self.start_timeout_s)

    def close(self) -> None:
        self.pool.close()

    # ------------------------------------------------------------------ receiving
    def _on_ready(self, e: int, episode_stats: dict | None) -> None:
        now = time.monotonic()
        if self.auto_wait and self.pending[e] >= 0 and not np.isnan(self.pool.busy_since[e]):
            # answers to steps only: a reset answer after a (re)start includes building the env
            self._env_step_times.append(now - float(self.pool.busy_since[e]))
            self.max_wait_s = 0.5 * float(np.mean(self._env_step_times))
        self.pool.busy_since[e] = np.nan
        if not np.isnan(self._last_ready_time[e]):
            self.step_intervals.add(e, now - self._last_ready_time[e])
        self._last_ready_time[e] = now
        slot = int(self.pending[e])
        if slot >= 0:
            done = bool(self.buffers.done[e])
            self.storage.set_result(slot, float(self.buffers.reward[e]), done)
            self.pending[e] = -1
            self._completed[e] += 1
            self.failures_in_row[e] = 0
            if done:
                if episode_stats is not None:
                    self._stats.episodes.append({"env": e, "episode": int(self.episode_id[e]), **episode_stats})
                self.episode_count[e] += 1
                self.step_id[e] = 0
                self.episode_start[e] = True
        self.ready[e] = True

    def _poll(self, timeout: float) -> None:
        """Wait up to `timeout` s for answers; handle answers, errors, dead and hung workers."""
        conns = self.pool.conn_to_env()
        sentinels = self.pool.sentinel_to_env()
        t0 = time.monotonic()
        ready_objs = wait_for_any(list(conns) + list(sentinels), timeout=max(timeout, 0.0))
        self._stats.wait_time += time.monotonic() - t0
        restarted: set[int] = set()
        for obj in ready_objs:
            if obj in conns:
                e = conns[obj]
                if e in restarted:
                    continue
                try:
                    message = obj.recv()
                except (EOFError, OSError):
                    continue  # the sentinel (or the next poll) reports the death
                if message[0] == "ready":
                    self._on_ready(e, message[1])
                else:
                    self._restart(e, f"env raised {message[1]}")
                    restarted.add(e)
        for obj in ready_objs:
            e = sentinels.get(obj) if isinstance(obj, int) else None
            if e is None or e in restarted:
                continue
            proc = self.pool.procs[e]
            if proc is not None and proc.sentinel == obj and not proc.is_alive():
                self._restart(e, f"worker exited with code {proc.exitcode}")
                restarted.add(e)
        waited = time.monotonic() - self.pool.busy_since
        for e in np.nonzero(waited > self.busy_timeout)[0]:
            if int(e) not in restarted:
                self._restart(int(e), f"no answer within {self.busy_timeout[e]:.1f} s")

    # ------------------------------------------------------------------ collecting
    def collect(
        self,
        policy_version: int,
        deadline_s: float | None = None,
        stop_early: Callable[[int], bool] | None = None,
    ) -> Rollout:
        """Collect one rollout with the current policy.

        `deadline_s` (ver): stop issuing actions this many seconds after the start (VER preemption).
        `stop_early(min_rows_per_env)` (nover/sync): polled between batches; True stops collection
        (DD-PPO preemption); the caller applies the minimum-steps rule.
        """
        if not self._started:
            self.start()
        n, t_len = self.num_envs, self.num_steps
        fixed = self.mode != "ver"
        carried_in = int(np.sum(self.pending >= 0))
        self._stats = CollectStats(carried_in=carried_in)
        self._carried_boundary = carried_in
        self._completed[:] = 0
        self._created[:] = 0
        self._new_rows = 0
        self._last_ready_time[:] = np.nan
        quota = t_len * n
        stopping = False
        t_start = last_batch = time.monotonic()
        batch_sizes: list[int] = []
        while True:
            if self.interrupt_requested():
                raise KeyboardInterrupt
            now = time.monotonic()
            if fixed:
                if not stopping and stop_early is not None and stop_early(int(self._completed.min())):
                    stopping = self._stats.preempted = True
                if not np.any(self.pending >= 0) and (stopping or np.all(self._created >= t_len)):
                    break
                allowed = (self._created < t_len) & (not stopping)
            else:
                if self._new_rows >= quota:
                    break
                if deadline_s is not None and now - t_start >= deadline_s:
                    self._stats.preempted = True
                    break
                allowed = np.ones(n, dtype=bool)
            busy = ~self.ready & allowed
            candidates = np.nonzero(self.ready & allowed)[0]
            if should_act(len(candidates), self.min_batch, int(busy.sum()), now - last_batch, self.max_wait_s):
                limit = self.max_batch if fixed else min(self.max_batch, quota - self._new_rows)
                self._act(select_batch(candidates, self._created, limit), policy_version)
                batch_sizes.append(min(limit, len(candidates)))
                last_batch = time.monotonic()
                self._poll(0.0)
                continue
            timeout = _POLL_PERIOD_S
            if len(candidates) and np.isfinite(self.max_wait_s):
                timeout = min(timeout, self.max_wait_s - (now - last_batch))
            if deadline_s is not None:
                timeout = min(timeout, deadline_s - (now - t_start))
            self._poll(timeout)
        return self._finish_rollout(t_start, batch_sizes)

    def _act(self, envs: np.ndarray, policy_version: int) -> None:
        t0 = time.monotonic()
        result = self.inference.act(
            envs, self.hidden[envs], self.episode_start[envs], self.episode_id[envs], self.step_id[envs],
            policy_version,
        )
        self._stats.inference_time += time.monotonic() - t0
        self.hidden[envs] = result.hidden
        self.pending[envs] = result.slots
        self.ready[envs] = False
        self.episode_start[envs] = False
        self.step_id[envs] += 1
        self._created[envs] += 1
        self._new_rows += len(envs)
        for e in envs:
            self._send_step(int(e))

    def _finish_rollout(self, t_start: float, batch_sizes: list[int]) -> Rollout:
        n = self.num_envs
        bootstrap = torch.zeros(n)
        in_flight = np.nonzero(self.pending >= 0)[0]
        for e in in_flight:
            slot = int(self.pending[e])
            if not bool(self.storage.episode_start[slot]):
                bootstrap[e] = self.storage.values[slot]
        waiting = np.nonzero(self.ready & ~self.episode_start)[0]
        if len(waiting):
            t0 = time.monotonic()
            bootstrap[torch.from_numpy(waiting)] = self.inference.values(
                waiting, self.hidden[waiting], self.episode_start[waiting]
            )
            self._stats.inference_time += time.monotonic() - t0
        rollout = self.storage.build(bootstrap, n, float(self.num_steps))
        old_slots = self.pending[in_flight]
        order = np.sort(old_slots)
        self.storage.carry_over(order)
        self.pending[in_flight] = np.searchsorted(order, old_slots)

        stats = self._stats
        stats.rows = len(rollout)
        stats.steps_per_env = rollout.steps_per_env().numpy()
        stats.carried_out = len(in_flight)
        stats.rollout_time = time.monotonic() - t_start
        stats.num_batches = len(batch_sizes)
        stats.batch_size_sum = int(sum(batch_sizes))
        stats.batch_size_min = int(min(batch_sizes)) if batch_sizes else 0
        stats.batch_size_max = int(max(batch_sizes)) if batch_sizes else 0
        stats.batch_sizes = batch_sizes
        stats.episodes.sort(key=lambda ep: (ep["env"], ep["episode"]))
        return rollout

    @property
    def last_stats(self) -> CollectStats:
        return self._stats

    def reset_episodes(self) -> None:
        """Start a fresh, seeded episode in every env (between rollouts, nothing in flight).

        Deterministic mode calls this at every checkpoint so that a resumed run sees exactly the
        envs the uninterrupted run sees. The interrupted episodes are truncated (bootstrapped).
        """
        if np.any(self.pending >= 0):
            raise RuntimeError("reset_episodes needs a rollout boundary with no step in flight")
        for e in range(self.num_envs):
            self._send_reset(e, self.start_timeout_s)
        while not np.all(self.ready):
            self._poll(_POLL_PERIOD_S)


def fill_from_previous(rollout: Rollout, previous: Rollout | None, target_rows: int) -> Rollout:
    """Top up a preempted rollout with the newest rows of the previous one (VER section 2.3).

    The previous rollout's last `target_rows - len(rollout)` rows (in collection order) are added;
    for every env they form a suffix of its rows there, so they keep that rollout's bootstrap
    values. They are added as separate envs (`env_id + num_envs`) so that sequences, GAE and
    importance weights treat them on their own; their stale policy version is kept.
    """
    missing = target_rows - len(rollout)
    if previous is None or missing <= 0 or len(previous) == 0:
        return rollout
    take = torch.arange(max(len(previous) - missing, 0), len(previous))
    offset = rollout.num_envs
    return Rollout(
        obs={k: torch.cat([v, previous.obs[k][take]]) for k, v in rollout.obs.items()},
        actions=torch.cat([rollout.actions, previous.actions[take]]),
        log_probs=torch.cat([rollout.log_probs, previous.log_probs[take]]),
        values=torch.cat([rollout.values, previous.values[take]]),
        rewards=torch.cat([rollout.rewards, previous.rewards[take]]),
        dones=torch.cat([rollout.dones, previous.dones[take]]),
        episode_start=torch.cat([rollout.episode_start, previous.episode_start[take]]),
        hidden=torch.cat([rollout.hidden, previous.hidden[take]]),
        env_ids=torch.cat([rollout.env_ids, previous.env_ids[take] + offset]),
        episode_ids=torch.cat([rollout.episode_ids, previous.episode_ids[take]]),
        step_ids=torch.cat([rollout.step_ids, previous.step_ids[take]]),
        policy_version=torch.cat([rollout.policy_version, previous.policy_version[take]]),
        bootstrap_value=torch.cat([rollout.bootstrap_value, previous.bootstrap_value.float()]),
        num_envs=rollout.num_envs + previous.num_envs,
        expected_steps_per_env=rollout.expected_steps_per_env,
    )
