"""`python -m eval.skill_starts`: the states a skill starts from inside the HAB tasks, saved as its episodes.

Runs eval-hab's agent (default `tp-srl`, the shipped policies) on a scenario's episodes and, just before every
call of `--skill` (pick, place or nav; after the call's arm reset and back-off), saves the simulator's state
as an episode of that skill: every object's pose, the articulated joints, the robot's base pose, the target
(and, for place and a nav that carries one, the object in the gripper; for nav, the call's goal point: the
object, its goal, or a shut container's handle, as the planner grounded it). A skill fine-tuned on these meets
in training the starts it meets in the tasks (where the learned nav stops, a retry after a failed call), which
its own generator's starts only approximate; `train-skill dataset.path=FILE`. Use the train split for training
data: the val episodes stay for eval-hab. Episode ids name the skill, scenario, split and seed
(`pick_from_tidy_house_train_seed10_0`), so files made with several seeds mix into one dataset.

Kept: a pick start whose target is not held, a place start whose target is held, every nav start. A pick
target that lies further than `--max-object-shift` from its pose in the HAB episode (dropped by a failed
place, knocked over; in a drawer only its height counts, as an opened drawer carries it along) gets the
receptacle name `moved`, which no layout has: the reward's approach region is then the plain one round the
object, not one through a container's opening; `--skip-moved` leaves such starts out. A pick target lower than
`--min-height` (default 0.2 m: on the floor, dropped by a failed place) is left out: the Fetch arm does not
reach it (the pick oracle got 0 of 40 such starts from Tidy House and Prepare Groceries, 2026-11-25), so no
skill can learn it. The arm starts at rest in the skill's episode (its reset), the robot's arm joints at the
call are not stored. Seeds and episode order as in eval-hab, so a run repeats.

    python -m eval.skill_starts --scenario tidy_house --skill pick --split train --episodes 40 \\
        --out runs/starts/pick_th.json.gz
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rearrange.episodes import Episode, ObjectSpec, TargetSpec

SKILLS = ("pick", "place", "nav")
MOVED = "moved"  # receptacle name of a pick target off its episode pose (no layout has it)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m eval.skill_starts",
        description="Save the states a skill starts from inside a HAB scenario (run by eval-hab's agent) as "
                    "that skill's episodes, e.g. to fine-tune it with train-skill dataset.path=FILE.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--scenario", required=True, help="tidy_house, prepare_groceries or set_table")
    p.add_argument("--skill", default="pick", help=f"the skill whose starts are saved: {', '.join(SKILLS)}")
    p.add_argument("--agent", default="tp-srl", help="the agent that runs the scenario (as eval-hab --agent)")
    p.add_argument("--split", default="train", help="split of the scenario episodes")
    p.add_argument("--episodes", type=int, default=40, help="scenario episodes to run")
    p.add_argument("--seed", type=int, default=0, help="episode generation and action sampling seed")
    p.add_argument("--checkpoint-dir", default=None, help="as eval-hab --checkpoint-dir (default: the shipped)")
    p.add_argument("--max-object-shift", type=float, default=0.1,
                   help="pick: a target further than this (m) from its episode pose counts as moved")
    p.add_argument("--skip-moved", action="store_true", help="pick: leave out the starts with the target moved")
    p.add_argument("--min-height", type=float, default=0.2,
                   help="pick: leave out the starts with the target lower than this (m), e.g. on the floor, where "
                        "the arm does not reach (pick oracle: 0 of 40)")
    p.add_argument("--out", required=True, help="the episode file to write (.json or .json.gz), atomically")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("overrides", nargs="*", help="eval-hab config overrides, key=value (configs/eval_hab.yaml)")
    return p


def start_id_prefix(skill: str, scenario: str, split: str, seed: int) -> str:
    """The saved episodes' id prefix: skill, scenario, split and seed, so files made with different seeds mix
    (`python -m rearrange.mix_episodes` needs unique ids; before 2026-12-02 the seed was not in it)."""
    return f"{skill}_from_{scenario}_{split}_seed{seed}"


def start_episode(env: Any, call: Any, skill: str, episode_id: str, split: str) -> Episode | None:
    """The skill episode of the env's current state before `call`, or None if the state does not make one
    (pick: target held; place: target not held; a nav start always makes one)."""
    sim, hab = env.sim, env.current_episode
    target = call.target.object
    if skill != "nav" and (skill == "pick") == (sim.grasped == target):
        return None
    by_name = {o.name: o for o in hab.objects}
    objects = [ObjectSpec(name=name, kind=by_name[name].kind,
                          pos=[float(v) for v in sim.object_pos(name)],
                          quat=[float(v) for v in sim.object_quat(name)],
                          receptacle=by_name[name].receptacle)
               for name in sim.object_names]
    named = call.target.entity if skill == "nav" else target  # a nav goes to an object, a goal or a container
    info: dict[str, Any] = {"source": f"{hab.episode_id}:{skill}({named})"}
    targets: list[TargetSpec] = []
    if target is not None:
        goal = next((t for t in hab.targets if t.object == target), None)
        if goal is None:
            raise ValueError(f"episode {hab.episode_id}: object {target} is not one of its targets")
        goal_pos = goal.goal_pos if call.target.goal_pos is None else [float(v) for v in call.target.goal_pos]
        targets.append(TargetSpec(object=target, goal_pos=list(goal_pos), goal_receptacle=goal.goal_receptacle))
    if skill == "place":
        info["start_holding"] = target
    if skill == "nav":
        if call.target.nav_goal is None:
            raise ValueError(f"episode {hab.episode_id}: nav call {info['source']} has no nav goal")
        info["nav_goal"] = [float(v) for v in call.target.nav_goal]
        if sim.grasped is not None:
            info["start_holding"] = sim.grasped
        if call.target.kind == "container":
            info["nav_to_container"] = call.target.entity
    return Episode(
        episode_id=episode_id, kind=skill, split=split, layout_seed=hab.layout_seed, objects=objects,
        targets=targets, art_states={name: float(sim.art_q(name)) for name in sim.art_names},
        robot_start={"xy": [float(v) for v in sim.base_xy], "yaw": float(sim.base_yaw)}, info=info)


class StartRecorder:
    """`HabAgent.on_skill_start` hook: collects the starts of one skill's calls as episodes."""

    def __init__(self, skill: str, split: str, prefix: str, max_object_shift: float, skip_moved: bool = False,
                 min_height: float = float("-inf")) -> None:
        self.skill, self.split, self.prefix = skill, split, prefix
        self.max_object_shift, self.skip_moved = float(max_object_shift), bool(skip_moved)
        self.min_height = float(min_height)
        self.episodes: list[Episode] = []
        self.moved = 0
        self.skipped: dict[str, int] = {"moved": 0, "low": 0, "held_state": 0}

    def __call__(self, env: Any, call: Any, retry: bool) -> None:
        if call.skill != self.skill:
            return
        episode = start_episode(env, call, self.skill, f"{self.prefix}_{len(self.episodes)}", self.split)
        if episode is None:
            self.skipped["held_state"] += 1
            return
        target = call.target.object
        if self.skill == "pick":
            if float(env.sim.object_pos(target)[2]) < self.min_height:
                self.skipped["low"] += 1
                return
            if self._moved(env, target):
                if self.skip_moved:
                    self.skipped["moved"] += 1
                    return
                episode.object_spec(target).receptacle = MOVED
                self.moved += 1
        episode.info["retry"] = bool(retry)
        self.episodes.append(episode)

    def _moved(self, env: Any, target: str) -> bool:
        """Whether the target left its receptacle: it lies more than `max_object_shift` from its episode pose,
        height included; in a drawer only the height counts (an opened drawer carries its contents along)."""
        spec = env.current_episode.object_spec(target)
        shift = np.asarray(env.sim.object_pos(target), dtype=np.float64) - np.asarray(spec.pos, dtype=np.float64)
        if abs(float(shift[2])) > self.max_object_shift:
            return True
        rec = env.sim.layout.receptacles.get(spec.receptacle)
        return (rec is None or rec.kind != "drawer") and float(np.linalg.norm(shift[:2])) > self.max_object_shift


