"""`train-rl`: train PPO (VER / NoVER / sync) on any registered Gymnasium environment.

Errors in the command line (unknown env id, bad override or config value, missing or corrupt
checkpoint) print one line and exit with code 2 before any env starts. Ctrl-C (SIGTERM) writes a
checkpoint and exits with code 130 (143). `load_run_config` and `run_training` are shared with `train-skill`.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import importlib
import logging
import os
import sys

import gymnasium as gym
from omegaconf import DictConfig

from configs.compose import ConfigError, compose, exit_with_error, unknown_choice
from trainer.checkpoint import CheckpointError, resume_run
from trainer.collector import WorkerFailure
from trainer.config_check import check_config

EXIT_INTERRUPTED = {"SIGINT": 130, "SIGTERM": 143}  # 128 + the signal's number, as a shell reports it

EPILOG = """\
overrides (Hydra syntax, key=value; see configs/train_rl.yaml and configs/trainer/*.yaml):
  trainer=ver|nover|sync       collection mode file (or trainer.mode=...)
  trainer.num_envs=16          envs per rank (N)
  trainer.envs_per_worker=4    envs stepped by one worker process (N / K processes per rank)
  trainer.num_steps=128        rollout length T (a rollout is T x N steps)
  trainer.total_steps=1000000  env steps to train for (all ranks together)
  trainer.seed=0 trainer.deterministic=true   exactly repeatable runs (sync mode, CPU)
  trainer.max_seq_len=32       longest LSTM sequence in a mini-batch (default null: T)
  trainer.ppo.lr=3e-4 trainer.ppo.num_mini_batch=4 ...   PPO settings (configs/trainer/ppo.yaml)
  policy=mlp                   network (configs/policy/)
  output_dir=runs/my_run       where config.yaml, metrics.jsonl, tensorboard/ and checkpoints/ go

examples:
  train-rl --env-id CartPole-v1
  train-rl --env-id Pendulum-v1 trainer=sync trainer.num_envs=8 trainer.total_steps=200000
  train-rl --resume runs/train_rl/CartPole-v1          # continue from the newest checkpoint
  torchrun --nproc-per-node 2 -m trainer --env-id CartPole-v1 trainer.num_envs=4
  torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29400 \\
      -m trainer --env-id HalfCheetah-v5

exit codes: 0 done, 2 bad input, 130 / 143 stopped by Ctrl-C / SIGTERM (a checkpoint was written first),
1 env failing repeatedly.
"""


def make_gym_env(env_idx: int, env_id: str) -> gym.Env:
    """Env factory used by the workers (`env_idx` is unused: every gym env is seeded on reset)."""
    return gym.make(env_id)


def check_env_id(env_id: str) -> str:
    """The id if registered (`module:Id` imports `module` first); otherwise exit 2 naming close ids."""
    if ":" in env_id:
        module, _, name = env_id.partition(":")
        try:
            importlib.import_module(module)
        except ImportError as exc:
            exit_with_error(f"cannot import module '{module}' for env id '{env_id}' ({exc})")
        env_id = name
    if env_id not in gym.registry:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=5, cutoff=0.5)
        choices = close or ["any registered gymnasium id, e.g. CartPole-v1", "Pendulum-v1", "HalfCheetah-v5"]
        exit_with_error(unknown_choice("env id", env_id, choices))
    return env_id


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="train-rl", description="Train PPO with VER, NoVER or sync (DD-PPO) collection on a Gymnasium env.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--env-id", help="registered Gymnasium id, e.g. CartPole-v1 (module:Id imports module)")
    parser.add_argument("--resume", metavar="DIR_OR_FILE",
                        help="continue a run: its directory (newest checkpoint) or a checkpoint file")
    parser.add_argument("--output-dir", help="run directory (default: config output_dir, or the resumed run's)")
    parser.add_argument("overrides", nargs="*", help="Hydra-style config overrides, key=value")
    return parser


def load_run_config(config_name: str, overrides: list[str], resume: str | None,
                    output_dir: str | None) -> tuple[DictConfig, str | None, str]:
    """(config, checkpoint to resume or None, run directory), checked; exits 2 with one line otherwise.

    A new run composes `configs/<config_name>.yaml` with `overrides`; `resume` (a run directory or
    a checkpoint) takes the checkpoint's config and applies `overrides` on top. Either way every
    trainer/PPO/policy value is validated here, before any dataset or env worker is made.
    """
    try:
        if resume is not None:
            target = resume_run(resume, overrides)
            cfg, ckpt, run_dir = target.config, str(target.checkpoint), str(target.run_dir)
        else:
            cfg = compose(config_name, overrides)
            ckpt, run_dir = None, str(cfg.output_dir)
        check_config(cfg)
    except (ConfigError, CheckpointError) as exc:
        exit_with_error(str(exc))
    return cfg, ckpt, output_dir or run_dir


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    overrides = list(args.overrides)
    if args.resume is None and args.env_id is None:
        exit_with_error("--env-id is required (or --resume DIR to continue a run)")
    if args.env_id is not None:
        overrides.append(f"env_id={args.env_id}")
    cfg, ckpt, output_dir = load_run_config("train_rl", overrides, args.resume, args.output_dir)
    env_id = check_env_id(str(cfg.env_id))
    try:
        gym.make(env_id).close()
    except Exception as exc:  # e.g. an optional dependency of the env is missing
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        exit_with_error(f"cannot create env '{env_id}': {first}")

    run_training(cfg, functools.partial(make_gym_env, env_id=env_id), ckpt, output_dir, label=env_id)


def run_training(cfg: DictConfig, env_fn, resume, output_dir: str, label: str) -> None:
    """Run `train`, turn its errors into one-line exits, print the summary on rank 0.

    Exit codes: 2 for bad config or checkpoint, 1 when env workers keep failing, 130 after Ctrl-C and 143
    after SIGTERM (a checkpoint was written first). Shared by `train-rl` and `train-skill`.
    """
    from trainer.distributed import shutdown_distributed
    from trainer.train import train  # heavy imports after the argument checks

    try:
        summary = train(cfg, env_fn, resume=resume, output_dir=output_dir)
    except (ConfigError, CheckpointError) as exc:
        exit_with_error(str(exc))
    except WorkerFailure as exc:
        exit_with_error(str(exc), code=1)
    if not summary["interrupted"]:
        # every rank got here together (a finished run ends with a gather); after an interrupt or an
        # error a rank may be alone, and torchrun stops the others
        shutdown_distributed()
    if int(os.environ.get("RANK", "0")) == 0:
        ret = summary["mean_return"]
        print(f"{'interrupted' if summary['interrupted'] else 'done'}: {label}, {summary['env_steps']} steps, "
              f"{summary['updates']} updates, mean return {ret if ret is None else round(ret, 2)}, "
              f"{summary['sps']:.0f} steps/s, checkpoint {summary['checkpoint']}", file=sys.stderr)
    if summary["interrupted"]:
        raise SystemExit(EXIT_INTERRUPTED[summary.get("interrupt_signal") or "SIGINT"])
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        _exit_without_finalizers()


def _exit_without_finalizers() -> None:
    """End a finished torchrun rank at once (exit 0), with its output flushed. Everything is written by now
    (checkpoints and logs atomically, the group destroyed), but a rank that went on into interpreter shutdown
    could still abort there, "terminate called without an active exception", as gloo's worker threads release
    what they hold while the interpreter is torn down (pytorch/pytorch PR 179291): seen once in `.ci/run` on
    2026-11-26, after the run had finished, and torchrun then reported the whole run failed."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main()
