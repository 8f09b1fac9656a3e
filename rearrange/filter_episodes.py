"""`python -m rearrange.filter_episodes`: the episodes of a file with a given kind of start.

`--receptacle NAME`: those whose first target object starts on NAME. Pick's misses gathered on one
receptacle (the fridge's bottom compartment, `fridge_shelf_0`), which the generator's shares cannot single
out (the fridge share draws both shelves). `--goal-receptacle NAME`: those whose first target is to be put
on NAME (place's misses gathered on the same compartment). `--min-detour M` (pick episodes): those whose base must drive
more than M metres round furniture to reach the object: the geodesic distance from the start to where the
object can be reached (the approach term's region, `configs/skill/pick.yaml` approach_reach, through a
container's opening) minus the straight-line distance to that region. Several given: all must hold. Use the
result to train on (with `python -m rearrange.mix_episodes` to weight it against the rest) or to evaluate
on. Ids and the header's kind and split are kept; written atomically.

    make-episodes --kind pick --split train --count 500 --seed 5 --out runs/pick_fridge.json.gz \\
        skill_targets.shares.pick.fridge=1.0 skill_targets.shares.pick.surface=0.0 skill_targets.shares.pick.drawer=0.0
    python -m rearrange.filter_episodes --receptacle fridge_shelf_0 --out runs/pick_bottom.json.gz runs/pick_fridge.json.gz
    python -m rearrange.filter_episodes --goal-receptacle fridge_shelf_0 --out runs/place_bottom.json.gz runs/place_fridge.json.gz
    python -m rearrange.filter_episodes --min-detour 0.3 --out runs/pick_round.json.gz runs/pick_surface.json.gz
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from configs.ranges import check_range
from rearrange.episodes import Episode, EpisodeFileError, load_dataset, out_path_error, save_episodes


def start_receptacle(episode: Episode) -> str:
    """The receptacle the episode's first target object starts on ('' without a target)."""
    if not episode.targets:
        return ""
    return episode.object_spec(episode.targets[0].object).receptacle


def goal_receptacle(episode: Episode) -> str:
    """The receptacle the episode's first target object is to be put on ('' without a target or a goal)."""
    if not episode.targets:
        return ""
    return episode.targets[0].goal_receptacle or ""


def keep_receptacles(episodes: Sequence[Episode], receptacles: Sequence[str], goal: bool = False) -> list[Episode]:
    """The episodes whose first target starts on (`goal`: is to be put on) one of `receptacles`; ValueError
    (one line) naming the receptacles the episodes do use when a name matches none of them."""
    of, verb = (goal_receptacle, "goes to") if goal else (start_receptacle, "starts on")
    present = sorted({of(e) for e in episodes} - {""})
    unknown = [r for r in receptacles if r not in present]
    if unknown:
        raise ValueError(f"no episode's target {verb} {', '.join(unknown)}; valid choices in this file: "
                         f"{', '.join(present) or 'none'}")
    return [e for e in episodes if of(e) in receptacles]


def pick_detours(episodes: Sequence[Episode], progress: Callable[[int], None] | None = None) -> list[float]:
    """For each pick episode, how far (m) its base must drive round furniture beyond the straight line to
    the region from which the object can be reached (0 when the straight line is free or the base starts
    inside it; inf when the region cannot be reached). ValueError on episodes of another kind."""
    kinds = sorted({e.kind for e in episodes} - {"pick"})
    if kinds:
        raise ValueError(f"--min-detour measures pick episodes; this file holds {', '.join(kinds)} episodes")
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.skill_tasks import load_skill_config, make_skill_task

    cfg = load_skill_config("pick")
    reach = float(cfg["reward"]["approach_reach"])
    env = RearrangeEnv(make_skill_task(cfg), list(episodes), episode_order="cycle")
    out = []
    try:
        for i in range(len(episodes)):
            env.reset(options={"episode_index": i})
            sim, task = env.sim, env.task
            geodesic = task.approach.distance(sim)
            straight = float(np.linalg.norm(np.asarray(sim.object_pos(task.target))[:2] - np.asarray(sim.base_xy)))
            out.append(max(geodesic - max(straight - reach, 0.0), 0.0) if math.isfinite(geodesic) else math.inf)
            if progress is not None:
                progress(1)
    finally:
        env.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from configs.compose import exit_with_error

    p = argparse.ArgumentParser(prog="python -m rearrange.filter_episodes",
                                description="Keep the episodes whose first target object starts on (or is to be put "
                                            "on) the given receptacles (e.g. fridge_shelf_0, the fridge's bottom "
                                            "compartment), and/or the pick starts whose base must drive round "
                                            "furniture.")
    p.add_argument("--receptacle", action="append",
                   help="receptacle name as in the episodes (repeat for several)")
    p.add_argument("--goal-receptacle", action="append",
                   help="keep the episodes whose target is to be put on this receptacle (repeat for several)")
    p.add_argument("--min-detour", type=float, default=None, metavar="M",
                   help="pick episodes only: keep those whose base must drive more than M m round furniture")
    p.add_argument("--out", required=True, help="the filtered dataset (.json or .json.gz), written atomically")
    p.add_argument("source", help="episode file (.json or .json.gz)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar (--min-detour resets every episode)")
    args = p.parse_args(argv)
    out = Path(args.out)
    if (problem := out_path_error(out)) is not None:
        exit_with_error(problem)
    if args.receptacle is None and args.goal_receptacle is None and args.min_detour is None:
        exit_with_error("give --receptacle NAME, --goal-receptacle NAME, --min-detour M, or several")
    if args.min_detour is not None:
        try:
            check_range("--min-detour", args.min_detour, unit="m")
        except ValueError as exc:
            exit_with_error(str(exc))
    try:
        data = load_dataset(args.source)
        episodes = data["episodes"]
        if args.receptacle is not None:
            episodes = keep_receptacles(episodes, args.receptacle)
        if args.goal_receptacle is not None:
            episodes = keep_receptacles(episodes, args.goal_receptacle, goal=True)
        if args.min_detour is not None and episodes:
            from tqdm import tqdm

            with tqdm(total=len(episodes), desc="detours", unit="ep", disable=args.no_progress) as bar:
                detours = pick_detours(episodes, bar.update)
            episodes = [e for e, d in zip(episodes, detours, strict=True) if d > args.min_detour]
    except (EpisodeFileError, ValueError) as exc:
        exit_with_error(str(exc))
    if not episodes:
        exit_with_error("no episode passes the filter; nothing written")
    save_episodes(out, episodes, kind=data["kind"], split=data["split"], seed=data["seed"])
    what = [f"target on {', '.join(args.receptacle)}"] if args.receptacle else []
    what += [f"goal on {', '.join(args.goal_receptacle)}"] if args.goal_receptacle else []
    what += [f"detour > {args.min_detour} m"] if args.min_detour is not None else []
    print(f"{len(episodes)} of {len(data['episodes'])} episodes ({'; '.join(what)}) -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
