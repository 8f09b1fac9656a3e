"""`eval-hab`: evaluate a hierarchical agent on a HAB scenario (Tidy House, Prepare Groceries, Set Table).

Generates (or loads) the scenario episodes of a split, runs the chosen agent (eval/agent.py) on each
with a progress bar, and writes into the output folder:

- `results.json`: full-task success with a 95% bootstrap CI, per-stage progressive success
  (ManiSkill-HAB's progressive completion; VER paper Fig. 6) with CIs, the rate each stage was
  reached at all, the failed-skill histogram, where episodes failed (`failed_subtask`: the first
  stage not reached, ManiSkill-HAB's subtask_fail_counts), why they ended (`end_reasons`), the targets
  that fell to the floor and during which skill (`floor_drops`, eval/floor_watch.py), mean steps /
  replans / reward, how many episodes the agent handled out of index order (`reordered_episodes`), and
  one row per episode (its targets in the order handled, skill calls, failed call, end reason, floor drops);
- `stages.png`: bar chart of the per-stage success;
- with `--video DIR`: one MP4 per episode, third-person RGB (targets red, goals green, the active
  skill's target opaque) beside the head depth, with scenario, skill, stage and step overlaid; the
  file name carries the episode id and success.

Learned agents find their checkpoints (`--checkpoint-dir`, `agent.checkpoints.<skill>`, else the shipped
`checkpoints/`) and get observations with each checkpoint's camera settings through
eval/skill_library.py. In replan mode the agent handles each episode's targets in clutter-aware order
(`agent.target_order_radius`, planner/target_order.py: a target is picked before another object is put
down beside it), and its stages are named in that order; fixed mode keeps habitat's index order.
Settings live in configs/eval_hab.yaml; anything there can be overridden Hydra-style after the flags.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

EXAMPLES = """examples:
  eval-hab --scenario tidy_house --agent oracle --episodes 20 --split val
  eval-hab --scenario tidy_house --agent tp-srl --episodes 20 --video out/videos 'agent.oracle_skills=[place]'
      # the shipped checkpoints/, place by its oracle
  eval-hab --scenario set_table --agent tp-srl --episodes 50 --only 24 --video out/videos   # film episode 24 of 50
  eval-hab --scenario set_table --agent tp-srl --checkpoint-dir runs/skill --episodes 100   # train-skill runs
  eval-hab --scenario prepare_groceries --agent tp-srl-nonav --checkpoint-dir ckpts   # ckpts/<skill>.pt
  eval-hab --scenario set_table --agent tp-srl --mode fixed --episodes 50   # habitat-lab's fixed plan
  eval-hab --scenario tidy_house --agent tp-srl --episodes 50 --workers 2   # two processes, same results
  eval-hab --scenario tidy_house --episodes 5 agent.max_replans=0 hab_task.max_steps=5000
  eval-hab --scenario set_table --agent tp-srl agent.checkpoints.pick=ckpts/pick.pt --checkpoint-dir ckpts
  eval-hab --scenario tidy_house --agent tp-srl 'agent.oracle_skills=[nav,place]'   # learned pick only
  eval-hab --scenario tidy_house --agent tp-srl --mode fixed agent.fixed_reset_arm=between   # habitat's add_arm_rest
  eval-hab --scenario set_table --agent tp-srl agent.release_guard=0   # let a place drop its object anywhere
  eval-hab --scenario tidy_house --agent tp-srl agent.release_settle_steps=0   # let a place let go mid-swing
  eval-hab --scenario tidy_house --agent tp-srl agent.nav_unstick_steps=0   # leave a wedged nav pinned
  eval-hab --scenario tidy_house --agent tp-srl agent.nav_unstick_turn=false   # freed, the nav does not face its path
  eval-hab --scenario tidy_house --agent tp-srl 'agent.unstick_skills=[nav,pick]'   # a wedged pick driven out too

