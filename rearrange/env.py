"""`RearrangeEnv`: the Gymnasium API over `RearrangeSim`, a `Task` and an episode dataset.

`reset(seed=...)` picks an episode with the env's seeded RNG, (re)builds the sim for that episode's
layout and objects, applies the episode state and lets the task start. `step(action)` expands the
task's action subsets into the 11-vector, steps the sim, and returns the observation dict, the
task's reward, `terminated` from the task, `truncated` at `task.max_steps`, and an info dict with
every measure (contact force, distances, joint states) plus the task's own entries.

The env is constructible from plain, picklable arguments and builds the sim (and its GL context)
lazily on the first `reset`, so it can be created inside forkserver/spawn worker processes.
Registered ids are listed in `ENV_SPECS`; `register_envs()` registers them with Gymnasium (importing
`rearrange` does). In a fresh worker process use the module prefix so Gymnasium imports the package:
`functools.partial(gymnasium.make, "rearrange:rearrange/Pick-v0", episodes=path)`.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from rearrange.actions import action_space, check_subset_settings, expand_action
from rearrange.arm_rest import arm_rest_command
from rearrange.episodes import Episode, load_episodes
from rearrange.layout import cached_layout
from rearrange.sensors import SensorTarget, camera_settings, observation_space, observe
from rearrange.tasks.base import Task, make_explore_task

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

TARGET_RGBA = (1.0, 0.2, 0.2, 0.6)
GOAL_RGBA = (0.2, 1.0, 0.2, 0.6)


class RearrangeEnv(gymnasium.Env):
    """One robot in one apartment at a time, episodes from a dataset, scored by a `Task`."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self,
        task: Task | Callable[[], Task],
        episodes: Sequence[Episode] | str | os.PathLike,
        sim_cfg: Mapping[str, Any] | None = None,
        render_width: int = 256,
        render_height: int = 256,
        episode_order: str = "sample",
        render_mode: str | None = "rgb_array",
        sim_cache_size: int = 1,
    ) -> None:
        self.task: Task = task if hasattr(task, "step") else task()  # type: ignore[operator]
        if isinstance(episodes, (str, os.PathLike)):
            episodes = load_episodes(episodes)
        self.episodes: list[Episode] = list(episodes)
        if not self.episodes:
            raise ValueError("RearrangeEnv needs at least one episode")
        if episode_order not in ("sample", "cycle"):
            raise ValueError(f"unknown episode_order '{episode_order}'; valid choices: sample, cycle")
        self.episode_order = episode_order
        self.sim_cfg = dict(sim_cfg) if sim_cfg is not None else None
        self.render_width = int(render_width)
        self.render_height = int(render_height)
        self.render_mode = render_mode
        depth_shape, max_depth = camera_settings(self.sim_cfg)
        self.observation_space = observation_space(self.task.obs_keys, depth_shape, max_depth)
        self.action_space = action_space(self.task.action_subsets)
        check_subset_settings(self.task.action_subsets, self.sim_cfg)
        self.sim_cache_size = max(int(sim_cache_size), 1)
        self.sim: RearrangeSim | None = None  # built at the first reset
        self._sims: OrderedDict[tuple, Any] = OrderedDict()  # (layout seed, object kinds) -> sim, LRU
        self.current_episode: Episode | None = None
        self._episode_cursor = 0
        self._steps = 0

    # ------------------------------------------------------------------ sim management

    def _sim_for(self, episode: Episode) -> Any:
        """The sim for this episode's layout and object kinds: reused if cached, else built.

        Building a sim takes ~20 ms, but its first frame creates a GL context (~0.2 s on llvmpipe);
        `sim_cache_size` > 1 keeps that many sims (and contexts) alive, least recently used first out.
        """
        key = (episode.layout_seed, tuple(episode.object_kinds()))
        if key in self._sims:
            self._sims.move_to_end(key)
        else:
            from rearrange.sim import RearrangeSim

            while len(self._sims) >= self.sim_cache_size:
                _, old = self._sims.popitem(last=False)
                old.close()
            self._sims[key] = RearrangeSim(cached_layout(episode.layout_seed), episode.object_kinds(),
                                           self.sim_cfg)
        self.sim = self._sims[key]
        return self.sim

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without sims (MuJoCo data and GL contexts stay in their process)."""
        state = self.__dict__.copy()
        state["_sims"] = OrderedDict()
        state["sim"] = None
        return state

    def _next_episode(self) -> Episode:
        if self.episode_order == "cycle":
            ep = self.episodes[self._episode_cursor % len(self.episodes)]
            self._episode_cursor += 1
            return ep
        return self.episodes[int(self.np_random.integers(len(self.episodes)))]

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start the next episode: sampled with the env's RNG ("sample") or in order ("cycle"; a
        seed restarts the cycle at episode 0); `options={"episode_index": i}` picks one directly."""
        super().reset(seed=seed)
        if seed is not None:
            self._episode_cursor = 0
        if options and "episode_index" in options:
            episode = self.episodes[int(options["episode_index"])]
        else:
            episode = self._next_episode()
        sim = self._sim_for(episode)
        apply_episode(sim, episode, self.np_random)
        self.current_episode = episode
        self._steps = 0
        self.task.reset(sim, episode, self.np_random)
        return self._obs(), self._info(success=False, task_info={})

    def step(self, action: np.ndarray):
        if self.sim is None or self.current_episode is None:
            raise RuntimeError("call reset() before step()")
        return self.step_full(expand_action(self.task.action_subsets, action, self.task.base_reverse_speed, self.sim))

    def step_full(self, full: np.ndarray, observe: bool = True):
        """`step` with a full 11-dim joint-space action (an oracle's, already restricted to the task's
        subsets with `rearrange.actions.restrict_full`). `observe=False` skips the sensors (the obs
        returned is None; `observation()` reads them later): an oracle prefix that no policy sees."""
        if self.sim is None or self.current_episode is None:
            raise RuntimeError("call reset() before step()")
        full = np.asarray(full, dtype=np.float64).reshape(-1)
        grip = None if ("grip" not in self.task.action_subsets or self.task.grip_disabled) else float(full[7])
        if self.task.arm_to_rest:  # the arm swings back to rest by itself (nav's `arm_to_rest`)
            full = full.copy()  # the caller's action stays as it was
            full[0:7] = arm_rest_command(self.sim)
        self.sim.step(full[0:7], grip, full[8:10])
        ts = self.task.step(self.sim, full)
        self._steps += 1
        terminated = bool(ts.terminated)
        truncated = (not terminated) and self._steps >= self.task.max_steps
        obs = self._obs() if observe else None
        return obs, float(ts.reward), terminated, truncated, self._info(ts.success, ts.info)

    def observation(self) -> dict[str, np.ndarray]:
        """The task's sensors read now (what the last `reset` or `step` returned, unless the sim moved since)."""
        if self.sim is None:
            raise RuntimeError("call reset() before observation()")
        return self._obs()

    def keep_grasp(self) -> None:
        """Ignore the grip entry of the following actions, so the grasp state stays as it is (the HAB
        agent's wait and stop steps), until the task is pointed at its next skill or reset."""
        self.task.grip_disabled = True

    def target_marks(self, with_handle: bool = False) -> list[tuple[np.ndarray, tuple[float, ...]]]:
        """Video marks for the task's target object, its goal and (optionally) the target handle."""
        target = self.task.sensor_target
        marks = []
        if target.object is not None:
            marks.append((np.asarray(self.sim.object_pos(target.object)), TARGET_RGBA))
        if target.goal_pos is not None:
            marks.append((np.asarray(target.goal_pos), GOAL_RGBA))
        if with_handle and target.handle is not None:
            marks.append((np.asarray(self.sim.handle_pos(target.handle)), TARGET_RGBA))
        return marks

    def render(self) -> np.ndarray:
        """Third-person RGB frame (H, W, 3) uint8 with the target object and its goal marked."""
        if self.sim is None:
            raise RuntimeError("call reset() before render()")
        return self.sim.render_third_rgb(self.render_width, self.render_height, self.target_marks())

    def close(self) -> None:
        for sim in self._sims.values():
            sim.close()
        self._sims.clear()
        self.sim = None

    # ------------------------------------------------------------------ observations and measures

    def _obs(self) -> dict[str, np.ndarray]:
        return observe(self.sim, self.task.sensor_target, self.task.obs_keys)

    def _info(self, success: bool, task_info: Mapping[str, float]) -> dict[str, float]:
        info = measures(self.sim, self.task.sensor_target)
        info["success"] = float(success)
        info["num_steps"] = float(self._steps)
        info.update({k: float(v) for k, v in task_info.items()})
        return info


