"""Checkpoint files: atomic save, validated load, keep-last-K, and the state layout for exact resume.

A checkpoint is a `torch.save`d dict. Keys:

    "format_version": int                 CHECKPOINT_FORMAT_VERSION
    "model":          actor_critic.state_dict()
    "config":         the resolved config as a plain dict (configs.compose.to_plain)
    "obs_space":      the gymnasium observation space (pickled)
    "action_space":   the gymnasium action space (pickled)
    "ppo":            PPO.state_dict(): optimizer, entropy coefficient, update count, LR schedule,
                      mini-batch RNG
    "rng":            capture_rng_state(): python, numpy, torch CPU (and CUDA when available)
    "counters":       dict owned by the training loop (env steps, updates, episodes, ...)
    + any "extra" entries the training loop adds (e.g. collector state)

"model", "config", "obs_space" and "action_space" are enough to rebuild and run a policy
(skills/, eval/): `ActorCritic(ckpt["obs_space"], ckpt["action_space"], ckpt["config"]["policy"])`
then `load_state_dict(ckpt["model"])`. The rest is for resuming training bit-for-bit:
`build_checkpoint_state(...)` assembles it, `restore_training_state(...)` puts it back.

Resuming: `resolve_checkpoint(dir_or_file)` finds the newest checkpoint of a run directory;
`resume_run(dir_or_file, overrides)` (both CLIs) returns that checkpoint's config with command-line
overrides applied and the run directory to continue in.

Fine-tuning (`trainer.init_from`): `restore_policy_state` starts a new run from a checkpoint's policy
(weights with their observation normalisation, and the learner's value and reward scales) with a fresh
optimizer, schedule, counters and RNGs, under the new run's config; a run that adds vector observations
starts from the checkpoint's weights widened with zeros for them (`trainer.widen`). Before any work
starts, `network_difference` names the first network setting (e.g. `policy.feedforward.actor`) where the
checkpoint's policy and the new run's differ, so a mismatched fine-tune fails as a one-line config error.

Errors: `load_checkpoint` raises `CheckpointError` with a one-line message for a missing, corrupt
or incomplete file. Writes go to a temporary file in the same directory, are fsynced and then
`os.replace`d over the target, so an interrupted save never damages an existing checkpoint.
"""

from __future__ import annotations

import logging
import os
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from configs.compose import ConfigError
from configs.files import atomic_path
from trainer.widen import added_columns, added_inputs, widen_state

CHECKPOINT_FORMAT_VERSION = 1
REQUIRED_KEYS = ("model", "config", "obs_space", "action_space")
CHECKPOINT_PATTERN = re.compile(r"^ckpt_(\d+)\.pt$")

log = logging.getLogger(__name__)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used; the message is one line."""


def checkpoint_path(directory: str | os.PathLike, step: int) -> Path:
    """Canonical file name for a checkpoint taken at `step` (sorts by step): `ckpt_000000012345.pt`."""
    return Path(directory) / f"ckpt_{int(step):012d}.pt"


def save_checkpoint(path: str | os.PathLike, state: Mapping[str, Any]) -> None:
    """Write `state` to `path` atomically (temp file in the same directory, fsync, os.replace)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        torch.save(dict(state), f)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Read a checkpoint; `CheckpointError` (one line) if it is missing, unreadable or lacks required keys."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        # weights_only=False: the file holds pickled gymnasium spaces; only load files you trust.
        state = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as exc:  # torch/pickle raise many types for truncated or foreign files
        raise CheckpointError(
            f"checkpoint {path} is corrupt or not a checkpoint ({_one_line(exc)})"
        ) from None
    if not isinstance(state, dict):
        raise CheckpointError(
            f"checkpoint {path} is not a checkpoint (holds a {type(state).__name__}, not a dict)"
        )
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise CheckpointError(f"checkpoint {path} is incomplete: missing {', '.join(missing)}")
    return state


