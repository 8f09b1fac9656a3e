"""`bench-ver`: training throughput of VER vs NoVER vs sync (DD-PPO) vs Sample Factory, side by side.

    bench-ver --skill open_fridge --num-envs 16 --steps 20000
    bench-ver --skill pick --modes raw,sync,ver --slow-envs 2 --slow-factor 4 --ranks 1,2 --out DIR

One invocation measures, on one machine and one workload (N env worker processes per rank):

* `raw`: the simulator's upper bound: the trainer's own env worker processes and shared-memory
  transfer buffers, actions drawn at random in the main process, no policy and no learning;
* `sync`, `nover`, `ver`: end-to-end training (collection + PPO) with `trainer.train.train`, the same
  policy, the same T x N and the same PPO settings; only `trainer.mode` differs;
* `sample_factory`: the AsyncOnRL peer on the same env (eval/bench_sample_factory.py);
* optionally the scaling mode (VER) at several torchrun rank counts (gloo on CPU).

Like the VER paper's Table 1, "mean" is steps/s over the run after the warm-up rollouts and "max"
the best single rollout (raw: the best window of T x N steps). Every mode also reports where the
time went: simulation (seconds the env workers spent in `step`/`reset`, measured inside them),
inference, learning and waiting (main process). Output: a printed table, `bench_ver.json` and
`bench_ver.png` under `--out`.

Every measured run is its own process tree (`python -m torch.distributed.run ... -m eval.bench_ver
--rank-worker SPEC`), so the modes do not share threads, memory or worker processes.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from trainer.config import ConfigError, compose, exit_with_error, to_plain, unknown_choice
from trainer.files import atomic_path, write_text_atomic

TRAIN_MODES = ("sync", "nover", "ver")
MODES = ("raw", *TRAIN_MODES, "sample_factory")
RESULT_FILE = "bench_ver.json"
PLOT_FILE = "bench_ver.png"

EPILOG = """\
modes: raw (random actions, no learning: the upper bound), sync (DD-PPO lock-step), nover, ver,
       sample_factory (runs in its own venv, created on first use under .bench/sf-venv)

examples:
  bench-ver                                              # defaults: configs/bench_ver.yaml
  bench-ver --skill open_fridge --num-envs 16 --num-steps 128 --steps 20000   # the paper's N and T
  bench-ver --skill pick --modes raw,sync,ver --slow-envs 2 --slow-factor 4   # straggler effect
  bench-ver --modes ver --ranks 1,2                      # 1 vs 2 torchrun ranks (gloo on CPU)
  bench-ver --skill open_fridge policy=resnet18_half     # Hydra overrides apply to every mode

