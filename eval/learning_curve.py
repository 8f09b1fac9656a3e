"""Learning curve of a `train-skill` run: success rate and episode return against env steps, from the
run's `metrics.jsonl`, with the untrained policy's level as a dashed reference line.

    python -m eval.learning_curve runs/pick_cpu --out docs/pick_learning_curve.png

The reference is measured once by running a freshly initialised policy of the run's config
(stochastic actions, like training) on the run's episodes, and cached as
`<run>/untrained_reference.json`. Training metrics are averaged per bin of env steps, weighting each
`metrics.jsonl` line by the number of episodes that finished in it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from configs.files import atomic_path, write_text_atomic


def read_metrics(path: Path) -> list[dict[str, float]]:
    """The lines of a metrics.jsonl file that report finished episodes."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            if d.get("metrics/episodes", 0) > 0 and "metrics/episode_return" in d:
                rows.append(d)
    return rows


def binned(rows: list[dict[str, float]], key: str, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin centre steps, episode-weighted mean of `key`, episodes per bin) over `bins` equal step bins."""
    steps = np.array([r["env_steps"] for r in rows], dtype=np.float64)
    weights = np.array([r["metrics/episodes"] for r in rows], dtype=np.float64)
    values = np.array([r.get(key, np.nan) for r in rows], dtype=np.float64)
    edges = np.linspace(0.0, steps.max(), bins + 1)
    idx = np.clip(np.digitize(steps, edges[1:-1]), 0, bins - 1)
    centres, means, counts = [], [], []
    for b in range(bins):
        sel = (idx == b) & np.isfinite(values)
        if weights[sel].sum() > 0:
            centres.append(0.5 * (edges[b] + edges[b + 1]))
            means.append(float(np.average(values[sel], weights=weights[sel])))
            counts.append(float(weights[sel].sum()))
    return np.array(centres), np.array(means), np.array(counts)


def untrained_reference(run_dir: Path, episodes: int, seed: int = 0) -> dict[str, Any]:
    """Mean return and success of a freshly initialised policy of the run's config (cached)."""
    cache = run_dir / "untrained_reference.json"
    if cache.exists():
        return json.loads(cache.read_text())
    import torch
    from omegaconf import OmegaConf

    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import make_skill_task
    from skills.definitions import skill_def_from_config
    from skills.policy import SkillPolicy
    from skills.train_cli import dataset_cache_path
    from trainer.networks import ActorCritic

    torch.set_num_threads(1)
    cfg: Any = OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml"), resolve=True)
    dataset = cfg["dataset"]["path"] or dataset_cache_path(cfg, run_dir)
    env = RearrangeEnv(make_skill_task(cfg["skill"]), dataset, sim_cfg=cfg["sim"])
    torch.manual_seed(seed)
    actor_critic = ActorCritic(env.observation_space, env.action_space, cfg["policy"])
    policy = SkillPolicy(actor_critic, skill_def_from_config(cfg), cfg, env.observation_space, deterministic=False)
    returns, successes = [], []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        policy.reset()
        total, done, info = 0.0, False, {}
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy.act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        successes.append(float(info.get("success", 0.0)))
        obs, _ = env.reset()
    env.close()
    ref = {"episodes": episodes, "seed": seed, "return": float(np.mean(returns)),
           "return_std": float(np.std(returns)), "success": float(np.mean(successes))}
    write_text_atomic(cache, json.dumps(ref, indent=2))
    return ref


def plot(rows: list[dict[str, float]], ref: dict[str, Any] | None, out: Path, title: str, bins: int) -> dict:
    """Write the two-panel figure; returns the numbers it shows (first and last bins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    summary: dict[str, Any] = {}
    for ax, key, label in ((axes[0], "metrics/success", "success rate"),
                           (axes[1], "metrics/episode_return", "episode return")):
        x, y, n = binned(rows, key, bins)
        ax.plot(x, y, marker="o", ms=3, label="training (stochastic policy)")
        if ref is not None:
            level = ref["success" if key == "metrics/success" else "return"]
            ax.axhline(level, color="gray", ls="--", label=f"untrained policy ({ref['episodes']} episodes)")
        ax.set_xlabel("env steps")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        summary[key] = {"first_bin": float(y[0]) if len(y) else None, "last_bin": float(y[-1]) if len(y) else None,
                        "episodes": float(n.sum())}
    axes[0].set_ylim(-0.02, max(0.1, float(axes[0].get_ylim()[1])))
    axes[1].legend(fontsize=8, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(out, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m eval.learning_curve", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="a train-skill output directory (with metrics.jsonl and config.yaml)")
    parser.add_argument("--out", default="docs/pick_learning_curve.png", help="PNG to write")
    parser.add_argument("--bins", type=int, default=20, help="env-step bins along the x axis")
    parser.add_argument("--untrained-episodes", type=int, default=20,
                        help="episodes for the untrained reference (0: no reference)")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    metrics = run_dir / "metrics.jsonl"
    if not metrics.is_file():
        print(f"error: {metrics} does not exist (is {run_dir} a train-skill run?)", file=sys.stderr)
        raise SystemExit(2)
    rows = read_metrics(metrics)
    if not rows:
        print(f"error: {metrics} has no finished episodes yet", file=sys.stderr)
        raise SystemExit(2)
    ref = untrained_reference(run_dir, args.untrained_episodes) if args.untrained_episodes > 0 else None
    skill = _skill_name(run_dir)
    steps = int(max(r["env_steps"] for r in rows))
    summary = plot(rows, ref, Path(args.out), f"{skill}: {steps} env steps ({run_dir.name})", args.bins)
    print(json.dumps({"run": str(run_dir), "env_steps": steps, "untrained": ref, **summary}, indent=2))


def _skill_name(run_dir: Path) -> str:
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(run_dir / "config.yaml")
    return str(cfg.skill.name)


if __name__ == "__main__":
    main()
