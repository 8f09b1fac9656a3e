"""`train-skill`: train one of the seven skills with VER (or NoVER / sync) on the embedded HAB.

Composes `configs/train_skill.yaml` (trainer, policy, sim, skill and profile groups plus Hydra
overrides), validates it, prepares an episode dataset (the given `dataset.path`, or one generated
once and cached under the run's `episodes/` folder), and calls `trainer.train.train(cfg, env_fn)`
with a picklable env factory. The training profile (`configs/profile/`: `paper` or `cpu`) is one
switch, `profile=...`; its default `auto` is resolved here (`resolve_profile`). Checkpoints hold the
resolved config (with its `skill` node and the profile's name), so `skills.policy.SkillPolicy` can
rebuild and run the trained policy. Bad input: one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict

from configs.compose import ConfigError, exit_with_error, to_plain, unknown_choice
from rearrange.actions import check_subset_settings
from rearrange.episodes import EpisodeFileError, load_episodes, save_episodes
from rearrange.sim import load_sim_config
from rearrange.tasks.skill_tasks import make_skill_task
from skills.definitions import SKILL_NAMES, skill_def_from_config
from skills.episode_balance import EpisodeBalanceConfig, EpisodeBalanceEnv
from skills.oracle_start import OracleStartConfig, OracleStartEnv
from trainer.config_check import check_config

EPILOG = f"""\
skills: {', '.join(SKILL_NAMES)}

training profile, one switch: profile=cpu|paper|auto (configs/profile/; other overrides apply on top):
  profile=auto                      default: paper on a machine with a CUDA GPU, else cpu
  profile=paper                     the VER paper's setup (Table A1): 128x128 head depth, resnet18_half,
                                    16 envs x 128 steps per rollout; for GPU machines
  profile=cpu                       feed-forward MLPs + 16x16 ray-cast depth, 32 envs in 2 processes,
                                    the update overlapped with collection (trainer.overlap_learning),
                                    the learner in bf16 where the CPU has it (trainer.ppo.learner_bf16),
                                    a binary (Bernoulli) stop (skill_binary_actions): for a few CPU cores
                                    (values and measurements: configs/profile/cpu.yaml); place keeps the
                                    update in step, habitat's clip and a Gaussian stop, with which it
                                    learned twice as fast at first (configs/skill_profile/cpu_place.yaml)

overrides (Hydra syntax, key=value; see configs/train_skill.yaml and its groups):
  trainer=ver|nover|sync            collection mode (configs/trainer/)
  trainer.num_envs=16               envs per rank (N; cpu profile 32, paper 16)
  trainer.envs_per_worker=8         envs stepped by one worker process (ceil(N / K) processes; cpu 16)
  trainer.num_steps=64              rollout length T (a rollout is T x N steps)
  trainer.total_steps=100000        env steps to train for
  trainer.seed=0                    run seed
  policy=cnn_small|resnet18_half    network (configs/policy/); resnet18_half is the paper's
  sim.camera.head.width=96 sim.camera.head.height=96   depth resolution
  skill.base_movement=false         the ablation without base movement (manipulation skills)
  dataset.path=eps.json.gz          train on these episodes (default: generate dataset.count)
  trainer.init_from=runs/pick_cpu   fine-tune: start a new run from that checkpoint's policy (fresh
                                    optimizer, schedule and counters; the reward or episodes may differ;
                                    the network must match, else a one-line error names the setting)
  trainer.init_optimizer=true       with init_from: Adam's moments come from that training checkpoint too
  skill.oracle_start.prob=0.3       curriculum: that share of resets hand over part-way through the skill's
                                    oracle (skills/oracle_start.py; place trains with 0.5 by default)
  trainer.init_from=runs/place_dagger     fine-tune a policy imitated from the oracle (imitate-skill --help)
  skill.oracle_start.max_prefix_steps=100   give up an oracle prefix that has not handed over by then
                                    (an ordinary start instead; for an oracle stuck without base movement)
  skill.episode_balance.mix=0.5     curriculum: half the draws weighted toward the receptacle kinds (surface,
                                    fridge shelf, drawer) the policy fails most (skills/episode_balance.py)
  skill.start_grasp.max_arm_offset=0.5 skill.start_grasp.max_tilt=0.6
                                    place: varied in-hand starts, as a real pick leaves them (training only)
  'skill.critic_obs_keys=[obj_start_sensor]'   sensors only the critic reads (an asymmetric actor-critic,
                                    feed-forward policies); the trained policy never asks for them
  sim.physics.robot_wall_contacts=true   the arm and base collide with walls (the default until
                                    2026-11-29, false since; configs/sim/default.yaml has the measurements)
  output_dir=runs/pick              where config.yaml, metrics.jsonl, tensorboard/, checkpoints/ go