Steps/s: mean over the run after the warm-up rollouts, max over single rollouts (raw: windows of
T x N steps). Ratios use the means. Exit codes: 0 done, 2 bad input, 1 a mode failed.
"""


# ----------------------------------------------------------------------------- command line


def build_parser(bench: Mapping[str, Any]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bench-ver", description="Throughput benchmark: raw simulation vs sync (DD-PPO) vs NoVER vs VER "
        "vs Sample Factory, measured side by side in one run.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--skill", default=bench["skill"],
                   help=f"workload: {', '.join(workload_names(bench))} (default: %(default)s)")
    p.add_argument("--num-envs", type=int, default=bench["num_envs"], help="N env processes per rank (%(default)s)")
    p.add_argument("--num-steps", type=int, default=bench["num_steps"],
                   help="T, rollout length per env; a rollout is T x N steps (%(default)s)")
    p.add_argument("--steps", type=int, default=bench["steps"],
                   help="env steps per mode and rank, warm-up included (%(default)s)")
    p.add_argument("--warmup-updates", type=int, default=bench["warmup_updates"],
                   help="rollouts left out of the mean (%(default)s)")
    p.add_argument("--modes", default=",".join(bench["modes"]), help=f"comma list of {', '.join(MODES)} "
                   "(default: %(default)s)")
    p.add_argument("--slow-envs", type=int, default=bench["slow_envs"], metavar="K",
                   help="make K of the N envs slower (%(default)s)")
    p.add_argument("--slow-factor", type=float, default=bench["slow_factor"], metavar="F",
                   help="step-time factor of the slow envs (%(default)s)")
    p.add_argument("--ranks", default=",".join(str(r) for r in bench["ranks"]),
                   help=f"comma list of torchrun rank counts for the {bench['scaling_mode']} scaling rows "
                   "(default: %(default)s)")
    p.add_argument("--repeats", type=int, default=bench["repeats"],
                   help="measure every mode this many times, round-robin; the table shows mean +- std "
                   "(%(default)s)")
    p.add_argument("--out", default=bench["out"], metavar="DIR", help="output directory (%(default)s)")
    p.add_argument("--rank-worker", metavar="SPEC", help=argparse.SUPPRESS)  # internal: one measured run
    p.add_argument("overrides", nargs="*", help="Hydra overrides applied to every mode, key=value")
    return p


def workload_names(bench: Mapping[str, Any]) -> tuple[str, ...]:
    from rearrange.tasks.skill_tasks import SKILL_NAMES

    return (*SKILL_NAMES, *bench["cheap_workloads"].keys())


def parse_choices(text: str, choices: Sequence[str], what: str) -> list[str]:
    """A comma list of names, each one of `choices` (exit 2 naming the valid choices otherwise)."""
    items = [s.strip() for s in str(text).split(",") if s.strip()]
    if not items:
        exit_with_error(f"no {what} given; valid choices: {', '.join(choices)}")
    for item in items:
        if item not in choices:
            exit_with_error(unknown_choice(what, item, choices))
    return list(dict.fromkeys(items))


def parse_ranks(text: str) -> list[int]:
    try:
        ranks = sorted({int(s) for s in str(text).split(",") if s.strip()})
    except ValueError:
        exit_with_error(f"--ranks must be a comma list of positive integers, e.g. 1,2 (got '{text}')")
    if not ranks or ranks[0] < 1:
        exit_with_error(f"--ranks must be a comma list of positive integers, e.g. 1,2 (got '{text}')")
    return ranks


def base_config() -> DictConfig:
    return compose("bench_ver")


def mode_config(skill: str, mode: str, overrides: Sequence[str], bench: Mapping[str, Any],
                num_envs: int, num_steps: int, total_steps: int, output_dir: str) -> DictConfig:
    """The full training config of one mode: bench_ver.yaml (= train_skill.yaml) + overrides."""
    cheap = bench["cheap_workloads"].get(skill)
    if cheap is None:
        group = [f"skill={skill}", *bench["workload_overrides"].get(skill, [])]
    else:
        group = [f"policy={cheap['policy']}"]
    cfg = compose("bench_ver", [*group, f"trainer={mode}", *overrides])
    cfg.trainer.mode = mode
    cfg.trainer.num_envs = num_envs
    cfg.trainer.num_steps = num_steps
    cfg.trainer.total_steps = total_steps
    cfg.trainer.checkpoint_interval = 0  # the benchmark measures training, not checkpoint writing
    cfg.trainer.progress_bar = False
    cfg.trainer.log_interval = 1  # one metrics line per rollout: per-rollout steps/s (the max column)
    cfg.output_dir = output_dir
    return cfg


# ----------------------------------------------------------------------------- workloads and env wrappers


def prepare_workload(skill: str, cfg: DictConfig, bench: Mapping[str, Any]) -> dict[str, Any]:
    """Plain (JSON) description of the env every mode builds: skill env on a cached dataset, or a gym id."""
    cheap = bench["cheap_workloads"].get(skill)
    if cheap is not None:
        return {"kind": "gym", "name": skill, "env_id": str(cheap["env_id"])}
    from skills.train_cli import prepare_dataset

    episodes = prepare_dataset(cfg, Path(str(bench["cache_dir"])))
    return {"kind": "skill", "name": skill, "skill_cfg": to_plain(cfg.skill), "sim_cfg": to_plain(cfg.sim),
            "episodes_path": str(Path(episodes).resolve())}


def base_env_fn(workload: Mapping[str, Any]):
    """The picklable env factory of a workload (train-skill's and train-rl's own factories)."""
    if workload["kind"] == "gym":
        from trainer.cli import make_gym_env

        return functools.partial(make_gym_env, env_id=workload["env_id"])
    from skills.train_cli import make_skill_env

    return functools.partial(make_skill_env, skill_cfg=workload["skill_cfg"], sim_cfg=workload["sim_cfg"],
                             episodes_path=workload["episodes_path"])


def slow_env_indices(num_envs: int, slow_envs: int) -> list[int]:
    """The envs made slower: the last K indices of each rank."""
    return list(range(num_envs - slow_envs, num_envs))


# Columns of the shared per-env timing counters written by `TimedEnv` inside the workers: wall seconds
# and counts of steps and resets, and the CPU seconds the worker process used in them (wall >> CPU
# means the env waited for a core: the machine is oversubscribed).
SIM_SECONDS, SIM_STEPS, RESET_SECONDS, RESETS, SIM_CPU_SECONDS = range(5)
NUM_COUNTERS = 5


def _timed_env_class():
    import gymnasium as gym

    class TimedEnv(gym.Wrapper):
        """Measures the env's own `step`/`reset` time into a shared row; optionally slows the env.

        A slow env sleeps `(factor - 1)` times the measured time after each call, so its step time is
        `factor` times its natural one (without using CPU that the other envs need). The counters
        hold the total including the sleep: what the collector experiences from this env.
        """

        def __init__(self, env: gym.Env, counters, row: int, factor: float) -> None:
            super().__init__(env)
            self._counters = np.asarray(counters)  # shared memory (torch tensor or memmap), one row per env
            self._row = row
            self._factor = float(factor)

        def _account(self, started: float, cpu_started: float, seconds_col: int, count_col: int) -> None:
            elapsed = time.perf_counter() - started
            self._counters[self._row, SIM_CPU_SECONDS] += time.process_time() - cpu_started
            if self._factor > 1.0:
                time.sleep((self._factor - 1.0) * elapsed)
                elapsed = time.perf_counter() - started
            self._counters[self._row, seconds_col] += elapsed
            self._counters[self._row, count_col] += 1

        def step(self, action):
            t0, c0 = time.perf_counter(), time.process_time()
            out = self.env.step(action)
            self._account(t0, c0, SIM_SECONDS, SIM_STEPS)
            return out

        def reset(self, **kwargs):
            t0, c0 = time.perf_counter(), time.process_time()
            out = self.env.reset(**kwargs)
            self._account(t0, c0, RESET_SECONDS, RESETS)
            return out

    return TimedEnv


def make_bench_env(env_idx: int, *, base_fn, counters, slow: Sequence[int], slow_factor: float):
    """Env factory of the benchmark: the workload's env, timed, and slowed when `env_idx` is in `slow`."""
    env = base_fn(env_idx)
    factor = slow_factor if env_idx in slow else 1.0
    return _timed_env_class()(env, counters, env_idx, factor)


