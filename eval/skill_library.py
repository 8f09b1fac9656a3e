"""Learned skills for the HAB agent: finding their checkpoints, loading them, serving their observations.

Checkpoints (`resolve_checkpoints`), per skill, the first of:
1. `agent.checkpoints.<skill>=PATH`: a checkpoint file, or a `train-skill` run folder (its newest checkpoint);
2. `--checkpoint-dir DIR`: `DIR/<skill>.pt`, else the newest `DIR/<skill>/checkpoints/ckpt_<step>.pt`
   (`train-skill` writes there, by default under `runs/skill/<skill>/`, so `--checkpoint-dir runs/skill`
   evaluates the latest state of every skill's run);
3. neither given: the checkpoint shipped in the repository, `checkpoints/<skill>.pt` (`SHIPPED_CHECKPOINTS`);
   an agent type with a folder in `AGENT_CHECKPOINT_DIRS` takes `checkpoints/<folder>/<skill>.pt` first where
   that exists (tp-srl-nonav's pick, trained to cross the house to its object: `checkpoints/nonav/pick.md`).
Nothing found is a `CheckpointMissing` whose one line names the skill, what was searched and how to pass one.

Observations (`LearnedSkills.serve_observations`): each checkpoint's config holds the `sim` node it was
trained with. The HAB env gets the head camera that most of the loaded depth-reading skills were trained
with; a skill trained with another camera (size, max depth, render or ray-cast) gets its `head_depth`
from its controller, rendered or ray-cast from the sim state with its own camera
(`rearrange.sensors.head_depth_as`), and every other observation from the env. So skills trained with
different sensors run together in one episode. What cannot be served (a sensor the env does not have,
an unknown backend, another field of view or tilt, a shape unlike the checkpoint's observation space)
is an `ObservationMismatch` with one line, raised when the skills are loaded, before any episode runs.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rearrange.actions import ACTION_SLICES, expand_action
from rearrange.sensors import SENSOR_NAMES, SENSORS, HeadCamera, SensorTarget, head_depth_as, sensor_space
from skills.definitions import SkillDef, get_skill

if TYPE_CHECKING:
    from rearrange.sim import RearrangeSim

GRIP = ACTION_SLICES["grip"].start
# the trained skills that ship with the repository: checkpoints/<skill>.pt (found from this file, not the cwd)
SHIPPED_CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
# skills shipped for one agent type only, under SHIPPED_CHECKPOINTS/<folder>/<skill>.pt: that agent's default
AGENT_CHECKPOINT_DIRS = {"tp-srl-nonav": "nonav"}

Sensor = Callable[[Any, SensorTarget], np.ndarray]


class CheckpointMissing(ValueError):
    """A skill the agent needs has no usable checkpoint; the message is one line."""


class ObservationMismatch(ValueError):
    """A skill's observations cannot be served as it was trained; the message is one line."""


# ----------------------------------------------------------------------------- controllers


def with_current_hab_settings(trained: SkillDef) -> SkillDef:
    """`trained` (a checkpoint's skill: observations, actions) with how the HAB agent runs it, timeout and
    termination, from the current configs/skill/<name>.yaml `hab` node: they are settings of the agent,
    not of the training, so a change there applies to skills trained before it."""
    current = get_skill(trained.name, base_movement=trained.base_movement)
    return dataclasses.replace(trained, termination=current.termination, timeout=current.timeout,
                               pddl_actions=current.pddl_actions, start_zone_radius=current.start_zone_radius)


