"""Evaluation metrics: per-episode records -> aggregate numbers with 95% bootstrap intervals.

- `EpisodeRecord`: what one evaluated episode produced (success, stages reached, the skill blamed for
  an unsuccessful episode: the HAB agent's first failed call in fixed mode, else the call that failed last
  or the step running when the episode ended, which may be one of the agent's own steps such as reset_arm
  when the step budget ran out during it; numeric measures such as steps or reward).
- `StageTracker`: follows the symbolic state during an HAB episode and records when each stage of
  the problem (`planner.problem.Stage`: open_k, pick_i, place_i, close_k) was first reached, like
  habitat's `pddl_stage_goals` ("ever true"), with a stage's prerequisites (a place after its pick).
- `aggregate(records, stage_names)`: success rate, per-stage success as progressive completion
  (fraction of episodes that reached stage k and every stage before it: ManiSkill-HAB's progressive
  completion rates, VER paper Fig. 6), the rate each stage was reached at all, a histogram of the
  failed skills, and the mean of every numeric measure; every mean with a percentile-bootstrap 95%
  confidence interval (seeded numpy, `n_resamples` resamples). The result is JSON-serialisable.
- `write_json_atomic(path, obj)`: temp file in the same folder, then os.replace.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from configs.files import write_text_atomic

Atom = tuple[str, ...]


@dataclass
class EpisodeRecord:
    """Result of one evaluated episode."""

    episode_id: str
    success: bool
    stages: dict[str, bool] = field(default_factory=dict)  # stage name -> reached during the episode
    failed_skill: str | None = None  # skill blamed for an unsuccessful episode (module docstring)
    measures: dict[str, float] = field(default_factory=dict)  # e.g. steps, reward, num_replans

    def to_dict(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "success": bool(self.success),
            "stages": {k: bool(v) for k, v in self.stages.items()},
            "failed_skill": self.failed_skill,
            "measures": {k: float(v) for k, v in self.measures.items()},
        }


class StageTracker:
    """Records the first step at which each stage was reached (its atoms held, prerequisites met).

    `stages` are objects with `name`, `atoms` (frozenset of ground atoms) and `requires` (names),
    e.g. `ScenarioProblem.stages`.
    """

    def __init__(self, stages: Sequence[Any]):
        self.stages = list(stages)
        self.names = [s.name for s in self.stages]
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"duplicate stage names: {self.names}")
        self.first_step: dict[str, int] = {}

    def update(self, state: Iterable[Atom], step: int) -> list[str]:
        """Feed the symbolic state at `step`; returns the stages newly reached."""
        state = frozenset(state)
        new: list[str] = []
        changed = True
        while changed:  # a stage reached now can unlock a dependent stage in the same state
            changed = False
            for s in self.stages:
                if s.name in self.first_step or not s.atoms <= state:
                    continue
                if all(r in self.first_step for r in s.requires):
                    self.first_step[s.name] = int(step)
                    new.append(s.name)
                    changed = True
        return new

    @property
    def reached(self) -> dict[str, bool]:
        return {n: n in self.first_step for n in self.names}

    def last_reached(self) -> str | None:
        """The last stage of the progressive (in-order) prefix that was reached, or None."""
        last = None
        for n in self.names:
            if n not in self.first_step:
                break
            last = n
        return last


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> dict[str, float | int]:
    """Mean of `values` with a percentile-bootstrap confidence interval (seeded, deterministic)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if not np.all(np.isfinite(x)):
        raise ValueError("bootstrap_ci needs finite values")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(int(n_resamples), x.size))
    means = x[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    mean = float(x.mean())
    # percentile intervals of a mean contain the sample mean up to float rounding; make it exact
    return {"mean": mean, "ci_low": float(min(lo, mean)), "ci_high": float(max(hi, mean)), "n": int(x.size)}


def format_interval(ci: Mapping[str, Any]) -> str:
    """A `bootstrap_ci` result as '0.28 [0.16, 0.42]' (mean, then the interval), as every table and log line prints it."""
    return f"{ci['mean']:.2f} [{ci['ci_low']:.2f}, {ci['ci_high']:.2f}]"


def aggregate(
    records: Sequence[EpisodeRecord],
    stage_names: Sequence[str] | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Aggregate episode records (see the module docstring); `stage_names` in plan order.

    `stage_names` defaults to the stage order of the first record. Records that lack a stage count
    it as not reached.
    """
    if not records:
        raise ValueError("aggregate needs at least one episode record")
    names = list(stage_names) if stage_names is not None else list(records[0].stages)

    def ci(values) -> dict[str, float | int]:
        return bootstrap_ci(values, n_resamples, confidence, seed)

    success = np.array([1.0 if r.success else 0.0 for r in records])
    reached = np.array([[1.0 if r.stages.get(n, False) else 0.0 for n in names] for r in records]).reshape(
        len(records), len(names)
    )
    progressive = np.cumprod(reached, axis=1) if names else reached
    failures = Counter(r.failed_skill for r in records if not r.success and r.failed_skill is not None)
    measure_names = sorted({k for r in records for k in r.measures})
    measures = {}
    for k in measure_names:
        vals = [float(r.measures[k]) for r in records if k in r.measures and math.isfinite(float(r.measures[k]))]
        if vals:
            measures[k] = ci(vals)
    return {
        "num_episodes": len(records),
        "confidence": confidence,
        "n_resamples": int(n_resamples),
        "success": ci(success),
        "stage_order": names,
        "stage_success": {n: ci(progressive[:, j]) for j, n in enumerate(names)},
        "stage_reached": {n: ci(reached[:, j]) for j, n in enumerate(names)},
        "failed_skill": dict(sorted(failures.items())),
        "num_failed_unattributed": int(sum(1 for r in records if not r.success and r.failed_skill is None)),
        "measures": measures,
    }


def write_json_atomic(path: str | os.PathLike, obj: Any) -> Path:
    """Write `obj` as indented JSON: temp file in the same folder, fsync, then os.replace."""
    text = json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n"
    return write_text_atomic(path, text)


def load_records(rows: Iterable[Mapping[str, Any]]) -> list[EpisodeRecord]:
    """Episode records back from their `to_dict()` form (e.g. a saved per-episode JSON list)."""
    return [
        EpisodeRecord(
            episode_id=str(r["episode_id"]),
            success=bool(r["success"]),
            stages={str(k): bool(v) for k, v in r.get("stages", {}).items()},
            failed_skill=r.get("failed_skill"),
            measures={str(k): float(v) for k, v in r.get("measures", {}).items()},
        )
        for r in rows
    ]
