"""The HAB agent's `agent` node of configs/eval_hab.yaml: its agent types, modes and choices, `AgentSettings`
(every setting of the agent's loop in one place, with the plain agent's values as defaults), the validation that
turns a bad value into one line naming the key and what it may be (before any episode runs), `planned_episodes`
(the order in which the agent handles each episode's targets), and `make_agent`, which builds the agent a node
describes (oracle or learned skills)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.oracle_controllers import OracleSkills, SkillController
from eval.skill_library import LearnedSkills
from planner.grounding import SKILL_OF_ACTION
from planner.search import GroundAction
from skills.definitions import SKILL_NAMES

if TYPE_CHECKING:
    from eval.agent import HabAgent

AGENT_TYPES = ("oracle", "tp-srl", "tp-srl-nonav")
AGENT_MODES = ("replan", "fixed")
RESET_ARM_CHOICES = ("never", "retries", "between")


@dataclass(frozen=True)
class AgentSettings:
    """How the agent runs its plan (eval/agent.py's docstring says what each does). The defaults are the plain
    agent (every guard and scripted motion off, as habitat); configs/eval_hab.yaml holds the shipped values and
    the measurements behind them, and `from_config` reads them."""

    max_replans: int = 0                 # re-plans after a failed step (replan mode)
    renavigate: bool = False             # a re-plan drops robot_at (config key renavigate_after_failure)
    settle_steps: int = 0                # stand still this long when the plan is done
    mode: str = "replan"                 # AGENT_MODES
    fixed_renavigate_after: tuple[str, ...] = ("open_cab",)  # fixed mode: a nav inserted after these plan actions
    reset_arm: str = "never"             # RESET_ARM_CHOICES (config: reset_arm, or fixed_reset_arm in fixed mode)
    reset_arm_max_steps: int = 50        # habitat's reset_arm max_skill_steps
    reset_arm_stall_steps: int = 0       # end a reset_arm that furniture blocks this long (0: off)
    reset_arm_lift_first: bool = False   # raise a lowered shoulder alone first
    rest_arm_during_nav: bool = False    # a nav call brings the arm to rest while it drives, instead of a reset first
    retry_backoff: float = 0.0           # m a retry backs the base away first (0: off)
    retry_backoff_forward: bool = False  # the back-off may drive forward (a nav reversed into furniture)
    nav_unstick_steps: int = 0           # drive a wedged base out after this many blocked steps (0: off)
    nav_unstick_distance: float = 0.5    # m of that drive
    nav_unstick_turn: bool = False       # after that drive a nav turns in place to face its path
    nav_face_path: bool = False          # a nav whose path leads off behind it turns to face it first
    unstick_skills: tuple[str, ...] = ("nav",)  # the skills whose calls nav_unstick_steps watches
    release_guard: float = 0.0           # m from the goal beyond which a place may not let go (0: off)
    release_settle_steps: int = 0        # put a release off while the held object swings (0: off)
    release_settle_speed: float = 0.1    # m/s: "swings"
    pick_push_guard: float = 0.0         # m a pick may push its target along (0: off)
    place_shut_guard: float = 0.0        # share of its range a place may push its goal's container shut (0: off)
    pick_base_scale: float = 1.0         # a pick call's base command times this, in (0, 1] (1: as the policy says)
    pick_base_smoothing: float = 0.0     # a pick call's base command averaged with the last one, weight in [0, 1) (0: off)

    def __post_init__(self) -> None:
        """ValueError (one line) for a mode or reset_arm no agent has; lists become tuples."""
        if self.mode not in AGENT_MODES:
            raise ValueError(f"unknown agent.mode '{self.mode}'; valid choices: {', '.join(AGENT_MODES)}")
        if self.reset_arm not in RESET_ARM_CHOICES:
            raise ValueError(f"unknown agent.reset_arm '{self.reset_arm}'; "
                             f"valid choices: {', '.join(RESET_ARM_CHOICES)}")
        for name in ("fixed_renavigate_after", "unstick_skills"):  # lists from a config or a caller
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @classmethod
    def from_config(cls, agent_cfg: Mapping[str, Any]) -> AgentSettings:
        """The settings an `agent` node gives (validate it first: `check_agent_config`); absent keys keep
        the defaults."""
        keys = {f.name: f.name for f in fields(cls)}
        keys["renavigate"] = "renavigate_after_failure"
        keys["reset_arm"] = "fixed_reset_arm" if agent_cfg.get("mode") == "fixed" else "reset_arm"
        values: dict[str, Any] = {}
        for f in fields(cls):
            if keys[f.name] in agent_cfg:
                default = getattr(_PLAIN, f.name)
                value = agent_cfg[keys[f.name]]
                values[f.name] = tuple(value) if isinstance(default, tuple) else type(default)(value)
        return cls(**values)


_PLAIN = AgentSettings()


def check_agent_config(agent_cfg: Mapping[str, Any]) -> None:
    """Validate the `agent` node of configs/eval_hab.yaml; `ConfigError` (one line naming the key and
    the valid values) on the first problem. Keys added later (`mode`, `fixed_renavigate_after`) may
    be absent: their defaults apply."""
    from configs.compose import ConfigError, unknown_choice

    mode = agent_cfg.get("mode", "replan")
    if mode not in AGENT_MODES:
        raise ConfigError(unknown_choice("agent.mode", str(mode), AGENT_MODES))
    for key, default in (("max_replans", None), ("settle_steps", None),
                         *((k, getattr(_PLAIN, k)) for k in ("reset_arm_max_steps", "reset_arm_stall_steps",
                                                             "nav_unstick_steps", "release_settle_steps"))):
        value = agent_cfg.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"agent.{key} must be an integer >= 0; got {value!r}")
    for key, zero_ok, note in (("retry_backoff", True, ""), ("nav_unstick_distance", False, ""),
                               ("release_guard", True, " (0: off)"), ("pick_push_guard", True, " (0: off)"),
                               ("target_order_radius", True, " (0: index order)")):
        value = agent_cfg.get(key, getattr(_PLAIN, key, 0.0))  # target_order_radius: eval-hab reads it, not the agent
        number = not isinstance(value, bool) and isinstance(value, (int, float))
        if not number or not (0.0 <= value <= 2.0 if zero_ok else 0.0 < value <= 2.0):
            span = "[0, 2]" if zero_ok else "(0, 2]"
            raise ConfigError(f"agent.{key} must be a number of metres in {span}{note}; got {value!r}")
    share = agent_cfg.get("place_shut_guard", _PLAIN.place_shut_guard)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
        raise ConfigError(f"agent.place_shut_guard must be a share of the joint's range in [0, 1] (0: off); "
                          f"got {share!r}")
    scale = agent_cfg.get("pick_base_scale", _PLAIN.pick_base_scale)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0.0 < scale <= 1.0:
        raise ConfigError(f"agent.pick_base_scale must be a number in (0, 1] (1: off); got {scale!r}")
    smoothing = agent_cfg.get("pick_base_smoothing", _PLAIN.pick_base_smoothing)
    if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not 0.0 <= smoothing < 1.0:
        raise ConfigError(f"agent.pick_base_smoothing must be a weight in [0, 1) (0: off); got {smoothing!r}")
    speed = agent_cfg.get("release_settle_speed", _PLAIN.release_settle_speed)
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0.0 < speed <= 10.0:
        raise ConfigError(f"agent.release_settle_speed must be a speed in m/s in (0, 10]; got {speed!r}")
    for key in ("reset_arm", "fixed_reset_arm"):
        value = agent_cfg.get(key, _PLAIN.reset_arm)
        if value not in RESET_ARM_CHOICES:
            raise ConfigError(unknown_choice(f"agent.{key}", str(value), RESET_ARM_CHOICES))
    for key in ("deterministic", "sample_retries", "reset_arm_lift_first", "retry_backoff_forward",
                "rest_arm_during_nav", "target_order_travel", "nav_unstick_turn", "nav_face_path"):
        if not isinstance(agent_cfg.get(key, False), bool):
            raise ConfigError(f"agent.{key} must be true or false; got {agent_cfg.get(key)!r}")
    for key in ("oracle_skills", "sampled_skills", "unstick_skills"):
        names = agent_cfg.get(key, ())
        if isinstance(names, str) or not isinstance(names, Sequence):
            raise ConfigError(f"agent.{key} must be a list of skills; got {names!r}")
        for name in names:
            if name not in SKILL_NAMES:
                raise ConfigError(unknown_choice(f"agent.{key} entry", str(name), SKILL_NAMES))
    after = agent_cfg.get("fixed_renavigate_after", ())
    if isinstance(after, str) or not isinstance(after, Sequence):
        raise ConfigError(f"agent.fixed_renavigate_after must be a list of plan actions; got {after!r}")
    for name in after:
        if name not in SKILL_OF_ACTION:
            raise ConfigError(unknown_choice("agent.fixed_renavigate_after entry", str(name), tuple(SKILL_OF_ACTION)))


def planned_episodes(episodes: Sequence[Any], agent_cfg: Mapping[str, Any],
                     sim_cfg: Mapping[str, Any] | None = None) -> list:
    """The episodes with their targets in the order the agent handles them (planner/target_order.py): in
    replan mode clutter-aware (`agent.target_order_radius`), with `agent.target_order_travel` the shortest
    trip among those orders on each layout's nav map (the robot's radius from `sim_cfg`); habitat's index
    order in fixed mode."""
    from planner.target_order import ordered_episode

    if agent_cfg.get("mode", "replan") != "replan":
        return list(episodes)
    radius = float(agent_cfg.get("target_order_radius", 0.0))
    if not agent_cfg.get("target_order_travel", False):
        return [ordered_episode(ep, radius) for ep in episodes]
    from rearrange.layout import cached_layout
    from rearrange.nav_maps import layout_navmap
    from rearrange.sim import load_sim_config

    robot_radius = float(load_sim_config(sim_cfg)["base"]["radius"])
    return [ordered_episode(ep, radius, layout_navmap(cached_layout(ep.layout_seed), robot_radius).geodesic_distance)
            for ep in episodes]


def skills_in_plans(plans: Sequence[Sequence[GroundAction]], agent_type: str,
                    every_skill: bool = False) -> list[str]:
    """The skills an agent type needs for these plans, in first-use order; `every_skill`: then every
    other skill the agent type may call (a re-plan may call any)."""
    names = [SKILL_OF_ACTION[step.name] for plan in plans for step in plan]
    if every_skill:
        names += list(SKILL_NAMES)
    out: list[str] = []
    for skill in names:
        if skill == "nav" and agent_type == "tp-srl-nonav":
            continue
        if skill not in out:
            out.append(skill)
    return out


def make_agent(agent_type: str, agent_cfg: Mapping[str, Any], checkpoints: Mapping[str, Path] | None = None,
               oracle_cfg: Mapping[str, Any] | None = None) -> HabAgent:
    """The agent of a type: `oracle` uses the oracle controllers, the `tp-srl` types the checkpoints.

    ValueError (one line) for an unknown type; `ConfigError` (a ValueError) for a bad `agent` node.
    """
    from eval.agent import HabAgent  # the agent module reads this one's constants

    if agent_type not in AGENT_TYPES:
        raise ValueError(f"unknown agent '{agent_type}'; valid choices: {', '.join(AGENT_TYPES)}")
    check_agent_config(agent_cfg)
    if agent_type == "oracle":
        skills: Callable[[str], SkillController] = OracleSkills(oracle_cfg)
    else:
        oracle_skills = tuple(agent_cfg.get("oracle_skills") or ())
        skills = LearnedSkills(checkpoints or {}, deterministic=bool(agent_cfg["deterministic"]),
                               scripted=dict.fromkeys(oracle_skills, OracleSkills(oracle_cfg)),
                               sample_retries=bool(agent_cfg.get("sample_retries", False)),
                               sampled_skills=tuple(agent_cfg.get("sampled_skills") or ()))
    return HabAgent(agent_type, skills, AgentSettings.from_config(agent_cfg))