def apply_episode(sim: RearrangeSim, episode: Episode, rng: np.random.Generator) -> None:
    """Put the sim in the episode's start state (objects, joints, robot pose, held object)."""
    objects = {o.name: (np.asarray(o.pos, dtype=np.float64), np.asarray(o.quat, dtype=np.float64))
               for o in episode.objects}
    if episode.robot_start is not None:
        xy = np.asarray(episode.robot_start["xy"], dtype=np.float64)
        yaw = float(episode.robot_start["yaw"])
    else:
        xy = sim.navmap.sample_navigable(rng)
        yaw = float(rng.uniform(-np.pi, np.pi))
    sim.reset_state(objects, dict(episode.art_states), xy, yaw, grasped=episode.info.get("start_holding"))


def measures(sim: RearrangeSim, target: SensorTarget) -> dict[str, float]:
    """Every measure of the current state, as floats: contact force, distances, joint states."""
    ee = np.asarray(sim.ee_pos, dtype=np.float64)
    info: dict[str, float] = {
        "robot_contact_force": float(sim.robot_contact_force),
        "base_collided": float(bool(sim.base_collided)),
        "is_holding": float(sim.grasped is not None),  # object or handle, like the sensor
        "holding_object": float(sim.grasped is not None and sim.grasped in sim.object_names),
        "ee_to_rest_dist": float(np.linalg.norm(np.asarray(sim.resting_pos_base) - np.asarray(sim.ee_pos_base))),
    }
    if target.object is not None:
        obj = np.asarray(sim.object_pos(target.object), dtype=np.float64)
        info["ee_to_object_dist"] = float(np.linalg.norm(obj - ee))
        info["target_held"] = float(sim.grasped == target.object)
        if target.goal_pos is not None:
            info["object_to_goal_dist"] = float(np.linalg.norm(obj - np.asarray(target.goal_pos)))
    if target.handle is not None:
        info["ee_to_handle_dist"] = float(np.linalg.norm(np.asarray(sim.handle_pos(target.handle)) - ee))
    if target.nav_goal is not None:
        g = np.asarray(target.nav_goal, dtype=np.float64)
        info["base_to_nav_goal_dist"] = float(np.linalg.norm(g[:2] - np.asarray(sim.base_xy)))
    for name in sim.art_names:
        info[f"art_q/{name}"] = float(sim.art_q(name))
    return info


