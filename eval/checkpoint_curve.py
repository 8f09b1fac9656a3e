"""Success of a `train-skill` run's checkpoints on held-out episodes: the learning benchmark.

    python -m eval.checkpoint_curve runs/pick_cpu --episodes 100 --split val --out docs/pick_cpu_curve

evaluates every checkpoint under `<run>/checkpoints/` (or every k-th with `--every k`) exactly as
`eval-skill` does (the checkpoint's own task and sim settings, deterministic actions, the same
seeded val episodes for every checkpoint), and writes `<out>.json` (steps, wall time, success with
its 95% bootstrap interval, per checkpoint) and `<out>.png` (success against env steps and against
training wall time). Wall time is read from the run's `metrics.jsonl` and keeps counting across
`--resume` (each resumed session's clock starts at 0 again; the sessions are laid end to end).
Checkpoints are evaluated in `--workers` processes; run it when no training shares the cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from configs.compose import exit_with_error
from trainer.checkpoint import CheckpointError

EVAL_CFG = {"bootstrap_samples": 1000, "ci": 0.95}


def cumulative_wall_time(metrics_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(env_steps, training wall time in s) of every metrics line, with resumed sessions laid end to end."""
    steps, times = [], []
    offset, last = 0.0, 0.0
    with open(metrics_path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            t = float(row["wall_time"])
            if t < last:  # a resumed session: its clock restarted
                offset += last
            last = t
            steps.append(int(row["env_steps"]))
            times.append(offset + t)
    return np.asarray(steps), np.asarray(times)


def checkpoint_step(path: Path) -> int:
    """The env step count in a checkpoint's file name (`ckpt_<step>.pt`)."""
    return int(path.stem.split("_")[1])


def evaluate_checkpoint(path: str, episodes: int, split: str, seed: int) -> dict[str, Any]:
    """Success of one checkpoint on `episodes` episodes of `split` (deterministic actions), as eval-skill."""
    import torch

    torch.set_num_threads(1)
    from eval.skill_eval import PolicyAgent, _make_env, breakdown, run_episode, summarize
    from rearrange.generate import generate_episodes
    from skills.policy import SkillPolicy

    policy = SkillPolicy.from_checkpoint(path, deterministic=True)
    eps = generate_episodes(policy.skill.name, split, episodes, seed)
    agent = PolicyAgent(policy)
    env = _make_env(agent, policy.skill.name, eps)
    env.reset(seed=seed)
    try:
        rows = [run_episode(env, agent, i, None, policy.skill.name, {"every": 1}) for i in range(len(eps))]
    finally:
        env.close()
    summary = summarize(rows, EVAL_CFG)
    return {"checkpoint": path, "success": summary["success"],
            "mean_steps": float(np.mean([r["measures"]["steps"] for r in rows])), **breakdown(rows)}


def plot(points: list[dict[str, Any]], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([p["env_steps"] for p in points]) / 1e6
    hours = np.array([p["wall_time_s"] for p in points]) / 3600.0
    mean = np.array([p["success"]["mean"] for p in points])
    lo = np.array([p["success"]["ci_low"] for p in points])
    hi = np.array([p["success"]["ci_high"] for p in points])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, x, label in ((axes[0], steps, "env steps (millions)"), (axes[1], hours, "training wall time (h)")):
        ax.fill_between(x, lo, hi, alpha=0.25, label="95% bootstrap CI")
        ax.plot(x, mean, marker="o", label="success")
        ax.axhline(0.9, color="gray", linestyle="--", linewidth=1, label="goal 0.90")
        ax.set_xlabel(label)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success (held-out episodes)")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    tmp = out.with_name(out.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eval.checkpoint_curve", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a train-skill run directory (with checkpoints/ and metrics.jsonl)")
    p.add_argument("--episodes", type=int, default=100, help="episodes per checkpoint (default 100)")
    p.add_argument("--split", default="val", help="episode split (default val)")
    p.add_argument("--seed", type=int, default=0, help="episode generation seed (default 0)")
    p.add_argument("--every", type=int, default=1, help="evaluate every k-th checkpoint (the last always)")
    p.add_argument("--workers", type=int, default=2, help="parallel evaluation processes (default 2)")
    p.add_argument("--out", help="output path without extension (default <run>/checkpoint_curve)")
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    run = Path(args.run_dir)
    from trainer.checkpoint import list_checkpoints

    ckpts = list_checkpoints(run / "checkpoints")
    if not ckpts:
        exit_with_error(f"no checkpoint (ckpt_*.pt) found in {run / 'checkpoints'}")
    if not (run / "metrics.jsonl").is_file():
        exit_with_error(f"{run} has no metrics.jsonl (not a train-skill run directory)")
    if args.episodes < 1 or args.every < 1 or args.workers < 1:
        exit_with_error("--episodes, --every and --workers must be >= 1")
    from configs.compose import require_choice
    from rearrange.episodes import SPLITS

    require_choice("split", args.split, SPLITS)
    chosen = ckpts[:: args.every]
    if chosen[-1] != ckpts[-1]:
        chosen.append(ckpts[-1])
    steps, times = cumulative_wall_time(run / "metrics.jsonl")
    from tqdm import tqdm

    results: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(evaluate_checkpoint, str(c), args.episodes, args.split, args.seed): c for c in chosen}
        with tqdm(total=len(futures), desc="checkpoints", file=sys.stderr) as bar:
            for fut, path in futures.items():
                try:
                    results[str(path)] = fut.result()
                except CheckpointError as exc:  # a corrupt or foreign checkpoint: one line, exit 2
                    bar.close()
                    exit_with_error(str(exc).splitlines()[0])
                bar.update(1)
    from eval.metrics import format_interval, write_json_atomic

    points = []
    for c in chosen:
        step = checkpoint_step(c)
        at = int(np.searchsorted(steps, step))
        wall = float(times[min(at, len(times) - 1)]) if len(times) else float("nan")
        points.append({"env_steps": step, "wall_time_s": wall, **results[str(c)]})
        s = points[-1]["success"]
        print(f"{step:>11,d} steps  {wall / 60:7.1f} min  success {format_interval(s)}")
    out = Path(args.out) if args.out else run / "checkpoint_curve"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out.with_suffix(".json"), {"run": str(run), "split": args.split, "episodes": args.episodes,
                                                 "seed": args.seed, "points": points})
    plot(points, out.with_suffix(".png"), f"{run.name}: success on {args.episodes} {args.split} episodes")
    print(f"-> {out.with_suffix('.json')}, {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
