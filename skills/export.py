"""Shrink a `train-skill` checkpoint to what running the skill needs, for shipping in git.

    python -m skills.export runs/skill/pick/checkpoints/ckpt_000002000000.pt checkpoints/pick.pt

Keeps the weights (with the observation-normalisation statistics, which are model buffers), the
resolved config, the spaces and the step counters; drops the optimizer, RNG and collector state that
only `--resume` needs (about two thirds of the file). The result loads with
`skills.policy.SkillPolicy.from_checkpoint`, `eval-skill --checkpoint` and `eval-hab`; it cannot be
resumed. Written atomically.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from configs.compose import exit_with_error
from trainer.checkpoint import REQUIRED_KEYS, CheckpointError, load_checkpoint, save_checkpoint

KEPT_KEYS = (*REQUIRED_KEYS, "format_version", "counters")


def export_policy(src: str | os.PathLike, dst: str | os.PathLike) -> dict:
    """Write the policy-only part of checkpoint `src` to `dst`; returns what was written."""
    state = load_checkpoint(src)
    config = state["config"]
    if not isinstance(config, dict) or "skill" not in config:
        raise CheckpointError(f"checkpoint {src} is not a skill checkpoint (its config has no skill)")
    small = {k: state[k] for k in KEPT_KEYS if k in state}
    small["exported_from"] = str(src)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(dst, small)
    return small


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m skills.export", description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", help="a train-skill checkpoint (ckpt_<step>.pt)")
    parser.add_argument("out", help="where to write the policy-only checkpoint")
    args = parser.parse_args(argv)
    try:
        small = export_policy(args.checkpoint, args.out)
    except CheckpointError as exc:
        exit_with_error(str(exc))
    size = os.path.getsize(args.out)
    print(f"{args.out}: skill {small['config']['skill']['name']}, "
          f"{small.get('counters', {}).get('env_steps', '?')} env steps, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
