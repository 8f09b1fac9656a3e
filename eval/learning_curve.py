"""Learning curve of a `train-skill` run: success rate and episode return against env steps, from the
run's `metrics.jsonl`, with the untrained policy's level as a dashed reference line.

    python -m eval.learning_curve runs/pick_cpu                          # runs/pick_cpu/learning_curve.png
    python -m eval.learning_curve runs/place --every 250000 --untrained-episodes 0   # + a table per 250k steps

The reference is measured once by running a freshly initialised policy of the run's config
(stochastic actions, like training) on the run's episodes, and cached as
`<run>/untrained_reference.json`. Training metrics are averaged per bin of env steps, weighting each
`metrics.jsonl` line by the number of episodes that finished in it. A run folder's compressed
`metrics.jsonl.gz` (a committed run, or the part before a `--resume`) is read too, each update once.

Success from ordinary starts: a run with oracle starts (`skill.oracle_start`) hands a share of its episodes
over part-way through the oracle's solution; those count in `metrics/success` but not in
`metrics/start_success`. The success a policy earns from the skill's own starts is therefore
start_success / (1 - oracle_start), weighted by the episodes that began at their own start; it is the
curve to compare runs by, and it is what `--every` tabulates beside the plain success.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from configs.files import atomic_path, write_text_atomic


def read_metrics(path: Path) -> list[dict[str, float]]:
    """The lines of a metrics file (`.jsonl` or `.jsonl.gz`) that report finished episodes."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return _finished(json.loads(line) for line in f if line.strip())


def read_run_metrics(run_dir: Path) -> list[dict[str, float]]:
    """A run folder's finished-episode lines from `metrics.jsonl` and `metrics.jsonl.gz` (either or both),
    in env-step order, each update once (a resumed run's compressed first part and its new lines)."""
    seen: dict[tuple[float, float], dict[str, float]] = {}
    for name in ("metrics.jsonl.gz", "metrics.jsonl"):
        if (run_dir / name).is_file():
            for row in read_metrics(run_dir / name):
                seen.setdefault((row.get("update", -1.0), row["env_steps"]), row)
    return sorted(seen.values(), key=lambda r: r["env_steps"])


def _finished(lines: Iterable[dict[str, float]]) -> list[dict[str, float]]:
    return [d for d in lines if d.get("metrics/episodes", 0) > 0 and "metrics/episode_return" in d]


def ordinary_start_success(rows: list[dict[str, float]]) -> tuple[float, float]:
    """(success from the skill's own starts, episodes that began there) over `rows`; (nan, 0) if none did.
    Rows without `metrics/oracle_start` (a run without oracle starts) count every episode as ordinary."""
    successes = episodes = 0.0
    for r in rows:
        n = float(r["metrics/episodes"])
        share = float(r.get("metrics/oracle_start", 0.0))
        own = float(r.get("metrics/start_success", r.get("metrics/success", 0.0)))
        successes += own * n
        episodes += (1.0 - share) * n
    return (successes / episodes if episodes > 0 else float("nan")), episodes


