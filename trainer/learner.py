"""PPO updates in the foreground, or on a thread while the next rollout is collected (`trainer.overlap_learning`).

    learner = Learner(ppo, actor_critic, overlap=True)
    rollout = collector.collect(learner.acting_version)   # the collector acts with learner.acting
    done = learner.finish()          # the update started last time (None if none): its stats and seconds
    learner.start(rollout)           # background with overlap; pass background=False to update at once
    learner.finish()                 # joins; the acting network now holds the new weights

Without overlap `acting` is the learner's own network and `start` updates at once. With overlap
(habitat-lab's `overlap_rollouts_and_learn`) the collector acts with a copy of the network while the
learner updates the original on a thread, so the env workers keep stepping during the update instead
of waiting for it. On a 2-core CPU the update takes about a quarter of each iteration; overlapped,
pick trains at 1.10x the steps/s (bench-ver, README "Overlapping the update"). The thread runs at a
lower priority (nice +10): it has a whole rollout's time to finish, and collection should not wait.
`finish` copies the learner's weights (and its observation and value statistics, which are buffers of
the network) into the copy. The price: every rollout after the first is collected by the policy one
update older than the one that learns from it (`learner/policy_lag_mean` 1); PPO's ratio against the
stored log-probs, and its clipping, account for that as they do for VER's stale rows.

Threads: only the caller's thread touches the collector, the reward scaler (`start` merges its
statistics before the update begins, so the thread never reads what the collector writes) and any
collective outside the update; the update's own collectives (gradients, statistics) run on the
thread while the caller collects, and the caller calls `finish` before its next collective, so every
rank issues them in the same order. The update uses only `ppo.generator` for randomness, so the
results do not depend on how the threads interleave.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from trainer.networks import ActorCritic
from trainer.ppo import PPO
from trainer.rollout import Rollout

log = logging.getLogger(__name__)


class Learner:
    """Runs `ppo.update`, overlapped with collection or not; owns the network the collector acts with."""

    def __init__(self, ppo: PPO, actor_critic: ActorCritic, overlap: bool) -> None:
        self.ppo = ppo
        self.learning = actor_critic
        self.overlap = bool(overlap)
        self.acting = copy.deepcopy(actor_critic) if self.overlap else actor_critic
        self.acting_version = ppo.policy_version
        self._pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppo-update", initializer=_lower_priority)
                      if self.overlap else None)
        self._pending: Future | None = None
        self._done: tuple[dict[str, float], float] | None = None

    @property
    def busy(self) -> bool:
        """An update was started and not yet finished."""
        return self._pending is not None or self._done is not None

    def sync_acting(self) -> None:
        """Copy the learner's weights and statistics into the acting network (after a restore or fine-tune start)."""
        if self.acting is not self.learning:
            self.acting.load_state_dict(self.learning.state_dict())
        self.acting_version = self.ppo.policy_version

    def _update(self, rollout: Rollout) -> tuple[dict[str, float], float]:
        t0 = time.monotonic()
        stats = self.ppo.update(rollout, sync_reward_scaler=False)
        return stats, time.monotonic() - t0

    def start(self, rollout: Rollout, background: bool = True) -> None:
        """Begin the update on `rollout`: on the thread when overlapping and `background`, else at once."""
        if self.busy:
            raise RuntimeError("Learner.start: the previous update was not finished")
        if self.ppo.reward_scaler is not None:  # on this thread: the collector writes its pending sums here
            self.ppo.reward_scaler.sync(self.ppo.stats_sync)
        if self.overlap and background:
            self._pending = self._pool.submit(self._update, rollout)
        else:
            self._done = self._update(rollout)

    def finish(self) -> tuple[dict[str, float], float] | None:
        """Wait for the started update (re-raising its exception); its (stats, seconds), or None if none was started.

        Afterwards the acting network holds the learner's weights."""
        if self._pending is not None:
            future, self._pending = self._pending, None
            self._done = future.result()
        done, self._done = self._done, None
        if done is not None:
            self.sync_acting()
        return done

    def close(self) -> None:
        """Wait for a running update, then stop the thread. Never raises: it runs on the way out of training,
        often after another error, which an update's own failure must not hide (it is logged instead)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            try:
                pending.result()
            except BaseException:  # noqa: BLE001 - logged; the error being handled is the one that matters
                log.exception("the PPO update in flight when training stopped failed")
        if self._pool is not None:
            self._pool.shutdown(wait=True)


UPDATE_THREAD_NICE = 10  # the update has a whole rollout's time to finish: collection goes first


def _lower_priority() -> None:
    """Lower the calling thread's scheduling priority by UPDATE_THREAD_NICE (Linux: nice is per thread); no-op elsewhere."""
    with contextlib.suppress(AttributeError, OSError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(os.getpriority(os.PRIO_PROCESS, tid) + UPDATE_THREAD_NICE, 19))