checkpoints of the learned agents (tp-srl, tp-srl-nonav), per skill: agent.checkpoints.<skill>=PATH (a .pt
file or a train-skill run folder), else from --checkpoint-dir DIR: DIR/<skill>.pt or the newest
DIR/<skill>/checkpoints/ckpt_<step>.pt (train-skill's layout: --checkpoint-dir runs/skill); with neither,
the checkpoints shipped in the repository's checkpoints/<skill>.pt (tp-srl-nonav: its own pick,
checkpoints/nonav/pick.pt, trained to cross the house to the object). Each skill observes the env with the
camera settings it was trained with (its checkpoint's sim.camera.head), so skills trained at different
depth sizes or backends run together. agent.oracle_skills=[...] runs those skills with their oracle
controllers instead (no checkpoint needed; recorded in results.json), to measure some learned skills
inside the full task before all seven are trained.
"""

TARGET_RGBA = (1.0, 0.2, 0.2, 0.35)
GOAL_RGBA = (0.2, 1.0, 0.2, 0.35)
ACTIVE_ALPHA = 0.9


def build_parser() -> argparse.ArgumentParser:
    from eval.agent_config import AGENT_MODES, AGENT_TYPES
    from rearrange.episodes import SCENARIO_KINDS

    p = argparse.ArgumentParser(
        prog="eval-hab",
        description="Evaluate a task-planner + skills agent on a HAB scenario: success, per-stage "
                    "success with 95% bootstrap CIs, failed-skill histogram, optional videos.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--scenario", required=True, help=f"one of: {', '.join(SCENARIO_KINDS)}")
    p.add_argument("--agent", default="oracle", help=f"one of: {', '.join(AGENT_TYPES)} (default: oracle)")
    p.add_argument("--mode", default=None,
                   help=f"one of: {', '.join(AGENT_MODES)}: re-plan from simulator state after a failed skill, or "
                   "follow the first plan as planned like habitat-lab's TP-SRL (default: agent.mode, replan)")
    p.add_argument("--episodes", type=int, default=None, help="number of episodes (default: eval.episodes)")
    p.add_argument("--split", default=None, help="train or val (default: eval.split)")
    p.add_argument("--seed", type=int, default=None, help="episode generation seed (default: eval.seed)")
    p.add_argument("--episodes-file", default=None, help="a scenario dataset .json(.gz) instead of generating")
    p.add_argument("--only", type=int, nargs="+", default=None, metavar="I",
                   help="run only these episodes of the --episodes (0-based, the last number of an episode id in "
                        "results.json); each acts exactly as in the full run, e.g. to film one")
    p.add_argument("--video", default=None, metavar="DIR", help="write one MP4 per episode into DIR")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder for results.json and stages.png (default: eval.out_dir/<scenario>_<agent>, with _fixed in fixed mode)")
    p.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                   help="learned skills' checkpoints: DIR/<skill>.pt or the newest "
                        "DIR/<skill>/checkpoints/ckpt_<step>.pt, e.g. runs/skill (default: the shipped "
                        "checkpoints/<skill>.pt, tp-srl-nonav's pick checkpoints/nonav/pick.pt; "
                        "agent.checkpoints.<skill>=PATH wins)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="run the episodes in N processes, same results as one (default: eval.workers, 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("overrides", nargs="*", help="Hydra overrides of configs/eval_hab.yaml, e.g. agent.max_replans=1")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from configs.compose import ConfigError, compose, exit_with_error, require_choice, to_plain
    from eval.agent_config import AGENT_TYPES, check_agent_config
    from eval.eval_config import check_eval_config
    from eval.parallel import check_workers
    from rearrange.episodes import SCENARIO_KINDS, SPLITS
    from rearrange.sim import load_sim_config

    args = build_parser().parse_args(argv)
    require_choice("scenario", args.scenario, SCENARIO_KINDS)
    require_choice("agent", args.agent, AGENT_TYPES)
    try:
        mode = [] if args.mode is None else [f"agent.mode={args.mode}"]
        cfg = to_plain(compose("eval_hab", [*args.overrides, *mode]))
        check_agent_config(cfg["agent"])
        check_eval_config(cfg)
        load_sim_config(cfg.get("sim"))  # the env's simulator settings (`+sim.<key>=...`), checked before any episode
    except (ConfigError, ValueError) as exc:
        exit_with_error(str(exc).splitlines()[0])
    ev = cfg["eval"]
    split = args.split if args.split is not None else str(ev["split"])
    require_choice("split", split, SPLITS)
    count = int(args.episodes if args.episodes is not None else ev["episodes"])
    if count < 1:
        exit_with_error(f"--episodes must be >= 1, got {count}")
    seed = int(args.seed if args.seed is not None else ev["seed"])
    workers = check_workers(args.workers if args.workers is not None else ev.get("workers", 1))
    bad = [i for i in args.only or () if not 0 <= i < count]
    if bad:
        exit_with_error(f"--only: episode index {bad[0]} is not among the {count} episodes (0..{count - 1})")
    episodes_file = args.episodes_file if args.episodes_file is not None else ev["episodes_file"]
    suffix = "" if cfg["agent"]["mode"] == "replan" else f"_{cfg['agent']['mode']}"
    out_dir = Path(args.out) if args.out else Path(str(ev["out_dir"])) / f"{args.scenario}_{args.agent}{suffix}"

    from skills.policy import set_inference_threads

    set_inference_threads(ev["torch_threads"])
    episodes, split = load_scenario_episodes(args.scenario, split, count, seed, episodes_file)
    try:
        result = evaluate(args.scenario, args.agent, episodes, cfg, seed=seed, split=split,
                          checkpoint_dir=args.checkpoint_dir, video_dir=args.video, progress=not args.no_progress,
                          indices=None if args.only is None else list(dict.fromkeys(args.only)), workers=workers)
    except UsageError as exc:
        exit_with_error(str(exc))
    write_outputs(result, out_dir)
    print_summary(result, out_dir)
    return 0


class UsageError(ValueError):
    """A problem with the user's input found while setting up the evaluation; one line."""


def load_scenario_episodes(scenario: str, split: str, count: int, seed: int,
                           episodes_file: str | os.PathLike | None) -> tuple[list, str]:
    """`count` episodes of the scenario, the first ones of `episodes_file` or generated (deterministic),
    and their split (an episode file's own, from its header)."""
    from configs.compose import exit_with_error
    from rearrange.episodes import EpisodeFileError, load_episodes_of_kind

    if episodes_file is not None:
        try:
            episodes, file_split = load_episodes_of_kind(episodes_file, scenario)
        except EpisodeFileError as exc:
            exit_with_error(str(exc))
        if len(episodes) < count:
            exit_with_error(f"episode file {episodes_file} has {len(episodes)} episodes, {count} requested")
        return episodes[:count], file_split or split
    from rearrange.generate import generate_episodes

    return generate_episodes(scenario, split, count, seed), split


def initial_plans(scenario: str, episodes: Sequence[Any]) -> list:
    """The planner's plan of every episode from its initial state (layouts are generated, no sim)."""
    from planner.predicates import PredicateThresholds, load_planner_cfg
    from planner.problem import build_planner, load_scenario_cfg, problem_from_episode
    from rearrange.layout import cached_layout

    planner_cfg = load_planner_cfg()
    thresholds = PredicateThresholds.from_cfg(planner_cfg["predicates"])
    scenario_cfg = load_scenario_cfg(scenario)
    plans = []
    for ep in episodes:
        problem = problem_from_episode(ep, cached_layout(ep.layout_seed), scenario_cfg, thresholds)
        plans.append(build_planner(problem, planner_cfg).plan())
    return plans


@dataclass
class _Run:
    """What one process evaluates with: the agent, the env, and which skills are learned or oracle."""

    agent: Any
    env: Any
    checkpoints: dict[str, Any] | None
    oracle_skills: list[str]


def _set_up(scenario: str, agent_type: str, episodes: Sequence[Any], cfg: Mapping[str, Any], seed: int,
            checkpoint_dir: str | os.PathLike | None) -> _Run:
    """The agent (its checkpoints resolved and loaded) and the env serving their observations; UsageError
    for a missing or unusable checkpoint."""
    from eval.agent_config import make_agent, skills_in_plans
    from eval.skill_library import CheckpointMissing, ObservationMismatch, resolve_checkpoints
    from rearrange.env import RearrangeEnv
    from rearrange.tasks.hab import HabTask
    from trainer.checkpoint import CheckpointError

    plans = initial_plans(scenario, episodes)
    needed = skills_in_plans(plans, agent_type)
    oracle_skills = [] if agent_type == "oracle" else list(cfg["agent"].get("oracle_skills") or [])
    obs_keys: tuple[str, ...] = ()
    sim_cfg = cfg.get("sim")  # the env's simulator; a learned agent's head camera comes from its checkpoints
    checkpoints = None
    if agent_type != "oracle":
        try:
            learned = [s for s in needed if s not in oracle_skills]
            checkpoints = resolve_checkpoints(learned, cfg["agent"]["checkpoints"], checkpoint_dir,
                                              agent_type=agent_type)
        except CheckpointMissing as exc:
            raise UsageError(str(exc)) from None
        # skills only a re-plan may call (a drawer the base pushed shut is opened again): loaded too where
        # a checkpoint is found, so the env serves their observations; a call of one without is a failure
        for skill in skills_in_plans([], agent_type, every_skill=True):
            if skill not in oracle_skills and skill not in checkpoints:
                with contextlib.suppress(CheckpointMissing):
                    checkpoints.update(resolve_checkpoints([skill], cfg["agent"]["checkpoints"], checkpoint_dir,
                                                           agent_type=agent_type))
    agent = make_agent(agent_type, cfg["agent"], checkpoints)
    if agent_type != "oracle":
        try:
            # the needed skills first (the env's camera follows the first loaded on a tie), then the rest
            agent.skills.load_all(list(checkpoints or {}))  # type: ignore[attr-defined]
            sim_cfg = agent.skills.serve_observations(sim_cfg)  # type: ignore[attr-defined]
        except (CheckpointError, CheckpointMissing, ObservationMismatch) as exc:
            raise UsageError(str(exc)) from None
        obs_keys = agent.skills.obs_keys  # type: ignore[attr-defined]
    vcfg = cfg["video"]
    env = RearrangeEnv(HabTask(scenario, cfg, obs_keys=obs_keys), episodes, sim_cfg=sim_cfg, episode_order="cycle",
                       render_width=int(vcfg["width"]), render_height=int(vcfg["height"]))
    env.reset(seed=seed)
    return _Run(agent=agent, env=env, checkpoints=checkpoints, oracle_skills=oracle_skills)


def _run_episode(run: _Run, index: int, seed: int, scenario: str, cfg: Mapping[str, Any],
                 video_dir: str | os.PathLike | None) -> Any:
    """Episode `index`, its sampled actions seeded by its index (so it acts as in any other run of it)."""
    from skills.policy import seed_action_sampling

    seed_action_sampling(seed, index)
    recorder = None if video_dir is None else EpisodeVideo(Path(video_dir), scenario, cfg["video"])
    try:
        outcome = run.agent.run_episode(run.env, index, observer=recorder)
    except BaseException:
        if recorder is not None:
            recorder.abort()
        raise
    if recorder is not None:
        recorder.finish(outcome.episode_id, outcome.success)
    return outcome


def _set_up_process(scenario: str, agent_type: str, episodes: Sequence[Any], cfg: Mapping[str, Any], seed: int,
                    checkpoint_dir: str | os.PathLike | None, video_dir: str | os.PathLike | None) -> tuple:
    """An evaluation process's own run and the settings `_indexed_episode` needs."""
    from skills.policy import set_inference_threads

    set_inference_threads(cfg["eval"]["torch_threads"])
    return _set_up(scenario, agent_type, episodes, cfg, seed, checkpoint_dir), seed, scenario, cfg, video_dir


def _indexed_episode(context: tuple, index: int) -> Any:
    run, seed, scenario, cfg, video_dir = context
    return _run_episode(run, index, seed, scenario, cfg, video_dir)


def evaluate(scenario: str, agent_type: str, episodes: Sequence[Any], cfg: Mapping[str, Any], *, seed: int = 0,
             split: str = "val", checkpoint_dir: str | os.PathLike | None = None,
             video_dir: str | os.PathLike | None = None, progress: bool = True,
             indices: Sequence[int] | None = None, workers: int = 1,
             on_skill_start: Callable[[Any, Any, bool], None] | None = None) -> dict[str, Any]:
    """Run the agent on every episode, or on those of `indices` (each seeded by its index, so it acts as
    in the full run); returns the results dict (see the module docstring). `workers` > 1 runs the episodes
    in that many processes, each with its own agent and env, with the same results. `on_skill_start(env,
    call, retry)` is called before each skill call's first step (`HabAgent.on_skill_start`; one process only)."""
    from tqdm import tqdm

    from eval.metrics import aggregate
    from eval.parallel import run_indexed

    if workers > 1 and on_skill_start is not None:
        raise ValueError("evaluate: on_skill_start needs workers=1 (it runs in this process)")
    from eval.agent_config import planned_episodes

    given, episodes = episodes, planned_episodes(episodes, cfg["agent"], cfg.get("sim"))
    run = _set_up(scenario, agent_type, episodes, cfg, seed, checkpoint_dir)
    run.agent.on_skill_start = on_skill_start
    order = list(range(len(episodes))) if indices is None else list(indices)
    workers = max(1, min(int(workers), len(order)))
    by_index: dict[int, Any] = {}
    bar = tqdm(total=len(order), desc=f"eval-hab {scenario} ({agent_type})", unit="ep", disable=not progress)
    settings = (seed, scenario, cfg, video_dir)
    try:  # with workers, `run` only checked the checkpoints and observations: each process builds its own
        for i, outcome in run_indexed(order, _indexed_episode, (run, *settings), workers, _set_up_process,
                                      (scenario, agent_type, episodes, cfg, seed, checkpoint_dir, video_dir)):
            by_index[i] = outcome
            bar.update(1)
            bar.set_postfix(success=f"{np.mean([o.success for o in by_index.values()]):.2f}")
    finally:
        bar.close()
        run.env.close()
    outcomes = [by_index[i] for i in order]
    checkpoints, oracle_skills = run.checkpoints, run.oracle_skills
    stage_names: list[str] = []
    for o in outcomes:
        stage_names.extend(n for n in o.stages if n not in stage_names)
    ev = cfg["eval"]
    summary = aggregate([o.to_record() for o in outcomes], stage_names, n_resamples=int(ev["bootstrap_samples"]),
                        confidence=float(ev["ci"]), seed=seed)
    return {
        "scenario": scenario,
        "agent": agent_type,
        "mode": cfg["agent"]["mode"],
        "split": split,
        "seed": seed,
        "checkpoints": None if checkpoints is None else {k: str(v) for k, v in checkpoints.items()},
        "oracle_skills": oracle_skills,
        **summary,
        "failed_subtask": _count(first_missing_stage(o.stages, stage_names) for o in outcomes if not o.success),
        "end_reasons": _count(o.end_reason for o in outcomes),
        "skill_calls": skill_call_summary(outcomes),
        "floor_drops": floor_drop_summary(outcomes),
        "reordered_episodes": sum(episodes[i] is not given[i] for i in order),  # agent.target_order_*
        "episodes": [{**o.to_dict(), "targets": [t.object for t in episodes[i].targets]} for i, o in zip(order, outcomes, strict=True)],
        "config": {k: cfg[k] for k in ("hab_task", "agent")},
    }


def first_missing_stage(stages: Mapping[str, bool], order: Sequence[str]) -> str:
    """The first stage (in plan order) an episode did not reach: where it failed, like ManiSkill-HAB's
    subtask_fail_counts ("goal" if every stage was reached but the episode still failed)."""
    for name in order:
        if not stages.get(name, False):
            return name
    return "goal"


def skill_call_summary(outcomes: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Per skill: its first calls on a target and its repeated calls (re-plans), with how many
    succeeded (the call's effects held) and how the failed ones ended (`SkillRun.outcome`).

    A repeated call is one whose label (skill and arguments) was called before in the episode, so a
    skill that fails mostly on retries is failing on the targets that beat it the first time."""
    out: dict[str, dict[str, Any]] = {}
    for outcome in outcomes:
        seen: set[str] = set()
        for run in outcome.skill_runs:
            entry = out.setdefault(run.skill, {kind: {"calls": 0, "succeeded": 0, "failed_by": {}}
                                               for kind in ("first", "retry")})
            part = entry["retry" if run.label in seen else "first"]
            seen.add(run.label)
            part["calls"] += 1
            if run.effects_hold:
                part["succeeded"] += 1
            else:
                part["failed_by"][run.outcome] = part["failed_by"].get(run.outcome, 0) + 1
            if run.unsticks:  # a call the agent drove out of a wedge (`agent.nav_unstick_steps`, `unstick_skills`)
                unstuck = part.setdefault("unstuck", {"calls": 0, "succeeded": 0, "drives": 0})
                unstuck["calls"] += 1
                unstuck["succeeded"] += int(run.effects_hold)
                unstuck["drives"] += run.unsticks
    return dict(sorted(out.items()))


def floor_drop_summary(outcomes: Sequence[Any]) -> dict[str, Any]:
    """Targets that fell to the floor (`EpisodeOutcome.floor_drops`, eval/floor_watch.py): how many, in how
    many episodes (and of those, how many failed), and per skill or motion during which the fall began."""
    from eval.floor_watch import drop_skill

    hit = [o for o in outcomes if o.floor_drops]
    return {"objects": sum(len(o.floor_drops) for o in hit), "episodes": len(hit),
            "failed_episodes": sum(not o.success for o in hit),
            "by_skill": _count(drop_skill(d) for o in hit for d in o.floor_drops)}


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def write_outputs(result: Mapping[str, Any], out_dir: Path) -> None:
    """results.json and stages.png (both written atomically)."""
    from eval.metrics import write_json_atomic
    from eval.plots import plot_stage_success

    write_json_atomic(out_dir / "results.json", result)
    if result["stage_success"]:
        title = f"{result['scenario']} ({result['agent']}, {result['mode']} mode, {result['num_episodes']} episodes)"
        plot_stage_success(result["stage_success"], out_dir / "stages.png", title=title)


def print_summary(result: Mapping[str, Any], out_dir: Path) -> None:
    s = result["success"]
    print(f"{result['scenario']} / {result['agent']} ({result['mode']} mode): success {s['mean']:.3f} "
          f"[{s['ci_low']:.3f}, {s['ci_high']:.3f}] over {result['num_episodes']} episodes")
    stages = ", ".join(f"{k} {v['mean']:.2f}" for k, v in result["stage_success"].items())
    print(f"stage success (progressive): {stages}")
    if result["failed_skill"]:
        blamed = "first" if result["mode"] == "fixed" else "last"
        print(f"failed skills (the {blamed} failed call, or the step running when the episode ended): "
              f"{result['failed_skill']}; failed at stage: {result['failed_subtask']}")
    calls = result.get("skill_calls") or {}
    if calls:
        print("skill calls succeeded (first try; repeated): " + ", ".join(
            f"{name} {c['first']['succeeded']}/{c['first']['calls']}; {c['retry']['succeeded']}/{c['retry']['calls']}"
            for name, c in calls.items()))
    for name, c in calls.items():  # agent.unstick_skills
        unstuck = [part["unstuck"] for part in c.values() if "unstuck" in part]
        if unstuck:
            print(f"{name} calls driven out of a wedge (agent.nav_unstick_steps): {sum(u['calls'] for u in unstuck)}, "
                  f"{sum(u['succeeded'] for u in unstuck)} of them succeeded")
    floor = result.get("floor_drops") or {}
    if floor.get("objects"):
        print(f"targets fallen to the floor (a pick seldom gets them back): {floor['objects']} in {floor['episodes']} episodes "
              f"({floor['failed_episodes']} failed), the fall begun during {floor['by_skill']}")
    if result.get("reordered_episodes"):
        print(f"episodes whose targets the agent handles out of index order (agent.target_order_radius, "
              f"agent.target_order_travel): {result['reordered_episodes']} of {result['num_episodes']}")
    steps = result["measures"].get("steps")
    replans = result["measures"].get("num_replans")
    if steps and replans:
        print(f"mean steps {steps['mean']:.0f}, mean replans {replans['mean']:.2f}")
    print(f"wrote {out_dir / 'results.json'}")


class EpisodeVideo:
    """Step observer writing one episode's MP4 (see the module docstring); renamed with its success."""

    def __init__(self, video_dir: Path, scenario: str, vcfg: Mapping[str, Any]) -> None:
        from eval.video import VideoWriter

        self.dir = Path(video_dir)
        self.scenario = scenario
        self.width, self.height = int(vcfg["width"]), int(vcfg["height"])
        self.every = max(1, int(vcfg["every"]))
        self.partial = self.dir / f".{scenario}_{os.getpid()}_{id(self)}.mp4"
        self.writer = VideoWriter(self.partial, fps=int(vcfg["fps"]))
        self.step = 0

    def __call__(self, env: Any, info: Mapping[str, float], label: str) -> None:
        self.step += 1
        final = label == "stop" or bool(info.get("called_stop", 0.0))
        if (self.step - 1) % self.every and not final:
            return
        self.writer.append(self.frame(env, info, label))

    def frame(self, env: Any, info: Mapping[str, float], label: str) -> np.ndarray:
        from eval.video import compose_frame

        sim, task = env.sim, env.task
        rgb = sim.render_third_rgb(self.width, self.height, target_marks(sim, task))
        depth = sim.render_head_depth()
        names = task.stage_names
        reached = [n for n in names if info.get(f"stage/{n}", 0.0) > 0]
        last = reached[-1] if reached else "-"
        lines = [
            f"{self.scenario}  episode {env.current_episode.episode_id}",
            f"skill: {label}",
            f"stage: {last} ({len(reached)}/{len(names)})",
            f"step {int(info.get('num_steps', self.step))}"
            + ("  SUCCESS" if info.get("success", 0.0) > 0 else ""),
        ]
        return compose_frame(rgb, depth, lines, max_depth=float(sim.cfg["camera"]["head"]["max_depth"]))

    def finish(self, episode_id: str, success: bool) -> Path | None:
        from eval.video import video_filename

        if self.writer.num_frames == 0:
            self.writer.abort()
            return None
        self.writer.close()
        final = self.dir / video_filename(self.scenario, episode_id, success)
        os.replace(self.partial, final)
        return final

    def abort(self) -> None:
        self.writer.abort()


def target_marks(sim: RearrangeSim, task: Any) -> list[tuple[np.ndarray, tuple[float, ...]]]:
    """Marks for every target object (red) and goal (green); the active skill's target is opaque."""
    marks = []
    active = task.sensor_target
    problem = task.problem
    for obj, goal in zip(problem.objects, problem.goals, strict=True):
        is_active = active.object == obj
        alpha = ACTIVE_ALPHA if is_active else TARGET_RGBA[3]
        marks.append((np.asarray(sim.object_pos(obj), dtype=np.float64), (*TARGET_RGBA[:3], alpha)))
        marks.append((np.asarray(problem.goal_pos[goal], dtype=np.float64),
                      (*GOAL_RGBA[:3], ACTIVE_ALPHA if is_active else GOAL_RGBA[3])))
    return marks


if __name__ == "__main__":
    sys.exit(main())
