"""Collecting rollouts across a worker failure, shared by the fault and vector-worker tests."""

from __future__ import annotations

import time

from trainer.collector import Collector
from trainer.rollout import Rollout


def collect_through_restart(collector: Collector, before: int, after: int, timeout_s: float = 60.0) -> list[Rollout]:
    """At least `before` rollouts and on until the first worker restart (or `timeout_s`), then `after`
    more; the collector is closed at the end. A hung env does not stop VER collection, so the restart
    can come any number of rollouts after the fault."""
    rollouts: list[Rollout] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(rollouts) < before or (collector.total_restarts == 0 and time.monotonic() < deadline):
            rollouts.append(collector.collect(len(rollouts)))
        for _ in range(after):
            rollouts.append(collector.collect(len(rollouts)))
    finally:
        collector.close()
    return rollouts
