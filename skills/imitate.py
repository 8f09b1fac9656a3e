"""`imitate-skill`: DAgger from a skill's scripted oracle, the warm start for a VER fine-tune.

    imitate-skill --skill place --out runs/place_dagger
    train-skill --skill place --out runs/place_ft trainer.init_from=runs/place_dagger trainer.ppo.lr=1e-4

Round r runs `imitation.episodes_per_round` training episodes in which every step is labelled by the
skill's oracle (`skills/oracles/`, privileged simulator state) and executed by the oracle with
probability beta_r (`imitation.betas`), else by the current policy's mean action (DAgger, Ross et
al. 2011: the policy is trained on the states it reaches itself, with the oracle saying what to do
there). After each round the policy is fitted to the rows of every round so far
(`trainer.imitation.clone_behaviour`) and a checkpoint is written in train-skill's format, so
`eval-skill --checkpoint`, `eval-hab`, `skills.export` and `trainer.init_from` take it as they take a
VER run. Episodes run in `imitation.workers` processes (one policy copy each, CPU inference).

The network, observations, sim and episodes are train-skill's (the same Hydra tree and overrides),
so the policy is exactly the one a VER run of that config would train; its `imitation` node is in
`configs/train_skill.yaml`. Only the actor is fitted (a feed-forward policy row by row, a recurrent one
on whole episodes, stepped through every step of them); the value head starts untrained in a fine-tune.
A round takes about a minute on two cores (place: 250 episodes, ~45k rows), so there is no `--resume`:
every round's checkpoint stays in `checkpoints/` and `metrics.jsonl` records each round's success (of
the mixed executor), rows, fit error, log-std and wall time (so `python -m eval.checkpoint_curve` plots
an imitation run as it does a VER run). Bad input: one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing as mp
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from configs.compose import ConfigError, exit_with_error, to_plain, unknown_choice
from skills.definitions import SKILL_NAMES

EPILOG = """\
imitation settings (configs/train_skill.yaml, node `imitation`; Hydra overrides as for train-skill):
  imitation.betas=[1.0,0.5,0.25,0.0]   one round per value: the share of steps the oracle executes
  imitation.episodes_per_round=200     training episodes per round (drawn in order from the dataset)
  imitation.epochs=8                   passes over all rows so far after each round
  imitation.batch_size=512 imitation.lr=1e-3
  imitation.workers=2                  episode-collecting processes
  imitation.noise=0.0                  std of Gaussian noise on every executed action (DART); labels stay clean
  imitation.oracle_ready_in_zone=false the oracle ends its approach once the goal is in reach
measured (docs/imitation_runs.json): place 0.12 and open_cab 0.32-0.58 on val, below their VER policies;
open_cab with an LSTM student (policy.architecture=recurrent) 0.73 / 0.78, level with VER's deterministic
0.75 in 14 minutes. A research tool, not a shipped recipe.
every other override is train-skill's (profile, policy, sim, skill, dataset.path, ...);
policy.architecture=recurrent fits an LSTM student on whole episodes.

examples:
  imitate-skill --skill place --out runs/place_dagger
  imitate-skill --skill pick --out runs/pick_dagger dataset.path=data/pick_train.json.gz 'imitation.betas=[1,0.5,0]'
  eval-skill --skill place --checkpoint runs/place_dagger --episodes 100
