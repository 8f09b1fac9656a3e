"""Benchmark (not a test): our trainer against Stable-Baselines3 PPO on HalfCheetah-v5 (issue 12).

    pip install -e ".[mujoco-bench]"          # gymnasium[mujoco] for our side
    python -m trainer.bench_halfcheetah [--steps 1000000] [--seeds 0 1 2] [--sides ours sb3]
                                        [--out .bench/bench_halfcheetah] [overrides ...]

For every seed it trains our trainer (configs/bench_halfcheetah.yaml: the feed-forward policy,
observation and reward normalisation inside the trainer, CleanRL's PPO settings) and then SB3's
`PPO("MlpPolicy", env)` with its defaults (trainer/bench_sb3.py, in a venv the bench builds on first
use), one after the other, never at the same time; seeds alternate between the sides so that a
change in machine load hits both alike. The return of a run is the mean raw environment return of
its last 10 episodes (both trainers report the env's own rewards, before any normalisation); the
bench prints, per trainer, its mean and min-max range over seeds and the wall times, with the
per-component timings of both, and writes `bench_halfcheetah.json` (atomically, after every run)
and `bench_halfcheetah.png` (return vs wall time, every run) to `--out`. Overrides (key=value) change
our side's config, e.g. `trainer.num_envs=8`.

Wall time: from the call that starts training (ours: `trainer.train.train`, which builds the model
and starts the env workers; SB3: `gym.make` then `PPO(...)` and `learn`) to its return; interpreter
start-up and imports are not counted (SB3's whole process time is in the JSON as `process_wall_s`).
Our episodes are time-stamped at the end of the update they finished in.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from configs.compose import ConfigError, compose, exit_with_error, to_plain
from configs.files import atomic_path, write_text_atomic
from trainer.cpu_info import cpu_model

CONFIG_NAME = "bench_halfcheetah"
SIDES = ("ours", "sb3")
RESULT_FILE = "bench_halfcheetah.json"
PLOT_FILE = "bench_halfcheetah.png"
# per-update timings of our trainer in metrics.jsonl (trainer.train._iteration_metrics), summed per run
_OUR_TIMERS = {"collect_s": "perf/collect_time", "inference_s": "perf/inference_time",
               "env_wait_s": "perf/env_wait_time", "env_step_s": "perf/env_step_time", "learn_s": "perf/learn_time"}


def last_episodes_mean(episodes: Sequence[Sequence[float]], count: int) -> float | None:
    """Mean raw return of the last `count` episodes ([wall s, env steps, return] rows); None if none."""
    tail = [float(ep[2]) for ep in episodes[-count:]]
    return float(np.mean(tail)) if tail else None


def our_timings(metrics_file: Path, wall_s: float) -> dict[str, float]:
    """Where our run's wall time went, in seconds, from the per-update timings in metrics.jsonl.

    collect_s = inference_s + env_wait_s (main process blocked on the env workers) + collector_s (its
    own bookkeeping); env_step_s is the workers' stepping time summed over workers (it overlaps the
    rest); other_s = wall_s - collect_s - learn_s (model set-up, logging, the final checkpoint).
    """
    totals = dict.fromkeys(_OUR_TIMERS, 0.0)
    for line in metrics_file.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for name, key in _OUR_TIMERS.items():
            totals[name] += float(record.get(key, 0.0))
    totals["collector_s"] = max(totals["collect_s"] - totals["inference_s"] - totals["env_wait_s"], 0.0)
    totals["other_s"] = max(wall_s - totals["collect_s"] - totals["learn_s"], 0.0)
    return totals


def run_ours(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Train our side once with `cfg` (its seed and step budget set) in a fresh `run_dir`; the run's record."""
    from trainer.cli import make_gym_env
    from trainer.train import train

    if run_dir.exists():
        shutil.rmtree(run_dir)  # the bench's own run directory from an earlier invocation
    cfg.output_dir = str(run_dir)
    episodes: list[list[float]] = []
    start = time.monotonic()

    def on_episodes(finished: list[dict], env_steps: int) -> None:
        now = time.monotonic() - start
        episodes.extend([now, env_steps, float(ep["return"])] for ep in finished)

    summary = train(cfg, functools.partial(make_gym_env, env_id=str(cfg.env_id)), on_episodes=on_episodes)
    wall = time.monotonic() - start
    if summary["interrupted"]:
        raise KeyboardInterrupt
    return {"status": "ok", "trainer": "ours", "seed": int(cfg.trainer.seed), "wall_s": wall,
            "env_steps": int(summary["env_steps"]), "episodes": episodes,
            "timings": our_timings(run_dir / "metrics.jsonl", wall), "run_dir": str(run_dir)}