# ----------------------------------------------------------------------------- one measured run (a rank process)


def _write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2))


class _WarmupSnapshot(threading.Thread):
    """Copies the sim counters when the trainer logged its `warmup`-th rollout (tails metrics.jsonl)."""

    def __init__(self, metrics_path: Path, warmup: int, counters) -> None:
        super().__init__(daemon=True)
        self.metrics_path, self.warmup, self.counters = metrics_path, warmup, counters
        self.snapshot: np.ndarray | None = None
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.is_set():
            if self.metrics_path.exists():
                with open(self.metrics_path, encoding="utf-8") as f:
                    lines = sum(1 for line in f if line.strip())
                if lines >= self.warmup:
                    self.snapshot = self.counters.numpy().copy()
                    return
            self._stop.wait(0.02)

    def stop(self) -> None:
        self._stop.set()


def _raw_run(env_fn, cfg: DictConfig, counters, warmup_windows: int) -> dict[str, Any]:
    """Random actions through the trainer's worker processes and transfer buffers; no policy, no learning."""
    from multiprocessing.connection import wait as wait_for_any

    import torch

    from trainer.env_worker import WorkerPool
    from trainer.shared_buffers import TransferBuffers

    t = cfg.trainer
    n, window, total = int(t.num_envs), int(t.num_envs) * int(t.num_steps), int(t.total_steps)
    probe = env_fn(0)
    obs_space, action_space = probe.observation_space, probe.action_space
    probe.close()
    action_space.seed(int(t.seed))
    buffers = TransferBuffers(obs_space, action_space, n)
    pool = WorkerPool(env_fn, buffers, str(t.start_method))
    steps = 0
    marks: list[tuple[int, float]] = []  # (steps, time) at the end of each window
    action_time = wait_time = 0.0
    action_at_warmup = wait_at_warmup = 0.0  # the same, at the end of the warm-up windows
    snapshot = None
    try:
        pool.start_all()
        for e in range(n):
            pool.send(e, ("reset", int(t.seed) * 1000 + e))
        t_start = time.monotonic()
        in_flight = n
        while steps < total or in_flight:
            t0 = time.monotonic()
            ready = wait_for_any(list(pool.conn_to_env()), timeout=float(t.worker_start_timeout_s))
            wait_time += time.monotonic() - t0
            if not ready:
                raise RuntimeError(f"no env worker answered within {t.worker_start_timeout_s} s")
            conns = pool.conn_to_env()
            for conn in ready:
                e = conns[conn]
                message = conn.recv()
                in_flight -= 1
                if message[0] != "ready":
                    raise RuntimeError(f"env worker {e} failed: {message[1]}")
                if steps < total:
                    t0 = time.monotonic()
                    buffers.action[e] = torch.as_tensor(np.asarray(action_space.sample())).reshape(
                        buffers.action.shape[1:]).to(buffers.action.dtype)
                    action_time += time.monotonic() - t0
                    pool.send(e, ("step",))
                    in_flight += 1
                    steps += 1
                    if steps % window == 0:
                        marks.append((steps, time.monotonic()))
                        if len(marks) == warmup_windows:
                            snapshot = counters.numpy().copy()
                            action_at_warmup, wait_at_warmup = action_time, wait_time
        t_end = time.monotonic()
    finally:
        pool.close()
    if len(marks) <= warmup_windows:
        raise RuntimeError(f"raw run too short: {len(marks)} windows of {window} steps, "
                           f"{warmup_windows} of them warm-up")
    points = [(0, t_start), *marks]
    window_sps = [(s1 - s0) / max(t1 - t0, 1e-9) for (s0, t0), (s1, t1) in zip(points, points[1:], strict=False)]
    s_w, t_w = points[warmup_windows]
    s_end, t_last = marks[-1]
    return {
        "window_sps": window_sps,
        "measured_steps": s_end - s_w,
        "measured_seconds": t_last - t_w,
        "total_seconds": t_end - t_start,
        "action_seconds": action_time - action_at_warmup,  # after the warm-up
        "wait_seconds": wait_time - wait_at_warmup,
        "snapshot": snapshot,
    }