def main(argv: Sequence[str] | None = None) -> int:
    from configs.compose import ConfigError, compose, exit_with_error, require_choice, to_plain
    from eval.agent_config import AGENT_TYPES, check_agent_config
    from eval.hab_eval import UsageError, evaluate, load_scenario_episodes
    from rearrange.episodes import SCENARIO_KINDS, SPLITS, out_path_error, save_episodes
    from skills.policy import set_inference_threads

    args = build_parser().parse_args(argv)
    require_choice("scenario", args.scenario, SCENARIO_KINDS)
    require_choice("skill", args.skill, SKILLS)
    require_choice("agent", args.agent, AGENT_TYPES)
    require_choice("split", args.split, SPLITS)
    if args.episodes < 1:
        exit_with_error(f"--episodes must be >= 1, got {args.episodes}")
    if args.max_object_shift <= 0:
        exit_with_error(f"--max-object-shift must be > 0 m, got {args.max_object_shift}")
    out = Path(args.out)
    if (problem := out_path_error(out)) is not None:
        exit_with_error(problem)
    try:
        cfg = to_plain(compose("eval_hab", list(args.overrides)))
        check_agent_config(cfg["agent"])
    except ConfigError as exc:
        exit_with_error(str(exc))
    set_inference_threads(cfg["eval"]["torch_threads"])
    episodes, _ = load_scenario_episodes(args.scenario, args.split, args.episodes, args.seed, None)
    recorder = StartRecorder(args.skill, args.split, start_id_prefix(args.skill, args.scenario, args.split, args.seed),
                             args.max_object_shift, args.skip_moved, args.min_height)
    try:
        result = evaluate(args.scenario, args.agent, episodes, cfg, seed=args.seed, split=args.split,
                          checkpoint_dir=args.checkpoint_dir, progress=not args.no_progress,
                          on_skill_start=recorder)
    except UsageError as exc:
        exit_with_error(str(exc))
    if not recorder.episodes:
        exit_with_error(f"no {args.skill} call started in {args.episodes} {args.scenario} episodes; nothing written")
    save_episodes(out, recorder.episodes, kind=args.skill, split=args.split, seed=args.seed)
    retries = sum(bool(e.info["retry"]) for e in recorder.episodes)
    line = (f"{len(recorder.episodes)} {args.skill} starts ({retries} of retried calls) from {args.episodes} "
            f"{args.scenario} {args.split} episodes (task success {result['success']['mean']:.2f})")
    if args.skill == "pick":
        line += (f"; {recorder.moved} with the target moved; skipped: {recorder.skipped['moved']} with the target "
                 f"moved, {recorder.skipped['low']} with it below {args.min_height} m")
    if args.skill != "nav":
        line += f"; skipped {recorder.skipped['held_state']} with the grasp not as the skill starts"
    print(f"{line} -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