# ----------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class EnvSpec:
    """A registered env id: how to build its task, its config and its default episodes."""

    task_factory: Callable[[Any], Task]  # called with the config file's node as a dict (or None)
    config_name: str | None = None  # Hydra config under configs/ (e.g. "skill/pick"), None for none
    episode_kind: str = "pick"  # episodes generated when no dataset is given
    default_episode_count: int = 16


# id -> spec. To add an id (e.g. "rearrange/Pick-v0"), add a row here whose factory imports its task
# module inside the function body, so `import rearrange` stays cheap:
#     def _pick_task(cfg): from rearrange.tasks.pick import PickTask; return PickTask(cfg)
#     "rearrange/Pick-v0": EnvSpec(_pick_task, config_name="skill/pick", episode_kind="pick"),
ENV_SPECS: dict[str, EnvSpec] = {
    "rearrange/Explore-v0": EnvSpec(task_factory=make_explore_task, config_name=None, episode_kind="pick"),
}


def make_registered_env(env_id: str, episodes: Sequence[Episode] | str | os.PathLike | None = None,
                        split: str = "train", episode_seed: int = 0, episode_count: int | None = None,
                        config_overrides: Sequence[str] = (), **env_kwargs: Any) -> RearrangeEnv:
    """Build the env of a registered id (what `gymnasium.make(env_id, ...)` calls).

    Without `episodes`, a small dataset of the spec's episode kind is generated deterministically
    from `split` and `episode_seed`. The config (if the spec names one) is composed with
    `config_overrides`; the task factory gets the node of that file (`cfg["skill"]` for
    "skill/pick"), and a top-level `sim` node, if present, is the sim config.
    """
    if env_id not in ENV_SPECS:
        raise ValueError(f"unknown env id '{env_id}'; valid choices: {', '.join(sorted(ENV_SPECS))}")
    spec = ENV_SPECS[env_id]
    cfg: dict[str, Any] | None = None
    task_cfg: dict[str, Any] | None = None
    if spec.config_name is not None:
        from configs.compose import compose, to_plain

        cfg = to_plain(compose(spec.config_name, config_overrides))
        group = spec.config_name.split("/")[0] if "/" in spec.config_name else None
        # Hydra nests a config file of a group under the group name ("skill/pick" -> cfg["skill"])
        task_cfg = cfg[group] if group is not None and group in cfg else cfg
    task = spec.task_factory(task_cfg)
    if episodes is None:
        from rearrange.generate import generate_episodes

        count = spec.default_episode_count if episode_count is None else int(episode_count)
        episodes = generate_episodes(spec.episode_kind, split, count, episode_seed)
    if "sim_cfg" not in env_kwargs and cfg is not None and cfg.get("sim") is not None:
        env_kwargs["sim_cfg"] = cfg["sim"]
    return RearrangeEnv(task, episodes, **env_kwargs)


def register_envs() -> None:
    """Register every id of `ENV_SPECS` with Gymnasium (idempotent)."""
    for env_id in ENV_SPECS:
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point="rearrange.env:make_registered_env",
                           kwargs={"env_id": env_id})