examples:
  train-skill --skill pick                        # profile=auto
  train-skill --skill pick profile=cpu --out runs/pick_cpu
  train-skill --skill open_fridge profile=paper trainer.num_envs=8
  train-skill --skill place skill.base_movement=false --out runs/place_nobase
  train-skill --resume runs/pick_cpu              # continue from the newest checkpoint (same profile)
  train-skill --resume runs/pick_cpu --out runs/pick_cpu_6M trainer.total_steps=6000000
                                                  # train on for longer: the lr schedule stretches to 6M
  train-skill --skill pick --out runs/pick_ft trainer.init_from=checkpoints/pick_cpu_run trainer.total_steps=1000000

exit codes: 0 done, 2 bad input, 130 / 143 stopped by Ctrl-C / SIGTERM (a checkpoint was written first),
1 env failing repeatedly.
"""


def make_skill_env(env_idx: int, *, skill_cfg: Mapping[str, Any], sim_cfg: Mapping[str, Any] | None,
                   episodes_path: str, oracle_cfg: Mapping[str, Any] | None = None) -> Any:
    """Env factory for the trainer's workers: the skill's task on the dataset's episodes, with the
    oracle-start curriculum (`skills.oracle_start`) when `skill.oracle_start.prob` > 0 and the episodes
    drawn by failure per receptacle kind (`skills.episode_balance`) when `skill.episode_balance.mix` > 0."""
    from rearrange.env import RearrangeEnv

    env = RearrangeEnv(make_skill_task(skill_cfg), episodes_path, sim_cfg=sim_cfg)
    start = OracleStartConfig.from_node(skill_cfg.get("oracle_start"), str(skill_cfg["name"]))
    if start.prob > 0.0:
        from skills.oracles.factory import oracle_config

        env = OracleStartEnv(env, str(skill_cfg["name"]), start,
                             oracle_cfg if oracle_cfg is not None else oracle_config())
    balance = EpisodeBalanceConfig.from_node(skill_cfg.get("episode_balance"))
    return EpisodeBalanceEnv(env, balance) if balance.mix > 0.0 else env


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


def profile_names() -> list[str]:
    """The options of the `profile` config group (configs/profile/*.yaml), `auto` included."""
    folder = resources.files("configs") / "profile"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def resolve_profile(overrides: Sequence[str], cuda_available: bool | None = None) -> list[str]:
    """`overrides` with exactly one definite `profile=<name>`: `auto` (given or by default) becomes
    `paper` when CUDA is available, else `cpu`. ConfigError for an unknown profile."""
    given = [o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == "profile"]
    name = given[-1] if given else "auto"
    if name not in profile_names():
        raise ConfigError(unknown_choice("profile", name, profile_names()))
    if name == "auto":
        if cuda_available is None:
            import torch

            cuda_available = torch.cuda.is_available()
        name = "paper" if cuda_available else "cpu"
    return [*(o for o in overrides if o.split("=", 1)[0] != "profile"), f"profile={name}"]


def load_config(args: argparse.Namespace) -> tuple[DictConfig, str | None, str]:
    """(config, checkpoint to resume or None, run directory) of the command line; exits 2 if unusable."""
    from trainer.cli import load_run_config  # heavy imports after the argument checks

    overrides = list(args.overrides)
    if args.resume is None:
        try:
            overrides = [f"skill={args.skill}", *resolve_profile(overrides)]
        except ConfigError as exc:
            exit_with_error(str(exc))
    elif any(o.split("=", 1)[0] == "profile" for o in overrides):
        exit_with_error("profile cannot change when resuming a run (its values are in the checkpoint's config); "
                        "drop the profile= override")
    cfg, ckpt, output_dir = load_run_config("train_skill", overrides, args.resume, args.out)
    if args.resume is not None:
        if "skill" not in cfg:
            exit_with_error(f"checkpoint {ckpt} is not a train-skill checkpoint (its config has no skill)")
        if args.skill is not None and str(cfg.skill.name) != args.skill:
            exit_with_error(f"--skill {args.skill} does not match the resumed run's skill '{cfg.skill.name}'")
    return cfg, ckpt, output_dir


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.skill is not None and args.skill not in SKILL_NAMES:
        exit_with_error(unknown_choice("skill", args.skill, SKILL_NAMES))
    if args.resume is None and args.skill is None:
        exit_with_error(f"--skill is required (or --resume DIR); valid choices: {', '.join(SKILL_NAMES)}")
    cfg, ckpt, output_dir = load_config(args)
    cfg.output_dir = output_dir
    skill_cfg = to_plain(cfg.skill)
    try:
        skill = skill_def_from_config(skill_cfg)
        make_skill_task(skill_cfg)  # a skill config the task cannot use fails here, before any worker starts
        check_subset_settings(skill.action_subsets, cfg.sim)  # and so do the sim settings its actions read
        load_sim_config(to_plain(cfg.sim))  # and sim values the simulator rejects
        oracle_start = OracleStartConfig.from_node(skill_cfg.get("oracle_start"), skill.name)
        EpisodeBalanceConfig.from_node(skill_cfg.get("episode_balance"))
        plain = to_plain(cfg)
        initial_mean = skill.initial_action_mean(plain.get("skill_initial_action") or {})
        if initial_mean is not None:
            with open_dict(cfg):
                cfg.policy.action.initial_mean = initial_mean
        binary_dims = skill.action_dims(list(plain.get("skill_binary_actions") or []))
        if binary_dims:
            with open_dict(cfg):
                cfg.policy.action.binary_dims = binary_dims
        check_config(cfg)
        episodes_path = prepare_dataset(cfg, output_dir)
    except (KeyError, ValueError, ConfigError) as exc:  # EpisodeFileError is a ValueError
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if (isinstance(exc, EpisodeFileError) and ckpt is not None and cfg.dataset.path is not None
                and not Path(str(cfg.dataset.path)).exists()):  # only the episode file's own error gets the hint
            message += " (the resumed run's dataset.path: rebuild that file, or resume with dataset.path=FILE)"
        exit_with_error(message)

    critic_only = list(skill_cfg.get("critic_obs_keys") or [])
    print(f"training skill {skill.name} (profile {cfg.get('profile', 'unknown')}): obs {', '.join(skill.obs_keys)}"
          f"{' (critic only: ' + ', '.join(critic_only) + ')' if critic_only else ''}; "
          f"actions {'+'.join(skill.action_subsets)} ({skill.action_dim} dims); {skill.train_max_steps} steps "
          f"per episode -> {output_dir}", file=sys.stderr)

    from trainer.cli import run_training  # heavy imports after the argument checks

    # The learner's torch threads: trainer.torch_threads (default 1: on 2 cores the env workers
    # already occupy them; measured 8 ms per act with 1 thread, 300 ms with 2).
    oracle_cfg = None
    if oracle_start.prob > 0.0:
        from skills.oracles.factory import oracle_config

        oracle_cfg = oracle_config()
    env_fn = functools.partial(make_skill_env, skill_cfg=skill_cfg, sim_cfg=to_plain(cfg.sim),
                               episodes_path=str(Path(episodes_path).resolve()), oracle_cfg=oracle_cfg)
    run_training(cfg, env_fn, ckpt, output_dir, label=f"skill {cfg.skill.name}")


if __name__ == "__main__":
    main()