"""


@dataclass(frozen=True)
class ImitationConfig:
    """The validated `imitation` node."""

    betas: tuple[float, ...]
    episodes_per_round: int
    epochs: int
    batch_size: int
    lr: float
    workers: int
    seed: int
    noise: float = 0.0
    oracle_ready_in_zone: bool = False

    @classmethod
    def from_node(cls, node: Mapping[str, Any] | None) -> ImitationConfig:
        """ConfigError naming the key and its valid range for a bad value."""
        node = dict(node or {})
        betas = tuple(float(b) for b in node.get("betas") or ())
        if not betas or any(not 0.0 <= b <= 1.0 for b in betas):
            raise ConfigError(f"imitation.betas must be a non-empty list of values in [0, 1]; got {list(betas)}")
        ints = {}
        for key in ("episodes_per_round", "epochs", "batch_size", "workers"):
            value = node.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"imitation.{key} must be an int > 0; got {value!r}")
            ints[key] = value
        lr = node.get("lr")
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
            raise ConfigError(f"imitation.lr must be a number > 0; got {lr!r}")
        noise = node.get("noise", 0.0)
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0.0 <= noise <= 1.0:
            raise ConfigError(f"imitation.noise must be a number in [0, 1]; got {noise!r}")
        ready = node.get("oracle_ready_in_zone", False)
        if not isinstance(ready, bool):
            raise ConfigError(f"imitation.oracle_ready_in_zone must be true or false; got {ready!r}")
        return cls(betas=betas, lr=float(lr), seed=int(node.get("seed", 0)), noise=float(noise),
                   oracle_ready_in_zone=ready, **ints)


# ----------------------------------------------------------------------------- episode workers

_WORKER: dict[str, Any] = {}


def _init_worker(env_kwargs: Mapping[str, Any], policy_cfg: Mapping[str, Any], ready_in_zone: bool = False) -> None:
    """Build this process's env (with `prev_action` if the policy reads it) and oracle once."""
    import torch

    from skills.oracles.factory import make_oracle
    from skills.train_cli import make_skill_env
    from trainer.wrappers import PreviousAction

    torch.set_num_threads(1)
    env = make_skill_env(0, **env_kwargs)
    if bool(policy_cfg.get("prev_action", False)):
        env = PreviousAction(env)
    oracle = make_oracle(str(env_kwargs["skill_cfg"]["name"]))
    oracle.ready_in_zone = bool(ready_in_zone)
    _WORKER.update(env=env, oracle=oracle, policy_cfg=policy_cfg, weights=None, model=None)


def _policy(weights: bytes) -> Any:
    """This worker's copy of the policy with `weights` (a torch-saved state dict), rebuilt only when they change
    (compared by content: every job arrives with its own unpickled copy of the round's bytes)."""
    import torch

    from trainer.networks import ActorCritic

    if _WORKER["weights"] != weights:
        env = _WORKER["env"]
        model = ActorCritic(env.observation_space, env.action_space, _WORKER["policy_cfg"])
        model.load_state_dict(torch.load(io.BytesIO(weights), weights_only=False))
        _WORKER.update(model=model.eval(), weights=weights)
    return _WORKER["model"]


def run_labelled_episode(index: int, beta: float, weights: bytes | None, seed: int,
                         noise: float = 0.0) -> dict[str, Any]:
    """One episode (dataset index `index`) with every step labelled by the oracle; each step is executed
    by the oracle with probability `beta`, else by the policy's mean action, plus Gaussian noise of std
    `noise` (DART). Returns the rows and the episode's outcome."""
    import torch

    from skills.oracles.base import select_subset

    env, oracle = _WORKER["env"], _WORKER["oracle"]
    base = env.unwrapped
    rng = np.random.default_rng([seed, index])
    model = _policy(weights) if weights is not None and beta < 1.0 else None
    hidden = None if model is None else model.initial_hidden(1)
    obs, _ = env.reset(seed=int(rng.integers(2**31)), options={"episode_index": index})
    oracle.start(base.sim, base.task.sensor_target)
    rows: dict[str, list[np.ndarray]] = {k: [] for k in obs}
    labels, steps, by_policy, success, end = [], 0, 0, False, "timeout"
    while True:
        expert = select_subset(base.task.action_subsets, oracle.act(base.sim)).astype(np.float32)
        for key, value in obs.items():
            rows[key].append(np.asarray(value, dtype=np.float32))
        labels.append(expert)
        action = expert
        if model is not None:  # stepped every step: a recurrent policy's state sees the whole episode
            with torch.no_grad():
                batch = {k: torch.as_tensor(np.asarray(v, dtype=np.float32)).unsqueeze(0) for k, v in obs.items()}
                out = model.act(batch, hidden, torch.tensor([steps == 0]), deterministic=True)
            hidden = out.hidden
            if rng.random() >= beta:
                action = out.action[0].numpy()
                by_policy += 1
        if noise > 0.0:
            action = action + rng.normal(0.0, noise, size=action.shape)
        action = np.clip(action, -1.0, 1.0)
        obs, _, terminated, truncated, info = env.step(action)
        steps += 1
        success = bool(info.get("success", 0.0) > 0.5)
        if terminated or truncated:
            end = "success" if success else ("timeout" if truncated and not terminated else "ended")
            break
    return {"obs": {k: np.stack(v) for k, v in rows.items()}, "actions": np.stack(labels), "steps": steps,
            "policy_steps": by_policy, "success": success, "end": end}


