"""Small skill checkpoints in the train-skill format, without training, shared by the eval tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def untrained_checkpoint(path, skill: str, overrides: Sequence[str] = (), obs_space: Any = None,
                         edit_config: Callable[[dict], None] | None = None) -> None:
    """A `skill` checkpoint with freshly initialised weights and the train_skill config (plus Hydra
    `overrides`, e.g. `profile=cpu` or `sim.camera.head.width=32`). `obs_space` replaces the skill's own
    observation space (built from the config's camera); `edit_config` changes the saved config in place
    after the model is built (a config the env cannot serve)."""
    from configs.compose import compose, to_plain
    from rearrange.actions import action_space
    from rearrange.sensors import camera_settings, observation_space
    from skills.definitions import get_skill
    from trainer.checkpoint import save_checkpoint
    from trainer.networks import ActorCritic

    cfg = to_plain(compose("train_skill", [f"skill={skill}", *overrides]))
    definition = get_skill(skill)
    if obs_space is None:
        depth_shape, max_depth = camera_settings(cfg["sim"])
        obs_space = observation_space(definition.obs_keys, depth_shape, max_depth)
    act_space = action_space(definition.action_subsets)
    model = ActorCritic(obs_space, act_space, cfg["policy"])
    if edit_config is not None:
        edit_config(cfg)
    save_checkpoint(path, {"model": model.state_dict(), "config": cfg, "obs_space": obs_space,
                           "action_space": act_space})
