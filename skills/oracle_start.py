"""Oracle starts: a training curriculum that begins some episodes part-way through the skill.

With probability `prob` a reset lets the skill's oracle act first, through the env's `step_full` with
the oracle's joint-space action cut to the skill's subsets (so the physics, the task's state and the
step count are exactly what the policy would have left behind), and hands over when the oracle enters
one of the listed `phases` for the n-th time, n uniform over the list, plus U{0..extra_steps} more
oracle steps. The policy then plays the rest of the episode (its remaining steps). What the policy
would find hardest to discover by itself, such as releasing a held object at the goal, is then seen
from the first updates on (the "start from a demonstration state" curriculum of Salimans & Chen 2018,
with the scripted oracle as the demonstrator). An episode the prefix already ended falls back to an
ordinary reset, and so does a prefix that has not handed over within `max_prefix_steps` (> 0): an oracle
that cannot finish its first phase (a fixed base outside its stand-off zone) would otherwise play the
whole episode first.

Only `train-skill` uses it (`skill.oracle_start` in the skill's yaml; `prob: 0` is off); `eval-skill`
and `eval-hab` always start from the episode's start. Every episode's final info says how it began
(`oracle_start` 0/1) and counts successes from the episode's own start (`start_success`), so a
run's success without the curriculum is start_success / (1 - oracle_start).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np

from configs.ranges import check_range
from rearrange.actions import restrict_full
from skills.oracles.factory import ORACLES, make_oracle


@dataclass(frozen=True)
class OracleStartConfig:
    """The `oracle_start` node of a skill config."""

    prob: float
    phases: tuple[str, ...]
    extra_steps: int
    max_prefix_steps: int = 0  # 0: the prefix may run to the episode's end

    @classmethod
    def from_node(cls, node: Mapping[str, Any] | None, skill: str) -> OracleStartConfig:
        """Validated; ValueError naming the key and its valid range."""
        node = dict(node or {})
        prob = check_range("skill.oracle_start.prob", node.get("prob", 0.0), 0.0, 1.0)
        phases = tuple(str(p) for p in node.get("phases") or ())
        valid = ORACLES[skill].PHASES
        if prob > 0.0 and not phases:
            raise ValueError(f"skill.oracle_start.phases must name at least one {skill} oracle phase when prob > 0; "
                             f"valid choices: {', '.join(valid)}")
        for phase in phases:
            if phase not in valid:
                raise ValueError(f"skill.oracle_start.phases: unknown {skill} oracle phase '{phase}'; "
                                 f"valid choices: {', '.join(valid)}")
        extra = int(check_range("skill.oracle_start.extra_steps", node.get("extra_steps", 0), unit="steps"))
        cap = int(check_range("skill.oracle_start.max_prefix_steps", node.get("max_prefix_steps", 0),
                              unit="steps (0: no cap)"))
        return cls(prob=prob, phases=phases, extra_steps=extra, max_prefix_steps=cap)


class OracleStartEnv(gymnasium.Wrapper):
    """A `RearrangeEnv` whose resets sometimes hand over part-way through the oracle's solution."""

    def __init__(self, env: gymnasium.Env, skill: str, cfg: OracleStartConfig,
                 oracle_cfg: Mapping[str, Any]) -> None:
        super().__init__(env)
        self.cfg = cfg
        self.oracle = make_oracle(skill, oracle_cfg)
        self.from_oracle = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.from_oracle = False
        base = self.env.unwrapped
        if base.np_random.random() < self.cfg.prob:
            handed = self._play_oracle(base, (obs, info))
            if handed is None:  # the prefix ended the episode: start an ordinary one
                obs, info = self.env.reset(options=options)
            else:
                obs, info = handed
                self.from_oracle = True
        return obs, self._mark(info, success=False)

    def step(self, action: np.ndarray):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._mark(info, success=bool(info.get("success", 0.0)))

    def _play_oracle(self, base: Any, start: tuple[dict, dict]) -> tuple[dict, dict] | None:
        """Step the oracle up to its hand-over point; (obs, info) there, or None if the episode ended or
        the hand-over did not come within `max_prefix_steps` (when > 0). `start` is the reset's
        (obs, info); the oracle's first phase counts as an entry at step 0."""
        rng = base.np_random
        entries_left = int(rng.integers(len(self.cfg.phases)))
        extra = int(rng.integers(self.cfg.extra_steps + 1))
        self.oracle.reset(base.sim, base.current_episode)
        subsets: Sequence[str] = base.task.action_subsets
        phase = self.oracle.phase
        handing = False
        if phase in self.cfg.phases:
            handing = entries_left == 0
            entries_left -= 1
        result: tuple[dict | None, dict] = start  # the sensors are read only at the hand-over (no policy sees the rest)
        limit = base.task.max_steps - 1
        if self.cfg.max_prefix_steps > 0:
            limit = min(limit, self.cfg.max_prefix_steps)
        for _ in range(limit):
            if handing:
                if extra == 0:
                    return (base.observation() if result[0] is None else result[0]), result[1]
                extra -= 1
            action = restrict_full(subsets, self.oracle.act(base.sim), base.task.base_reverse_speed)
            obs, _, terminated, truncated, info = base.step_full(action, observe=False)
            if terminated or truncated or self.oracle.done:
                return None
            result = (obs, info)
            if self.oracle.phase != phase:
                phase = self.oracle.phase
                if phase in self.cfg.phases and not handing:
                    if entries_left == 0:
                        handing = True
                    entries_left -= 1
        return None

    def _mark(self, info: dict, success: bool) -> dict:
        info = dict(info)
        info["oracle_start"] = float(self.from_oracle)
        info["start_success"] = float(success and not self.from_oracle)
        return info
