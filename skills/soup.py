"""Average the weights of skill policies fine-tuned from one training state into one policy (a "model soup").

    python -m skills.soup runs/place_soup.pt runs/place_r43.pt runs/place_r45.pt

Fine-tunes of one training state at a small learning rate stay close in weight space, so their uniform
average is itself a policy and can beat each part (Wortsman et al. 2022, "Model soups"); policies trained
from different initial weights cannot be averaged this way. The parts must share the skill, the
observation and action spaces and the network (parameter names and shapes); otherwise a one-line error
names the first difference. Floating-point weights and buffers (the observation-normalisation
statistics, the value scale) are averaged in float64; the config, spaces and counters come from the
first part, and `souped_from` records every part with its env steps. Accepts train-skill checkpoints, run
folders (their newest checkpoint, as `trainer.init_from` and eval-skill read them) and exported policies;
the result is policy-only like `skills.export`'s, loads wherever a shipped policy does, cannot be
resumed, and is written atomically.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import torch

from configs.compose import exit_with_error
from skills.export import KEPT_KEYS
from trainer.checkpoint import (
    CheckpointError,
    load_checkpoint,
    network_difference,
    resolve_checkpoint,
    save_checkpoint,
)


def _difference(first: dict, other: dict) -> str | None:
    """What keeps `other` out of a soup with `first`, as a phrase; None when they can be averaged."""
    theirs, ours = other["config"].get("skill", {}).get("name"), first["config"]["skill"].get("name")
    if theirs != ours:
        return f"it is skill {theirs}, not {ours}"
    if other["obs_space"] != first["obs_space"]:
        return "its observation space differs"
    if other["action_space"] != first["action_space"]:
        return "its action space differs"
    network = network_difference(other["config"].get("policy", {}), first["config"].get("policy", {}))
    if network is not None:
        return "its network differs (" + network.split(" is ")[0].removeprefix("the checkpoint's ") + ")"
    if other["model"].keys() != first["model"].keys():
        return "its parameter names differ"
    for name, value in first["model"].items():
        if other["model"][name].shape != value.shape:
            return f"its {name} has shape {tuple(other['model'][name].shape)}, not {tuple(value.shape)}"
    return None


def soup_policies(paths: Sequence[str | os.PathLike]) -> dict:
    """The uniform weight average of the skill checkpoints at `paths` (two or more; a run folder stands for
    its newest checkpoint), policy-only."""
    if len(paths) < 2:
        raise CheckpointError(f"a soup needs at least two checkpoints, got {len(paths)}")
    paths = [resolve_checkpoint(p) for p in paths]
    parts = [load_checkpoint(p) for p in paths]
    first = parts[0]
    if not isinstance(first["config"], dict) or "skill" not in first["config"]:
        raise CheckpointError(f"checkpoint {paths[0]} is not a skill checkpoint (its config has no skill)")
    for path, part in zip(paths[1:], parts[1:], strict=True):
        reason = _difference(first, part) if isinstance(part["config"], dict) else "it is not a skill checkpoint"
        if reason is not None:
            raise CheckpointError(f"cannot average {path} with {paths[0]}: {reason}")
    model = {}
    for name, value in first["model"].items():
        if value.is_floating_point():
            mean = torch.stack([part["model"][name].double() for part in parts]).mean(0)
            model[name] = mean.to(value.dtype)
        else:
            model[name] = value.clone()
    soup = {k: first[k] for k in KEPT_KEYS if k in first}
    soup["model"] = model
    soup["souped_from"] = [{"path": str(p), "env_steps": part.get("counters", {}).get("env_steps")}
                           for p, part in zip(paths, parts, strict=True)]
    return soup


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m skills.soup", description=__doc__.split("\n")[0])
    parser.add_argument("out", help="where to write the averaged policy")
    parser.add_argument("checkpoints", nargs="+",
                        help="two or more checkpoints (or train-skill run folders: the newest) of one skill "
                        "fine-tuned from one training state")
    args = parser.parse_args(argv)
    try:
        soup = soup_policies(args.checkpoints)
    except CheckpointError as exc:
        exit_with_error(str(exc))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(args.out, soup)
    print(f"{args.out}: skill {soup['config']['skill']['name']}, the average of {len(args.checkpoints)} "
          f"policies, {os.path.getsize(args.out) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
