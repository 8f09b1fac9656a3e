"""`eval-skill`: evaluate one skill (a trained checkpoint or its oracle) on episodes of its skill task.

    eval-skill --skill pick --episodes 100                  # the shipped checkpoints/pick.pt
    eval-skill --skill pick --oracle --episodes 100 --split val
    eval-skill --skill pick --checkpoint runs/skill/pick --episodes 100 --video out/   # newest ckpt_<step>.pt

Runs N episodes of the skill's Gymnasium env (`rearrange/<Skill>-v0`, episodes generated from the
split unless `--episodes-file` is given), and writes a JSON results file (atomically): the success
rate with a 95% bootstrap interval, every per-step measure's final value averaged over episodes
(also with intervals), and one row per episode. `--video DIR` writes one MP4 per episode: the
third-person RGB view next to the head depth, with skill, step, reward and success written below;
the file name carries the episode id and success. `--workers N` runs the episodes in N processes, each
with its own env and policy; every episode is a fresh reset of its own start state and its sampled actions
are seeded by (seed, episode index), so the rows are the same as with one process. A checkpoint is evaluated in the skill env it was
trained in (its config's skill and sim nodes: base movement, camera backend and size). Bad inputs
(unknown skill, missing or corrupt checkpoint or episode file, a checkpoint of another skill, no shipped
checkpoint for the skill, observations its env cannot give) exit with a one-line error and code 2.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from configs.compose import ConfigError, compose, exit_with_error, require_choice, to_plain
from eval.eval_config import check_eval_config
from eval.parallel import check_workers, run_indexed

SKILLS = ("pick", "place", "nav", "open_fridge", "close_fridge", "open_cab", "close_cab")
# the skills whose start arm eval.start_grasp.max_arm_offset may turn off rest (skill.start_arm)
ARM_START_SKILLS = ("pick", "nav")


# skill.reward keys that end a training episode early where habitat's task runs on; eval-skill sets them false
TRAINING_ONLY_ENDS: dict[str, tuple[str, ...]] = {
    "pick": ("knock_should_end", "target_push_should_end"),
    "place": ("displaced_should_end", "shut_should_end"),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="eval-skill",
        description="Evaluate a skill (trained checkpoint or oracle controller) on its skill task: success "
                    "rate with a 95% bootstrap interval, per-measure means, optional MP4 videos. Without "
                    "--checkpoint or --oracle, the checkpoint shipped in the repository (checkpoints/<skill>.pt).")
    p.add_argument("--skill", required=True, help=f"skill to evaluate, one of: {', '.join(SKILLS)}")
    agent = p.add_mutually_exclusive_group()
    agent.add_argument("--checkpoint", metavar="PATH",
                       help="a train-skill checkpoint (.pt), or a train-skill run folder for its newest "
                            "checkpoints/ckpt_<step>.pt (default: the shipped checkpoints/<skill>.pt)")
    agent.add_argument("--oracle", action="store_true", help="use the skill's scripted oracle controller")
    p.add_argument("--episodes", type=int, default=None, metavar="N", help="number of episodes (default 100)")
    p.add_argument("--split", default=None, help="episode split, train or val (default val)")
    p.add_argument("--seed", type=int, default=None, metavar="K", help="episode generation and env seed (default 0)")
    p.add_argument("--episodes-file", default=None, metavar="PATH",
                   help="evaluate on this .json(.gz) dataset instead of generating episodes")
    p.add_argument("--video", default=None, metavar="DIR", help="write one MP4 per episode into DIR")
    p.add_argument("--out", default=None, metavar="PATH",
                   help="results JSON (default runs/eval_skill/<skill>_<checkpoint|oracle>.json)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="run the episodes in N processes, same results as one (default 1; eval.workers)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("overrides", nargs="*",
                   help="config overrides, e.g. eval.bootstrap_samples=500, eval.deterministic=false, or for place "
                        "eval.start_grasp.max_arm_offset=0.5 (varied in-hand starts; configs/eval_skill.yaml)")
    return p


# ----------------------------------------------------------------------------- agents


class OracleAgent:
    """The skill's oracle controller, acting on the env's simulator (privileged state)."""

    name = "oracle"

    def __init__(self, skill: str) -> None:
        from skills.oracles.factory import make_oracle

        self.oracle = make_oracle(skill)

    def reset(self, env: Any, obs: Mapping[str, np.ndarray]) -> None:
        self.oracle.start(env.sim, env.task.sensor_target)

    def act(self, env: Any, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        from skills.oracles.base import select_subset

        return select_subset(env.task.action_subsets, self.oracle.act(env.sim))


class PolicyAgent:
    """A trained skill policy (`skills.policy.SkillPolicy`) acting on observations."""

    name = "checkpoint"

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def reset(self, env: Any, obs: Mapping[str, np.ndarray]) -> None:
        self.policy.reset()

    def act(self, env: Any, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.policy.act(obs)


# ----------------------------------------------------------------------------- episodes


# why an episode that did not succeed ended, read from its last step's info (first match wins)
FAILURE_FLAGS = ("force_terminate", "wrong_pick", "wrong_grasp", "wrong_drop", "dropped")


def end_reason(success: bool, terminated: bool, info: Mapping[str, Any]) -> str:
    """'success', the task's failure flag that ended the episode (`FAILURE_FLAGS`), 'timeout' (the step
    limit), or 'ended' (terminated for another reason)."""
    if success:
        return "success"
    if terminated:
        return next((flag for flag in FAILURE_FLAGS if float(info.get(flag, 0.0)) > 0.5), "ended")
    return "timeout"


def receptacle_group(env: Any) -> str | None:
    """Where the env's current episode's skill acts (`rearrange.generate.episode_receptacle_kind`)."""
    from rearrange.generate import episode_receptacle_kind

    return episode_receptacle_kind(env.current_episode, env.sim.layout)


def run_episode(env: Any, agent: Any, index: int, frame_sink: Callable[[np.ndarray], None] | None,
                skill: str, video_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """One episode (the dataset's `index`-th); returns its id, success, why it ended, where its target
    is, return, steps, final measures, how many objects fell to the floor (`eval/floor_watch.py`: the
    target or any other object, knocked off or let go) and whether the held object pushed its goal's container
    toward closed (place's `shut` flag, raised on the step it happens)."""
    from eval.floor_watch import FloorWatch

    obs, info = env.reset(options={"episode_index": index})
    floor = FloorWatch(env.sim.object_names)
    agent.reset(env, obs)
    episode_id = env.current_episode.episode_id
    group = receptacle_group(env)
    total, steps, success, shut = 0.0, 0, False, False
    every = max(1, int(video_cfg.get("every", 1)))

    def frame(reward: float) -> None:
        if frame_sink is None:
            return
        from eval.video import compose_frame

        rgb = env.sim.render_third_rgb(int(video_cfg["width"]), int(video_cfg["height"]),
                                       env.target_marks(with_handle=True))
        depth = obs["head_depth"] if "head_depth" in obs else env.sim.render_head_depth()
        lines = [f"skill: {skill}   episode: {episode_id}",
                 f"step: {steps}   reward: {reward:+.3f}   return: {total:+.2f}   success: {int(success)}"]
        frame_sink(compose_frame(rgb, depth, lines))

    frame(0.0)
    while True:
        action = agent.act(env, obs)
        obs, reward, terminated, truncated, info = env.step(action)
        floor.step(env.sim, skill)
        total += float(reward)
        steps += 1
        success = bool(info.get("success", 0.0) > 0.5)
        shut |= bool(info.get("shut", 0.0) > 0.5)
        done = terminated or truncated
        if steps % every == 0 or done:
            frame(float(reward))
        if done:
            break
    measures = {k: float(v) for k, v in info.items() if isinstance(v, (int, float)) and math.isfinite(float(v))}
    measures.update({"return": total, "steps": float(steps)})
    return {"episode_id": str(episode_id), "success": success, "end": end_reason(success, terminated, info),
            "receptacle": group, "measures": measures, "floor_drops": len(floor.drops), "shut": shut}


# per skill, the distance measure that tells how far a timed-out episode got, with the object held and without
# (pick: the gripper to the object, then held, to its resting pose; place: the object to its goal either way)
TIMEOUT_DISTANCES = {"pick": ("ee_to_rest_dist", "ee_to_object_dist"),
                     "place": ("object_to_goal_dist", "object_to_goal_dist")}


def timeout_breakdown(rows: Sequence[Mapping[str, Any]], skill: str) -> dict[str, Any]:
    """The timed-out episodes split by whether the object was held at the end: per group its count, how many
    ended with the base's last motion stalled against furniture or a wall (`base_collided`, the pattern of a
    base that cannot get round an obstacle), and (pick, place) the median and range of `TIMEOUT_DISTANCES`'
    measure. Empty when no episode timed out."""
    held_key, free_key = TIMEOUT_DISTANCES.get(skill, (None, None))
    groups: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["end"] != "timeout":
            continue
        m = r["measures"]
        held = float(m.get("is_holding", 0.0)) > 0.5
        key = held_key if held else free_key
        g = groups.setdefault("holding" if held else "not holding",
                              {"episodes": 0, "base_blocked_at_end": 0, "measure": key, "dists": []})
        g["episodes"] += 1
        g["base_blocked_at_end"] += int(float(m.get("base_collided", 0.0)) > 0.5)
        if key in m:
            g["dists"].append(float(m[key]))
    out = {}
    for name, g in sorted(groups.items()):
        dists = g.pop("dists")
        if not dists:
            del g["measure"]
        else:
            g.update(median=float(np.median(dists)), min=min(dists), max=max(dists))
        out[name] = g
    return out


def timeout_line(timeouts: Mapping[str, Mapping[str, Any]]) -> str:
    """One line for the console, e.g. `timeouts: holding 3 (object_to_goal_dist median 0.46 m, 0.21-1.29;
    base blocked at the end in 3), not holding 2 (...)`."""
    parts = []
    for name, g in timeouts.items():
        detail = [f"{g['measure']} median {g['median']:.2f} m, {g['min']:.2f}-{g['max']:.2f}"] if "measure" in g else []
        detail.append(f"base blocked at the end in {g['base_blocked_at_end']}")
        parts.append(f"{name} {g['episodes']} ({'; '.join(detail)})")
    return "timeouts: " + ", ".join(parts)


def breakdown(rows: Sequence[Mapping[str, Any]], skill: str = "") -> dict[str, Any]:
    """Counts of how episodes ended, successes / episodes per target receptacle group, the objects that
    fell to the floor (in how many episodes), and the timeouts by what was held (`timeout_breakdown`)."""
    ends: dict[str, int] = {}
    groups: dict[str, list[int]] = {}
    for r in rows:
        ends[r["end"]] = ends.get(r["end"], 0) + 1
        if r.get("receptacle") is not None:
            g = groups.setdefault(r["receptacle"], [0, 0])
            g[0] += int(r["success"])
            g[1] += 1
    drops = [int(r.get("floor_drops", 0)) for r in rows]
    return {"floor_drops": {"objects": sum(drops), "episodes": sum(d > 0 for d in drops)},
            "goal_container_pushed": sum(bool(r.get("shut")) for r in rows),
            "ends": dict(sorted(ends.items(), key=lambda kv: -kv[1])),
            "by_receptacle": {k: {"success": v[0], "episodes": v[1]} for k, v in sorted(groups.items())},
            "timeouts": timeout_breakdown(rows, skill)}


def summarize(rows: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Success rate and per-measure means with bootstrap intervals (eval.metrics)."""
    from eval.metrics import EpisodeRecord, aggregate

    records = [EpisodeRecord(episode_id=r["episode_id"], success=bool(r["success"]), measures=dict(r["measures"]))
               for r in rows]
    agg = aggregate(records, stage_names=[], n_resamples=int(cfg["bootstrap_samples"]),
                    confidence=float(cfg["ci"]), seed=0)
    return {"num_episodes": agg["num_episodes"], "confidence": agg["confidence"],
            "n_resamples": agg["n_resamples"], "success": agg["success"], "measures": agg["measures"]}


# ----------------------------------------------------------------------------- main


def _load_agent(checkpoint: str | None, skill: str, deterministic: bool) -> Any:
    """The oracle (`checkpoint` None) or the checkpoint's policy; a bad checkpoint is a one-line error."""
    if checkpoint is None:
        return OracleAgent(skill)
    from skills.policy import SkillPolicy
    from trainer.checkpoint import CheckpointError

    try:
        policy = SkillPolicy.from_checkpoint(checkpoint, deterministic=deterministic)
    except CheckpointError as exc:
        exit_with_error(str(exc).splitlines()[0])
    except Exception as exc:  # a file torch cannot read is a bad input too, not a crash
        exit_with_error(f"cannot load checkpoint {checkpoint}: {type(exc).__name__}: "
                        f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
    if policy.skill.name != skill:
        exit_with_error(f"checkpoint {checkpoint} is a '{policy.skill.name}' skill, not '{skill}'")
    return PolicyAgent(policy)


def _checkpoint_path(skill: str, given: str | None) -> Path:
    """The checkpoint to evaluate: `--checkpoint` (a file, or a run folder's newest checkpoint), else the
    shipped `checkpoints/<skill>.pt`; a one-line error (exit 2) if there is none."""
    from eval.skill_library import SHIPPED_CHECKPOINTS, checkpoint_at, shipped_checkpoint

    if given is not None:
        found = checkpoint_at(given)
        if found is None and Path(given).is_dir():
            exit_with_error(f"checkpoint not found: run folder {given} holds no ckpt_<step>.pt "
                            "(nor does its checkpoints/)")
        if found is None:
            exit_with_error(f"checkpoint not found: {given}")
        return found
    found = shipped_checkpoint(skill)
    if found is None:
        exit_with_error(f"no checkpoint for skill '{skill}': none shipped (no {SHIPPED_CHECKPOINTS / f'{skill}.pt'}); "
                        "pass --checkpoint PATH (a .pt file or a train-skill run folder) or --oracle")
    return found


def _episodes(args: argparse.Namespace, skill: str, split: str, count: int, seed: int) -> tuple[list, str]:
    """The episodes to run and their split (an episode file's own, from its header)."""
    from rearrange.episodes import SPLITS, EpisodeFileError, load_episodes_of_kind

    if args.episodes_file is not None:
        try:
            episodes, file_split = load_episodes_of_kind(args.episodes_file, skill)
        except EpisodeFileError as exc:
            exit_with_error(str(exc).splitlines()[0])
        if not episodes:
            exit_with_error(f"episode file {args.episodes_file} holds no episodes")
        return episodes[:count], file_split or split
    require_choice("split", split, SPLITS)
    from rearrange.generate import generate_episodes

    return generate_episodes(skill, split, count, seed), split


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    require_choice("skill", args.skill, SKILLS)
    if not args.oracle:
        args.checkpoint = str(_checkpoint_path(args.skill, args.checkpoint))
    try:
        cfg = to_plain(compose("eval_skill", args.overrides))
        check_eval_config(cfg)
    except ConfigError as exc:
        exit_with_error(str(exc))
    ev = cfg["eval"]
    split = args.split if args.split is not None else str(ev["split"])
    count = args.episodes if args.episodes is not None else int(ev["episodes"])
    seed = args.seed if args.seed is not None else int(ev["seed"])
    if count < 1:
        exit_with_error(f"--episodes must be >= 1, got {count}")
    workers = check_workers(args.workers if args.workers is not None else ev.get("workers", 1))
    if args.episodes_file is None and ev["episodes_file"] is not None:
        args.episodes_file = ev["episodes_file"]

    start_grasp = _start_grasp(args.skill, ev.get("start_grasp"))
    from skills.policy import set_inference_threads

    set_inference_threads(ev["torch_threads"])  # also while loading (the processes set their own)
    checkpoint = None if args.oracle else args.checkpoint
    agent = _load_agent(checkpoint, args.skill, bool(ev["deterministic"]))
    episodes, split = _episodes(args, args.skill, split, count, seed)
    env = _make_env(agent, args.skill, episodes, args.checkpoint, start_grasp)  # checks the observations

    out = Path(args.out or ev["out"] or f"runs/eval_skill/{args.skill}_{agent.name}.json")
    video_dir = Path(args.video) if args.video else None
    if video_dir is not None:
        video_dir.mkdir(parents=True, exist_ok=True)

    from tqdm import tqdm

    job = EpisodeJob(skill=args.skill, checkpoint=checkpoint, deterministic=bool(ev["deterministic"]),
                     episodes=episodes, start_grasp=start_grasp, seed=seed, torch_threads=int(ev["torch_threads"]),
                     video_dir=video_dir, video_cfg=dict(cfg["video"]))
    rows_by_index: dict[int, dict[str, Any]] = {}
    bar = tqdm(total=len(episodes), desc=f"eval-skill {args.skill}", unit="ep", disable=args.no_progress,
               file=sys.stderr)
    env.reset(seed=seed)
    try:
        for i, row in run_indexed(range(len(episodes)), _indexed_row, (job, env, agent),
                                  min(workers, len(episodes)), _set_up_process, (job,)):
            rows_by_index[i] = row
            bar.update(1)
            bar.set_postfix(success=f"{np.mean([r['success'] for r in rows_by_index.values()]):.2f}")
    finally:
        bar.close()
        env.close()
    rows = [rows_by_index[i] for i in range(len(episodes))]

    from eval.metrics import write_json_atomic

    summary = summarize(rows, ev)
    parts = breakdown(rows, args.skill)
    result = {"skill": args.skill, "agent": agent.name, "checkpoint": args.checkpoint, "split": split,
              "seed": seed, "episodes_file": args.episodes_file, **summary, **parts, "episodes": rows}
    write_json_atomic(out, result)
    s = summary["success"]
    print(f"{args.skill} ({agent.name}): success {s['mean']:.3f} "
          f"[{s['ci_low']:.3f}, {s['ci_high']:.3f}] over {s['n']} episodes -> {out}")
    print("  ended: " + ", ".join(f"{k} {v}" for k, v in parts["ends"].items()))
    if parts["floor_drops"]["objects"]:
        print(f"  objects fallen to the floor: {parts['floor_drops']['objects']} in {parts['floor_drops']['episodes']} "
              "episodes")
    if parts["goal_container_pushed"]:
        print(f"  goal container pushed toward closed while held: {parts['goal_container_pushed']} episodes")
    if parts["by_receptacle"]:
        print("  by target receptacle: " + ", ".join(
            f"{k} {v['success']}/{v['episodes']}" for k, v in parts["by_receptacle"].items()))
    if parts["timeouts"]:
        print("  " + timeout_line(parts["timeouts"]))


@dataclass
class EpisodeJob:
    """Everything an evaluation process needs to run any episode of the evaluation on its own."""

    skill: str
    checkpoint: str | None  # None: the oracle
    deterministic: bool
    episodes: list
    start_grasp: dict[str, float] | None
    seed: int
    torch_threads: int
    video_dir: Path | None
    video_cfg: dict[str, Any]


def _run_indexed(job: EpisodeJob, env: Any, agent: Any, index: int) -> dict[str, Any]:
    """Episode `index` with its per-episode action seed; with a video dir, its MP4 beside the others."""
    from skills.policy import seed_action_sampling

    seed_action_sampling(job.seed, index)
    if job.video_dir is None:
        return run_episode(env, agent, index, None, job.skill, job.video_cfg)
    from eval.video import VideoWriter

    tmp_name = f"{job.skill}_ep{index:04d}_inprogress.mp4"
    with VideoWriter(job.video_dir / tmp_name) as writer:
        row = run_episode(env, agent, index, writer.append, job.skill, job.video_cfg)
    final = job.video_dir / _video_name(job.skill, row["episode_id"], row["success"])
    os.replace(job.video_dir / tmp_name, final)
    row["video"] = str(final)
    return row


def _set_up_process(job: EpisodeJob) -> tuple[EpisodeJob, Any, Any]:
    """An evaluation process's own (job, env, agent)."""
    from skills.policy import set_inference_threads

    set_inference_threads(job.torch_threads)
    agent = _load_agent(job.checkpoint, job.skill, job.deterministic)
    env = _make_env(agent, job.skill, job.episodes, job.checkpoint, job.start_grasp)
    env.reset(seed=job.seed)
    return job, env, agent


def _indexed_row(context: tuple[EpisodeJob, Any, Any], index: int) -> dict[str, Any]:
    return _run_indexed(*context, index)


def _start_grasp(skill: str, node: Mapping[str, Any] | None) -> dict[str, float] | None:
    """The `eval.start_grasp` values (None: every one 0, the canonical grasp), validated before any work."""
    from rearrange.grasp_pose import GraspNoise

    given = {k: float(v) for k, v in (node or {}).items() if v is not None}
    if not any(given.values()):
        return None
    if skill in ARM_START_SKILLS and any(v for k, v in given.items() if k != "max_arm_offset"):
        exit_with_error(f"eval.start_grasp: for {skill} only max_arm_offset applies (its arm off rest, skill.start_arm); "
                        "max_tilt and max_lateral apply to place only (the skill that starts holding)")
    if skill != "place" and skill not in ARM_START_SKILLS:
        exit_with_error(f"eval.start_grasp applies to place only (the skill that starts holding), not {skill}; "
                        "max_arm_offset also to pick and nav")
    try:
        GraspNoise.from_node(given)
    except ValueError as exc:
        exit_with_error(str(exc).replace("skill.start_grasp", "eval.start_grasp"))
    return given


def _make_env(agent: Any, skill: str, episodes: list, checkpoint: str | None = None,
              start_grasp: Mapping[str, float] | None = None) -> Any:
    """The skill env: a trained policy gets the task and sim settings it was trained with (its
    checkpoint's config: camera backend and size, base movement...), the oracle the registered skill env;
    the in-hand start pose is `start_grasp` (None: the canonical grasp; a varied one a policy trained
    with, `skill.start_grasp`, is training only), pick's and nav's arm at rest unless `start_grasp` gives a
    max_arm_offset (`skill.start_arm` is training only; nav's arm then swings back to rest as it drives), and place's training-only end on a displaced
    object is off. A checkpoint whose observations that env cannot give is a one-line error (exit 2)."""
    from eval.skill_library import ObservationMismatch, check_observations
    from rearrange.env import RearrangeEnv, make_registered_env
    from rearrange.tasks.skill_tasks import (
        SKILL_ENV_IDS,
        load_skill_config,
        make_skill_task,
        register_skill_envs,
    )

    def task_config(skill_cfg: Mapping[str, Any]) -> Mapping[str, Any]:
        cfg = dict(skill_cfg)
        if skill in TRAINING_ONLY_ENDS:  # every policy is judged by habitat's episode ends: a knocked neighbour or
            # pushed target (pick), an object that leaves the goal after its release or a goal container pushed
            # toward closed (place) runs on to the timeout, whatever training-only end the policy trained with
            cfg["reward"] = {**cfg.get("reward", {}), **{key: False for key in TRAINING_ONLY_ENDS[skill]}}
        if skill in ARM_START_SKILLS:  # a varied start arm (skill.start_arm) is training only: eval starts at rest
            offset = (start_grasp or {}).get("max_arm_offset", 0.0)  # unless eval.start_grasp.max_arm_offset asks
            cfg["start_arm"] = {"prob": 1.0, "max_offset": offset} if offset else {}
            if skill == "nav" and offset:  # the arm then swings back to rest as the nav drives, as inside the
                cfg["arm_to_rest"] = True  # HAB tasks with agent.rest_arm_during_nav
        elif skill == "place":  # the one skill with an in-hand start pose
            cfg["start_grasp"] = dict(start_grasp or {})
        return cfg

    if isinstance(agent, PolicyAgent):
        config = agent.policy.config
        try:
            env = RearrangeEnv(make_skill_task(task_config(config["skill"])), episodes, sim_cfg=config.get("sim"),
                               episode_order="cycle")
            check_observations(f"checkpoint {checkpoint}", agent.policy, env.observation_space)
        except KeyError as exc:
            exit_with_error(f"checkpoint {checkpoint}: its config lacks {exc}")
        except ValueError as exc:  # ObservationMismatch, or a sim config the env rejects (camera backend ...)
            msg = str(exc).strip().splitlines()[0]
            exit_with_error(msg if isinstance(exc, ObservationMismatch) else f"checkpoint {checkpoint}: {msg}")
        return env
    if skill == "place" or (skill in ARM_START_SKILLS and start_grasp):
        return RearrangeEnv(make_skill_task(task_config(load_skill_config(skill))), episodes, episode_order="cycle")
    register_skill_envs()
    return make_registered_env(SKILL_ENV_IDS[skill], episodes=episodes, episode_order="cycle")


def _video_name(skill: str, episode_id: str, success: bool) -> str:
    from eval.video import video_filename

    return video_filename(skill, episode_id, success)


if __name__ == "__main__":
    main()
