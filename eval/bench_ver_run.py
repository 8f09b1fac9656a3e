"""`bench-ver`, measuring: one mode's run in its own process tree, and the env every mode steps.

`launch(spec, ranks, run_dir, ...)` writes the run's spec and starts `python -m eval.bench_ver_run SPEC`
(under `torch.distributed.run` for several ranks); every rank process runs `rank_worker_main`, and
rank 0 writes `result.json`, which `eval.bench_ver_analyse.analyse` turns into a table row.

* `raw`: the simulator's upper bound for the same process layout as training: the trainer's own
  `WorkerPool` (N envs in ceil(N / K) worker processes, K = `trainer.envs_per_worker`, one message per
  worker and K steps per message) and shared-memory transfer buffers, random actions written by the
  main process, no policy and no learning (`raw_run`);
* `sync`, `nover`, `ver`: `trainer.train.train` with the mode's config.

Every env is the workload's env wrapped by `TimedEnv`, which adds the seconds it spends in `step`/
`reset` (and the CPU seconds) to a shared per-env row of counters, and can make chosen envs slower.
A time budget (`max_seconds`) stops a run gracefully: the raw driver stops issuing steps, training is
interrupted at its next safe point (as with Ctrl-C) and keeps the rollouts it logged.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval.metrics import write_json_atomic

# Columns of the shared per-env timing counters written by `TimedEnv` inside the workers: wall seconds
# and counts of steps and resets, and the CPU seconds the worker process used in them (wall >> CPU
# means the env waited for a core: the machine is oversubscribed).
SIM_SECONDS, SIM_STEPS, RESET_SECONDS, RESETS, SIM_CPU_SECONDS = range(5)
NUM_COUNTERS = 5

_POLL_S = 0.05  # longest single wait of the raw driver (so a hang or the deadline is noticed)


def cpu_snapshot() -> np.ndarray:
    """[CPU seconds of this process (all its threads), busy and total clock ticks of the machine].

    The machine's ticks are summed over its cores from /proc/stat (busy: all but idle and iowait), so
    their difference over a window tells how many cores were busy; NaN where /proc/stat is missing. They
    stay whole ticks (exact in float64) until `cpu_totals` takes the difference: in seconds since boot the
    subtraction would round, and a window's busy seconds could come out above its total.
    """
    machine = [math.nan, math.nan]
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
        machine = [total - fields[3] - fields[4], total]
    except (OSError, ValueError, IndexError):
        pass
    return np.array([time.process_time(), *machine], dtype=np.float64)


def cpu_totals(start: np.ndarray, end: np.ndarray) -> dict[str, float]:
    """The `cpu` entry of a result: this process's and the machine's CPU seconds over the window."""
    delta = end - start
    hz = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
    return {"main_seconds": float(delta[0]), "machine_busy_seconds": float(delta[1]) / hz,
            "machine_seconds": float(delta[2]) / hz, "cores": os.cpu_count() or 1}


# ----------------------------------------------------------------------------- the env of every mode


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


def counter_totals(delta: np.ndarray, from_warmup_snapshot: bool) -> dict[str, Any]:
    """The `sim` entry of a result: counter differences over the measured window, summed over envs."""
    return {
        "step_seconds": float(delta[:, SIM_SECONDS].sum()),
        "steps": int(delta[:, SIM_STEPS].sum()),
        "reset_seconds": float(delta[:, RESET_SECONDS].sum()),
        "resets": int(delta[:, RESETS].sum()),
        "cpu_seconds": float(delta[:, SIM_CPU_SECONDS].sum()),
        "from_warmup_snapshot": bool(from_warmup_snapshot),
    }


# ----------------------------------------------------------------------------- raw simulation


def raw_run(env_fn, cfg, counters, warmup_windows: int, max_seconds: float | None = None) -> dict[str, Any]:
    """Random actions through the trainer's worker pool and transfer buffers; no policy, no learning.

    The pool holds N = `trainer.num_envs` envs in worker processes of K = `trainer.envs_per_worker`
    envs, as in training. Whenever a worker answers, the main process writes random actions for that
    worker's envs and sends it one `step` for all of them, until `trainer.total_steps` steps were
    issued (or `max_seconds` passed since the start). Steps count when their answer arrives; every
    T x N of them close a window (the raw analogue of a rollout).
    """
    import torch

    from trainer.env_worker import Failed, WorkerPool
    from trainer.shared_buffers import TransferBuffers

    t = cfg.trainer
    n, k = int(t.num_envs), int(t.get("envs_per_worker", 1))
    window, total, seed = n * int(t.num_steps), int(t.total_steps), int(t.seed)
    probe = env_fn(0)
    obs_space, action_space = probe.observation_space, probe.action_space
    probe.close()
    action_space.seed(seed)
    buffers = TransferBuffers(obs_space, action_space, n)
    action_shape = buffers.action.shape[1:]
    pool = WorkerPool(env_fn, buffers, str(t.start_method), k, step_timeout_s=float(t.worker_timeout_s),
                      start_timeout_s=float(t.worker_start_timeout_s))
    issued = done = 0
    marks: list[tuple[int, float]] = []  # (steps answered, time) at the end of each window
    action_time = wait_time = 0.0
    action_at_warmup = wait_at_warmup = 0.0  # the same, at the end of the warm-up windows
    snapshot = cpu_at_mark = None
    stopped_by_budget = False
    t_start = time.monotonic()
    cpu_at_warmup = cpu_snapshot()  # replaced at the end of the warm-up windows
    deadline = t_start + max_seconds if max_seconds else math.inf
    try:
        pool.start_all()
        pool.reset(np.arange(n), [seed * 1000 + e for e in range(n)])
        in_flight = pool.num_workers
        while in_flight:
            t0 = time.monotonic()
            events = pool.poll(_POLL_S)
            wait_time += time.monotonic() - t0
            for ev in events:
                if isinstance(ev, Failed):  # Hung included
                    raise RuntimeError(f"env worker {ev.worker} failed: {ev.reason}")
                in_flight -= 1
                now = time.monotonic()
                if ev.command == "step":
                    done += len(ev.envs)
                    if done >= (len(marks) + 1) * window:
                        marks.append((done, now))
                        cpu_at_mark = cpu_snapshot()  # the measured window ends at the last mark
                        if len(marks) == warmup_windows:
                            snapshot = np.asarray(counters).copy()
                            cpu_at_warmup = cpu_at_mark
                            action_at_warmup, wait_at_warmup = action_time, wait_time
                if issued < total and now >= deadline:  # issue nothing more; the steps in flight arrive
                    stopped_by_budget = True
                if issued < total and not stopped_by_budget:
                    envs = ev.envs[: total - issued]
                    t0 = time.monotonic()
                    actions = np.stack([np.asarray(action_space.sample()) for _ in range(len(envs))])
                    buffers.action[torch.from_numpy(envs)] = torch.as_tensor(actions).reshape(
                        len(envs), *action_shape).to(buffers.action.dtype)
                    action_time += time.monotonic() - t0
                    pool.step(envs)
                    in_flight += 1
                    issued += len(envs)
        t_end = time.monotonic()
    finally:
        pool.close()
    if len(marks) <= warmup_windows:
        why = f" within --max-seconds {max_seconds:g}" if stopped_by_budget else ""
        raise RuntimeError(f"raw run too short{why}: {len(marks)} windows of {window} steps, "
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
        "num_workers": pool.num_workers,
        "stopped_by_budget": stopped_by_budget,
        "snapshot": snapshot,
        "cpu": cpu_totals(cpu_at_warmup, cpu_at_mark),
    }


# ----------------------------------------------------------------------------- training modes


class _MetricsWatcher(threading.Thread):
    """Copies the sim counters whenever the trainer logs a rollout (tails metrics.jsonl).

    The copy at the `warmup`-th line starts the measured window; the newest copy ends it when a time
    budget stopped the run (its unfinished rollout is not measured).
    """

    def __init__(self, metrics_path: Path, warmup: int, counters) -> None:
        super().__init__(daemon=True)
        self.metrics_path, self.warmup, self.counters = metrics_path, warmup, counters
        self.at_warmup: np.ndarray | None = None
        self.latest: np.ndarray | None = None
        self.cpu_at_warmup: np.ndarray | None = None  # cpu_snapshot() beside each counters copy
        self.cpu_latest: np.ndarray | None = None
        self._lines = -1
        self._halt = threading.Event()

    def poll(self) -> None:
        lines = 0
        if self.metrics_path.exists():
            with open(self.metrics_path, encoding="utf-8") as f:
                lines = sum(1 for line in f if line.strip())
        if lines != self._lines:
            self._lines = lines
            self.latest, self.cpu_latest = np.asarray(self.counters).copy(), cpu_snapshot()
            if self.at_warmup is None and lines >= self.warmup:
                self.at_warmup, self.cpu_at_warmup = self.latest, self.cpu_latest

    def run(self) -> None:
        while not self._halt.is_set():
            self.poll()
            self._halt.wait(0.02)

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join()
        self.poll()


class _Budget:
    """Interrupts this process (SIGINT, the trainer's Ctrl-C path) after `seconds`; None: never."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds, self.fired = seconds, False
        self._start = time.monotonic()
        self._timer = threading.Timer(float(seconds), self._fire) if seconds else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        os.kill(os.getpid(), signal.SIGINT)

    def spent(self) -> bool:
        """The budget ran out here, or nearly (with several ranks, another rank's timer may stop us first)."""
        return self.fired or (bool(self.seconds) and time.monotonic() - self._start >= 0.9 * float(self.seconds))

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _train_run(env_fn, cfg, counters, warmup: int, out_dir: Path, rank: int, max_seconds: float | None):
    """`trainer.train.train` on the benchmark env; (result entries, counters at warm-up, at the end)."""
    from trainer.train import train

    watcher = _MetricsWatcher(out_dir / "metrics.jsonl", warmup, counters)
    if rank == 0:
        watcher.start()
    budget = _Budget(max_seconds)
    try:
        summary = train(cfg, env_fn, output_dir=out_dir)
    except KeyboardInterrupt:
        if not budget.spent():
            raise
        raise RuntimeError(f"--max-seconds {max_seconds:g} ran out before training started") from None
    finally:
        budget.cancel()
        if rank == 0:
            watcher.stop()
    stopped_by_budget = bool(summary["interrupted"]) and budget.spent()
    if summary["interrupted"] and not stopped_by_budget:
        raise SystemExit(130)  # Ctrl-C: the whole benchmark stops
    entries = {"summary": {k: summary[k] for k in ("env_steps", "updates", "wall_time_s", "sps", "world_size")},
               "stopped_by_budget": stopped_by_budget}
    end = watcher.latest if stopped_by_budget else None
    if rank == 0 and watcher.cpu_at_warmup is not None:  # CPU over the logged rollouts' window
        entries["cpu"] = cpu_totals(watcher.cpu_at_warmup, watcher.cpu_latest)
    return entries, watcher.at_warmup, end


def rank_worker_main(spec_path: str) -> None:
    """Body of one measured run (every torchrun rank runs it); rank 0 writes the result file."""
    import torch
    from omegaconf import OmegaConf

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    cfg = OmegaConf.create(spec["cfg"])
    n = int(cfg.trainer.num_envs)
    counters = torch.zeros((n, NUM_COUNTERS), dtype=torch.float64).share_memory_()
    env_fn = functools.partial(make_bench_env, base_fn=base_env_fn(spec["workload"]), counters=counters,
                               slow=tuple(spec["slow"]), slow_factor=float(spec["slow_factor"]))
    warmup = int(spec["warmup_updates"])
    max_seconds = spec.get("max_seconds")
    rank = int(os.environ.get("RANK", "0"))
    result: dict[str, Any] = {"kind": spec["kind"], "mode": spec["mode"], "ranks": int(spec["ranks"])}
    end = None
    if spec["kind"] == "raw":
        if bool(cfg.policy.get("prev_action", False)):  # the env the trainer builds (trainer.train._build)
            from trainer.wrappers import with_previous_action

            env_fn = with_previous_action(env_fn)
        if int(cfg.trainer.torch_threads) > 0:
            torch.set_num_threads(int(cfg.trainer.torch_threads))
        raw = raw_run(env_fn, cfg, counters, warmup, max_seconds)
        start = raw.pop("snapshot")
        result.update(raw)
    else:
        entries, start, end = _train_run(env_fn, cfg, counters, warmup, Path(spec["out_dir"]), rank, max_seconds)
        result.update(entries)
    final = counters.numpy().copy() if end is None else end
    result["sim"] = counter_totals(final - (start if start is not None else np.zeros_like(final)),
                                   from_warmup_snapshot=start is not None)
    if rank == 0:
        write_json_atomic(Path(spec["result_path"]), result)


# ----------------------------------------------------------------------------- launching


def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def last_error_line(log_path: Path) -> str:
    lines = [ln.strip() for ln in log_path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line[-300:]
    return lines[-1][-300:] if lines else "no output"


def launch(spec: dict[str, Any], ranks: int, run_dir: Path, timeout_s: float) -> dict[str, Any]:
    """Run one measurement in its own process tree (torchrun with `ranks` ranks); its result dict.

    A failed run gives `{"status": "failed: <reason> (log: ...)"}`; a Ctrl-C raises KeyboardInterrupt.
    """
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    spec = {**spec, "ranks": ranks, "out_dir": str(run_dir / "train"), "result_path": str(run_dir / "result.json")}
    spec_path = run_dir / "spec.json"
    write_json_atomic(spec_path, spec)
    worker = ["-m", "eval.bench_ver_run", str(spec_path)]
    if ranks > 1:  # one rank needs no launcher (the trainer runs single-rank without torchrun's variables)
        worker = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}", *worker]
    # MUJOCO_GL passes through unset: forcing egl made `import mujoco` itself fail where PyOpenGL finds no
    # libEGL (a GPU machine with only NVIDIA's vendor library), though the ray-cast profile renders nothing;
    # rearrange/render.py picks a working backend when a frame is needed
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root()), os.environ.get("PYTHONPATH")]))}
    env.setdefault("OMP_NUM_THREADS", str(max(os.cpu_count() or 1, 1)))
    log_path = run_dir / "log.txt"
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            proc = subprocess.run([sys.executable, *worker], stdout=log, stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout_s, cwd=str(repo_root()))
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    if code == 130:
        raise KeyboardInterrupt
    result_path = Path(spec["result_path"])
    if code != 0 or not result_path.exists():
        why = f"timed out after {timeout_s:.0f} s" if code is None else f"exit code {code}"
        return {"status": f"failed: {why}; {last_error_line(log_path)} (log: {log_path})"}
    result = json.loads(result_path.read_text(encoding="utf-8"))
    if spec["kind"] == "train":
        result["metrics_path"] = str(run_dir / "train" / "metrics.jsonl")
    return result


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m eval.bench_ver_run SPEC.json (started by bench-ver)", file=sys.stderr)
        raise SystemExit(2)
    # the module's own function (not __main__'s copy), so the env factories the workers unpickle import
    from eval import bench_ver_run

    bench_ver_run.rank_worker_main(sys.argv[1])