def list_checkpoints(directory: str | os.PathLike) -> list[Path]:
    """`ckpt_<step>.pt` files in `directory`, oldest (smallest step) first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := CHECKPOINT_PATTERN.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(directory: str | os.PathLike) -> Path | None:
    """The newest `ckpt_<step>.pt` in `directory`, or None."""
    found = list_checkpoints(directory)
    return found[-1] if found else None


def newest_in_run(run_dir: str | os.PathLike) -> Path | None:
    """The newest `ckpt_<step>.pt` of a run folder (in its `checkpoints/`, or in it), or None."""
    run = Path(run_dir)
    return latest_checkpoint(run / "checkpoints") or latest_checkpoint(run)


def keep_last_checkpoints(directory: str | os.PathLike, keep: int) -> list[Path]:
    """Delete all but the newest `keep` `ckpt_<step>.pt` files (keep <= 0 keeps all); returns the deleted."""
    if keep <= 0:
        return []
    doomed = list_checkpoints(directory)[:-keep]
    for p in doomed:
        p.unlink(missing_ok=True)
    return doomed


def resolve_checkpoint(resume: str | os.PathLike) -> Path:
    """A checkpoint file, or the newest checkpoint of a run directory; CheckpointError otherwise."""
    path = Path(resume)
    if path.is_dir():
        found = newest_in_run(path)
        if found is None:
            raise CheckpointError(f"no checkpoint (ckpt_*.pt) found in {path}")
        return found
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    return path


@dataclass(frozen=True)
class ResumeTarget:
    """What `--resume DIR_OR_FILE` continues: the checkpoint, its config (with overrides), its run dir."""

    checkpoint: Path
    config: DictConfig
    run_dir: Path


def resume_run(resume: str | os.PathLike, overrides: Sequence[str] = ()) -> ResumeTarget:
    """The run to continue; CheckpointError (unusable checkpoint) or ConfigError (bad override), one line.

    `run_dir` is `resume` itself when it is a directory, else the directory holding `checkpoints/`.
    """
    path = resolve_checkpoint(resume)
    config = load_checkpoint(path)["config"]
    if not isinstance(config, Mapping):
        raise CheckpointError(f"checkpoint {path} holds no config mapping")
    try:
        cfg = OmegaConf.merge(OmegaConf.create(dict(config)), OmegaConf.from_dotlist(list(overrides)))
    except (OmegaConfBaseException, yaml.YAMLError) as exc:  # e.g. a value that is not YAML: x=[1
        raise ConfigError(f"invalid config override: {_one_line(exc)}") from None
    trainer_cfg = cfg.get("trainer")
    if isinstance(trainer_cfg, DictConfig) and trainer_cfg.get("init_from") is not None:
        # the run's own checkpoint holds the weights (and optimizer) now; the file it started from may be gone
        trainer_cfg.init_from = None
        if trainer_cfg.get("init_optimizer"):
            trainer_cfg.init_optimizer = False
    run_dir = Path(resume) if Path(resume).is_dir() else path.parent.parent
    return ResumeTarget(checkpoint=path, config=cfg, run_dir=run_dir)  # type: ignore[arg-type]


def capture_rng_state() -> dict:
    """Python, numpy and torch (CPU, and CUDA when available) global RNG states."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: Mapping) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def build_checkpoint_state(
    actor_critic: torch.nn.Module,
    ppo: Any,
    config: Mapping,
    obs_space: Any,
    action_space: Any,
    counters: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> dict:
    """Everything a checkpoint holds (layout in the module docstring); a DictConfig is resolved to a dict."""
    if isinstance(config, DictConfig):
        config = OmegaConf.to_container(config, resolve=True)  # type: ignore[assignment]
    state = {
        "format_version": CHECKPOINT_FORMAT_VERSION,
        "model": actor_critic.state_dict(),
        "config": dict(config),
        "obs_space": obs_space,
        "action_space": action_space,
        "ppo": ppo.state_dict(),
        "rng": capture_rng_state(),
        "counters": dict(counters),
    }
    for key, value in (extra or {}).items():
        if key in state:
            raise ValueError(f"extra checkpoint key '{key}' collides with a reserved key")
        state[key] = value
    return state