class PolicyController:
    """A learned skill policy (`skills.policy.SkillPolicy`) behind the controller interface.

    Like habitat's hrl skills, the grip is forced on once a pick holds its object and forced off
    once a place has released it, so a noisy grip output cannot undo the skill's effect.
    `own_sensors` (set by `LearnedSkills.serve_observations`) are observations the controller computes
    itself, from the sim, instead of taking the env's (head depth with the skill's own camera).
    `sample_retries`: a deterministic policy samples its actions on a retry (a call the episode ran
    before), so that it does not repeat the failure exactly.
    """

    def __init__(self, policy: Any, own_sensors: Mapping[str, Sensor] | None = None,
                 sample_retries: bool = False) -> None:
        self.policy = policy
        self.skill: SkillDef = with_current_hab_settings(policy.skill)
        self.own_sensors: dict[str, Sensor] = dict(own_sensors or {})
        self.target = SensorTarget()
        self._released = False
        self._deterministic = bool(policy.deterministic)
        self.sample_retries = sample_retries

    def start(self, sim: RearrangeSim, target: SensorTarget, retry: bool = False) -> None:
        self.policy.deterministic = self._deterministic and not (retry and self.sample_retries)
        self.policy.reset()
        self.target = target
        self._released = False

    def act(self, sim: RearrangeSim, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        if self.own_sensors:
            obs = {**obs, **{k: f(sim, self.target) for k, f in self.own_sensors.items()}}
        full = expand_action(self.skill.action_subsets, self.policy.act(obs), self.skill.base_reverse_speed, sim)
        if self.skill.name == "pick" and self.target.object is not None and sim.grasped == self.target.object:
            full[GRIP] = 1.0
        if self.skill.name == "place":
            self._released |= sim.grasped is None
            if self._released:
                full[GRIP] = -1.0
        return full


class LearnedSkills:
    """Skill name -> `PolicyController` from checkpoint files (loaded once, on first use).

    `scripted` maps the skills that run another controller instead (eval-hab's `agent.oracle_skills`:
    skill -> a callable giving its oracle controller); they need no checkpoint and read no observations.
    """

    def __init__(self, checkpoints: Mapping[str, str | os.PathLike], deterministic: bool = True,
                 scripted: Mapping[str, Callable[[str], Any]] | None = None, sample_retries: bool = False,
                 sampled_skills: Collection[str] = ()) -> None:
        self.paths = {k: Path(v) for k, v in checkpoints.items()}
        self.deterministic = deterministic
        self.sampled_skills = frozenset(sampled_skills)  # these sample their actions even when deterministic
        self.sample_retries = sample_retries
        self.scripted = dict(scripted or {})
        self._cache: dict[str, PolicyController] = {}
        self._env_camera: HeadCamera | None = None  # set by serve_observations

    def __call__(self, skill: str) -> Any:
        from skills.policy import SkillPolicy

        if skill in self.scripted:
            return self.scripted[skill](skill)
        if skill not in self._cache:
            if skill not in self.paths:
                raise CheckpointMissing(f"no checkpoint for skill '{skill}'")
            deterministic = self.deterministic and skill not in self.sampled_skills
            policy = SkillPolicy.from_checkpoint(self.paths[skill], deterministic=deterministic)
            if policy.skill.name != skill:
                raise CheckpointMissing(f"checkpoint {self.paths[skill]} holds skill '{policy.skill.name}', "
                                        f"not '{skill}'")
            self._cache[skill] = PolicyController(policy, sample_retries=self.sample_retries)
            if self._env_camera is not None:  # loaded after the env was set up (a skill only a re-plan uses)
                self._serve(skill, self._env_camera)
        return self._cache[skill]

    @property
    def obs_keys(self) -> tuple[str, ...]:
        """Observation keys the loaded policies read (after `load_all`)."""
        keys: list[str] = []
        for c in self._cache.values():
            keys.extend(k for k in c.policy.obs_keys if k not in keys)
        return tuple(keys)

    def load_all(self, skills: Sequence[str]) -> None:
        for s in skills:
            if s not in self.scripted:
                self(s)

    def serve_observations(self, sim_cfg: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The env's sim config for the loaded skills, with each controller set up to get its observations.

        `sim_cfg` (None: configs/sim/default.yaml) with `camera.head` replaced by the head camera that most
        loaded skills reading `head_depth` were trained with (ties: the first loaded). Controllers of
        skills trained with another camera compute their head depth themselves. `ObservationMismatch`
        (one line) for a skill whose observations cannot be served; see the module docstring.
        """
        readers = [name for name, c in self._cache.items() if "head_depth" in c.policy.obs_keys]
        cameras = {name: self._camera(name) for name in readers}
        env_sim = copy.deepcopy(dict(sim_cfg or {}))
        if cameras:
            chosen = Counter(cameras.values()).most_common(1)[0][0]
            camera = dict(env_sim.get("camera") or {})
            camera["head"] = {**(camera.get("head") or {}), **chosen.as_cfg()}
            env_sim["camera"] = camera
        try:
            env_camera = HeadCamera.from_sim_cfg(env_sim)
        except ValueError as exc:
            raise ObservationMismatch(f"the HAB env's sim config: {exc}") from None
        for name in self._cache:
            self._serve(name, env_camera)
        self._env_camera = env_camera
        return env_sim

    def _serve(self, name: str, env_camera: HeadCamera) -> None:
        """Set up one loaded controller for an env whose head camera is `env_camera`."""
        controller = self._cache[name]
        where = f"skill {name} ({self.paths[name]})"
        own: dict[str, Sensor] = {}
        for key in controller.policy.obs_keys:
            if key not in SENSORS:
                raise ObservationMismatch(f"{where} reads observation '{key}', which the HAB env has no "
                                          f"sensor for (sensors: {', '.join(SENSOR_NAMES)})")
            shape = sensor_space(key, (env_camera.height, env_camera.width), env_camera.max_depth).shape
            camera = self._camera(name) if key == "head_depth" else env_camera
            if camera != env_camera:
                why = camera.unservable_by(env_camera)
                if why is not None:
                    raise ObservationMismatch(f"{where}: its head_depth cannot be served next to the other "
                                              f"skills': {why}")
                own[key] = functools.partial(_head_depth_sensor, camera)
                shape = camera.shape
            check_shape(where, key, shape, controller.policy.spaces[key].shape)
        controller.own_sensors = own

    def _camera(self, skill: str) -> HeadCamera:
        """The head camera a loaded skill was trained with (its checkpoint's `sim.camera.head`)."""
        try:
            return HeadCamera.from_sim_cfg(self._cache[skill].policy.config.get("sim"))
        except ValueError as exc:
            raise ObservationMismatch(f"skill {skill} ({self.paths[skill]}): {exc}") from None


def _head_depth_sensor(camera: HeadCamera, sim: RearrangeSim, target: SensorTarget) -> np.ndarray:
    return head_depth_as(sim, camera)


def check_shape(where: str, key: str, served: tuple[int, ...], trained: tuple[int, ...]) -> None:
    """`ObservationMismatch` (one line) if observation `key` would be served with another shape than the
    policy was trained on."""
    if tuple(served) != tuple(trained):
        hint = " (check the checkpoint's sim.camera.head width/height)" if key == "head_depth" else ""
        raise ObservationMismatch(f"{where}: observation '{key}' would have shape {tuple(served)}, but the "
                                  f"policy was trained on {tuple(trained)}{hint}")


def check_observations(where: str, policy: Any, obs_space: Any) -> None:
    """`ObservationMismatch` (one line) unless an env with Dict space `obs_space` gives every observation
    `policy` reads, with the shape it was trained on."""
    missing = [k for k in policy.obs_keys if k not in obs_space.spaces]
    if missing:
        raise ObservationMismatch(f"{where} reads {', '.join(missing)}, which its env does not observe "
                                  f"(env observations: {', '.join(obs_space.spaces)})")
    for key in policy.obs_keys:
        check_shape(where, key, obs_space.spaces[key].shape, policy.spaces[key].shape)


# ----------------------------------------------------------------------------- finding checkpoints


def checkpoint_at(path: str | os.PathLike) -> Path | None:
    """`path` if it is a file, the newest checkpoint if it is a train-skill run folder, else None."""
    from trainer.checkpoint import newest_in_run

    path = Path(path)
    if path.is_file():
        return path
    return newest_in_run(path) if path.is_dir() else None


def _shipped_root(shipped_dir: str | os.PathLike | None) -> Path:
    """The folder of shipped checkpoints: `shipped_dir`, default SHIPPED_CHECKPOINTS (read at call time, so
    tests can point it elsewhere)."""
    return Path(SHIPPED_CHECKPOINTS if shipped_dir is None else shipped_dir)


def shipped_checkpoint(skill: str, shipped_dir: str | os.PathLike | None = None,
                       agent_type: str | None = None) -> Path | None:
    """The shipped checkpoint of a skill, or None: `<shipped_dir>/<folder>/<skill>.pt` where `agent_type`
    has a folder in AGENT_CHECKPOINT_DIRS and that file exists, else `<shipped_dir>/<skill>.pt`
    (`shipped_dir` default: SHIPPED_CHECKPOINTS)."""
    root = _shipped_root(shipped_dir)
    folder = AGENT_CHECKPOINT_DIRS.get(agent_type or "")
    for path in ([root / folder / f"{skill}.pt"] if folder else []) + [root / f"{skill}.pt"]:
        if path.is_file():
            return path
    return None


def find_in_dir(skill: str, checkpoint_dir: str | os.PathLike) -> Path:
    """`DIR/<skill>.pt`, else the newest checkpoint of the train-skill run `DIR/<skill>/`; else
    `CheckpointMissing` naming both places."""
    flat = Path(checkpoint_dir) / f"{skill}.pt"
    if flat.is_file():
        return flat
    from trainer.checkpoint import newest_in_run

    run = Path(checkpoint_dir) / skill
    found = newest_in_run(run)
    if found is not None:
        return found
    where = f"{run / 'checkpoints'} holds no ckpt_<step>.pt" if run.is_dir() else f"no run folder {run}"
    raise CheckpointMissing(f"checkpoint for skill '{skill}' not found: no {flat}, and {where} "
                            f"(or set agent.checkpoints.{skill}=PATH)")


def resolve_checkpoints(skills: Sequence[str], configured: Mapping[str, Any],
                        checkpoint_dir: str | os.PathLike | None,
                        shipped_dir: str | os.PathLike | None = None,
                        agent_type: str | None = None) -> dict[str, Path]:
    """Checkpoint path of each skill: `agent.checkpoints.<skill>`, else found in `checkpoint_dir`, else
    (no dir given) the one shipped for `agent_type`; see the module docstring. `CheckpointMissing` (one
    line) otherwise."""
    out: dict[str, Path] = {}
    for skill in skills:
        value = configured.get(skill)
        if value is not None:
            found = checkpoint_at(str(value))
            if found is None:
                raise CheckpointMissing(f"checkpoint for skill '{skill}' not found: {value} (agent.checkpoints."
                                        f"{skill}: a .pt file or a train-skill run folder)")
            out[skill] = found
        elif checkpoint_dir is not None:
            out[skill] = find_in_dir(skill, checkpoint_dir)
        else:
            found = shipped_checkpoint(skill, shipped_dir, agent_type)
            if found is None:
                shipped = _shipped_root(shipped_dir) / f"{skill}.pt"
                raise CheckpointMissing(
                    f"no checkpoint for skill '{skill}': none shipped (no {shipped}); "
                    f"pass --checkpoint-dir DIR (DIR/{skill}.pt or a train-skill run "
                    f"DIR/{skill}/checkpoints/) "
                    f"or agent.checkpoints.{skill}=PATH, or run its oracle: agent.oracle_skills=[{skill}]")
            out[skill] = found
    return out
