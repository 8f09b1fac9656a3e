"""`train-skill`: train one of the seven skills with VER (or NoVER / sync) on the embedded HAB.

Composes `configs/train_skill.yaml` (trainer, policy, sim and skill groups plus Hydra overrides),
prepares an episode dataset (the given `dataset.path`, or one generated once and cached under the
run's `episodes/` folder), and calls `trainer.train.train(cfg, env_fn)` with a picklable env factory.
Checkpoints hold the resolved config (with its `skill` node), so `skills.policy.SkillPolicy` can
rebuild and run the trained policy. Bad input: one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rearrange.episodes import EpisodeFileError, load_episodes, save_episodes
from rearrange.tasks.skill_tasks import make_skill_task
from skills.definitions import SKILL_NAMES, skill_def_from_config
from trainer.checkpoint import CheckpointError, load_checkpoint
from trainer.config import ConfigError, compose, exit_with_error, to_plain, unknown_choice

EPILOG = f"""\
skills: {', '.join(SKILL_NAMES)}

overrides (Hydra syntax, key=value; see configs/train_skill.yaml and its groups):
  trainer=ver|nover|sync            collection mode (configs/trainer/)
  trainer.num_envs=4                env worker processes (N)
  trainer.num_steps=64              rollout length T (a rollout is T x N steps)
  trainer.total_steps=100000        env steps to train for
  trainer.seed=0                    run seed
  policy=cnn_small|resnet18_half    network (configs/policy/); resnet18_half is the paper's
  sim.camera.head.width=96 sim.camera.head.height=96   depth resolution (default 128x128)
  skill.base_movement=false         the ablation without base movement (manipulation skills)
  dataset.path=eps.json.gz          train on these episodes (default: generate dataset.count)
  output_dir=runs/pick              where config.yaml, metrics.jsonl, tensorboard/, checkpoints/ go

examples:
  train-skill --skill pick
  train-skill --skill pick --out runs/pick_cpu trainer.num_envs=4 trainer.num_steps=64 \\
      sim.camera.head.width=64 sim.camera.head.height=64
  train-skill --skill open_fridge policy=resnet18_half trainer.num_envs=16
  train-skill --skill place skill.base_movement=false --out runs/place_nobase
  train-skill --resume runs/pick_cpu              # continue from the newest checkpoint

exit codes: 0 done, 2 bad input, 130 interrupted (a checkpoint was written), 1 env failing repeatedly.
"""


def make_skill_env(env_idx: int, *, skill_cfg: Mapping[str, Any], sim_cfg: Mapping[str, Any] | None,
                   episodes_path: str) -> Any:
    """Env factory for the trainer's workers: the skill's task on the dataset's episodes."""
    from rearrange.env import RearrangeEnv

    return RearrangeEnv(make_skill_task(skill_cfg), episodes_path, sim_cfg=sim_cfg)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="train-skill", description="Train a rearrangement skill with VER on the embedded HAB.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skill", help=f"which skill: {', '.join(SKILL_NAMES)}")
    parser.add_argument("--resume", metavar="DIR_OR_FILE",
                        help="continue a run: its directory (newest checkpoint) or a checkpoint file")
    parser.add_argument("--out", metavar="DIR", help="run directory (default: output_dir of the config, "
                        "or the resumed run's directory)")
    parser.add_argument("overrides", nargs="*", help="Hydra-style config overrides, key=value")
    return parser


def dataset_cache_path(cfg: DictConfig | Mapping[str, Any], output_dir: str | os.PathLike) -> Path:
    """Where a generated training dataset of this config is cached."""
    d = cfg["dataset"]
    return Path(output_dir) / "episodes" / f"{cfg['skill']['name']}_{d['split']}_{int(d['count'])}_seed{int(d['seed'])}.json.gz"