def rank_worker_main(spec_path: str) -> None:
    """Body of one measured run (every torchrun rank runs it); rank 0 writes the result file."""
    import torch

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    cfg = OmegaConf.create(spec["cfg"])
    n = int(cfg.trainer.num_envs)
    counters = torch.zeros((n, NUM_COUNTERS), dtype=torch.float64).share_memory_()
    env_fn = functools.partial(make_bench_env, base_fn=base_env_fn(spec["workload"]), counters=counters,
                               slow=tuple(spec["slow"]), slow_factor=float(spec["slow_factor"]))
    warmup = int(spec["warmup_updates"])
    rank = int(os.environ.get("RANK", "0"))
    out_dir = Path(spec["out_dir"])
    result: dict[str, Any] = {"kind": spec["kind"], "mode": spec["mode"], "ranks": int(spec["ranks"])}
    if spec["kind"] == "raw":
        raw = _raw_run(env_fn, cfg, counters, warmup)
        snapshot = raw.pop("snapshot")
        result.update(raw)
    else:
        from trainer.train import train

        watcher = _WarmupSnapshot(out_dir / "metrics.jsonl", warmup, counters)
        if rank == 0:
            watcher.start()
        summary = train(cfg, env_fn, output_dir=out_dir)
        watcher.stop()
        snapshot = watcher.snapshot
        result["summary"] = {k: summary[k] for k in ("env_steps", "updates", "wall_time_s", "sps", "world_size")}
        if summary["interrupted"]:
            raise SystemExit(130)
    final = counters.numpy().copy()
    start = snapshot if snapshot is not None else np.zeros_like(final)
    delta = final - start
    result["sim"] = {
        "step_seconds": float(delta[:, SIM_SECONDS].sum()),
        "steps": int(delta[:, SIM_STEPS].sum()),
        "reset_seconds": float(delta[:, RESET_SECONDS].sum()),
        "resets": int(delta[:, RESETS].sum()),
        "cpu_seconds": float(delta[:, SIM_CPU_SECONDS].sum()),
        "from_warmup_snapshot": snapshot is not None,
    }
    if rank == 0:
        _write_json_atomic(Path(spec["result_path"]), result)


