"""Experience collection for the three modes `ver`, `nover` and `sync`, from one code path.

Every mode runs the same loop: env worker processes (each holding `envs_per_worker` envs) answer
requests into shared memory, the main process acts on a dynamic batch of ready envs
(`inference.py`) and records the rows in the linear storage (`storage.py`); an env's reward is
written into its previous row when its next observation arrives. The modes differ only in two rules:

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

Reward normalisation (`trainer.ppo.normalize_reward`): every env's discounted return is kept in
`EnvStates.discounted_return`; the rewards of each batch of answers are divided by the running std
of those returns (`RewardScaler.scale`) before they are recorded; the return restarts at 0 after
an episode's last step (terminated or truncated, as SB3's VecNormalize) and after every reset (a
resumed run starts new episodes, so only the statistics, saved by PPO, carry over).

Time limits: a step that ended its episode by truncation (not termination) gets
`gamma * V(final observation)` added to its reward when its answer arrives, with the env's
recurrent state after that step and the current policy (one batched value call per poll); the row
stays done, so GAE never bootstraps across the episode boundary.

Faults: a worker that reports an exception, dies, or does not answer within the timeout is killed and
restarted with fresh envs; the rows of its envs' episodes in progress are dropped from the rollout
and the restart is counted (once per worker process).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
import torch

from trainer.env_worker import EnvFn, Failed, Ready, WorkerPool
from trainer.inference import Inference, batch_limits, select_batch, should_act
from trainer.networks import ActorCritic
from trainer.normalization import RewardScaler
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
    env_step_time: float = 0.0  # seconds the workers spent stepping envs (summed over workers; they overlap)
    num_batches: int = 0
    batch_size_sum: int = 0
    batch_size_min: int = 0
    batch_size_max: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    restarts: int = 0
    truncations: int = 0  # rows whose episode ended by a time limit (their reward was augmented)
    episodes: list[dict] = field(default_factory=list)


@dataclass
class EnvStates:
    """The collector's state of every env: one entry per env (a struct of arrays, for vector updates)."""

    pending: np.ndarray  # int64, storage slot of the row waiting for its reward (-1: none)
    ready: np.ndarray  # bool, an observation waits for an action
    hidden: torch.Tensor  # [N, 2 * layers, H], recurrent state after the env's last step
    episode_start: np.ndarray  # bool, the waiting (or next) observation starts an episode
    episode_count: np.ndarray  # int64, episodes begun
    step_id: np.ndarray  # int64, step index within the episode
    reset_generation: np.ndarray  # int64, seeded resets sent (seeds the env)
    last_answer: np.ndarray  # float, time of the env's last answer in this rollout (NaN: none yet)
    created: np.ndarray  # int64, rows created in this rollout
    completed: np.ndarray  # int64, step answers received in this rollout
    discounted_return: np.ndarray  # float64, gamma-discounted return of the episode so far (reward scaling)

    @classmethod
    def initial(cls, hidden: torch.Tensor) -> EnvStates:
        n = hidden.shape[0]
        return cls(pending=np.full(n, -1, dtype=np.int64), ready=np.zeros(n, dtype=bool), hidden=hidden,
                   episode_start=np.ones(n, dtype=bool), episode_count=np.zeros(n, dtype=np.int64),
                   step_id=np.zeros(n, dtype=np.int64), reset_generation=np.zeros(n, dtype=np.int64),
                   last_answer=np.full(n, np.nan), created=np.zeros(n, dtype=np.int64),
                   completed=np.zeros(n, dtype=np.int64), discounted_return=np.zeros(n))


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
        reward_scaler: RewardScaler | None = None,
    ) -> None:
        """`reward_scaler`: scale rewards by the running std of the discounted return (None: raw rewards)."""
        mode = str(cfg["mode"])
        if mode not in MODES:
            raise ValueError(f"unknown trainer.mode '{mode}'; valid choices: {', '.join(MODES)}")
        self.mode = mode
        self.num_envs = n = int(cfg["num_envs"])
        self.num_steps = int(cfg["num_steps"])
        self.envs_per_worker = int(cfg.get("envs_per_worker", 1))
        if n < 1 or self.num_steps < 1 or self.envs_per_worker < 1:
            raise ValueError("trainer.num_envs, trainer.num_steps and trainer.envs_per_worker must be >= 1")
        self.gamma = float(cfg["ppo"]["gamma"])
        self.min_batch, self.max_batch = batch_limits(
            n, float(cfg["min_batch_factor"]), float(cfg["max_batch_factor"]), lock_step=(mode == "sync"),
            envs_per_worker=min(self.envs_per_worker, n),
        )
        wait = cfg["max_batch_wait_s"]
        # "auto" (habitat-lab VER): half the mean env step time of the last 128 step answers (as the
        # workers measure it: time spent stepping, per env), 0.01 s until known
        self.auto_wait = mode != "sync" and str(wait) == "auto"
        if not self.auto_wait and mode != "sync":
            try:
                wait = float(wait)
            except (TypeError, ValueError):
                raise ValueError(f"trainer.max_batch_wait_s must be a number of seconds or 'auto', got {wait!r}") from None
        self.max_wait_s = float("inf") if mode == "sync" else (0.01 if self.auto_wait else float(wait))
        self._env_step_times: deque[float] = deque(maxlen=128)
        self.max_failures_in_row = int(cfg["max_worker_failures_in_row"])
        self.seed, self.rank = int(seed), int(rank)
        self.actor_critic = actor_critic
        self.reward_scaler = reward_scaler

        self.buffers = TransferBuffers(obs_space, action_space, n)
        self._reward = self.buffers.reward.numpy()  # numpy views of the shared rows
        self._terminated = self.buffers.terminated.numpy()
        self._truncated = self.buffers.truncated.numpy()
        action_shape, action_dtype = action_layout(action_space)
        hidden_shape = tuple(actor_critic.initial_hidden(1).shape[1:])
        obs_layout = {k: (tuple(v.shape[1:]), v.dtype) for k, v in self.buffers.obs.items()}
        self.storage = RolloutStorage(obs_layout, action_shape, action_dtype, hidden_shape, (self.num_steps + 1) * n)
        self.inference = Inference(actor_critic, self.buffers, self.storage, torch.device(device))
        self.pool = WorkerPool(env_fn, self.buffers, str(cfg["start_method"]), self.envs_per_worker,
                               step_timeout_s=float(cfg["worker_timeout_s"]),
                               start_timeout_s=float(cfg["worker_start_timeout_s"]))
        self.step_intervals = StepIntervals(n, window=max(5 * self.num_steps, 16))

        self.state = EnvStates.initial(actor_critic.initial_hidden(n, device="cpu"))
        self.total_restarts = 0
        self.failures_in_row = np.zeros(self.pool.num_workers, dtype=np.int64)  # since the worker's last good step
        self._stats = CollectStats()
        self._new_rows = 0
        self._carried_boundary = 0  # slots below it were carried in from the previous rollout
        self.interrupt_requested: Callable[[], bool] = lambda: False
        self._started = False

    # ------------------------------------------------------------------ ids and seeds
    @property
    def episode_id(self) -> np.ndarray:
        """Current episode id per env, unique per (env, episode): count * N + env."""
        return (self.state.episode_count - 1) * self.num_envs + np.arange(self.num_envs)

    def env_seed(self, env_idx: int, generation: int) -> int:
        """Seed of an env's `generation`-th explicit reset; depends on (seed, rank, env, generation) only."""
        state = np.random.SeedSequence([self.seed, self.rank, env_idx, generation]).generate_state(1)
        return int(state[0])

    def state_dict(self) -> dict:
        return {"episode_count": self.state.episode_count.copy(),
                "reset_generation": self.state.reset_generation.copy(), "total_restarts": self.total_restarts}

    def load_state_dict(self, state: Mapping) -> None:
        if self._started:
            raise RuntimeError("load the collector state before start()")
        saved = len(state["episode_count"])
        n = min(saved, self.num_envs)  # a run resumed with another trainer.num_envs keeps the first n streams
        self.state.episode_count[:n] = np.asarray(state["episode_count"], dtype=np.int64)[:n]
        self.state.reset_generation[:n] = np.asarray(state["reset_generation"], dtype=np.int64)[:n]
        self.total_restarts = int(state["total_restarts"])
        if saved != self.num_envs and self.rank == 0:
            log.warning("resumed with %d envs per rank where the checkpoint had %d: envs %s",
                        self.num_envs, saved, f"{saved}.. start new episode streams" if self.num_envs > saved
                        else f"{self.num_envs}.. of the checkpoint are dropped")

    # ------------------------------------------------------------------ worker control
    def start(self) -> None:
        """Start the workers; each resets its envs with their seeds (answers arrive during `collect`)."""
        self.pool.start_all()
        self._send_resets(np.arange(self.num_envs))
        self._started = True

    def _send_resets(self, envs: np.ndarray) -> None:
        st = self.state
        seeds = [self.env_seed(int(e), int(g)) for e, g in zip(envs, st.reset_generation[envs], strict=True)]
        st.reset_generation[envs] += 1
        st.episode_count[envs] += 1
        st.step_id[envs] = 0
        st.episode_start[envs] = True
        st.discounted_return[envs] = 0.0
        st.hidden[torch.from_numpy(envs)] = 0.0
        st.ready[envs] = False
        self.pool.reset(envs, seeds)

    def _restart(self, worker: int, reason: str) -> None:
        """Kill a worker, drop its envs' episodes in progress, start it afresh."""
        self.failures_in_row[worker] += 1
        if self.failures_in_row[worker] > self.max_failures_in_row:
            raise WorkerFailure(f"env worker {worker} failed {self.failures_in_row[worker]} times in a row; "
                                f"last: {reason}")
        envs = self.pool.envs_of(worker)
        log.warning("env worker %d (envs %d-%d, rank %d) restarted: %s", worker, envs[0], envs[-1], self.rank, reason)
        st, size = self.state, self.storage.size
        st.pending[envs] = -1
        row_envs = self.storage.table.env_ids[:size].numpy()
        row_episodes = self.storage.table.episode_ids[:size].numpy()
        hit = (self.pool.worker_of[row_envs] == worker) & (row_episodes == self.episode_id[row_envs])
        complete_before = self.storage.complete[:size].copy()
        dropped, new_slot = self.storage.drop_episodes(hit)
        # the dropped rows no longer count towards this rollout's quotas
        new_dropped = dropped[dropped >= self._carried_boundary]
        st.created -= np.bincount(row_envs[new_dropped], minlength=self.num_envs)
        st.completed -= np.bincount(row_envs[dropped[complete_before[dropped]]], minlength=self.num_envs)
        self._new_rows -= len(new_dropped)
        self._carried_boundary -= int(np.sum(dropped < self._carried_boundary))
        busy = st.pending >= 0
        st.pending[busy] = new_slot[st.pending[busy]]
        st.last_answer[envs] = np.nan
        self.total_restarts += 1
        self._stats.restarts += 1
        self.pool.restart(worker)
        self._send_resets(envs)

    def close(self) -> None:
        self.pool.close()

    # ------------------------------------------------------------------ receiving
    def _poll(self, timeout: float) -> None:
        """Wait up to `timeout` s for answers; handle answers, then failed and hung workers."""
        t0 = time.monotonic()
        events = self.pool.poll(timeout)
        self._stats.wait_time += time.monotonic() - t0
        answers = [ev for ev in events if isinstance(ev, Ready)]
        if answers:
            self._on_answers(answers)
        for ev in events:
            if isinstance(ev, Failed):
                self._restart(ev.worker, ev.reason)

    def _on_answers(self, answers: list[Ready]) -> None:
        now = time.monotonic()
        st = self.state
        steps = [ev for ev in answers if ev.command == "step"]
        for ev in steps:
            self.failures_in_row[ev.worker] = 0
            self._stats.env_step_time += ev.seconds
            if self.auto_wait:  # answers to steps only: a reset after a (re)start includes building the env
                self._env_step_times.append(ev.seconds / len(ev.envs))
        if self.auto_wait and steps:
            # a plain sum: np.mean first converts the deque to an array (4% of the collector thread's samples)
            self.max_wait_s = 0.5 * sum(self._env_step_times) / len(self._env_step_times)
        envs = np.concatenate([ev.envs for ev in answers]) if len(answers) > 1 else answers[0].envs
        last = st.last_answer[envs]
        seen = ~np.isnan(last)
        for e, interval in zip(envs[seen].tolist(), (now - last[seen]).tolist(), strict=True):
            self.step_intervals.add(e, interval)
        st.last_answer[envs] = now
        stepped = envs[st.pending[envs] >= 0]
        if len(stepped):
            self._record_steps(stepped, steps)
        st.ready[envs] = True

    def _record_steps(self, envs: np.ndarray, answers: list[Ready]) -> None:
        """Write the step results of `envs` into their pending rows (time-limit rows get gamma V(final obs))."""
        st = self.state
        rewards = self._reward[envs]  # copies (fancy indexing of the shared rows)
        truncated = self._truncated[envs]
        done = self._terminated[envs] | truncated
        if self.reward_scaler is not None:
            returns = st.discounted_return
            returns[envs] = self.reward_scaler.gamma * returns[envs] + rewards
            rewards = self.reward_scaler.scale(returns[envs], rewards)
            returns[envs[done]] = 0.0
        if truncated.any():
            cut = envs[truncated]
            t0 = time.monotonic()
            final_values = self.inference.values(cut, st.hidden[torch.from_numpy(cut)], np.zeros(len(cut), dtype=bool),
                                                 final=True)
            self._stats.inference_time += time.monotonic() - t0
            rewards[truncated] += self.gamma * final_values.numpy()
            self._stats.truncations += len(cut)
        self.storage.set_results(st.pending[envs], rewards, done, truncated)
        st.pending[envs] = -1
        st.completed[envs] += 1
        if done.any():
            ended = envs[done]
            episode_ids = self.episode_id
            for ev in answers:
                for e, episode in zip(ev.envs.tolist(), ev.episodes, strict=True):
                    if episode is not None:
                        self._stats.episodes.append({"env": e, "episode": int(episode_ids[e]), **episode})
            st.episode_count[ended] += 1
            st.step_id[ended] = 0
            st.episode_start[ended] = True

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
        self.pool.resume_clocks()  # time spent learning since the last rollout is no hang
        st = self.state
        n, t_len = self.num_envs, self.num_steps
        fixed = self.mode != "ver"
        carried_in = int(np.sum(st.pending >= 0))
        self._stats = CollectStats(carried_in=carried_in)
        self._carried_boundary = carried_in
        st.completed[:] = 0
        st.created[:] = 0
        st.last_answer[:] = np.nan
        self._new_rows = 0
        quota = t_len * n
        stopping = False
        t_start = last_batch = time.monotonic()
        batch_sizes: list[int] = []
        while True:
            if self.interrupt_requested():
                raise KeyboardInterrupt
            now = time.monotonic()
            if fixed:
                if not stopping and stop_early is not None and stop_early(int(st.completed.min())):
                    stopping = self._stats.preempted = True
                if not np.any(st.pending >= 0) and (stopping or np.all(st.created >= t_len)):
                    break
                allowed = (st.created < t_len) & (not stopping)
            else:
                if self._new_rows >= quota:
                    break
                if deadline_s is not None and now - t_start >= deadline_s:
                    self._stats.preempted = True
                    break
                allowed = np.ones(n, dtype=bool)
            candidates = np.nonzero(st.ready & allowed)[0]
            num_incoming = int(np.count_nonzero(~st.ready & allowed))
            if should_act(len(candidates), self.min_batch, num_incoming, now - last_batch, self.max_wait_s):
                limit = self.max_batch if fixed else min(self.max_batch, quota - self._new_rows)
                self._act(select_batch(candidates, st.created, limit), policy_version)
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
        st = self.state
        idx = torch.from_numpy(envs)
        t0 = time.monotonic()
        result = self.inference.act(envs, st.hidden[idx], st.episode_start[envs], self.episode_id[envs],
                                    st.step_id[envs], policy_version, on_actions=lambda: self.pool.step(envs))
        self._stats.inference_time += time.monotonic() - t0
        st.hidden[idx] = result.hidden
        st.pending[envs] = result.slots
        st.ready[envs] = False
        st.episode_start[envs] = False
        st.step_id[envs] += 1
        st.created[envs] += 1
        self._new_rows += len(envs)

    def _finish_rollout(self, t_start: float, batch_sizes: list[int]) -> Rollout:
        self.pool.pause_clocks()
        st, table = self.state, self.storage.table
        bootstrap = torch.zeros(self.num_envs)
        in_flight = np.nonzero(st.pending >= 0)[0]
        if len(in_flight):
            slots = torch.from_numpy(st.pending[in_flight])
            bootstrap[torch.from_numpy(in_flight)] = torch.where(table.episode_start[slots], 0.0, table.values[slots])
        waiting = np.nonzero(st.ready & ~st.episode_start)[0]
        if len(waiting):
            t0 = time.monotonic()
            idx = torch.from_numpy(waiting)
            bootstrap[idx] = self.inference.values(waiting, st.hidden[idx], st.episode_start[waiting])
            self._stats.inference_time += time.monotonic() - t0
        rollout = self.storage.build(bootstrap, self.num_envs, float(self.num_steps))
        old_slots = st.pending[in_flight]
        order = np.sort(old_slots)
        self.storage.carry_over(order)
        st.pending[in_flight] = np.searchsorted(order, old_slots)

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
        if np.any(self.state.pending >= 0):
            raise RuntimeError("reset_episodes needs a rollout boundary with no step in flight")
        self._send_resets(np.arange(self.num_envs))
        while not np.all(self.state.ready):
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
    return Rollout.cat(rollout, previous.select(slice(max(len(previous) - missing, 0), len(previous))))
