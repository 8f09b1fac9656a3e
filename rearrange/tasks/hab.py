"""The HAB scenario task (habitat-lab's RearrangePddlTask): Tidy House, Prepare Groceries, Set Table.

One episode of a scenario dataset is one long-horizon task on the full 11-dim action. The task
builds the episode's PDDL problem (`planner.problem.problem_from_episode`), reads the symbolic
state off the simulator after every step (`planner.predicates.evaluate_state`, thresholds from
configs/planner.yaml) and reports:

- stage measures `stage/<name>` (open_k, pick_i, place_i, close_k as the problem defines them),
  each set once, on the first step its atoms hold and its required stages were reached: pick_i
  when target i is first held, place_i when target i rests at its goal after being picked;
- `goal_reached`: every goal atom holds (all targets within object_at_dist of their goals, hand
  empty; closed containers too when the scenario asks for it);
- success (habitat `pddl_success`): the goal holds on the step the agent calls stop
  (`full_action[10] > 0`); stop ends the episode, as does the contact-force limit;
- reward (habitat rl_hierarchical): `subgoal_reward` per newly reached stage, `success_reward` on
  success, `slack` per step, minus the contact-force penalty. Numbers: configs/eval_hab.yaml.

`register_hab_envs()` adds rearrange/TidyHouse-v0, PrepareGroceries-v0 and SetTable-v0 to
`rearrange.env.ENV_SPECS` and registers them with Gymnasium.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from rearrange.actions import ACTION_SLICES, FULL_SUBSETS
from rearrange.episodes import Episode
from rearrange.sensors import SensorTarget, target_from_episode
from rearrange.tasks.base import TaskStep
from rearrange.tasks.rewards import ForceMonitor

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

HAB_ENV_IDS: dict[str, str] = {
    "tidy_house": "rearrange/TidyHouse-v0",
    "prepare_groceries": "rearrange/PrepareGroceries-v0",
    "set_table": "rearrange/SetTable-v0",
}
STOP_INDEX = ACTION_SLICES["stop"].start


def load_hab_config(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """`configs/eval_hab.yaml` (with Hydra overrides) as a plain dict."""
    from configs.compose import compose, to_plain

    return to_plain(compose("eval_hab", overrides))


def hab_task_node(cfg: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The `hab_task` node of a composed eval_hab config (or the node itself; None: the defaults)."""
    if cfg is None:
        cfg = load_hab_config()
    return cfg.get("hab_task", cfg)