# ----------------------------------------------------------------------------- launching and analysing


def launch(spec: dict[str, Any], ranks: int, run_dir: Path, timeout_s: float) -> dict[str, Any]:
    """Run one measurement in its own process tree (torchrun with `ranks` ranks); its result dict."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    spec = {**spec, "ranks": ranks, "out_dir": str(run_dir / "train"), "result_path": str(run_dir / "result.json")}
    spec_path = run_dir / "spec.json"
    _write_json_atomic(spec_path, spec)
    worker = ["-m", "eval.bench_ver", "--rank-worker", str(spec_path)]
    if ranks > 1:  # one rank needs no launcher (the trainer runs single-rank without torchrun's variables)
        worker = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}", *worker]
    cmd = [sys.executable, *worker]
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root()), os.environ.get("PYTHONPATH")]))}
    env.setdefault("OMP_NUM_THREADS", str(max(os.cpu_count() or 1, 1)))
    log_path = run_dir / "log.txt"
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout_s,
                                  cwd=str(repo_root()))
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    if code == 130:
        raise KeyboardInterrupt
    result_path = Path(spec["result_path"])
    if code != 0 or not result_path.exists():
        why = "timed out" if code is None else f"exit code {code}"
        return {"status": f"failed: {why}; {last_error_line(log_path)} (log: {log_path})"}
    return json.loads(result_path.read_text(encoding="utf-8"))


def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def last_error_line(log_path: Path) -> str:
    lines = [ln.strip() for ln in log_path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line[-300:]
    return lines[-1][-300:] if lines else "no output"


def read_metrics(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def train_stats(records: list[dict[str, float]], warmup: int) -> dict[str, Any]:
    """Mean/max steps/s and per-component seconds after `warmup` rollouts, from the trainer's metrics.jsonl.

    Mean: (steps after the warm-up) / (wall time after the warm-up), both from the metrics lines, so
    logging and all-reduces are counted. Max: the best single rollout (`perf/sps` = rows / iteration).
    """
    if len(records) <= warmup:
        raise ValueError(f"only {len(records)} rollouts, {warmup} of them warm-up: raise --steps")
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
    """Simulation time of the env workers: per step, and as a fraction of the N workers' wall time."""
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