def step_table(rows: list[dict[str, float]], every: int) -> list[dict[str, float]]:
    """Per `every` env steps: the bucket's last step, episodes, success and success from ordinary starts."""
    if every < 1:
        raise ValueError(f"--every must be >= 1 env step, got {every}")
    buckets: dict[int, list[dict[str, float]]] = {}
    for r in rows:
        buckets.setdefault(int((r["env_steps"] - 1) // every), []).append(r)
    table = []
    for b in sorted(buckets):
        part = buckets[b]
        n = float(sum(r["metrics/episodes"] for r in part))
        success = sum(float(r.get("metrics/success", 0.0)) * r["metrics/episodes"] for r in part) / n
        own, own_n = ordinary_start_success(part)
        table.append({"env_steps": (b + 1) * every, "episodes": n, "success": success,
                      "ordinary_start_success": own, "ordinary_start_episodes": own_n})
    return table


def format_table(table: list[dict[str, float]]) -> str:
    """The `step_table` as aligned text lines."""
    lines = [f"{'env steps':>12}  {'episodes':>8}  {'success':>7}  {'from ordinary starts':>20}"]
    for t in table:
        lines.append(f"{t['env_steps']:>12,}  {t['episodes']:>8.0f}  {t['success']:>7.3f}  "
                     f"{t['ordinary_start_success']:>20.3f}")
    return "\n".join(lines)


def binned(rows: list[dict[str, float]], key: str, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin centre steps, episode-weighted mean of `key`, episodes per bin) over `bins` equal step bins."""
    weights = np.array([r["metrics/episodes"] for r in rows], dtype=np.float64)
    values = np.array([r.get(key, np.nan) for r in rows], dtype=np.float64)
    edges, idx = _step_bins(rows, bins)
    centres, means, counts = [], [], []
    for b in range(bins):
        sel = (idx == b) & np.isfinite(values)
        if weights[sel].sum() > 0:
            centres.append(0.5 * (edges[b] + edges[b + 1]))
            means.append(float(np.average(values[sel], weights=weights[sel])))
            counts.append(float(weights[sel].sum()))
    return np.array(centres), np.array(means), np.array(counts)


def _step_bins(rows: list[dict[str, float]], bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(edges of `bins` equal env-step bins from 0 to the last step, each row's bin index)."""
    steps = np.array([r["env_steps"] for r in rows], dtype=np.float64)
    edges = np.linspace(0.0, steps.max(), bins + 1)
    return edges, np.clip(np.digitize(steps, edges[1:-1]), 0, bins - 1)


def ordinary_start_bins(rows: list[dict[str, float]], bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(bin centre steps, success from ordinary starts) over `bins` equal step bins (`ordinary_start_success`)."""
    edges, idx = _step_bins(rows, bins)
    centres, values = [], []
    for b in range(bins):
        value, episodes = ordinary_start_success([r for r, i in zip(rows, idx, strict=True) if i == b])
        if episodes > 0:
            centres.append(0.5 * (edges[b] + edges[b + 1]))
            values.append(value)
    return np.array(centres), np.array(values)


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
        if key == "metrics/success" and any(r.get("metrics/oracle_start", 0.0) > 0 for r in rows):
            ox, oy = ordinary_start_bins(rows, bins)
            ax.plot(ox, oy, marker="s", ms=3, label="training, from ordinary starts (no oracle prefix)")
            summary["ordinary_start_success"] = {"first_bin": float(oy[0]) if len(oy) else None,
                                                 "last_bin": float(oy[-1]) if len(oy) else None}
        if ref is not None:
            level = ref["success" if key == "metrics/success" else "return"]
            ax.axhline(level, color="gray", ls="--", label=f"untrained policy ({ref['episodes']} episodes)")
        ax.set_xlabel("env steps")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        summary[key] = {"first_bin": float(y[0]) if len(y) else None, "last_bin": float(y[-1]) if len(y) else None,
                        "episodes": float(n.sum())}
    axes[0].set_ylim(-0.02, max(0.1, float(axes[0].get_ylim()[1])))
    for ax in axes:
        ax.legend(fontsize=8, loc="lower right")
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
    parser.add_argument("--out", default=None, help="PNG to write (default: RUN_DIR/learning_curve.png)")
    parser.add_argument("--bins", type=int, default=20, help="env-step bins along the x axis")
    parser.add_argument("--untrained-episodes", type=int, default=20,
                        help="episodes for the untrained reference (0: no reference)")
    parser.add_argument("--every", type=int, default=None, metavar="STEPS",
                        help="also print success and success from ordinary starts per this many env steps")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not any((run_dir / name).is_file() for name in ("metrics.jsonl", "metrics.jsonl.gz")):
        _fail(f"{run_dir / 'metrics.jsonl'} does not exist (is {run_dir} a train-skill run?)")
    if args.every is not None and args.every < 1:
        _fail(f"--every must be >= 1 env step, got {args.every}")
    if args.bins < 1:
        _fail(f"--bins must be >= 1, got {args.bins}")
    rows = read_run_metrics(run_dir)
    if not rows:
        _fail(f"{run_dir / 'metrics.jsonl'} has no finished episodes yet")
    ref = untrained_reference(run_dir, args.untrained_episodes) if args.untrained_episodes > 0 else None
    skill = _skill_name(run_dir)
    steps = int(max(r["env_steps"] for r in rows))
    out = Path(args.out) if args.out else run_dir / "learning_curve.png"
    summary = plot(rows, ref, out, f"{skill}: {steps} env steps ({run_dir.name})", args.bins)
    report: dict[str, Any] = {"run": str(run_dir), "env_steps": steps, "plot": str(out), "untrained": ref, **summary}
    if args.every is not None:
        table = step_table(rows, args.every)
        print(format_table(table))
        report["per_steps"] = table
    print(json.dumps(report, indent=2))


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _skill_name(run_dir: Path) -> str:
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(run_dir / "config.yaml")
    return str(cfg.skill.name)


if __name__ == "__main__":
    main()
