"""`bench-ver`, reporting: the printed table, `bench_ver.json` and `bench_ver.png`.

The table has one row per mode: end-to-end mean steps/s (after the warm-up rollouts) and its ratio
to raw simulation (`/ raw`), the best rollout, collection-only steps/s, where the main process's time
went (collection, of it inference and waiting for envs; learning) and the env workers' own
simulation time. Under it: every mode over raw ("VER / raw = 0.74"), VER over the other modes, the
scaling rows, the issue's goals, and what the Sample Factory row ran on.
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from configs.files import atomic_path
from eval.metrics import write_json_atomic
from trainer.cpu_info import cpu_has_bf16, cpu_model, read_cpuinfo

RESULT_FILE = "bench_ver.json"
PLOT_FILE = "bench_ver.png"
LABELS = {"raw": "raw", "sync": "sync", "nover": "NoVER", "ver": "VER", "ver_overlap": "VER+overlap", "sample_factory": "Sample Factory"}


def _fmt(value: float | None, width: int, digits: int) -> str:
    if value is None or not math.isfinite(float(value)):
        return f"{'-':>{width}}"
    return f"{float(value):>{width}.{digits}f}"


def _mean_text(row: Mapping[str, Any]) -> str:
    if "mean_sps_std" in row:
        return f"{row['mean_sps']:.1f}+-{row['mean_sps_std']:.1f}"
    return f"{row['mean_sps']:.1f}"


def workload_line(cfg: Mapping[str, Any]) -> str:
    """One line: the config every mode used (skill, profile, N in processes of K, T, depth, policy)."""
    n, k = cfg["num_envs"], cfg["envs_per_worker"]
    workers = -(-n // k)
    depth = cfg.get("head_depth")
    depth_text = f", head depth {depth}" if depth else ""
    return (f"{cfg['skill']}, profile {cfg['profile']}: N={n} envs in {workers} worker process(es) of up to {k}, "
            f"T={cfg['num_steps']}{depth_text}, policy {cfg['policy_name']}; {cfg['steps_per_mode']} steps per mode"
            + (f" (at most {cfg['max_seconds']:g} s)" if cfg.get("max_seconds") else ""))


def format_table(report: Mapping[str, Any]) -> str:
    rows = report["modes"]
    head = (f"{'mode':<15}{'mean SPS':>14}{'/ raw':>7}{'max SPS':>10}{'collect SPS':>12}"
            f"{'collect s':>10}{'infer s':>9}{'wait s':>8}{'learn s':>9}{'wall s':>8}"
            f"{'sim ms/step':>12}{'(CPU ms)':>9}{'sim busy':>9}{'main CPU ms':>12}{'all CPU ms':>11}{'cores busy':>11}")
    lines = []
    if "skill" in report.get("config", {}):
        lines.append(workload_line(report["config"]))
    lines += [head, "-" * len(head)]
    for mode, row in rows.items():
        if row.get("status") != "ok":
            lines.append(f"{mode:<15}{row.get('status', 'not run')}")
            continue
        t, sim, cpu = row.get("time_s", {}), row.get("sim", {}), row.get("cpu", {})
        lines.append(
            f"{mode:<15}{_mean_text(row):>14}{_fmt(row.get('over_raw'), 7, 2)}{row['max_sps']:>10.1f}"
            f"{_fmt(row.get('collect_sps'), 12, 1)}{_fmt(t.get('collection'), 10, 1)}"
            f"{_fmt(t.get('inference'), 9, 1)}{_fmt(t.get('waiting'), 8, 1)}{_fmt(t.get('learning'), 9, 1)}"
            f"{_fmt(row.get('measured_seconds'), 8, 1)}"
            f"{_fmt(sim.get('ms_per_step'), 12, 2)}{_fmt(sim.get('cpu_ms_per_step'), 9, 2)}"
            f"{_fmt(sim.get('busy_fraction'), 9, 2)}"
            f"{_fmt(cpu.get('main_cpu_ms_per_step'), 12, 3)}{_fmt(cpu.get('machine_cpu_ms_per_step'), 11, 3)}"
            f"{_fmt(cpu.get('cores_busy'), 11, 2)}"
            + ("  (stopped by --max-seconds)" if row.get("stopped_by_budget") else ""))
    if any(row.get("cpu") for row in rows.values()):
        lines.append("(CPU ms per step over the measured window: main = the benchmark's main process, all threads; "
                     "all = every process on the machine; cores busy = the machine's mean)")
    if rows.get("sample_factory", {}).get("status") == "ok":
        lines.append("(sample_factory: its learner and inference run in parallel processes, so its seconds overlap)")
    r = report.get("ratios", {})
    over_raw = [(m, r[f"{m}_over_raw"]) for m in rows if f"{m}_over_raw" in r]
    if over_raw:
        lines.append("end-to-end steps/s over raw simulation (same envs and worker processes): "
                     + ", ".join(f"{LABELS.get(m, m)} / raw = {v:.2f}" for m, v in over_raw))
    elif "raw" in rows:
        lines.append("ratios to raw simulation: none (raw did not run)")
    ver = {k: v for k, v in r.items() if k.startswith("ver_over_")}
    if ver:
        lines.append("VER over the others, end-to-end mean SPS: " + ", ".join(
            f"{k} {v:.2f}" for k, v in ver.items() if not k.endswith(("_max", "_collect"))))
        lines.append("VER over the others, best rollout:        " + ", ".join(
            f"{k[:-4]} {v:.2f}" for k, v in ver.items() if k.endswith("_max")))
        collect = {k: v for k, v in ver.items() if k.endswith("_collect")}
        if collect:
            lines.append("VER over the others, collection alone:    " + ", ".join(
                f"{k[:-8]} {v:.2f}" for k, v in collect.items()))
    if report.get("scaling"):
        lines.append("")
        lines.append(f"scaling ({report['config']['scaling_mode']}, {report['config']['num_envs']} envs per rank):")
        for item in report["scaling"]:
            if item.get("status") != "ok":
                lines.append(f"  {item['ranks']} rank(s): {item.get('status')}")
            else:
                lines.append(f"  {item['ranks']} rank(s): mean {item['mean_sps']:.1f} SPS, max {item['max_sps']:.1f}, "
                             f"speed-up x{item.get('speedup', float('nan')):.2f}")
    for goal in report.get("goals", []):
        lines.append(f"goal {goal['name']} >= {goal['target']}: {goal['value']:.2f} "
                     f"{'met' if goal['met'] else 'MISSED'}")
    sf = rows.get("sample_factory")
    if sf is not None and sf.get("setup"):
        lines.append(f"sample_factory: {sf['setup']}")
    return "\n".join(lines)


def plot(report: Mapping[str, Any], path: Path) -> None:
    """Bar chart: mean and max steps/s per mode (left), where the wall time went (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = {m: r for m, r in report["modes"].items() if r.get("status") == "ok"}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = list(ok)
    x = np.arange(len(names))
    ax1.bar(x - 0.2, [ok[m]["mean_sps"] for m in names], 0.4, label="mean (after warm-up)",
            yerr=[ok[m].get("mean_sps_std", 0.0) for m in names], capsize=3)
    ax1.bar(x + 0.2, [ok[m]["max_sps"] for m in names], 0.4, label="max (best rollout)")
    for i, m in enumerate(names):
        if "over_raw" in ok[m] and m != "raw":
            ax1.annotate(f"{ok[m]['over_raw']:.2f}x raw", (x[i] - 0.2, ok[m]["mean_sps"]), ha="center",
                         va="bottom", fontsize=7)
    ax1.set_xticks(x, names)
    ax1.set_ylabel("steps / s")
    cfg = report["config"]
    ax1.set_title(f"{cfg['skill']} ({cfg.get('profile', '?')}): N={cfg['num_envs']}, K={cfg.get('envs_per_worker', 1)}, "
                  f"T={cfg['num_steps']}"
                  + (f", {cfg['slow_envs']} env(s) x{cfg['slow_factor']:g} slower" if cfg["slow_envs"] else ""),
                  fontsize=9)
    ax1.legend(fontsize=8)
    # Sample Factory's learner and inference worker run in parallel processes: their times overlap and
    # are not shares of one timeline, so they stay in the JSON and out of this chart.
    ours = [m for m in names if m != "sample_factory"]
    x2 = np.arange(len(ours))
    parts = ("inference", "learning", "waiting", "collect_other")
    bottom = np.zeros(len(ours))
    for part in parts:
        values = np.array([ok[m].get("time_s", {}).get(part, 0.0) / max(ok[m]["measured_seconds"], 1e-9)
                           for m in ours])
        ax2.bar(x2, values, 0.6, bottom=bottom, label=part)
        bottom += values
    sim_busy = [ok[m].get("sim", {}).get("busy_fraction", np.nan) for m in ours]
    ax2.plot(x2, sim_busy, "k^", label="env workers busy simulating")
    ax2.set_xticks(x2, ours)
    ax2.set_ylabel("fraction of wall time (main process)")
    ax2.set_ylim(0, 1.15)
    ax2.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)


def machine_description() -> dict[str, Any]:
    import torch

    cpuinfo = read_cpuinfo()
    return {"cpu": cpu_model(cpuinfo), "cpu_bf16": cpu_has_bf16(cpuinfo), "cores": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "load_average_at_start": list(os.getloadavg())}


def _finite(value: Any) -> Any:
    """JSON-safe copy: non-finite floats (a ratio of nothing, a missing CPU time) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def write_report(report: Mapping[str, Any], out: Path) -> tuple[Path, Path]:
    """`bench_ver.json` and `bench_ver.png` under `out`; their paths."""
    write_json_atomic(out / RESULT_FILE, _finite(report))
    plot(report, out / PLOT_FILE)
    return out / RESULT_FILE, out / PLOT_FILE
