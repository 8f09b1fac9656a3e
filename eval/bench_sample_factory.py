"""Sample Factory (APPO, the AsyncOnRL peer) on our env, for `bench-ver`'s `sample_factory` row.

Sample Factory 2.1.1 needs numpy < 2 and gymnasium < 1.0, so it runs in its own virtual environment,
created on first use (`sample_factory.venv` in configs/bench_ver.yaml, default `.bench/sf-venv`):
torch first (the CPU wheel), then sample-factory with numpy<2 and gymnasium<1.0, then the few packages
our env needs (mujoco, hydra-core, omegaconf, scipy). The project itself is not installed there: the
run puts the repository root on PYTHONPATH, and our env (Gymnasium 1.x API, which 0.29 shares for
reset/step) is built by train-skill's own factory inside SF's rollout workers.

Two halves, one file:
* host side (our venv): `run_sample_factory(...)` makes sure the venv exists, writes a spec, runs
  `<venv>/bin/python -m eval.bench_sample_factory --run SPEC` and turns its result into a table row
  (or `{"status": "not run: <reason>"}` when the venv cannot be built or SF fails);
* SF side (`--run`): registers the env with SF, sets up the same N env processes, rollout T, PPO
  batch T x N in the same number of mini-batches and epochs, a comparable network (conv encoder,
  2-layer LSTM 256), runs `run_rl` for the step budget and records the learner's env-step counter
  after every training iteration (its per-iteration steps/s, like our per-rollout steps/s).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.files import write_text_atomic

READY_MARKER = ".bench-ready.json"


class SampleFactoryUnavailable(RuntimeError):
    """The SF venv could not be built or checked; the message is the one-line reason."""


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def _write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2))


def _last_line(text: str, markers: Sequence[str] = ("ERROR", "Error", "error")) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if any(m in line for m in markers):
            return line[-300:]
    return lines[-1][-300:] if lines else "no output"


# ----------------------------------------------------------------------------- host side


def ensure_venv(sf_cfg: Mapping[str, Any], root: Path | None = None) -> Path:
    """The SF venv's python, building the venv on first use; SampleFactoryUnavailable(reason) if impossible."""
    root = root or _repo_root()
    venv = (root / str(sf_cfg["venv"])).resolve()
    python = venv / "bin" / "python"
    requirements = [list(group) for group in sf_cfg["requirements"]]
    marker = venv / READY_MARKER
    if python.exists() and marker.exists():
        try:
            if json.loads(marker.read_text(encoding="utf-8")).get("requirements") == requirements:
                return python
        except (OSError, ValueError):
            pass
    timeout = float(sf_cfg["install_timeout_s"])
    base = str(sf_cfg.get("python") or sys.executable)
    print(f"  sample_factory: building its venv at {venv} (first use; a few minutes) ...", file=sys.stderr)
    steps = [[base, "-m", "venv", str(venv)]]
    steps += [[str(python), "-m", "pip", "install", "--quiet", *group] for group in requirements]
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError as exc:
            raise SampleFactoryUnavailable(f"cannot run {cmd[0]}: {exc}") from None
        except subprocess.TimeoutExpired:
            raise SampleFactoryUnavailable(f"'{' '.join(cmd[-3:])}' took longer than {timeout:.0f} s") from None
        if proc.returncode != 0:
            what = " ".join(cmd[4:]) if "pip" in cmd else "python -m venv"
            raise SampleFactoryUnavailable(f"installing {what} failed: {_last_line(proc.stderr + proc.stdout)}")
    check = ("import sample_factory, faster_fifo, mujoco, hydra, scipy, numpy, gymnasium, torch; "
             "assert int(numpy.__version__.split('.')[0]) < 2, numpy.__version__")
    proc = subprocess.run([str(python), "-c", check], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SampleFactoryUnavailable(f"the SF venv does not import: {_last_line(proc.stderr)}")
    _write_json_atomic(marker, {"requirements": requirements})
    return python


def sf_arguments(sf_cfg: Mapping[str, Any], ppo: Mapping[str, Any], num_envs: int, num_steps: int,
                 total_steps: int, seed: int, train_dir: str) -> list[str]:
    """SF command-line flags for the same process layout, batch geometry and PPO settings as ours."""
    per_worker = int(sf_cfg["envs_per_worker"])
    if num_envs % per_worker:
        raise ValueError(f"--num-envs {num_envs} is not a multiple of sample_factory.envs_per_worker {per_worker}")
    mini_batches = int(ppo["num_mini_batch"])
    rows = num_envs * num_steps
    if rows % mini_batches or (rows // mini_batches) % num_steps:
        raise ValueError(f"T x N = {rows} rows do not split into {mini_batches} SF mini-batches of whole "
                         f"rollouts of T = {num_steps} (SF needs batch_size divisible by the recurrence)")
    entropy = ppo["entropy"]
    return [
        "--env=bench_env", "--experiment=bench", f"--train_dir={train_dir}", "--device=cpu",
        "--restart_behavior=overwrite", f"--seed={seed}", "--algo=APPO", "--async_rl=True",
        f"--num_workers={num_envs // per_worker}", f"--num_envs_per_worker={per_worker}",
        f"--worker_num_splits={int(sf_cfg['worker_num_splits'])}", "--policy_workers_per_policy=1",
        f"--rollout={num_steps}", f"--recurrence={num_steps}",
        f"--batch_size={rows // mini_batches}", f"--num_batches_per_epoch={mini_batches}",
        f"--num_epochs={int(ppo['ppo_epoch'])}", f"--train_for_env_steps={total_steps}",
        f"--gamma={ppo['gamma']}", f"--gae_lambda={ppo['gae_lambda']}", f"--ppo_clip_ratio={ppo['clip_param']}",
        f"--value_loss_coeff={ppo['value_loss_coef']}", f"--max_grad_norm={ppo['max_grad_norm']}",
        f"--learning_rate={ppo['lr']}", f"--adam_eps={ppo['eps']}", f"--exploration_loss_coeff={entropy['coef']}",
        "--normalize_input=False", "--normalize_returns=False", "--with_vtrace=False",
        "--use_rnn=True", f"--rnn_type={sf_cfg['rnn_type']}", f"--rnn_num_layers={int(sf_cfg['rnn_num_layers'])}",
        f"--rnn_size={int(sf_cfg['rnn_size'])}", f"--encoder_conv_architecture={sf_cfg['conv_architecture']}",
        "--encoder_conv_mlp_layers", *[str(int(v)) for v in sf_cfg["conv_mlp_layers"]],
        "--encoder_mlp_layers", *[str(int(v)) for v in sf_cfg["vector_mlp_layers"]],
        "--save_every_sec=1000000", "--save_best_every_sec=1000000", "--keep_checkpoints=1",
        "--experiment_summaries_interval=1000000", "--with_wandb=False", "--decorrelate_envs_on_one_worker=False",
    ]


def run_sample_factory(workload: Mapping[str, Any], cfg: Any, num_envs: int, num_steps: int, steps: int,
                       warmup: int, common: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """Measure Sample Factory on `workload`; a bench-ver row, or {"status": "not run: <reason>"}."""
    from omegaconf import OmegaConf

    from eval.bench_ver import sim_stats

    plain = OmegaConf.to_container(cfg, resolve=True)
    sf_cfg = plain["sample_factory"]
    try:
        args = sf_arguments(sf_cfg, plain["trainer"]["ppo"], num_envs, num_steps, steps,
                            int(plain["trainer"]["seed"]), str((run_dir / "sf_train").resolve()))
        python = ensure_venv(sf_cfg)
    except (SampleFactoryUnavailable, ValueError) as exc:
        return {"status": f"not run: {exc}"}
    run_dir.mkdir(parents=True, exist_ok=True)
    result_path = run_dir / "result.json"
    if result_path.exists():
        result_path.unlink()
    spec = {"workload": dict(workload), "num_envs": num_envs, "num_steps": num_steps, "warmup": warmup,
            "slow": list(common["slow"]), "slow_factor": float(common["slow_factor"]), "args": args,
            "counters_path": str((run_dir / "sim_counters.f64").resolve()), "result_path": str(result_path.resolve()),
            "timeout_s": float(plain["bench"]["run_timeout_s"])}
    spec_path = run_dir / "spec.json"
    _write_json_atomic(spec_path, spec)
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
           "PYTHONPATH": str(_repo_root()), "PYTHONNOUSERSITE": "1"}
    log_path = run_dir / "log.txt"
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            proc = subprocess.run([str(python), "-m", "eval.bench_sample_factory", "--run", str(spec_path)],
                                  stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(_repo_root()),
                                  timeout=float(plain["bench"]["run_timeout_s"]) + 120)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    if code == 130:
        raise KeyboardInterrupt
    if code != 0 or not result_path.exists():
        why = "timed out" if code is None else f"exit code {code}"
        text = log_path.read_text(encoding="utf-8", errors="replace")
        return {"status": f"not run: Sample Factory {why}: {_last_line(text)} (log: {log_path})"}
    result = json.loads(result_path.read_text(encoding="utf-8"))
    if "status" in result:
        return {"status": result["status"]}
    return {
        "status": "ok",
        "mean_sps": result["measured_steps"] / max(result["measured_seconds"], 1e-9),
        "max_sps": max(result["iteration_sps"][warmup:]),
        "rollout_sps": result["iteration_sps"],
        "measured_steps": result["measured_steps"],
        "measured_seconds": result["measured_seconds"],
        "time_s": result["time_s"],
        "sim": sim_stats(result["sim"], result["measured_seconds"], num_envs),
        "ranks": 1,
        "sf_profiles": result["profiles"],
    }


# ----------------------------------------------------------------------------- SF side (runs in the SF venv)


class ChannelsFirst(gym.ObservationWrapper):
    """SF's conv encoder reads (C, H, W) images; ours are (H, W, C). Box actions are clipped to the box."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        spaces = env.observation_space.spaces if isinstance(env.observation_space, gym.spaces.Dict) else {}
        self._images = [k for k, s in spaces.items() if len(s.shape) == 3]
        if self._images:
            self.observation_space = gym.spaces.Dict({
                k: (gym.spaces.Box(np.moveaxis(s.low, -1, 0), np.moveaxis(s.high, -1, 0), dtype=s.dtype)
                    if k in self._images else s) for k, s in spaces.items()})

    def observation(self, obs):
        if not self._images:
            return obs
        return {k: (np.ascontiguousarray(np.moveaxis(v, -1, 0)) if k in self._images else v) for k, v in obs.items()}

    def step(self, action):
        if isinstance(self.action_space, gym.spaces.Box):
            action = np.clip(action, self.action_space.low, self.action_space.high)
        return super().step(action)


def sf_make_env(full_env_name: str, cfg: Any = None, env_config: Any = None, render_mode: str | None = None, *,
                spec: Mapping[str, Any]) -> gym.Env:
    """SF's env factory (picklable through functools.partial): the benchmark's timed (and slowed) env."""
    from eval.bench_ver import NUM_COUNTERS, base_env_fn, make_bench_env

    n = int(spec["num_envs"])
    index = int(env_config["env_id"]) if env_config is not None else 0
    counters = np.memmap(spec["counters_path"], dtype=np.float64, mode="r+", shape=(n, NUM_COUNTERS))
    env = make_bench_env(index % n, base_fn=base_env_fn(spec["workload"]), counters=counters,
                         slow=tuple(spec["slow"]), slow_factor=float(spec["slow_factor"]))
    return ChannelsFirst(env)


def sf_main(spec_path: str) -> None:
    """Run SF on the spec's workload and write per-iteration throughput, timings and sim counters."""
    import time

    from sample_factory.algo.utils.misc import LEARNER_ENV_STEPS
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import make_runner

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    n, warmup = int(spec["num_envs"]), int(spec["warmup"])
    from eval.bench_ver import NUM_COUNTERS, SIM_CPU_SECONDS

    counters = np.memmap(spec["counters_path"], dtype=np.float64, mode="w+", shape=(n, NUM_COUNTERS))
    counters[:] = 0.0
    counters.flush()
    register_env("bench_env", functools.partial(sf_make_env, spec=spec))
    parser, _ = parse_sf_args(argv=spec["args"])
    cfg = parse_full_cfg(parser, spec["args"])
    cfg, runner = make_runner(cfg)

    marks: list[tuple[float, int]] = []  # (time, learner env steps) after every training iteration
    snapshot: dict[str, np.ndarray] = {}

    def on_learner_steps(_runner, msg, _policy_id) -> None:
        marks.append((time.monotonic(), int(msg[LEARNER_ENV_STEPS])))
        if len(marks) == warmup + 1:  # marks[0] is the learner's initial report (0 steps)
            snapshot["counters"] = np.array(counters)

    runner.policy_msg_handlers[LEARNER_ENV_STEPS].append(on_learner_steps)
    status = runner.init()
    if status == 0:
        status = runner.run()
    if len(marks) <= warmup + 1:
        _write_json_atomic(Path(spec["result_path"]), {"status": f"not run: Sample Factory finished with status "
                                                       f"{status} after {max(len(marks) - 1, 0)} training iterations"})
        return
    iteration_sps = [(s1 - s0) / max(t1 - t0, 1e-9) for (t0, s0), (t1, s1) in zip(marks[1:], marks[2:], strict=False)]
    # the first iteration's rate counts from the learner's initial report (includes env start-up)
    iteration_sps.insert(0, marks[1][1] / max(marks[1][0] - marks[0][0], 1e-9))
    t_w, s_w = marks[warmup]
    t_end, s_end = marks[-1]
    final = np.array(counters)
    delta = final - snapshot.get("counters", np.zeros_like(final))
    components = runner.component_profiles  # a dict while running, a sorted list of pairs after the run
    components = list(components.items()) if isinstance(components, Mapping) else list(components)
    profiles = {str(name): str(timing) for name, timing in components}

    def seconds(component: str, key: str) -> float:
        """A timer of SF's component profiles, summed over the components whose name contains `component`."""
        total = 0.0
        for name, timing in components:
            label = f"{name} {getattr(timing, 'name', '')}".lower()
            if component in label and key in timing:
                value = timing[key]
                total += float(getattr(value, "value", value))
        return total

    # SF's own profiles cover the whole run (warm-up included): learner "train", inference worker (batching, forward, sending) and "wait_policy_total" (waiting for requests)
    # "handle_policy_step" (batching, forward, sending) and "wait_policy_total" (waiting for requests);
    # scaled to the measured window by its share of SF's main loop time.
    main_loop = float(runner.timing.get("main_loop", 0.0)) or (t_end - marks[0][0])
    share = min((t_end - t_w) / max(main_loop, 1e-9), 1.0)
    whole = {"learning": seconds("learner", "train"), "inference": seconds("inference", "handle_policy_step"),
             "waiting": seconds("inference", "wait_policy_total")}
    time_s = {k: v * share for k, v in whole.items()}
    _write_json_atomic(Path(spec["result_path"]), {
        "iteration_sps": iteration_sps,
        "measured_steps": s_end - s_w,
        "measured_seconds": t_end - t_w,
        "time_s": time_s,
        "time_s_whole_run": {**whole, "main_loop": main_loop},
        "profiles": profiles,
        "sim": {"step_seconds": float(delta[:, 0].sum()), "steps": int(delta[:, 1].sum()),
                "reset_seconds": float(delta[:, 2].sum()), "resets": int(delta[:, 3].sum()),
                "cpu_seconds": float(delta[:, SIM_CPU_SECONDS].sum()),
                "from_warmup_snapshot": "counters" in snapshot},
    })


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        # run the module's own sf_main (not __main__'s copy), so the env factory SF pickles is importable
        from eval import bench_sample_factory

        bench_sample_factory.sf_main(sys.argv[2])
    else:
        print("usage: python -m eval.bench_sample_factory --run SPEC.json (started by bench-ver)", file=sys.stderr)
        raise SystemExit(2)
