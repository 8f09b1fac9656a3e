"""`python -m rearrange.mix_episodes`: one skill dataset from several episode files, each with a weight.

Training envs draw episodes uniformly from their dataset, so a file given `copies` times is drawn that
many times as often. Every input must hold episodes of one kind (the same for all); episode ids are
kept, with a `_cN` suffix on the copies after the first so ids stay unique. Written atomically.

    python -m rearrange.mix_episodes --out runs/pick_mix.json.gz \\
        checkpoints/pick_cpu_run/episodes/pick_train_mix_400.json.gz runs/starts/pick_tidy_house.json.gz:2
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from rearrange.episodes import Episode, EpisodeFileError, load_episodes, out_path_error, save_episodes


def parse_source(text: str) -> tuple[str, int]:
    """`PATH` or `PATH:COPIES` -> (path, copies >= 1); ValueError (one line) otherwise."""
    path, sep, copies = text.rpartition(":")
    if not sep or not copies.isdigit():
        return text, 1
    if int(copies) < 1:
        raise ValueError(f"{text}: copies must be >= 1, got {copies}")
    return path, int(copies)


def mix(sources: Sequence[tuple[Sequence[Episode], int]]) -> list[Episode]:
    """The episodes of every source, `copies` times each (ids of the extra copies suffixed `_cN`)."""
    kinds = {e.kind for episodes, _ in sources for e in episodes}
    if len(kinds) > 1:
        raise ValueError(f"the files hold episodes of several kinds ({', '.join(sorted(kinds))}); mix one kind")
    out: list[Episode] = []
    for episodes, copies in sources:
        for c in range(copies):
            out.extend(e if c == 0 else dataclasses.replace(e, episode_id=f"{e.episode_id}_c{c}") for e in episodes)
    ids = [e.episode_id for e in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"episode id {dup} occurs in more than one file; mixed datasets need unique ids")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from configs.compose import exit_with_error

    p = argparse.ArgumentParser(prog="python -m rearrange.mix_episodes",
                                description="Concatenate episode files of one kind, each PATH[:COPIES] times.")
    p.add_argument("--out", required=True, help="the mixed dataset (.json or .json.gz), written atomically")
    p.add_argument("--seed", type=int, default=None, help="dataset seed recorded in the header")
    p.add_argument("sources", nargs="+", help="episode files, each PATH or PATH:COPIES (default 1 copy)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if (problem := out_path_error(out)) is not None:
        exit_with_error(problem)
    try:
        sources = [(load_episodes(path), copies) for path, copies in map(parse_source, args.sources)]
        episodes = mix(sources)
    except (EpisodeFileError, ValueError) as exc:
        exit_with_error(str(exc))
    save_episodes(out, episodes, seed=args.seed)
    print(f"{len(episodes)} {episodes[0].kind} episodes from {len(sources)} files -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
