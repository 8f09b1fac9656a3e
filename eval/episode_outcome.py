"""What one HAB episode of the agent (eval/agent.py) produced: one `SkillRun` per skill call or scripted
motion, the `EpisodeOutcome` eval-hab aggregates (eval/hab_eval.py), and the `EpisodeRun` bookkeeping
the agent fills in while the episode runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eval.floor_watch import FloorWatch
from eval.metrics import EpisodeRecord


@dataclass
class SkillRun:
    """One skill call of an episode."""

    label: str
    skill: str
    steps: int
    outcome: str  # "done" | "timeout" | "episode_end" | "stalled" (a reset_arm blocked) | "pushed" (a pick)
    effects_hold: bool
    blocked_releases: int = 0  # steps whose release the agent turned into a hold (`agent.release_guard`)
    unsticks: int = 0  # drives that freed a wedged base during this call (`agent.nav_unstick_steps`, `unstick_skills`)
    settles: int = 0  # steps whose release the agent put off while the object moved (`agent.release_settle_steps`)


@dataclass
class EpisodeOutcome:
    """What one HAB episode produced."""

    episode_id: str
    success: bool
    stages: dict[str, bool]
    failed_skill: str | None  # skill name of the failed call (histogram key)
    failed_call: str | None  # e.g. "pick(obj_3)"
    num_replans: int
    steps: int
    reward: float
    end_reason: str  # "stop" | "truncated" | "force" | "planner" | "replans_exhausted"
    skill_runs: list[SkillRun] = field(default_factory=list)
    floor_drops: list[str] = field(default_factory=list)  # "object:call" per target fallen to the floor

    def to_record(self) -> EpisodeRecord:
        return EpisodeRecord(
            episode_id=self.episode_id,
            success=self.success,
            stages=dict(self.stages),
            failed_skill=None if self.success else self.failed_skill,
            measures={"steps": float(self.steps), "num_replans": float(self.num_replans),
                      "reward": float(self.reward), "num_skill_calls": float(len(self.skill_runs))},
        )

    def to_dict(self) -> dict[str, Any]:
        d = self.to_record().to_dict()
        d.update({"failed_call": None if self.success else self.failed_call, "end_reason": self.end_reason,
                  "skill_calls": [f"{r.label}:{r.outcome}:{r.steps}{'' if r.effects_hold else ':failed'}"
                                  f"{f':held{r.blocked_releases}' if r.blocked_releases else ''}"
                                  f"{f':unstuck{r.unsticks}' if r.unsticks else ''}"
                                  f"{f':settled{r.settles}' if r.settles else ''}"
                                  for r in self.skill_runs],
                  "floor_drops": list(self.floor_drops)})
        return d


@dataclass
class EpisodeRun:
    """Mutable bookkeeping of one episode while the agent runs it."""

    episode_id: str
    steps: int = 0
    reward: float = 0.0
    replans: int = 0
    info: Mapping[str, float] = field(default_factory=dict)
    active: tuple[str, str] | None = None
    failed: tuple[str, str] | None = None
    first_failure: tuple[str, str] | None = None  # fixed mode: the first call whose effects did not hold
    end_reason: str = ""
    skill_runs: list[SkillRun] = field(default_factory=list)
    floor: FloorWatch | None = None  # which call let a target fall to the floor (eval/floor_watch.py)