def analyse(result: Mapping[str, Any], warmup: int, num_envs: int) -> dict[str, Any]:
    """The row of one measured run: status, mean/max steps/s, component times."""
    if "status" in result:
        return dict(result)
    if result["kind"] == "raw":
        row = {
            "status": "ok",
            "mean_sps": result["measured_steps"] / max(result["measured_seconds"], 1e-9),
            "max_sps": max(result["window_sps"][warmup:]),
            "collect_sps": result["measured_steps"] / max(result["measured_seconds"], 1e-9),
            "rollout_sps": result["window_sps"],
            "measured_steps": result["measured_steps"],
            "measured_seconds": result["measured_seconds"],
            "time_s": {"inference": result["action_seconds"], "learning": 0.0,
                       "waiting": result["wait_seconds"]},
        }
    else:
        metrics = Path(result["metrics_path"])
        row = {"status": "ok", **train_stats(read_metrics(metrics), warmup)}
    row["sim"] = sim_stats(result["sim"], row["measured_seconds"] if result["sim"]["from_warmup_snapshot"]
                           else result.get("total_seconds", row["measured_seconds"]), num_envs)
    row["ranks"] = int(result.get("ranks", 1))
    return row


def ratios(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """ver / every other measured mode, on mean steps/s (and on max for the training modes)."""
    out: dict[str, float] = {}
    ver = rows.get("ver")
    if not ver or ver.get("status") != "ok":
        return out
    for other in ("sync", "nover", "raw", "sample_factory"):
        row = rows.get(other)
        if row and row.get("status") == "ok" and row["mean_sps"] > 0:
            out[f"ver_over_{other}"] = ver["mean_sps"] / row["mean_sps"]
            out[f"ver_over_{other}_max"] = ver["max_sps"] / row["max_sps"]
            if row.get("collect_sps"):
                out[f"ver_over_{other}_collect"] = ver["collect_sps"] / row["collect_sps"]
    return out


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
        "rollout_sps": [v for r in ok for v in r["rollout_sps"]],
        "repeats": [{k: r[k] for k in ("mean_sps", "max_sps")} for r in ok],
        "failed_repeats": len(rows) - len(ok),
    })
    return out


# ----------------------------------------------------------------------------- reporting


def format_table(report: Mapping[str, Any]) -> str:
    rows = report["modes"]
    head = (f"{'mode':<15}{'mean SPS':>14}{'max SPS':>10}{'collect SPS':>12}{'sim ms/step':>12}{'(CPU ms)':>9}"
            f"{'sim busy':>9}"
            f"{'infer s':>9}{'learn s':>9}{'wait s':>8}{'wall s':>8}")
    lines = [head, "-" * len(head)]
    for mode, row in rows.items():
        if row.get("status") != "ok":
            lines.append(f"{mode:<15}{row.get('status', 'not run')}")
            continue
        t, sim = row.get("time_s", {}), row.get("sim", {})
        lines.append(
            f"{mode:<15}{_mean_text(row):>14}{row['max_sps']:>10.1f}{_fmt(row.get('collect_sps'), 12, 1)}"
            f"{_fmt(sim.get('ms_per_step'), 12, 2)}{_fmt(sim.get('cpu_ms_per_step'), 9, 2)}"
            f"{_fmt(sim.get('busy_fraction'), 9, 2)}"
            f"{_fmt(t.get('inference'), 9, 1)}{_fmt(t.get('learning'), 9, 1)}{_fmt(t.get('waiting'), 8, 1)}"
            f"{_fmt(row.get('measured_seconds'), 8, 1)}")
    if report.get("scaling"):
        lines.append("")
        lines.append(f"scaling ({report['config']['scaling_mode']}, {report['config']['num_envs']} envs per rank):")
        for item in report["scaling"]:
            if item.get("status") != "ok":
                lines.append(f"  {item['ranks']} rank(s): {item.get('status')}")
            else:
                lines.append(f"  {item['ranks']} rank(s): mean {item['mean_sps']:.1f} SPS, max {item['max_sps']:.1f}, "
                             f"speed-up x{item.get('speedup', float('nan')):.2f}")
    if report["ratios"]:
        lines.append("")
        r = report["ratios"]
        lines.append("ratios, end-to-end mean SPS: " + ", ".join(
            f"{k} {v:.2f}" for k, v in r.items() if not k.endswith(("_max", "_collect"))))
        lines.append("ratios, best rollout:        " + ", ".join(
            f"{k[:-4]} {v:.2f}" for k, v in r.items() if k.endswith("_max")))
        collect = {k: v for k, v in r.items() if k.endswith("_collect")}
        if collect:
            lines.append("ratios, collection alone:    " + ", ".join(f"{k[:-8]} {v:.2f}" for k, v in collect.items()))
    for goal in report.get("goals", []):
        lines.append(f"goal {goal['name']} >= {goal['target']}: {goal['value']:.2f} "
                     f"{'met' if goal['met'] else 'MISSED'}")
    return "\n".join(lines)


