"""Metrics output of a training run: TensorBoard events, a JSON-lines file and a progress bar.

Stable metric names: `perf/*` (throughput, per-component timings, restarts, preemption),
`learner/*` (from PPO), `metrics/*` (episode return, length and the env's scalar info measures,
averaged over the episodes that finished since the last line). Every line of `metrics.jsonl` is one
JSON object with `update`, `env_steps`, `wall_time` and the metrics. Only rank 0 writes.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm


class MetricsLogger:
    def __init__(self, output_dir: Path, total_steps: int, initial_steps: int = 0, enabled: bool = True,
                 progress: bool = True) -> None:
        self.enabled = enabled
        self._start = time.monotonic()
        self._jsonl = None
        self._writer = None
        self._bar = None
        if not enabled:
            return
        output_dir.mkdir(parents=True, exist_ok=True)
        self._jsonl = open(output_dir / "metrics.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        self._writer = SummaryWriter(log_dir=str(output_dir / "tensorboard"))
        if progress:
            self._bar = tqdm(total=total_steps, initial=initial_steps, unit="step", dynamic_ncols=True,
                             smoothing=0.1)

    def log(self, update: int, env_steps: int, metrics: dict[str, float]) -> None:
        if not self.enabled:
            return
        clean = {k: float(v) for k, v in sorted(metrics.items()) if v is not None and math.isfinite(float(v))}
        record = {"update": update, "env_steps": env_steps, "wall_time": time.monotonic() - self._start, **clean}
        self._jsonl.write(json.dumps(record) + "\n")
        self._jsonl.flush()
        for key, value in clean.items():
            self._writer.add_scalar(key, value, env_steps)

    def progress(self, env_steps: int, sps: float, episode_return: float | None) -> None:
        if self._bar is None:
            return
        self._bar.update(max(env_steps - self._bar.n, 0))
        postfix = {"sps": f"{sps:.0f}"}
        if episode_return is not None:
            postfix["return"] = f"{episode_return:.1f}"
        self._bar.set_postfix(postfix, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self._writer is not None:
            self._writer.close()
        if self._jsonl is not None:
            self._jsonl.close()
