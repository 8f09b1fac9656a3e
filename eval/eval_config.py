"""The `eval` and `video` nodes of `configs/eval_skill.yaml` and `configs/eval_hab.yaml`, checked before any
episode runs. A bad value is one `ConfigError` line naming the key, its valid range and the value; before
this check the bootstrap's sample count and confidence level failed with a traceback only when the results
were summarised, after every episode had run, and a seed that was no integer was int()'s own traceback.
`eval.workers` and `eval.torch_threads` keep their checks beside their use (`eval/parallel.py:
check_workers`, `skills/policy.py: set_inference_threads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from configs.node import MISSING, ConfigNode


def _path(node: ConfigNode, name: str, null_ok: bool) -> None:
    """A non-empty path string where the key is present (or null, where `null_ok`)."""
    value = node.raw(name, optional=True)
    if value is MISSING or (null_ok and value is None):
        return
    if not isinstance(value, str) or not value:
        raise node.fail(name, "a path or null" if null_ok else "a path", value)


def check_eval_config(cfg: Mapping[str, Any]) -> None:
    """Raise ConfigError for the first bad value of `cfg["eval"]` or `cfg["video"]`. Keys both evaluators have
    are required; those of one only (eval-skill's `deterministic` and `out`, eval-hab's `out_dir` and `video.fps`)
    are checked where present."""
    ev = ConfigNode(cfg.get("eval"), "eval")
    ev.integer("episodes", minimum=1)
    ev.integer("seed", minimum=0)
    ev.integer("bootstrap_samples", minimum=1)
    ev.number("ci", 0.0, 1.0, low_open=True, high_open=True)
    ev.boolean("deterministic", optional=True)
    for name in ("episodes_file", "out"):
        _path(ev, name, null_ok=True)
    _path(ev, "out_dir", null_ok=False)  # eval-hab's parent folder of every run's results
    video = ConfigNode(cfg.get("video"), "video")
    for name in ("width", "height", "every"):
        video.integer(name, minimum=1)
    video.integer("fps", minimum=1, optional=True)
