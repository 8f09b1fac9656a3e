"""Stable-Baselines3 PPO with its defaults, the peer of `python -m trainer.bench_halfcheetah`.

SB3 runs in its own virtual environment (`sb3.venv` in configs/bench_halfcheetah.yaml, default
`.bench/sb3-venv`), built on first use by `trainer.bench_venv.ensure_venv`: torch first (the CPU
wheel), then stable-baselines3, then gymnasium[mujoco] and mujoco at the versions installed here
(`sb3.pin_env_versions`), so that both trainers step the same HalfCheetah-v5. The project is not
installed there: the run puts the repository root on PYTHONPATH and imports only this module and
`configs.files` (the standard library), never torch-dependent code of ours.

Two halves, one file:
* host side (our venv): `run_sb3(sb3_cfg, env_id, seed, total_steps, run_dir)` makes sure the venv
  exists, writes a spec, runs `<venv>/bin/python -m trainer.bench_sb3 --run SPEC` and returns its
  result, or `{"status": "not run: <reason>"}` when the venv cannot be built or the run fails;
* SB3 side (`--run`): `PPO("MlpPolicy", gym.make(env_id), seed=seed).learn(total_steps)`, nothing
  else changed (torch's CPU threads set to `sb3.torch_threads` first, unless null), with a callback that records every finished episode as (wall s, env steps, raw
  return) from SB3's Monitor wrapper (which SB3 adds itself and which sees the env's own rewards)
  and times rollout collection apart from learning. Result keys: "status" ("ok"), "wall_s",
  "env_steps", "episodes", "timings" ({"setup_s", "collect_s", "learn_s"}), "setup" (SB3's
  hyperparameters and versions as the run saw them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from configs.files import write_text_atomic

SB3_IMPORT_CHECK = "import stable_baselines3, gymnasium, mujoco, torch"


# ----------------------------------------------------------------------------- host side


def sb3_requirements(sb3_cfg: Mapping[str, Any]) -> list[list[str]]:
    """The venv's install groups: the configured ones, then gymnasium[mujoco] and mujoco pinned to ours."""
    groups = [[str(r) for r in group] for group in sb3_cfg["requirements"]]
    if bool(sb3_cfg.get("pin_env_versions", True)):
        pins = []
        for package, spec in (("gymnasium", "gymnasium[mujoco]"), ("mujoco", "mujoco")):
            try:
                pins.append(f"{spec}=={version(package)}")
            except PackageNotFoundError:
                pins.append(spec)
        groups.append(pins)
    return groups


def ensure_sb3_venv(sb3_cfg: Mapping[str, Any], root: Path | None = None) -> Path:
    """The SB3 venv's python (built on first use); `trainer.bench_venv.VenvUnavailable` if impossible."""
    from trainer.bench_venv import ensure_venv, repo_root

    return ensure_venv((root or repo_root()) / str(sb3_cfg["venv"]), sb3_requirements(sb3_cfg),
                       check=SB3_IMPORT_CHECK, label="stable_baselines3", python=sb3_cfg.get("python"),
                       install_timeout_s=float(sb3_cfg["install_timeout_s"]))


