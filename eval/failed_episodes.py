"""`python -m eval.failed_episodes`: the train episodes a skill policy fails, for a fine-tune on them.

Reads `eval-skill --out` result files (each names the episode file it ran on), and writes the episodes
the policy failed, plus `--successes` times as many of the ones it solved (drawn with `--seed`, so the
fine-tune keeps practising what it already does), as one dataset for `train-skill dataset.path=...`.
Hard-example mining: training envs draw their episodes uniformly, and a policy whose training success
has plateaued spends most of its samples on episodes it already solves.

    eval-skill --skill pick --episodes-file runs/pick_train_1200.json.gz --episodes 1200 --out runs/e.json
    python -m eval.failed_episodes runs/e.json --successes 0.5 --out runs/pick_failed.json.gz

Only train-split results are accepted: choosing training episodes by val results would train on val.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rearrange.episodes import Episode, EpisodeFileError, load_dataset, out_path_error, save_episodes


def split_by_outcome(result: dict, episodes: Sequence[Episode]) -> tuple[list[Episode], list[Episode]]:
    """(failed, solved) episodes of one eval-skill result, matched by episode id; ValueError (one line)
    when the result lists an id the episode file lacks."""
    by_id = {e.episode_id: e for e in episodes}
    failed, solved = [], []
    for row in result["episodes"]:
        episode = by_id.get(row["episode_id"])
        if episode is None:
            raise ValueError(f"episode {row['episode_id']} of the result is not in {result['episodes_file']}")
        (solved if row["success"] else failed).append(episode)
    return failed, solved


def train_episode_file(result: dict) -> dict:
    """The header and episodes of the file a result ran on; ValueError (one line) unless it holds train episodes."""
    if not result.get("episodes_file"):
        raise ValueError("a result without an episode file (eval-skill --episodes-file): nothing to select from")
    header = load_dataset(result["episodes_file"])
    if header.get("split") != "train":
        raise ValueError(f"{result['episodes_file']} holds {header.get('split')!r}-split episodes; only "
                         "train-split results may choose training episodes")
    return header


def select(results: Sequence[dict], headers: Sequence[dict], successes: float,
           seed: int) -> tuple[list[Episode], list[Episode]]:
    """(every failed episode of `results`, round(successes x that many) solved ones drawn without replacement,
    all of them if there are fewer); `headers[i]` is result i's episode file (`train_episode_file`)."""
    failed: list[Episode] = []
    solved: list[Episode] = []
    for result, header in zip(results, headers, strict=True):
        f, s = split_by_outcome(result, header["episodes"])
        failed += f
        solved += s
    want = min(len(solved), int(round(successes * len(failed))))
    picked = np.random.default_rng(seed).choice(len(solved), size=want, replace=False) if want else []
    return failed, [solved[i] for i in sorted(picked)]


def main(argv: Sequence[str] | None = None) -> int:
    from configs.compose import exit_with_error

    p = argparse.ArgumentParser(prog="python -m eval.failed_episodes",
                                description="The train episodes eval-skill results failed (plus some solved ones), "
                                            "as one dataset.")
    p.add_argument("results", nargs="+", help="eval-skill --out JSON files (train split)")
    p.add_argument("--out", required=True, help="the dataset to write (.json or .json.gz), atomically")
    p.add_argument("--successes", type=float, default=0.5,
                   help="solved episodes to add, per failed one (default 0.5; 0: failures only)")
    p.add_argument("--seed", type=int, default=0, help="draws the solved episodes (default 0)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if (problem := out_path_error(out)) is not None:
        exit_with_error(problem)
    if not args.successes >= 0:
        exit_with_error(f"--successes must be >= 0, got {args.successes}")
    try:
        results = [json.loads(Path(r).read_text()) for r in args.results]
        headers = [train_episode_file(r) for r in results]
        failed, solved = select(results, headers, args.successes, args.seed)
        episodes = failed + solved
        kinds = {e.kind for e in episodes}
        if len(kinds) != 1:
            raise ValueError(f"the results hold episodes of {len(kinds)} kinds ({', '.join(sorted(kinds))}); need one")
    except (OSError, KeyError, ValueError, EpisodeFileError) as exc:
        exit_with_error(f"{type(exc).__name__}: {exc}" if isinstance(exc, KeyError) else str(exc))
    save_episodes(out, episodes, kind=kinds.pop(), split="train", seed=headers[0].get("seed"))
    print(f"wrote {len(episodes)} episodes ({len(failed)} failed, {len(solved)} solved) to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