class HabTask:
    """A HAB scenario on the full action space; stage measures, success and reward per step."""

    def __init__(self, scenario: str, cfg: Mapping[str, Any] | None = None,
                 obs_keys: Sequence[str] | None = None) -> None:
        from planner.predicates import PredicateThresholds, load_planner_cfg
        from planner.problem import load_scenario_cfg

        node = hab_task_node(cfg)
        self.scenario = scenario
        self.scenario_cfg = load_scenario_cfg(scenario)  # ValueError naming the scenarios
        self.thresholds = PredicateThresholds.from_cfg(load_planner_cfg()["predicates"])
        max_steps = node["max_steps"]
        self.max_steps = int(self.scenario_cfg["max_episode_steps"] if max_steps is None else max_steps)
        reward = node["reward"]
        self.subgoal_reward = float(reward["subgoal_reward"])
        self.success_reward = float(reward["success_reward"])
        self.slack = float(reward["slack"])
        self.force = ForceMonitor(reward["force"])
        self.obs_keys = tuple(node["obs_keys"] if obs_keys is None else obs_keys)
        self.action_subsets = FULL_SUBSETS
        self.grip_disabled = False
        self.arm_to_rest = False  # the agent drives the arm itself (agent.rest_arm_during_nav)
        self.base_reverse_speed = 1.0  # the agent expands each skill's actions with the skill's own
        self.sensor_target = SensorTarget()
        self.problem: Any = None
        self.state: frozenset = frozenset()
        self.stage_step: dict[str, int] = {}  # stage -> step on which it was first reached
        self.steps = 0

    # ------------------------------------------------------------------ Task interface

    def reset(self, sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
        from planner.problem import problem_from_episode

        self.problem = problem_from_episode(episode, sim.layout, self.scenario_cfg, self.thresholds)
        self.sensor_target = target_from_episode(episode)
        self.grip_disabled = False
        self.force.reset()
        self.steps = 0
        self.stage_step = {}
        self.state = self.symbolic_state(sim)
        self._new_stages()  # a stage true from the start counts as reached on step 0, unpaid

    def step(self, sim: RearrangeSim, full_action: np.ndarray) -> TaskStep:
        self.steps += 1
        self.state = self.symbolic_state(sim)
        new = self._new_stages()
        goal = self.goal_reached()
        stop = float(np.asarray(full_action).reshape(-1)[STOP_INDEX]) > 0.0
        success = stop and goal
        fs = self.force(sim.robot_contact_force)
        terms = {
            "slack": self.slack,
            "subgoal": self.subgoal_reward * len(new),
            "success": self.success_reward if success else 0.0,
            "force": -fs.penalty,
        }
        info = self.stage_info()
        info.update({
            "goal_reached": float(goal),
            "called_stop": float(stop),
            "hab_success": float(success),
            "accum_force": fs.accumulated,
            "force_terminate": float(fs.terminate),
        })
        info.update({f"reward/{k}": float(v) for k, v in terms.items()})
        return TaskStep(reward=float(sum(terms.values())), terminated=stop or fs.terminate, success=success,
                        info=info)

    # ------------------------------------------------------------------ measures

    def symbolic_state(self, sim: RearrangeSim) -> frozenset:
        """The ground atoms of the episode's problem that hold in the sim now."""
        from planner.predicates import SymbolicInputs, evaluate_state

        return evaluate_state(SymbolicInputs.from_sim(sim), self.problem, self.thresholds)

    def goal_reached(self) -> bool:
        """Every goal atom of the problem holds in the last symbolic state."""
        return bool(self.problem.goal <= self.state)

    def _new_stages(self) -> list[str]:
        new = []
        for stage in self.problem.stages:
            if stage.name in self.stage_step:
                continue
            if all(r in self.stage_step for r in stage.requires) and stage.atoms <= self.state:
                self.stage_step[stage.name] = self.steps
                new.append(stage.name)
        return new

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The episode's stages in plan order (empty before the first reset)."""
        return () if self.problem is None else tuple(s.name for s in self.problem.stages)

    def stage_info(self) -> dict[str, float]:
        """`stage/<name>`: 1.0 once the stage was reached, else 0.0; `stages_reached`: their count."""
        info = {f"stage/{name}": float(name in self.stage_step) for name in self.stage_names}
        info["stages_reached"] = float(len(self.stage_step))
        return info

    # ------------------------------------------------------------------ what the agent controls

    def point_sensors(self, target: SensorTarget, grip_disabled: bool = False) -> None:
        """Point the target-relative sensors at the active skill's target; `grip_disabled` makes the
        env keep the grasp state whatever the grip entry says (skills without a grip output)."""
        self.sensor_target = target
        self.grip_disabled = bool(grip_disabled)


def make_hab_task(cfg: Mapping[str, Any] | None = None, scenario: str = "tidy_house") -> HabTask:
    """Factory for the env registry: `cfg` is the composed eval_hab config (None: its defaults)."""
    return HabTask(scenario, cfg)


def register_hab_envs() -> None:
    """Add the three scenario ids to `rearrange.env.ENV_SPECS` and register them with Gymnasium."""
    from rearrange.env import ENV_SPECS, EnvSpec, register_envs

    for scenario, env_id in HAB_ENV_IDS.items():
        if env_id not in ENV_SPECS:
            ENV_SPECS[env_id] = EnvSpec(task_factory=partial(make_hab_task, scenario=scenario),
                                        config_name="eval_hab", episode_kind=scenario, default_episode_count=2)
    register_envs()