def _episode_job(args: tuple[int, float, bytes | None, int, float]) -> dict[str, Any]:
    return run_labelled_episode(*args)


# ----------------------------------------------------------------------------- the DAgger loop


def _weights_bytes(model: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def _save(out: Path, model: Any, cfg: Mapping[str, Any], spaces: tuple[Any, Any], counters: Mapping[str, Any]) -> Path:
    """A train-skill-format checkpoint (policy part) named by the env steps taken so far."""
    from trainer.checkpoint import CHECKPOINT_FORMAT_VERSION, checkpoint_path, save_checkpoint

    path = checkpoint_path(out / "checkpoints", int(counters["env_steps"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(path, {"format_version": CHECKPOINT_FORMAT_VERSION, "model": model.state_dict(),
                           "config": dict(cfg), "obs_space": spaces[0], "action_space": spaces[1],
                           "counters": dict(counters)})
    return path


def imitate(cfg: Mapping[str, Any], episodes_path: str, out: Path) -> dict[str, Any]:
    """Run every DAgger round of `cfg["imitation"]`; returns the last round's record."""
    import torch
    from tqdm import tqdm

    from trainer.imitation import DemoRows, clone_behaviour
    from trainer.networks import ActorCritic

    icfg = ImitationConfig.from_node(cfg.get("imitation"))
    skill_cfg = {**cfg["skill"], "oracle_start": {"prob": 0.0}}  # every episode from its own start
    env_kwargs = {"skill_cfg": skill_cfg, "sim_cfg": cfg["sim"], "episodes_path": episodes_path}
    torch.manual_seed(icfg.seed)
    _init_worker(env_kwargs, cfg["policy"], icfg.oracle_ready_in_zone)  # this process's env gives the spaces
    env = _WORKER["env"]
    spaces = (env.observation_space, env.action_space)
    dataset_size = len(env.unwrapped.episodes)
    model = ActorCritic(spaces[0], spaces[1], cfg["policy"])
    rows = DemoRows()
    counters: dict[str, Any] = {"env_steps": 0, "imitation_rounds": 0, "imitation_rows": 0}
    torch.set_num_threads(max(1, int(cfg["trainer"].get("torch_threads", 1) or 1)))
    record: dict[str, Any] = {}
    ctx = mp.get_context("spawn")
    began = time.time()
    with ctx.Pool(icfg.workers, initializer=_init_worker, initargs=(env_kwargs, cfg["policy"], icfg.oracle_ready_in_zone)) as pool, \
            open(out / "metrics.jsonl", "a") as metrics:
        for r, beta in enumerate(icfg.betas):
            start = time.time()
            weights = None if beta >= 1.0 else _weights_bytes(model)
            first = r * icfg.episodes_per_round
            jobs = [((first + i) % dataset_size, beta, weights, icfg.seed + r, icfg.noise)
                    for i in range(icfg.episodes_per_round)]
            results = []
            bar = tqdm(pool.imap(_episode_job, jobs), total=len(jobs), desc=f"round {r} (beta {beta:g})",
                       unit="ep", file=sys.stderr)
            for result in bar:
                results.append(result)
                bar.set_postfix(success=f"{np.mean([x['success'] for x in results]):.2f}")
            for result in results:
                rows.add(result["obs"], result["actions"])
            collect_s = time.time() - start
            fit = clone_behaviour(model, *rows.tensors(), epochs=icfg.epochs, batch_size=icfg.batch_size,
                                  lr=icfg.lr, seed=icfg.seed + r, lengths=rows.lengths)
            steps = sum(x["steps"] for x in results)
            counters.update(env_steps=counters["env_steps"] + steps, imitation_rounds=r + 1, imitation_rows=len(rows))
            path = _save(out, model, cfg, spaces, counters)
            ends = dict(Counter(x["end"] for x in results))
            record = {"round": r, "beta": beta, "episodes": len(results), "success": float(np.mean([x["success"] for x in results])),
                      "policy_step_share": sum(x["policy_steps"] for x in results) / max(steps, 1), "ends": ends,
                      "rows": len(rows), "env_steps": counters["env_steps"], "mse": fit["mse"], "log_std": fit["log_std"],
                      "collect_s": round(collect_s, 1), "fit_s": round(time.time() - start - collect_s, 1),
                      "wall_time": round(time.time() - began, 1),
                      "checkpoint": str(path)}
            metrics.write(json.dumps(record) + "\n")
            metrics.flush()
            print(f"round {r}: beta {beta:g}, success {record['success']:.2f} ({ends}), rows {len(rows)}, "
                  f"mse {fit['mse']:.4f}, log-std {fit['log_std']:.2f}, {collect_s:.0f}+{record['fit_s']:.0f} s "
                  f"-> {path}", file=sys.stderr)
    return record


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="imitate-skill", description="DAgger from a skill's oracle: a policy to fine-tune with train-skill.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skill", required=True, help=f"which skill: {', '.join(SKILL_NAMES)}")
    parser.add_argument("--out", required=True, metavar="DIR", help="run directory (config.yaml, metrics.jsonl, "
                        "checkpoints/); must not hold a run already")
    parser.add_argument("overrides", nargs="*", help="Hydra-style config overrides, key=value")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.skill not in SKILL_NAMES:
        exit_with_error(unknown_choice("skill", args.skill, SKILL_NAMES))
    from skills.train_cli import prepare_dataset, resolve_profile
    from trainer.cli import load_run_config

    try:
        overrides = [f"skill={args.skill}", *resolve_profile(list(args.overrides))]
    except ConfigError as exc:
        exit_with_error(str(exc))
    cfg, _, _ = load_run_config("train_skill", overrides, None, args.out)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        exit_with_error(f"--out {out} is a file; give a directory for the run")
    if (out / "checkpoints").exists() and any((out / "checkpoints").iterdir()):
        exit_with_error(f"{out} already holds a run; choose another --out")
    plain = to_plain(cfg)
    try:
        ImitationConfig.from_node(plain.get("imitation"))
        out.mkdir(parents=True, exist_ok=True)
        episodes_path = str(Path(prepare_dataset(cfg, out)).resolve())
    except (ConfigError, ValueError, OSError) as exc:  # OSError: --out not writable
        exit_with_error(str(exc).strip().splitlines()[0])
    from omegaconf import OmegaConf

    from configs.files import write_text_atomic

    plain["output_dir"] = str(out)
    write_text_atomic(out / "config.yaml", OmegaConf.to_yaml(OmegaConf.create(plain)))
    record = imitate(plain, episodes_path, out)
    print(f"imitate-skill {args.skill}: {record['round'] + 1} rounds, "
          f"{record['env_steps']} env steps, last round success {record['success']:.2f} -> {record['checkpoint']}")


if __name__ == "__main__":
    main()
