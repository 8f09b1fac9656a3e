"""`bench-ver`, analysing: the results of measured runs become table rows, ratios and goals.

A row holds, after the warm-up rollouts: `mean_sps` (end-to-end env steps/s: steps over wall time,
logging and all-reduces included), `max_sps` (the best single rollout; raw: the best window of
T x N steps), `collect_sps` (steps over collection time alone), `time_s` (where the main process's
time went: collection split into inference, waiting for envs and the rest; learning), `sim` (the
env workers' own step/reset time, per step and as a share of their wall time) and `over_raw` (its
mean steps/s over the raw simulation's, the upper bound for the same process layout).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

TRAIN_MODES = ("sync", "nover", "ver", "ver_overlap")  # ver_overlap: VER with trainer.overlap_learning
MODES = ("raw", *TRAIN_MODES, "sample_factory")


def read_metrics(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def train_stats(records: list[dict[str, float]], warmup: int) -> dict[str, Any]:
    """Mean/max steps/s and per-component seconds after `warmup` rollouts, from the trainer's metrics.jsonl.

    Mean: (steps after the warm-up) / (wall time after the warm-up), both from the metrics lines, so
    logging and all-reduces are counted. Max: the best single rollout (`perf/sps` = rows / iteration).
    """
    if len(records) <= warmup:
        raise ValueError(f"only {len(records)} rollouts, {warmup} of them warm-up: raise --steps "
                         "(or --max-seconds)")
    base, measured = records[warmup - 1] if warmup > 0 else None, records[warmup:]
    s0 = base["env_steps"] if base else 0
    w0 = base["wall_time"] if base else 0.0
    steps = measured[-1]["env_steps"] - s0
    seconds = measured[-1]["wall_time"] - w0

    def total(key: str) -> float:
        return float(sum(r.get(key, 0.0) for r in measured))

    collect, learn = total("perf/collect_time"), total("perf/learn_time")
    inference, waiting = total("perf/inference_time"), total("perf/env_wait_time")
    return {
        "mean_sps": steps / max(seconds, 1e-9),
        "max_sps": max(r["perf/sps"] for r in measured),
        "collect_sps": steps / max(collect, 1e-9),  # collection alone (what the modes differ in)
        "rollout_sps": [r["perf/sps"] for r in records],
        "measured_steps": int(steps),
        "measured_seconds": seconds,
        "rollouts": len(measured),
        "time_s": {
            "collection": collect,
            "inference": inference,
            "learning": learn,
            "waiting": waiting,
            "collect_other": max(collect - inference - waiting, 0.0),
            "outside_collect_learn": max(seconds - collect - learn, 0.0),
        },
        "steps_per_env_min": min(r["perf/steps_per_env_min"] for r in measured),
        "steps_per_env_max": max(r["perf/steps_per_env_max"] for r in measured),
    }


def sim_stats(sim: Mapping[str, Any], wall_seconds: float, num_envs: int) -> dict[str, float]:
    """Simulation time of the env workers: per step, and as a fraction of the N envs' wall time."""
    seconds = float(sim["step_seconds"]) + float(sim["reset_seconds"])
    steps = max(int(sim["steps"]), 1)
    return {
        "env_seconds": seconds,
        "ms_per_step": 1000.0 * seconds / steps,
        "cpu_ms_per_step": 1000.0 * float(sim.get("cpu_seconds", math.nan)) / steps,
        "reset_seconds": float(sim["reset_seconds"]),
        "resets": int(sim["resets"]),
        "busy_fraction": seconds / max(wall_seconds * num_envs, 1e-9),
    }


def cpu_stats(cpu: Mapping[str, Any], steps: int) -> dict[str, float]:
    """Where the cores went over the measured window: the main process's CPU per step (inference, the
    learner, the collector; for raw only the random actions), the whole machine's, and how many of its
    cores were busy on average (all processes, this benchmark's env workers included)."""
    steps = max(int(steps), 1)
    busy, total = float(cpu["machine_busy_seconds"]), float(cpu["machine_seconds"])
    return {
        "main_cpu_ms_per_step": 1000.0 * float(cpu["main_seconds"]) / steps,
        "machine_cpu_ms_per_step": 1000.0 * busy / steps,
        "cores_busy": busy / total * int(cpu["cores"]) if total > 0 else math.nan,
        "cores": int(cpu["cores"]),
    }


def raw_stats(result: Mapping[str, Any], warmup: int) -> dict[str, Any]:
    """The row entries of a raw-simulation run: its collection is all of it, nothing is learned."""
    sps = result["measured_steps"] / max(result["measured_seconds"], 1e-9)
    return {
        "mean_sps": sps,
        "max_sps": max(result["window_sps"][warmup:]),
        "collect_sps": sps,
        "rollout_sps": result["window_sps"],
        "measured_steps": result["measured_steps"],
        "measured_seconds": result["measured_seconds"],
        "rollouts": len(result["window_sps"]) - warmup,
        "time_s": {"collection": result["measured_seconds"], "inference": result["action_seconds"],
                   "learning": 0.0, "waiting": result["wait_seconds"]},
    }