def summarise(runs: Sequence[dict[str, Any]], last: int) -> dict[str, Any]:
    """Per trainer: return (mean of its last `last` episodes per run) and wall time over seeds, mean timings."""
    out: dict[str, Any] = {}
    for side in SIDES:
        mine = [r for r in runs if r["trainer"] == side]
        ok = [r for r in mine if r["status"] == "ok" and r["episodes"]]
        if not ok:
            if mine:
                out[side] = {"status": mine[-1]["status"]}
            continue
        returns = [last_episodes_mean(r["episodes"], last) for r in ok]
        walls = [float(r["wall_s"]) for r in ok]
        timers = sorted({k for r in ok for k in r["timings"]})
        out[side] = {
            "status": "ok", "seeds": [r["seed"] for r in ok], "returns": returns, "return_mean": float(np.mean(returns)),
            "return_min": float(min(returns)), "return_max": float(max(returns)), "wall_s": walls,
            "wall_mean_s": float(np.mean(walls)), "wall_min_s": float(min(walls)), "wall_max_s": float(max(walls)),
            "env_steps": [r["env_steps"] for r in ok],
            "timings_mean_s": {k: float(np.mean([r["timings"].get(k, 0.0) for r in ok])) for k in timers},
        }
    if out.get("ours", {}).get("status") == "ok" and out.get("sb3", {}).get("status") == "ok":
        ours, sb3 = out["ours"], out["sb3"]
        out["goal"] = {"return_at_least_sb3": ours["return_mean"] >= sb3["return_mean"],
                       "wall_below_sb3": ours["wall_mean_s"] < sb3["wall_mean_s"],
                       "wall_ratio_ours_to_sb3": ours["wall_mean_s"] / max(sb3["wall_mean_s"], 1e-9)}
    return out


def report_lines(result: dict[str, Any]) -> list[str]:
    """The printed table: return and wall time per trainer, the goal, and where the time went."""
    summary, last = result["summary"], result["last_episodes"]
    lines = [f"{result['env_id']}, {result['steps']:,} steps per run, seeds {' '.join(map(str, result['seeds']))} "
             f"({result['date']}, {result['machine']})",
             f"{'trainer':<8} {f'return (last {last} episodes) mean [min, max]':<46} {'wall s mean [min, max]':<26} "
             f"per seed (return / wall s)"]
    for side in SIDES:
        s = summary.get(side)
        if s is None:
            continue
        if s["status"] != "ok":
            lines.append(f"{side:<8} {s['status']}")
            continue
        per_seed = ", ".join(f"s{seed}: {ret:,.1f} / {wall:,.0f}" for seed, ret, wall in
                             zip(s["seeds"], s["returns"], s["wall_s"], strict=True))
        ret = f"{s['return_mean']:,.1f} [{s['return_min']:,.1f}, {s['return_max']:,.1f}]"
        wall = f"{s['wall_mean_s']:,.0f} [{s['wall_min_s']:,.0f}, {s['wall_max_s']:,.0f}]"
        lines.append(f"{side:<8} {ret:<46} {wall:<26} {per_seed}")
    goal = summary.get("goal")
    if goal:
        lines.append(f"goal (issue 12): ours return >= SB3's: {'met' if goal['return_at_least_sb3'] else 'MISSED'}; "
                     f"ours wall time < SB3's: {'met' if goal['wall_below_sb3'] else 'MISSED'} "
                     f"(ours / SB3 = {goal['wall_ratio_ours_to_sb3']:.2f})")
    if summary.get("ours", {}).get("status") == "ok":
        t = summary["ours"]["timings_mean_s"]
        lines.append(f"ours, mean s per run: collect {t['collect_s']:,.0f} (inference {t['inference_s']:,.0f}, "
                     f"waiting for env workers {t['env_wait_s']:,.0f}, collector bookkeeping {t['collector_s']:,.0f}; "
                     f"env stepping inside the workers {t['env_step_s']:,.0f}), learning {t['learn_s']:,.0f}, "
                     f"other {t['other_s']:,.0f}")
    if summary.get("sb3", {}).get("status") == "ok":
        t = summary["sb3"]["timings_mean_s"]
        lines.append(f"sb3,  mean s per run: set-up {t['setup_s']:,.0f}, collect (env step + inference) "
                     f"{t['collect_s']:,.0f}, learning {t['learn_s']:,.0f}")
    return lines


