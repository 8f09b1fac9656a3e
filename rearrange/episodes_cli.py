"""`make-episodes`: generate a skill or HAB scenario episode dataset and write it atomically.

    make-episodes --kind pick --split train --count 1000 --seed 0 --out data/pick_train.json.gz
    make-episodes --kind nav --split train --count 400 --out nav.json.gz nav.start_at_receptacle_prob=0.5
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rearrange.episodes import EPISODE_KINDS, SPLITS, out_path_error, save_episodes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="make-episodes",
        description="Generate rearrangement episodes (skills and HAB scenarios) on the train or val "
                    "layouts; thresholds in configs/episodes.yaml. Same arguments, same file.",
    )
    parser.add_argument("--kind", required=True, help=f"episode kind: {', '.join(EPISODE_KINDS)}")
    parser.add_argument("--split", required=True, help=f"layout split: {', '.join(SPLITS)}")
    parser.add_argument("--count", type=int, required=True, help="number of episodes")
    parser.add_argument("--seed", type=int, default=0, help="dataset seed (default 0)")
    parser.add_argument("--out", required=True, help="output file (.json or .json.gz), written atomically")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="override a value of configs/episodes.yaml, e.g. nav.start_at_receptacle_prob=0.5")
    return parser


def generator_config(overrides: Sequence[str]) -> dict:
    """configs/episodes.yaml composed with Hydra `key=value` overrides of existing keys (ConfigError, one
    line, for an unknown key or an override that does not parse)."""
    from configs.compose import compose, to_plain

    return to_plain(compose("episodes", overrides))


def main(argv: Sequence[str] | None = None) -> int:
    from configs.compose import ConfigError, exit_with_error, require_choice

    args = build_parser().parse_args(argv)
    require_choice("episode kind", args.kind, EPISODE_KINDS)
    require_choice("split", args.split, SPLITS)
    if args.count < 1:
        exit_with_error(f"--count must be >= 1, got {args.count}")
    if (problem := out_path_error(args.out)) is not None:
        exit_with_error(problem)

    from rearrange.generate import GenerationError, check_generator_config, generate_episodes

    try:
        cfg = generator_config(args.overrides)
        check_generator_config(args.kind, cfg)
    except (ConfigError, ValueError) as exc:
        exit_with_error(str(exc))

    from tqdm import tqdm

    with tqdm(total=args.count, desc=f"{args.kind}/{args.split}", unit="ep", disable=args.no_progress,
              file=sys.stderr) as bar:
        try:
            episodes = generate_episodes(args.kind, args.split, args.count, args.seed, cfg=cfg,
                                         progress=bar.update)
        except GenerationError as exc:
            exit_with_error(str(exc), code=1)
    try:
        save_episodes(args.out, episodes, kind=args.kind, split=args.split, seed=args.seed)
    except OSError as exc:
        exit_with_error(f"cannot write {args.out}: {exc.strerror or exc}", code=1)
    print(f"wrote {len(episodes)} {args.kind} episodes ({args.split}) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
