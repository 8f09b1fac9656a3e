"""PNG plots of evaluation results (matplotlib, Agg backend), written atomically.

- `plot_stage_success(stage_stats, path)`: bar chart of per-stage success (the `stage_success`
  dict of `eval.metrics.aggregate`, each {mean, ci_low, ci_high}) with confidence-interval error
  bars, like the VER paper's Fig. 6 and ManiSkill-HAB's progressive completion plots.
- `plot_learning_curves(curves, path)`: metric against environment steps for one or more runs,
  each with an optional confidence band (e.g. VER vs NoVER vs sync success over training).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the headless backend)
import numpy as np  # noqa: E402

from trainer.files import atomic_path  # noqa: E402


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
    if not stage_stats:
        raise ValueError("plot_stage_success needs at least one stage")
    names = list(stage_stats)
    mean = np.array([float(stage_stats[n]["mean"]) for n in names])
    low = np.array([float(stage_stats[n].get("ci_low", stage_stats[n]["mean"])) for n in names])
    high = np.array([float(stage_stats[n].get("ci_high", stage_stats[n]["mean"])) for n in names])
    yerr = np.vstack([np.maximum(mean - low, 0.0), np.maximum(high - mean, 0.0)])
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(names) + 1.5), 3.5))
    x = np.arange(len(names))
    ax.bar(x, mean, yerr=yerr, capsize=3, color="tab:blue", alpha=0.85)
    ax.set_xticks(x, names, rotation=45, ha="right")
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return _save_png(fig, path)


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