def run_sb3(sb3_cfg: Mapping[str, Any], env_id: str, seed: int, total_steps: int, run_dir: Path) -> dict[str, Any]:
    """One SB3 training run in its venv; its result dict, or {"status": "not run: <reason>"}."""
    from trainer.bench_venv import VenvUnavailable, last_line, repo_root

    try:
        python = ensure_sb3_venv(sb3_cfg)
    except VenvUnavailable as exc:
        return {"status": f"not run: {exc}"}
    run_dir.mkdir(parents=True, exist_ok=True)
    result_path = (run_dir / "result.json").resolve()
    result_path.unlink(missing_ok=True)
    spec_path = run_dir / "spec.json"
    threads = sb3_cfg.get("torch_threads")
    write_text_atomic(spec_path, json.dumps({"env_id": env_id, "seed": int(seed), "total_steps": int(total_steps),
                                             "torch_threads": None if threads is None else int(threads),
                                             "result_path": str(result_path)}, indent=2))
    env = {**os.environ, "PYTHONPATH": str(repo_root()), "PYTHONNOUSERSITE": "1"}
    timeout = float(sb3_cfg["run_timeout_s"])
    log_path = run_dir / "log.txt"
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            code: int | None = subprocess.run(
                [str(python), "-m", "trainer.bench_sb3", "--run", str(spec_path.resolve())], stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=str(repo_root()), timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = None
    if code == 130:
        raise KeyboardInterrupt
    if code != 0 or not result_path.exists():
        why = f"timed out after {timeout:.0f} s" if code is None else f"exit code {code}"
        text = log_path.read_text(encoding="utf-8", errors="replace")
        return {"status": f"not run: SB3 {why}: {last_line(text)} (log: {log_path})"}
    result = json.loads(result_path.read_text(encoding="utf-8"))
    result["process_wall_s"] = time.monotonic() - start  # with interpreter start-up and imports
    return result


# ----------------------------------------------------------------------------- SB3 side (runs in the SB3 venv)


def _sb3_setup(model: Any) -> dict[str, Any]:
    """The hyperparameters SB3's defaults gave this model, and the versions, for the record."""
    import gymnasium
    import mujoco
    import stable_baselines3
    import torch

    clip = model.clip_range(1.0) if callable(model.clip_range) else model.clip_range
    lr = model.learning_rate(1.0) if callable(model.learning_rate) else model.learning_rate
    return {
        "call": 'PPO("MlpPolicy", env, seed=seed)', "n_envs": model.n_envs, "n_steps": model.n_steps,
        "batch_size": model.batch_size, "n_epochs": model.n_epochs, "learning_rate": lr, "gamma": model.gamma,
        "gae_lambda": model.gae_lambda, "clip_range": clip, "ent_coef": model.ent_coef, "vf_coef": model.vf_coef,
        "max_grad_norm": model.max_grad_norm, "normalize_advantage": model.normalize_advantage,
        "policy": str(model.policy.mlp_extractor).replace("\n", " "), "device": str(model.device),
        "torch_threads": torch.get_num_threads(), "versions": {
            "stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__,
            "gymnasium": gymnasium.__version__, "mujoco": mujoco.__version__, "python": sys.version.split()[0]},
    }


def sb3_main(spec_path: str) -> None:
    """Train SB3 PPO with its defaults as the spec says; write episodes, timings and setup as JSON."""
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    if spec.get("torch_threads"):
        import torch

        torch.set_num_threads(int(spec["torch_threads"]))
    episodes: list[list[float]] = []
    clock = {"rollout_start": 0.0, "collect_s": 0.0, "first_rollout": None}

    class Recorder(BaseCallback):
        """Finished episodes from the Monitor's `info["episode"]`; rollout collection time."""

        def _on_rollout_start(self) -> None:
            clock["rollout_start"] = time.monotonic()
            if clock["first_rollout"] is None:
                clock["first_rollout"] = clock["rollout_start"] - start

        def _on_rollout_end(self) -> None:
            clock["collect_s"] += time.monotonic() - clock["rollout_start"]

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    episodes.append([time.monotonic() - start, int(self.num_timesteps), float(info["episode"]["r"])])
            return True

    start = time.monotonic()
    env = gym.make(spec["env_id"])
    model = PPO("MlpPolicy", env, seed=int(spec["seed"]))
    model.learn(total_timesteps=int(spec["total_steps"]), callback=Recorder())
    wall = time.monotonic() - start
    setup_s = float(clock["first_rollout"] or 0.0)
    result = {
        "status": "ok", "trainer": "sb3", "seed": int(spec["seed"]), "wall_s": wall,
        "env_steps": int(model.num_timesteps), "episodes": episodes,
        "timings": {"setup_s": setup_s, "collect_s": clock["collect_s"],
                    "learn_s": max(wall - setup_s - clock["collect_s"], 0.0)},
        "setup": _sb3_setup(model),
    }
    env.close()
    write_text_atomic(spec["result_path"], json.dumps(result, indent=1))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        sb3_main(sys.argv[2])
    else:
        print("usage: python -m trainer.bench_sb3 --run SPEC.json (started by trainer.bench_halfcheetah)",
              file=sys.stderr)
        raise SystemExit(2)