def restore_policy_state(state: Mapping, actor_critic: torch.nn.Module, ppo: Any, optimizer: bool = False) -> None:
    """Weights (observation normalisation included) and the value/reward scales of `state` into a new
    run; the schedule, counters and RNGs stay the new run's, and so does the optimizer unless `optimizer`
    (`trainer.init_optimizer`: Adam's moments and step counts from `state`; the learning rate is still set by
    this run's schedule at every update). A new run that only adds vector observations gets the weights
    widened with zeros for them (`trainer.widen`: it acts as the checkpoint did). CheckpointError if they
    differ otherwise, or if `optimizer` and `state` has no optimizer state for exactly these parameters."""
    added = added_inputs(state["obs_space"], actor_critic) if "obs_space" in state else None
    if optimizer:
        if added:
            raise CheckpointError(f"trainer.init_optimizer: the checkpoint's optimizer state has no moments for the "
                                  f"added observations {added}; use trainer.init_optimizer=false")
        try:
            ppo.optimizer.load_state_dict((state.get("ppo") or {})["optimizer"])
        except (KeyError, ValueError) as exc:
            raise CheckpointError(f"trainer.init_optimizer: the checkpoint's optimizer state does not fit this run "
                                  f"({_one_line(exc)})") from None
    if added:
        try:
            actor_critic.load_state_dict(widen_state(state["model"], state["obs_space"], actor_critic))
        except (KeyError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"trainer.init_from checkpoint cannot be widened to the added observations "
                                  f"{added} ({_one_line(exc)})") from None
        if actor_critic.obs_norm is not None:
            actor_critic.obs_norm.restart_columns(added_columns(state["obs_space"], actor_critic))
        log.info("trainer.init_from: observations %s added; their input weights start at zero", added)
    else:
        _load_weights(state, actor_critic, "trainer.init_from checkpoint")
    ppo.load_scales(state.get("ppo") or {})


# The policy settings that shape the network's weights (configs/policy/*.yaml), compared by
# `network_difference`; a setting absent from either config (an older checkpoint) is not compared.
NETWORK_KEYS = (
    "architecture", "feedforward.actor", "feedforward.critic", "vector_mlp", "rnn.hidden_size", "rnn.num_layers",
    "visual.encoder", "visual.channels", "visual.kernels", "visual.strides", "visual.out_dim",
)


def network_difference(checkpoint_policy: Mapping, run_policy: Mapping) -> str | None:
    """The first of NETWORK_KEYS where the two `policy` configs differ, as one line naming the key, both
    values and the override that matches the checkpoint; None when they agree."""
    missing = object()

    def lookup(node: Any, dotted: str) -> Any:
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return missing
            node = node[part]
        return list(node) if isinstance(node, Sequence) and not isinstance(node, str) else node

    for key in NETWORK_KEYS:
        theirs, ours = lookup(checkpoint_policy, key), lookup(run_policy, key)
        if missing not in (theirs, ours) and theirs != ours:
            value = str(theirs).replace(" ", "")
            return (f"the checkpoint's policy.{key} is {theirs}, this run's {ours}: a fine-tune needs the same "
                    f"network (add policy.{key}={value})")
    return None


def _load_weights(state: Mapping, actor_critic: torch.nn.Module, what: str) -> None:
    """`state["model"]` into `actor_critic`; CheckpointError naming `what` when they do not match."""
    try:
        actor_critic.load_state_dict(state["model"])
    except RuntimeError as exc:
        raise CheckpointError(f"{what} does not match this policy ({_one_line(exc)})") from None


def restore_training_state(
    state: Mapping, actor_critic: torch.nn.Module, ppo: Any, restore_rng: bool = True
) -> dict:
    """Load weights, learner state and (optionally) RNG states from `state`; returns its counters."""
    for key in ("ppo", "rng", "counters"):
        if key not in state:
            raise CheckpointError(f"checkpoint cannot resume training: missing {key}")
    _load_weights(state, actor_critic, "checkpoint")
    try:
        ppo.load_state_dict(state["ppo"])
    except (KeyError, ValueError, RuntimeError) as exc:
        raise CheckpointError(
            f"checkpoint learner state does not match this config ({_one_line(exc)})"
        ) from None
    if restore_rng:
        restore_rng_state(state["rng"])
    return dict(state["counters"])
