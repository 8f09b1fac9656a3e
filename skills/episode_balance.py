"""Episodes drawn more often where the policy fails: a training curriculum over receptacle kinds.

A skill's episodes act on three kinds of receptacle (`rearrange.generate.receptacle_kind`: open
surfaces, fridge shelves, drawers) that a policy learns at different times. Two draws of pick's
two-hour recipe (checkpoints/pick.md runs 22 and 23, one command) ended their first stage with 20 and 4
of 35 val fridge-shelf episodes solved, and the later stages did not close the gap (31 and 22 at the
end), while drawers were solved (23-24 of 24) in every draw. This wrapper keeps, per kind, a running success rate of
the episodes it has seen end (ordinary starts only; an oracle start's success says nothing about the
policy's own start; an exponential average with step `rate`, divided by 1 - (1 - rate)^count as Adam
corrects its moments, so a kind seen a few times is not taken for a failed one) and draws the next
episode from

    p(episode) = (1 - mix) / n  +  mix * w(kind) / (sum over kinds of n_kind * w(kind)),
    w(kind) = 1 - success(kind) + floor,

so a kind the policy fails gets up to `mix` of the draws beyond its share, and a kind it solves keeps
at least its share times (1 - mix). With every rate at 0 (the start) the draw is uniform. This is
prioritized level replay (Jiang et al. 2021) over three groups of levels instead of single levels: a
single episode is seen a few times per run, a kind thousands of times.

Only `train-skill` uses it (`skill.episode_balance` in the skill's yaml; `mix: 0` is off, the default).
Each env keeps its own rates (no traffic between workers) and draws with its own RNG, so a run stays
deterministic per seed. Every episode's final info reports the env's current rates (`balance/<kind>`)
so the run's metrics show the curriculum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils import seeding

from configs.ranges import check_range
from rearrange.episodes import Episode
from rearrange.generate import episode_receptacle_kind
from rearrange.layout import cached_layout

KINDS = ("surface", "fridge", "drawer")


@dataclass(frozen=True)
class EpisodeBalanceConfig:
    """The `episode_balance` node of a skill config."""

    mix: float = 0.0    # share of draws weighted by failure (0: uniform, off)
    rate: float = 0.02  # running success per kind: new = (1 - rate) * old + rate * outcome
    floor: float = 0.05  # weight kept by a kind whose rate reaches 1

    @classmethod
    def from_node(cls, node: Mapping[str, Any] | None) -> EpisodeBalanceConfig:
        """Validated; ValueError naming the key and its valid range."""
        node = dict(node or {})
        unknown = sorted(set(node) - {"mix", "rate", "floor"})
        if unknown:
            raise ValueError(f"skill.episode_balance: unknown key '{unknown[0]}'; valid keys: mix, rate, floor")
        mix = check_range("skill.episode_balance.mix", node.get("mix", 0.0), 0.0, 1.0)
        rate = check_range("skill.episode_balance.rate", node.get("rate", 0.02), 0.0, 1.0, low_open=True)
        floor = check_range("skill.episode_balance.floor", node.get("floor", 0.05), 0.0)
        return cls(mix=mix, rate=rate, floor=floor)


def episode_kinds(episodes: Sequence[Episode]) -> list[str | None]:
    """The receptacle kind of each episode (None where it has none), from its layout alone."""
    return [episode_receptacle_kind(ep, cached_layout(ep.layout_seed)) for ep in episodes]


def draw_weights(kinds: Sequence[str | None], success: Mapping[str, float], mix: float, floor: float) -> np.ndarray:
    """p(episode) as the module docstring writes it; episodes without a kind count as solved."""
    n = len(kinds)
    w = np.array([(1.0 - success.get(k, 0.0) + floor) if k is not None else floor for k in kinds])
    return (1.0 - mix) / n + mix * w / w.sum()


class EpisodeBalanceEnv(gymnasium.Wrapper):
    """A skill env (a `RearrangeEnv`, possibly inside `OracleStartEnv`) whose next episode is drawn by
    `draw_weights` from the running success per receptacle kind of the episodes it has played."""

    def __init__(self, env: gymnasium.Env, cfg: EpisodeBalanceConfig) -> None:
        super().__init__(env)
        self.cfg = cfg
        self.kinds = episode_kinds(env.unwrapped.episodes)
        self.average = {k: 0.0 for k in KINDS}  # exponential average of the outcomes, from 0
        self.seen = {k: 0 for k in KINDS}        # ended ordinary-start episodes per kind
        self._kind: str | None = None

    @property
    def success(self) -> dict[str, float]:
        """The running success per kind, bias-corrected (0 for a kind not seen yet)."""
        return {k: self.average[k] / (1.0 - (1.0 - self.cfg.rate) ** n) if n else 0.0 for k, n in self.seen.items()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if not options or "episode_index" not in options:
            base = self.env.unwrapped
            if seed is not None:  # seed the env's RNG before it draws the episode, as its own reset would
                base.np_random, _ = seeding.np_random(seed)
            p = draw_weights(self.kinds, self.success, self.cfg.mix, self.cfg.floor)
            options = {**(options or {}), "episode_index": int(base.np_random.choice(len(p), p=p))}
        self._kind = self.kinds[int(options["episode_index"])]
        return self.env.reset(seed=seed, options=options)

    def step(self, action: np.ndarray):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            if self._kind is not None and not float(info.get("oracle_start", 0.0)) > 0.5:
                old = self.average[self._kind]
                self.average[self._kind] = old + self.cfg.rate * (float(info.get("success", 0.0)) - old)
                self.seen[self._kind] += 1
            info = {**info, **{f"balance/{k}": v for k, v in self.success.items()}}
        return obs, reward, terminated, truncated, info