def _mean_text(row: Mapping[str, Any]) -> str:
    if "mean_sps_std" in row:
        return f"{row['mean_sps']:.1f}+-{row['mean_sps_std']:.1f}"
    return f"{row['mean_sps']:.1f}"


def _fmt(value: float | None, width: int, digits: int) -> str:
    if value is None or not math.isfinite(float(value)):
        return f"{'-':>{width}}"
    return f"{float(value):>{width}.{digits}f}"


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
    ax1.set_xticks(x, names)
    ax1.set_ylabel("steps / s")
    cfg = report["config"]
    ax1.set_title(f"{cfg['skill']}: N={cfg['num_envs']}, T={cfg['num_steps']}"
                  + (f", {cfg['slow_envs']} env(s) x{cfg['slow_factor']:g} slower" if cfg["slow_envs"] else ""))
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

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__,
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "load_average_at_start": list(os.getloadavg())}


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--rank-worker" in argv:
        rank_worker_main(argv[argv.index("--rank-worker") + 1])
        return
    try:
        bench = to_plain(base_config())["bench"]
    except ConfigError as exc:
        exit_with_error(str(exc))
    args = build_parser(bench).parse_args(argv)
    skill = args.skill
    names = workload_names(bench)
    if skill not in names:
        exit_with_error(unknown_choice("skill", skill, names))
    modes = parse_choices(args.modes, MODES, "mode")
    rank_counts = parse_ranks(args.ranks)
    n, t_len, warmup = args.num_envs, args.num_steps, args.warmup_updates
    if n < 1 or t_len < 1:
        exit_with_error(f"--num-envs and --num-steps must be >= 1 (got {n} and {t_len})")
    if warmup < 0:
        exit_with_error(f"--warmup-updates must be >= 0 (got {warmup})")
    if args.repeats < 1:
        exit_with_error(f"--repeats must be >= 1 (got {args.repeats})")
    if not 0 <= args.slow_envs <= n:
        exit_with_error(f"--slow-envs must be between 0 and --num-envs ({n}), got {args.slow_envs}")
    if args.slow_factor < 1.0:
        exit_with_error(f"--slow-factor must be >= 1 (got {args.slow_factor})")
    rollouts = args.steps // (n * t_len)
    if rollouts < warmup + 1:
        exit_with_error(f"--steps {args.steps} gives {rollouts} rollouts of T x N = {t_len * n} steps; need at "
                        f"least {warmup + 1} (warm-up {warmup} + 1): raise --steps to {(warmup + 1) * n * t_len}")
    steps = rollouts * n * t_len  # whole rollouts, the same for every mode
    out = Path(args.out)
    scaling_mode = str(bench["scaling_mode"])
    try:
        cfgs = {m: mode_config(skill, m if m in TRAIN_MODES else "ver", args.overrides, bench, n, t_len, steps,
                               str(out / "runs" / m / "train")) for m in [*modes, scaling_mode]}
    except ConfigError as exc:
        exit_with_error(str(exc))
    print(f"bench-ver: {skill}, N={n}, T={t_len}, {steps} steps per mode ({rollouts} rollouts, {warmup} warm-up), "
          f"modes {','.join(modes)}, ranks {','.join(map(str, rank_counts))}", file=sys.stderr)
    workload = prepare_workload(skill, cfgs[modes[0]], bench)
    spec_common = {"workload": workload, "slow": slow_env_indices(n, args.slow_envs),
                   "slow_factor": args.slow_factor, "warmup_updates": warmup}

    def measure(mode: str, ranks: int, tag: str) -> dict[str, Any]:
        run_dir = out / "runs" / tag
        cfg = cfgs[mode].copy()
        cfg.trainer.total_steps = steps * ranks
        kind = "raw" if mode == "raw" else "train"
        spec = {**spec_common, "kind": kind, "mode": mode, "cfg": to_plain(cfg)}
        t0 = time.monotonic()
        print(f"  {tag} ...", end="", file=sys.stderr, flush=True)
        result = launch(spec, ranks, run_dir, float(bench["run_timeout_s"]))
        if "status" not in result and kind == "train":
            result["metrics_path"] = str(run_dir / "train" / "metrics.jsonl")
        try:
            row = analyse(result, warmup, n)
        except (ValueError, KeyError) as exc:
            row = {"status": f"failed: {exc}"}
        msg = f"{row['mean_sps']:.1f} steps/s" if row.get("status") == "ok" else row["status"]
        print(f" {msg} ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
        return row

    report: dict[str, Any] = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "command": "bench-ver " + " ".join(argv),
        "machine": machine_description(),
        "config": {"skill": skill, "num_envs": n, "num_steps": t_len, "steps_per_mode": steps,
                   "warmup_updates": warmup, "repeats": args.repeats, "slow_envs": args.slow_envs, "slow_factor": args.slow_factor,
                   "slow_env_indices": spec_common["slow"], "ranks": rank_counts, "scaling_mode": scaling_mode,
                   "overrides": list(args.overrides), "policy": to_plain(cfgs[modes[0]].policy),
                   "ppo": to_plain(cfgs[modes[0]].trainer.ppo)},
        "modes": {},
        "ratios": {},
        "scaling": [],
        "goals": [],
    }
    try:
        measured: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for rep in range(args.repeats):  # round-robin, so a change of machine load hits every mode alike
            for mode in modes:
                tag = mode if args.repeats == 1 else f"{mode}_rep{rep}"
                if mode == "sample_factory":
                    from eval.bench_sample_factory import run_sample_factory

                    row = run_sample_factory(workload, cfgs[mode], n, t_len, steps, warmup, spec_common,
                                             out / "runs" / tag)
                    print(f"  {tag} ... {row['mean_sps']:.1f} steps/s" if row.get("status") == "ok"
                          else f"  {tag}: {row['status']}", file=sys.stderr)
                else:
                    row = measure(mode, 1, tag)
                measured[mode].append(row)
        report["modes"] = {m: combine_repeats(rows) for m, rows in measured.items()}
        base = report["modes"].get(scaling_mode) if scaling_mode in modes else None
        for ranks in rank_counts if len(rank_counts) > 1 or rank_counts != [1] else []:
            row = base if ranks == 1 and base is not None else measure(scaling_mode, ranks,
                                                                         f"{scaling_mode}_ranks{ranks}")
            report["scaling"].append({"ranks": ranks, **{k: row[k] for k in ("status", "mean_sps", "max_sps")
                                                        if k in row}})
    except KeyboardInterrupt:
        exit_with_error("interrupted", code=130)
    one = next((s for s in report["scaling"] if s["ranks"] == 1 and s.get("status") == "ok"), None)
    for item in report["scaling"]:
        if one is not None and item.get("status") == "ok":
            item["speedup"] = item["mean_sps"] / one["mean_sps"]
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    report["ratios"] = ratios(report["modes"])
    for name, target in bench["goals"].items():
        if name in report["ratios"]:
            value = report["ratios"][name]
            report["goals"].append({"name": name, "target": float(target), "value": value,
                                    "met": bool(value >= float(target))})
    _write_json_atomic(out / RESULT_FILE, report)
    plot(report, out / PLOT_FILE)
    print(format_table(report))
    print(f"wrote {out / RESULT_FILE} and {out / PLOT_FILE}", file=sys.stderr)
    failed = [m for m, r in report["modes"].items()
              if str(r.get("status", "")).startswith("failed") and m != "sample_factory"]
    if failed:
        exit_with_error(f"mode(s) failed: {', '.join(failed)} (see the run logs under {out / 'runs'})", code=1)


if __name__ == "__main__":
    main()