def prepare_dataset(cfg: DictConfig, output_dir: str | os.PathLike) -> str:
    """The episode file to train on: `dataset.path` (validated), or a generated, cached one."""
    skill = str(cfg.skill.name)
    if cfg.dataset.path is not None:
        path = Path(str(cfg.dataset.path))
        episodes = load_episodes(path)
        kinds = sorted({e.kind for e in episodes})
        if kinds != [skill]:
            raise EpisodeFileError(f"episode file {path} holds {', '.join(kinds) or 'no'} episodes, "
                                   f"skill {skill} needs '{skill}' episodes")
        return str(path)
    path = dataset_cache_path(cfg, output_dir)
    if path.exists():
        load_episodes(path)  # validate the cached file
        return str(path)
    from rearrange.generate import generate_episodes

    count = int(cfg.dataset.count)
    if count <= 0:
        raise ConfigError(f"dataset.count must be > 0 (got {count})")
    print(f"generating {count} '{skill}' episodes ({cfg.dataset.split} split) -> {path}", file=sys.stderr)
    episodes = generate_episodes(skill, str(cfg.dataset.split), count, int(cfg.dataset.seed),
                                 sim_cfg=to_plain(cfg.sim))
    save_episodes(path, episodes, kind=skill, split=str(cfg.dataset.split), seed=int(cfg.dataset.seed))
    return str(path)


def _resume_config(resume: str, overrides: list[str]) -> tuple[DictConfig, str]:
    """The resumed run's config (from its checkpoint) with command-line overrides applied."""
    from trainer.train import resolve_checkpoint

    try:
        path = resolve_checkpoint(resume)
        state = load_checkpoint(path)
    except CheckpointError as exc:
        exit_with_error(str(exc))
    config = state["config"]
    if not isinstance(config, Mapping) or "skill" not in config:
        exit_with_error(f"checkpoint {path} is not a train-skill checkpoint (its config has no skill)")
    try:
        cfg = OmegaConf.merge(OmegaConf.create(config), OmegaConf.from_dotlist(overrides))
    except OmegaConfBaseException as exc:
        exit_with_error(f"invalid config override: {str(exc).splitlines()[0]}")
    return cfg, str(path)  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    overrides = list(args.overrides)
    if args.skill is not None and args.skill not in SKILL_NAMES:
        exit_with_error(unknown_choice("skill", args.skill, SKILL_NAMES))
    if args.resume is None and args.skill is None:
        exit_with_error(f"--skill is required (or --resume DIR); valid choices: {', '.join(SKILL_NAMES)}")
    if args.resume is not None:
        cfg, ckpt = _resume_config(args.resume, overrides)
        if args.skill is not None and str(cfg.skill.name) != args.skill:
            exit_with_error(f"--skill {args.skill} does not match the resumed run's skill '{cfg.skill.name}'")
        resume_dir = Path(args.resume) if Path(args.resume).is_dir() else Path(ckpt).parent.parent
        output_dir = args.out or str(resume_dir)
    else:
        try:
            cfg = compose("train_skill", [f"skill={args.skill}", *overrides])
        except ConfigError as exc:
            exit_with_error(str(exc))
        ckpt = None
        output_dir = args.out or str(cfg.output_dir)
    cfg.output_dir = output_dir
    skill_cfg = to_plain(cfg.skill)
    try:
        skill = skill_def_from_config(skill_cfg)
        make_skill_task(skill_cfg)  # a skill config the task cannot use fails here, before any worker starts
        episodes_path = prepare_dataset(cfg, output_dir)
    except (KeyError, ValueError, ConfigError) as exc:  # EpisodeFileError is a ValueError
        exit_with_error(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)


    print(f"training skill {skill.name}: obs {', '.join(skill.obs_keys)}; actions {'+'.join(skill.action_subsets)} "
          f"({skill.action_dim} dims); {skill.train_max_steps} steps per episode -> {output_dir}", file=sys.stderr)

    from trainer.cli import run_training  # heavy imports after the argument checks

    # The learner's torch threads: trainer.torch_threads (default 1: on 2 cores the env workers
    # already occupy them; measured 8 ms per act with 1 thread, 300 ms with 2).
    env_fn = functools.partial(make_skill_env, skill_cfg=skill_cfg, sim_cfg=to_plain(cfg.sim),
                               episodes_path=str(Path(episodes_path).resolve()))
    run_training(cfg, env_fn, ckpt, output_dir, label=f"skill {cfg.skill.name}")


if __name__ == "__main__":
    main()