def plot_returns(runs: Sequence[dict[str, Any]], path: Path, window: int) -> None:
    """Return (mean of the last `window` episodes) against wall time, one line per run, a colour per trainer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"ours": "tab:blue", "sb3": "tab:orange"}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for side in SIDES:
        labelled = False
        for run in runs:
            if run["trainer"] != side or run["status"] != "ok" or not run["episodes"]:
                continue
            eps = np.asarray(run["episodes"], dtype=float)
            smooth = np.convolve(eps[:, 2], np.ones(window), "full")[: len(eps)] / np.minimum(
                np.arange(1, len(eps) + 1), window)
            ax.plot(eps[:, 0], smooth, color=colours[side], alpha=0.8, lw=1.2,
                    label=None if labelled else ("ours" if side == "ours" else "Stable-Baselines3 PPO"))
            labelled = True
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel(f"episode return (mean of last {window})")
    ax.set_title("HalfCheetah-v5: return vs wall time (one line per seed)")
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend()
    try:
        with atomic_path(path, suffix=".png") as tmp:
            fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)


def machine() -> str:
    """CPU model and count, for the report."""
    return f"{os.cpu_count()} CPUs, {cpu_model()}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trainer.bench_halfcheetah", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, help="env steps per run (default: trainer.total_steps, 1M)")
    parser.add_argument("--seeds", type=int, nargs="+", help="seeds, each run by every side (default: 0 1 2)")
    parser.add_argument("--sides", nargs="+", choices=SIDES, help="which trainers to run (default: ours sb3)")
    parser.add_argument("--out", help="output folder (default: .bench/bench_halfcheetah)")
    parser.add_argument("overrides", nargs="*", help="our side's config overrides, key=value, anywhere on the "
                                                     "line (configs/bench_halfcheetah.yaml)")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the bench; returns the result dict (also written as JSON)."""
    argv = sys.argv[1:] if argv is None else argv
    # key=value overrides may stand anywhere, also after --seeds/--sides (which take several values)
    overrides = [a for a in argv if "=" in a and not a.startswith("-")]
    args = build_parser().parse_args([a for a in argv if a not in overrides])
    args.overrides = overrides
    try:
        base = compose(CONFIG_NAME, args.overrides)
    except ConfigError as exc:
        exit_with_error(str(exc))
    steps = int(args.steps if args.steps is not None else base.trainer.total_steps)
    seeds = [int(s) for s in (args.seeds if args.seeds is not None else base.bench.seeds)]
    sides = [s for s in SIDES if s in (args.sides or list(base.bench.sides))]
    out = Path(args.out or str(base.bench.out))
    env_id, last = str(base.env_id), int(base.bench.last_episodes)
    if steps < 1 or not seeds:
        exit_with_error("--steps must be >= 1 and --seeds must name at least one seed")
    if "ours" in sides:
        _check_env(env_id)

    def our_config(seed: int) -> DictConfig:
        # log_interval 1: every update's timings reach metrics.jsonl
        return compose(CONFIG_NAME, [*args.overrides, f"trainer.total_steps={steps}", f"trainer.seed={seed}",
                                     "trainer.log_interval=1"])

    try:
        from trainer.config_check import check_config

        check_config(our_config(seeds[0]))
    except ConfigError as exc:
        exit_with_error(str(exc))
    result: dict[str, Any] = {
        "env_id": env_id, "steps": steps, "seeds": seeds, "sides": sides, "last_episodes": last,
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
        "command": " ".join(["python -m trainer.bench_halfcheetah", *argv]),
        "ours_config": {k: to_plain(base)[k] for k in ("trainer", "policy")}, "runs": [], "summary": {},
    }
    for seed in seeds:
        for side in sides:
            print(f"[bench_halfcheetah] {side}, seed {seed}, {steps:,} steps ...", file=sys.stderr, flush=True)
            run_dir = out / side / f"seed_{seed}"
            if side == "ours":
                run = run_ours(our_config(seed), run_dir)
            else:
                from trainer.bench_sb3 import run_sb3

                run = {"trainer": "sb3", "seed": seed,
                       **run_sb3(to_plain(base)["sb3"], env_id, seed, steps, run_dir)}
            result["runs"].append(run)
            result["summary"] = summarise(result["runs"], last)
            write_text_atomic(out / RESULT_FILE, json.dumps(result, indent=1))
            ret = last_episodes_mean(run.get("episodes") or [], last)
            print(f"[bench_halfcheetah] {side}, seed {seed}: " + (
                f"return {ret:,.1f} (last {last} episodes), {run['env_steps']:,} steps in {run['wall_s']:,.0f} s"
                if run["status"] == "ok" and ret is not None else run["status"]), file=sys.stderr, flush=True)
    plot_returns(result["runs"], out / PLOT_FILE, last)
    print("\n".join(report_lines(result)))
    print(f"JSON: {out / RESULT_FILE}; plot: {out / PLOT_FILE}")
    return result


def _check_env(env_id: str) -> None:
    import gymnasium as gym

    try:
        gym.make(env_id).close()
    except Exception as exc:  # gymnasium's mujoco extra missing
        exit_with_error(f"cannot create {env_id} ({exc}); install it with: pip install \"gymnasium[mujoco]\"")


if __name__ == "__main__":
    main()
