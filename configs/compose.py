"""Composing the Hydra config tree from Python, and the one-line errors every command uses.

The bottom of the data flow (configs -> rearrange -> trainer -> skills -> eval): it imports nothing of
the project, so every room may import it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from hydra import compose as hydra_compose
from hydra import initialize_config_module
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException


class ConfigError(ValueError):
    """A config name or override that cannot be composed; the message is one line."""


def compose(config_name: str, overrides: Sequence[str] = ()) -> DictConfig:
    """Compose `configs/<config_name>.yaml` with Hydra command-line style overrides."""
    try:
        with initialize_config_module(config_module="configs", version_base=None):
            cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"invalid config override: {first_line}") from None
    return cfg


CONFIG_ROOT = Path(__file__).resolve().parent  # the tree ships inside this package


def load_config_file(name: str | Path) -> dict:
    """One yaml of the tree (`sim/default.yaml`, `skill/pick.yaml`, `episodes.yaml`), or a path outside
    it, as plain containers: the file alone, no Hydra defaults or overrides (callers merge their own)."""
    path = Path(name)
    cfg = OmegaConf.to_container(OmegaConf.load(path if path.is_absolute() else CONFIG_ROOT / path), resolve=True)
    if not isinstance(cfg, dict):
        raise ConfigError(f"config file {name} is not a mapping")
    return cfg


def to_plain(cfg: DictConfig) -> dict:
    """The resolved config as plain Python containers (for checkpoints and JSON files)."""
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def unknown_choice(what: str, value: str, choices: Sequence[str]) -> str:
    """Message for a name that is not one of `choices`."""
    return f"unknown {what} '{value}'; valid choices: {', '.join(choices)}"


def require_choice(what: str, value: str, choices: Sequence[str]) -> None:
    """Exit with the one-line `unknown_choice` error (code 2) unless `value` is one of `choices`."""
    if value not in choices:
        exit_with_error(unknown_choice(what, value, choices))


def exit_with_error(message: str, code: int = 2) -> NoReturn:
    """Print `error: <message>` on one line to stderr and exit with `code`."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code)