def analyse(result: Mapping[str, Any], warmup: int, num_envs: int) -> dict[str, Any]:
    """The row of one measured run (a `eval.bench_ver_run` result): status, steps/s, component times."""
    if "status" in result:
        return dict(result)
    if result["kind"] == "raw":
        row = {"status": "ok", **raw_stats(result, warmup)}
    else:
        row = {"status": "ok", **train_stats(read_metrics(Path(result["metrics_path"])), warmup)}
    wall = row["measured_seconds"] if result["sim"]["from_warmup_snapshot"] else result.get(
        "total_seconds", row["measured_seconds"])
    row["sim"] = sim_stats(result["sim"], wall, num_envs)
    if result.get("cpu"):
        row["cpu"] = cpu_stats(result["cpu"], row["measured_steps"])
    row["ranks"] = int(result.get("ranks", 1))
    row["stopped_by_budget"] = bool(result.get("stopped_by_budget", False))
    return row


def ratios(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Every mode over raw simulation (`<mode>_over_raw`), and VER over every other mode, on mean steps/s.

    VER's ratios also come on the best rollout (`_max`) and on collection alone (`_collect`).
    """
    def ok(mode: str) -> Mapping[str, Any] | None:
        row = rows.get(mode)
        return row if row and row.get("status") == "ok" and row["mean_sps"] > 0 else None

    out: dict[str, float] = {}
    raw = ok("raw")
    if raw:
        for mode in MODES[1:]:
            if (row := ok(mode)) is not None:
                out[f"{mode}_over_raw"] = row["mean_sps"] / raw["mean_sps"]
    ver = ok("ver")
    if ver and (overlap := ok("ver_overlap")) is not None:
        out["ver_overlap_over_ver"] = overlap["mean_sps"] / ver["mean_sps"]
    if ver:
        for other in ("sync", "nover", "raw", "sample_factory"):
            if (row := ok(other)) is not None:
                out[f"ver_over_{other}"] = ver["mean_sps"] / row["mean_sps"]
                out[f"ver_over_{other}_max"] = ver["max_sps"] / row["max_sps"]
                if row.get("collect_sps"):
                    out[f"ver_over_{other}_collect"] = ver["collect_sps"] / row["collect_sps"]
    return out


def add_over_raw(rows: Mapping[str, dict[str, Any]]) -> None:
    """Sets `over_raw` in every measured row: its mean steps/s over raw simulation's (raw: 1)."""
    raw = rows.get("raw")
    if not raw or raw.get("status") != "ok" or raw["mean_sps"] <= 0:
        return
    for row in rows.values():
        if row.get("status") == "ok":
            row["over_raw"] = row["mean_sps"] / raw["mean_sps"]


def goals(ratio_values: Mapping[str, float], targets: Mapping[str, float]) -> list[dict[str, Any]]:
    """The issue's targets that were measured: value, target and whether it was met (never asserted)."""
    return [{"name": name, "target": float(target), "value": ratio_values[name],
             "met": bool(ratio_values[name] >= float(target))}
            for name, target in targets.items() if name in ratio_values]


def combine_repeats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from the repeats of a mode: mean (and std) of the means, best max, summed seconds."""
    ok = [r for r in rows if r.get("status") == "ok"]
    if len(rows) == 1 or not ok:
        return rows[0] if len(rows) == 1 else {"status": rows[-1].get("status", "failed")}
    means = np.array([r["mean_sps"] for r in ok])
    out = dict(ok[0])
    out.update({
        "mean_sps": float(means.mean()),
        "mean_sps_std": float(means.std(ddof=1)) if len(ok) > 1 else 0.0,
        "max_sps": max(r["max_sps"] for r in ok),
        "collect_sps": float(np.mean([r["collect_sps"] for r in ok])) if all("collect_sps" in r for r in ok) else None,
        "measured_steps": int(sum(r["measured_steps"] for r in ok)),
        "measured_seconds": float(sum(r["measured_seconds"] for r in ok)),
        "time_s": {k: float(sum(r["time_s"].get(k, 0.0) for r in ok)) for k in ok[0]["time_s"]},
        "sim": {k: float(np.mean([r["sim"][k] for r in ok])) for k in ok[0]["sim"]},
        **({"cpu": {k: float(np.mean([r["cpu"][k] for r in ok])) for k in ok[0]["cpu"]}}
           if all("cpu" in r for r in ok) else {}),
        "rollout_sps": [v for r in ok for v in r["rollout_sps"]],
        "repeats": [{k: r[k] for k in ("mean_sps", "max_sps")} for r in ok],
        "failed_repeats": len(rows) - len(ok),
        "stopped_by_budget": any(r.get("stopped_by_budget", False) for r in ok),
    })
    return out


def scaling_rows(items: list[dict[str, Any]]) -> None:
    """Adds `speedup` (mean steps/s over one rank's) to the measured rank counts."""
    one = next((s for s in items if s["ranks"] == 1 and s.get("status") == "ok"), None)
    for item in items:
        if one is not None and item.get("status") == "ok":
            item["speedup"] = item["mean_sps"] / one["mean_sps"]
