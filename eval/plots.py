"""PNG plots of evaluation results (matplotlib, Agg backend), written atomically.

- `plot_stage_success(stage_stats, path)`: bar chart of per-stage success (the `stage_success`
  dict of `eval.metrics.aggregate`, each {mean, ci_low, ci_high}) with confidence-interval error
  bars, like the VER paper's Fig. 6 and ManiSkill-HAB's progressive completion plots.
- `plot_stage_comparison(groups, path, failed=...)`: the same for several agents side by side (VER paper
  Fig. 6), optionally beside a failed-skill histogram (episodes per skill that failed, per agent).
- `plot_learning_curves(curves, path)`: metric against environment steps for one or more runs,
  each with an optional confidence band (e.g. VER vs NoVER vs sync success over training).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the headless backend)
import numpy as np  # noqa: E402

from configs.files import atomic_path  # noqa: E402


def _save_png(fig, path: str | os.PathLike) -> Path:
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
    return Path(path)


def plot_stage_success(
    stage_stats: Mapping[str, Mapping[str, float]],
    path: str | os.PathLike,
    title: str = "",
    ylabel: str = "episodes that completed the stage",
) -> Path:
    """Bar chart of per-stage success rates (in the mapping's order) with CI error bars."""
    return plot_stage_comparison({"": stage_stats}, path, title=title, ylabel=ylabel)


def plot_stage_comparison(
    groups: Mapping[str, Mapping[str, Mapping[str, float]]],
    path: str | os.PathLike,
    title: str = "",
    ylabel: str = "episodes that completed the stage",
    failed: Mapping[str, Mapping[str, float]] | None = None,
) -> Path:
    """Grouped bars: per-stage success of several agents (label -> `stage_success`), with CI error
    bars; stages in order of first appearance, a stage an agent lacks drawn as 0 without a bar error.
    With `failed` (label -> {skill: failed episodes}), a second panel: the failed-skill histogram."""
    names = _ordered_keys(groups.values())
    if not names:
        raise ValueError("plot_stage_comparison needs at least one stage")
    skills = _ordered_keys(failed.values()) if failed else []
    width = max(4.0, (0.45 + 0.25 * len(groups)) * max(len(names), len(skills)) + 1.5)
    fig, axes = plt.subplots(2 if skills else 1, 1, figsize=(width, 7.0 if skills else 3.5), squeeze=False)
    stage_ax = axes[0][0]
    _grouped_bars(stage_ax, names, groups)
    stage_ax.set_ylim(0.0, 1.05)
    stage_ax.set_ylabel(ylabel)
    if title:
        stage_ax.set_title(title)
    if len(groups) > 1:
        stage_ax.legend(fontsize=7, loc="upper right")
    if failed and skills:
        fail_ax = axes[1][0]
        _grouped_bars(fail_ax, skills, {label: {k: {"mean": float(v)} for k, v in counts.items()}
                                        for label, counts in failed.items()})
        fail_ax.set_ylabel("failed episodes, by the skill that failed")
        fail_ax.set_title("failed-skill histogram")
        fig.tight_layout()
    return _save_png(fig, path)


def _ordered_keys(mappings: Iterable[Mapping[str, Any]]) -> list[str]:
    """The keys of every mapping, in order of first appearance."""
    names: list[str] = []
    for m in mappings:
        names.extend(n for n in m if n not in names)
    return names


def _grouped_bars(ax, names: Sequence[str], groups: Mapping[str, Mapping[str, Mapping[str, float]]]) -> None:
    """One bar per (name, group) with optional `ci_low`/`ci_high` error bars; a missing name is 0."""
    width = 0.8 / len(groups)
    x = np.arange(len(names))
    for i, (label, stats) in enumerate(groups.items()):
        mean = np.array([float(stats[n]["mean"]) if n in stats else 0.0 for n in names])
        low = np.array([float(stats[n].get("ci_low", stats[n]["mean"])) if n in stats else 0.0 for n in names])
        high = np.array([float(stats[n].get("ci_high", stats[n]["mean"])) if n in stats else 0.0 for n in names])
        has_ci = any("ci_low" in stats[n] for n in names if n in stats)
        yerr = np.vstack([np.maximum(mean - low, 0.0), np.maximum(high - mean, 0.0)]) if has_ci else None
        ax.bar(x + (i - (len(groups) - 1) / 2) * width, mean, width=width, yerr=yerr, capsize=2,
               alpha=0.85, label=label or None, color=None if len(groups) > 1 else "tab:blue")
    ax.set_xticks(x, names, rotation=45, ha="right")
    ax.grid(axis="y", alpha=0.3)


@dataclass
class Curve:
    """One learning curve: `y` at steps `x`, optional band [`low`, `high`]."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None


def plot_learning_curves(
    curves: Sequence[Curve],
    path: str | os.PathLike,
    xlabel: str = "environment steps",
    ylabel: str = "success",
    title: str = "",
) -> Path:
    """Line plot of one or more curves with optional shaded confidence bands."""
    if not curves:
        raise ValueError("plot_learning_curves needs at least one curve")
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for c in curves:
        x, y = np.asarray(c.x, dtype=float), np.asarray(c.y, dtype=float)
        if x.shape != y.shape or x.ndim != 1:
            raise ValueError(f"curve '{c.label}': x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
        (line,) = ax.plot(x, y, label=c.label)
        if (c.low is None) != (c.high is None):
            raise ValueError(f"curve '{c.label}': give both low and high for a band, or neither")
        if c.low is not None and c.high is not None:
            lo, hi = np.asarray(c.low, dtype=float), np.asarray(c.high, dtype=float)
            if lo.shape != x.shape or hi.shape != x.shape:
                raise ValueError(f"curve '{c.label}': low and high must have the shape of x {x.shape}")
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    if any(c.label for c in curves):
        ax.legend()
    return _save_png(fig, path)
